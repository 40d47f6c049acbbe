//! Ops: one per run-time operation, with typed operands.
//!
//! [`OpKind`] mirrors `nkic_isa::Op` instruction for instruction (same
//! variant names, mnemonics and field names), with IR operands in place of
//! machine ones: a [`View`] instead of an access pattern, a
//! [`RegHandle`] instead of a physical register, and `Option` where the
//! compiler still has a choice to make (`accumulate: None` on matmuls, `dge:
//! None` on DMAs). Control-flow instructions do not exist here (dynamic
//! loops are regions); `reg_alloc` defines a virtual register. The ISA's
//! `dma_gather`/`dma_scatter` are a `dma_copy` whose `src`/`dst` view has
//! row indirection (`vector_offset`); the backend picks the instruction.
//!
//! The `ops!` table below is the single place an op is defined. From it
//! the macro generates `OpKind`, the mnemonic table, the field walk used
//! for operand discovery ([`Op::accesses`]) and by the printer, and the
//! field parser used by the reader. An op's engines are not written here:
//! they are its instruction's in `nkic_isa`'s table, found by mnemonic.
//!
//! Field roles: `Write` fields are outputs, `Read` fields inputs, `Attr`
//! fields parameters. A view's dynamic-offset register and an indirect
//! view's index tensor are always reads, whatever the field's role.

use std::fmt;

use nkic_isa::{
    ActFunc, AluOp, DgeMode, Dim, Engine, Fp32, Imm, MatmulPerfMode, OobMode, ReduceCmd, RegAluOp,
};

use crate::arena::{Entity, Handle};
use crate::field::{FieldSource, FieldValue};
use crate::kernel::{LoopCtx, NoReorderGroup, RegHandle, Storage};
use crate::view::{Indirection, View};

/// A scalar operand: an fp32 immediate or a `(P, 1)` vector view (one value
/// per partition, broadcast along the free dims).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    Imm(Fp32),
    Vector(View),
}

impl Scalar {
    /// An immediate scalar.
    pub fn imm(value: f32) -> Scalar {
        Scalar::Imm(Fp32::new(value))
    }
}

/// A register or a 32-bit immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegOrImm {
    Reg(RegHandle),
    Imm(i32),
}

/// What an op does with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// An input: its views and registers are read.
    Read,
    /// An output: its views and registers are written.
    Write,
    /// A parameter that is neither memory nor a register.
    Attr,
}

/// One view an op touches, from [`Op::accesses`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Access<'a> {
    /// The field it comes from (`dst`, `src`, `bias`, …).
    pub field: &'static str,
    /// `Read` or `Write`.
    pub role: Role,
    pub view: &'a View,
    /// True for the index tensor of an indirect operand (always a read).
    pub is_index: bool,
}

macro_rules! ops {
    ($(
        $(#[$meta:meta])*
        $variant:ident = $mnemonic:literal {
            $( $(#[$fmeta:meta])* $field:ident : $fty:ty => $role:ident ),* $(,)?
        }
    )*) => {
        /// The operation of an op and its operands (see the module doc).
        #[derive(Clone, Debug, PartialEq)]
        pub enum OpKind {
            $(
                $(#[$meta])*
                $variant { $( $(#[$fmeta])* $field: $fty ),* },
            )*
        }

        impl OpKind {
            /// Every mnemonic, in table order.
            pub const MNEMONICS: &'static [&'static str] = &[$($mnemonic),*];

            /// The mnemonic: the `nkic_isa` instruction this op becomes
            /// (`reg_alloc` becomes `reg_set` or nothing).
            pub fn mnemonic(&self) -> &'static str {
                match self {
                    $( OpKind::$variant { .. } => $mnemonic, )*
                }
            }

            /// The engines that may execute this op: those of its
            /// instruction in `nkic_isa`'s table (`reg_alloc`, which
            /// becomes a `reg_set` or nothing, those of `reg_set`).
            pub fn engines(&self) -> &'static [Engine] {
                let mnemonic = match self {
                    OpKind::RegAlloc { .. } => "reg_set",
                    other => other.mnemonic(),
                };
                nkic_isa::Op::engines_of(mnemonic).unwrap_or(&[])
            }

            /// Visits every field in table order with its name and role.
            pub fn for_each_field<'s>(&'s self, f: &mut dyn FnMut(&'static str, Role, &'s dyn FieldValue)) {
                match self {
                    $( OpKind::$variant { $($field),* } => {
                        $( f(stringify!($field), Role::$role, $field); )*
                    } )*
                }
            }

            /// Visits every field mutably in table order with its name and role.
            pub fn for_each_field_mut(&mut self, f: &mut dyn FnMut(&'static str, Role, &mut dyn FieldValue)) {
                match self {
                    $( OpKind::$variant { $($field),* } => {
                        $( f(stringify!($field), Role::$role, $field); )*
                    } )*
                }
            }

            /// The names of the fields of op `mnemonic`, in order.
            pub fn field_names(mnemonic: &str) -> Option<&'static [&'static str]> {
                match mnemonic {
                    $( $mnemonic => Some(&[$(stringify!($field)),*]), )*
                    _ => None,
                }
            }

            /// Parses the fields of op `mnemonic` from `src`; `None` for an
            /// unknown mnemonic.
            pub(crate) fn parse_fields(mnemonic: &str, src: &mut FieldSource<'_>) -> Option<Result<OpKind, String>> {
                match mnemonic {
                    $( $mnemonic => Some((|| {
                        $( let $field = src.field::<$fty>(stringify!($field))?; )*
                        Ok(OpKind::$variant { $( $field ),* })
                    })()), )*
                    _ => None,
                }
            }
        }
    };
}

ops! {
    // ------------------------------------------------------------ data movement

    /// `dst = src` element by element in row-major order, casting through
    /// fp32 when dtypes differ; with `accumulate`, `dst = dst + src`
    /// (`dma_compute` with `dst` as one source).
    DmaCopy = "dma_copy" {
        dst: View => Write,
        src: View => Read,
        accumulate: bool => Attr,
        /// `None`: the compiler chooses.
        dge: Option<DgeMode> => Attr,
        oob: OobMode => Attr,
        priority: Option<u8> => Attr,
    }
    /// `dst = transpose(src)` with the fixed permutation of src's rank.
    DmaTranspose = "dma_transpose" {
        dst: View => Write,
        src: View => Read,
        dge: Option<DgeMode> => Attr,
    }
    /// `dst = src` with a dtype conversion through fp32 when dtypes differ.
    TensorCopy = "tensor_copy" {
        dst: View => Write,
        src: View => Read,
    }
    /// Fills `dst` with `value`.
    Memset = "memset" {
        dst: View => Write,
        value: Imm => Attr,
    }
    /// `dst[p, i…] = offset + p·channel_multiplier + Σ i_k·step_k` in int32.
    Iota = "iota" {
        dst: View => Write,
        pattern: Vec<Dim> => Attr,
        offset: i32 => Attr,
        channel_multiplier: i32 => Attr,
    }

    // ------------------------------------------------------------ Tensor engine

    /// `dst[m, n] (=|+=) Σ_k stationary[k, m] · moving[k, n]`.
    NcMatmul = "nc_matmul" {
        dst: View => Write,
        stationary: View => Read,
        moving: View => Read,
        /// `None`: the first matmul write to a PSUM location overwrites,
        /// later ones accumulate (decided by the backend).
        accumulate: Option<bool> => Attr,
        transpose: bool => Attr,
        perf_mode: MatmulPerfMode => Attr,
        stationary_onezero: bool => Attr,
        moving_onezero: bool => Attr,
        tile_position: Option<[u32; 2]> => Attr,
        tile_size: Option<[u32; 2]> => Attr,
    }
    /// The microscaled matmul of packed x4 operands with e8m0 scales (v4).
    NcMatmulMx = "nc_matmul_mx" {
        dst: View => Write,
        stationary: View => Read,
        moving: View => Read,
        stationary_scale: View => Read,
        moving_scale: View => Read,
        accumulate: Option<bool> => Attr,
        tile_position: Option<[u32; 2]> => Attr,
        tile_size: Option<[u32; 2]> => Attr,
    }
    /// `dst[f, p] = src[p, f]` (free dims of src flattened).
    NcTranspose = "nc_transpose" {
        dst: View => Write,
        src: View => Read,
    }

    // ------------------------------------------------------------ Scalar engine

    /// `dst = func(src · scale + bias)`, optionally reduced into the ScalarE
    /// accumulators.
    Activation = "activation" {
        dst: View => Write,
        src: View => Read,
        func: ActFunc => Attr,
        scale: Scalar => Read,
        bias: Option<Scalar> => Read,
        reduce_op: Option<AluOp> => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_res: Option<View> => Write,
    }
    /// `activation` with `reduce_cmd=reset_reduce` and a mandatory read-out.
    ActivationReduce = "activation_reduce" {
        dst: View => Write,
        src: View => Read,
        func: ActFunc => Attr,
        scale: Scalar => Read,
        bias: Option<Scalar> => Read,
        reduce_op: AluOp => Attr,
        reduce_res: View => Write,
    }
    /// Three-stage ScalarE pipeline: two ALU ops, a function, a reduction (v4).
    Activate2 = "activate2" {
        dst: View => Write,
        src: View => Read,
        func: ActFunc => Attr,
        op0: AluOp => Attr,
        imm0: Option<Scalar> => Read,
        reverse0: bool => Attr,
        op1: AluOp => Attr,
        imm1: Option<Scalar> => Read,
        reverse1: bool => Attr,
        relu_param: Option<Scalar> => Read,
        reduce_op: Option<AluOp> => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_res: Option<View> => Write,
    }

    // ------------------------------------------------------------ Vector engine (and friends)

    /// `dst = src0 op src1` element-wise.
    TensorTensor = "tensor_tensor" {
        dst: View => Write,
        src0: View => Read,
        src1: View => Read,
        op: AluOp => Attr,
    }
    /// `dst = (src op0 operand0) op1 operand1`.
    TensorScalar = "tensor_scalar" {
        dst: View => Write,
        src: View => Read,
        op0: AluOp => Attr,
        operand0: Option<Scalar> => Read,
        reverse0: bool => Attr,
        op1: Option<AluOp> => Attr,
        operand1: Option<Scalar> => Read,
        reverse1: bool => Attr,
    }
    /// `dst = (src op0 operand0) op1 src1`.
    ScalarTensorTensor = "scalar_tensor_tensor" {
        dst: View => Write,
        src: View => Read,
        op0: AluOp => Attr,
        operand0: Scalar => Read,
        reverse0: bool => Attr,
        op1: AluOp => Attr,
        src1: View => Read,
        reverse1: bool => Attr,
    }
    /// `dst = src op0 operand0` plus a row reduction into the Vector accumulators.
    TensorScalarReduce = "tensor_scalar_reduce" {
        dst: View => Write,
        src: View => Read,
        op0: AluOp => Attr,
        operand0: Option<Scalar> => Read,
        reduce_op: AluOp => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_init: Option<Scalar> => Read,
        reduce_res: Option<View> => Write,
        reduce_res_negate: bool => Attr,
    }
    /// Running `reg = op1(op0(src[i], imm0), reg); dst[i] = reg` per partition.
    TensorScalarCumulative = "tensor_scalar_cumulative" {
        dst: View => Write,
        src: View => Read,
        op0: AluOp => Attr,
        imm0: Scalar => Read,
        op1: AluOp => Attr,
        imm1: Option<Scalar> => Read,
        reduce_cmd: ReduceCmd => Attr,
    }
    /// Reduces the last `last_dims` free dims of `src` with `op`.
    TensorReduce = "tensor_reduce" {
        dst: View => Write,
        src: View => Read,
        op: AluOp => Attr,
        last_dims: u8 => Attr,
        negate: bool => Attr,
    }
    /// Reduces across partitions into partition row 0 of `dst`.
    TensorPartitionReduce = "tensor_partition_reduce" {
        dst: View => Write,
        src: View => Read,
        op: AluOp => Attr,
    }
    /// `r[i] = op1(op0(src0[i], r[i-1]), src1[i])`, `r[-1] = initial`.
    TensorTensorScan = "tensor_tensor_scan" {
        dst: View => Write,
        src0: View => Read,
        src1: View => Read,
        initial: Scalar => Read,
        op0: AluOp => Attr,
        op1: AluOp => Attr,
        reverse0: bool => Attr,
        reverse1: bool => Attr,
    }
    /// `dst[i] = src[i]` where `predicate[i] != 0` (xor `reverse_pred`).
    TensorCopyPredicated = "tensor_copy_predicated" {
        dst: View => Write,
        src: View => Read,
        predicate: View => Read,
        reverse_pred: bool => Attr,
    }
    /// `dst = 1 / src` in fp32.
    Reciprocal = "reciprocal" {
        dst: View => Write,
        src: View => Read,
    }
    /// `dst = exp(src - max_value)`, optionally summed into the accumulators (v4).
    Exponential = "exponential" {
        dst: View => Write,
        src: View => Read,
        max_value: Scalar => Read,
        reduce_cmd: ReduceCmd => Attr,
        reduce_init: Option<Scalar> => Read,
        reduce_res: Option<View> => Write,
    }
    /// Keeps `src` where the free index is within two bounds, else `on_false`.
    RangeSelect = "range_select" {
        dst: View => Write,
        src: View => Read,
        cmp0: AluOp => Attr,
        bound0: Scalar => Read,
        cmp1: AluOp => Attr,
        bound1: Scalar => Read,
        range_start: i32 => Attr,
        on_false: Fp32 => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_res: Option<View> => Write,
    }
    /// `dst = predicate ? on_true : on_false` with an optional max reduction.
    SelectReduce = "select_reduce" {
        dst: View => Write,
        predicate: View => Read,
        on_true: View => Read,
        on_false: Scalar => Read,
        reverse_pred: bool => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_res: Option<View> => Write,
    }
    /// The 8 largest values per partition, descending.
    Max8 = "max8" {
        dst: View => Write,
        src: View => Read,
    }
    /// Index of the first occurrence of each of 8 values per partition.
    FindIndex8 = "nc_find_index8" {
        dst: View => Write,
        src: View => Read,
        vals: View => Read,
    }
    /// Replaces the first occurrence of each of 8 values with `imm`.
    MatchReplace8 = "nc_match_replace8" {
        dst: View => Write,
        src: View => Read,
        vals: View => Read,
        imm: Fp32 => Attr,
        dst_idx: Option<View> => Write,
    }
    /// Per-partition count/mean/M2 of even and odd free positions.
    BnStats = "bn_stats" {
        dst: View => Write,
        src: View => Read,
    }
    /// Combines `(count, mean, M2)` triples into mean and variance.
    BnAggr = "bn_aggr" {
        dst: View => Write,
        src: View => Read,
    }
    /// Quantizes 16-bit `src` into packed MXFP8 `dst` and e8m0 scales (v4).
    QuantizeMx = "quantize_mx" {
        dst: View => Write,
        src: View => Read,
        dst_scale: View => Write,
    }
    /// Permutes partitions within each 32-partition quadrant.
    StreamShuffle = "nc_stream_shuffle" {
        dst: View => Write,
        src: View => Read,
        mask: Vec<u8> => Attr,
    }
    /// Random 32-bit values from the engine's per-lane generators,
    /// truncated to `dst`'s integer dtype.
    Rng = "rng" {
        dst: View => Write,
    }
    /// Uniform random floats in `[min, max)` from the Vector generators (v4).
    Rand2 = "rand2" {
        dst: View => Write,
        min: Scalar => Read,
        max: Scalar => Read,
    }
    /// Zeroes each element with probability `prob` (no rescaling).
    Dropout = "dropout" {
        dst: View => Write,
        src: View => Read,
        prob: Scalar => Read,
    }
    /// Seeds every lane of the Vector generators from one 32-bit value.
    SetRngSeed = "set_rng_seed" {
        src: View => Read,
    }

    // ------------------------------------------------------------ GpSimd engine

    /// `dst = cmp(affine value, 0) ? src : on_false`.
    AffineSelect = "affine_select" {
        dst: View => Write,
        src: View => Read,
        pattern: Vec<Dim> => Attr,
        offset: i32 => Attr,
        channel_multiplier: i32 => Attr,
        cmp: AluOp => Attr,
        on_false: Fp32 => Attr,
    }
    /// Gathers free-dim positions shared by each 16-partition core.
    LocalGather = "local_gather" {
        dst: View => Write,
        src: View => Read,
        index: View => Read,
        elem_per_idx: u32 => Attr,
        valid_indices: Option<u32> => Attr,
    }
    /// `dst[p, j] = src_flat[p, indices[p, j]]`.
    NGather = "nc_n_gather" {
        dst: View => Write,
        src: View => Read,
        indices: View => Read,
    }
    /// Segment start/end indices of sorted segment ids.
    SequenceBounds = "sequence_bounds" {
        dst: View => Write,
        src: View => Read,
    }
    /// Positions of nonzero elements and their count, per GpSimd core.
    NonzeroWithCount = "nonzero_with_count" {
        dst: View => Write,
        src: View => Read,
        index_offset: i32 => Attr,
        padding: i32 => Attr,
    }

    // ------------------------------------------------------------ registers

    /// Defines register `dst`, uninitialised or set to `init`
    /// (`nisa.register_alloc`).
    RegAlloc = "reg_alloc" {
        dst: RegHandle => Write,
        init: Option<i32> => Attr,
    }
    /// `dst = src` (`nisa.register_move`).
    RegMove = "reg_move" {
        dst: RegHandle => Write,
        src: RegOrImm => Read,
    }
    /// `dst = a op b` on 32-bit integers (address arithmetic).
    RegAlu = "reg_alu" {
        dst: RegHandle => Write,
        op: RegAluOp => Attr,
        a: RegHandle => Read,
        b: RegOrImm => Read,
    }
    /// `dst = ` the single element of `src` (`nisa.register_load`).
    RegLoad = "reg_load" {
        dst: RegHandle => Write,
        src: View => Read,
    }
    /// Writes register `src` into the single element of `dst`
    /// (`nisa.register_store`).
    RegStore = "reg_store" {
        dst: View => Write,
        src: RegHandle => Read,
    }

    // ------------------------------------------------------------ cores

    /// A barrier between the two physical cores of an LNC=2 launch
    /// (`nisa.core_barrier(data, (0, 1))`): it completes when the other
    /// core's barrier of the same rank has issued too. `data` is the shared
    /// HBM tensor synchronised on; it moves nothing but counts as written,
    /// so accesses of it before the barrier are ordered before it and
    /// accesses after it after it (the machine instruction's `data`).
    CoreBarrier = "core_barrier" {
        data: Option<View> => Write,
    }

    /// The tile exchange of the two physical cores of an LNC=2 launch
    /// (`nisa.sendrecv`): this core's `src` arrives in the other core's
    /// `dst` and the other core's `src` in this `dst` (SBUF tiles of one
    /// dtype and shape). Exchanges pair with the other core's in issue
    /// order on the same engine, counted together with the core barriers;
    /// `pipe` is the kernel's `pipe_id`.
    SendRecv = "sendrecv" {
        dst: View => Write,
        src: View => Read,
        pipe: u8 => Attr,
    }
}

impl OpKind {
    /// A plain `dma_copy` of `src` into `dst`: no accumulation, faults out
    /// of bounds, descriptor mode and priority left to the compiler.
    pub fn dma_copy(dst: View, src: View) -> OpKind {
        OpKind::DmaCopy {
            dst,
            src,
            accumulate: false,
            dge: None,
            oob: OobMode::Error,
            priority: None,
        }
    }

    /// True for the register ops.
    pub fn is_register_op(&self) -> bool {
        matches!(
            self,
            OpKind::RegAlloc { .. }
                | OpKind::RegMove { .. }
                | OpKind::RegAlu { .. }
                | OpKind::RegLoad { .. }
                | OpKind::RegStore { .. }
        )
    }

    /// True for the DMA ops.
    pub fn is_dma(&self) -> bool {
        matches!(self, OpKind::DmaCopy { .. } | OpKind::DmaTranspose { .. })
    }

    /// The hidden engine state the op reads or writes: accumulator
    /// registers (isa.md §2.5), random generators and the cores' barrier
    /// pairing. Ops sharing a state must keep their program order.
    /// `engine` is the op's chosen engine; with `None`, every state the op
    /// could touch is listed.
    pub fn engine_state(&self, engine: Option<Engine>) -> Vec<EngineState> {
        match self {
            OpKind::Activation { reduce_cmd, .. } | OpKind::Activate2 { reduce_cmd, .. } => {
                if *reduce_cmd == ReduceCmd::Idle {
                    Vec::new()
                } else {
                    vec![EngineState::ScalarAccumulators]
                }
            }
            OpKind::ActivationReduce { .. } => vec![EngineState::ScalarAccumulators],
            OpKind::TensorScalarReduce { .. }
            | OpKind::TensorScalarCumulative { .. }
            | OpKind::Exponential { .. }
            | OpKind::RangeSelect { .. }
            | OpKind::SelectReduce { .. } => vec![EngineState::VectorAccumulators],
            OpKind::Rand2 { .. } | OpKind::Dropout { .. } | OpKind::SetRngSeed { .. } => {
                vec![EngineState::VectorRng]
            }
            OpKind::Rng { .. } => match engine {
                Some(Engine::GpSimd) => vec![EngineState::GpSimdRng],
                Some(_) => vec![EngineState::VectorRng],
                None => vec![EngineState::VectorRng, EngineState::GpSimdRng],
            },
            OpKind::CoreBarrier { .. } | OpKind::SendRecv { .. } => vec![EngineState::CoreSync],
            _ => Vec::new(),
        }
    }
}

/// Hidden per-engine state that orders the ops using it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineState {
    /// The ScalarE per-partition accumulators.
    ScalarAccumulators,
    /// The VectorE per-partition accumulators.
    VectorAccumulators,
    /// The VectorE random generators.
    VectorRng,
    /// The GpSimd random generators.
    GpSimdRng,
    /// The pairing of `core_barrier`s and `sendrecv`s with the other
    /// core's: they pair by their rank in each core's program order, so
    /// they keep it (two barriers on different data reordered on one core
    /// would each pair with the wrong one).
    CoreSync,
}

/// One run-time operation with its scheduling information.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    /// The engine that runs it; `None` lets the backend choose among
    /// `kind.engines()`.
    pub engine: Option<Engine>,
    /// The user's `name=`.
    pub name: Option<String>,
    /// The static loop iteration it was created in.
    pub loop_ctx: LoopCtx,
    /// Explicit scheduling edges: this op runs after each listed op
    /// (`depends_on`, `with_schedule`). Each listed op precedes it in
    /// program order.
    pub depends_on: Vec<Handle<Op>>,
    /// The `no_reorder` block it was created in.
    pub no_reorder: Option<NoReorderGroup>,
}

impl Entity for Op {
    const PREFIX: &'static str = "op";
}

impl Op {
    /// An op with no engine choice, name or scheduling edges, outside loops.
    pub fn new(kind: OpKind) -> Op {
        Op {
            kind,
            engine: None,
            name: None,
            loop_ctx: LoopCtx::TOP,
            depends_on: Vec::new(),
            no_reorder: None,
        }
    }

    /// Every view the op reads or writes, in field order; index views of
    /// indirect operands follow their operand as reads.
    pub fn accesses(&self) -> Vec<Access<'_>> {
        let mut out = Vec::new();
        self.kind.for_each_field(&mut |field, role, value| {
            if role == Role::Attr {
                return;
            }
            for view in value.views() {
                push_view(&mut out, field, role, view, false);
            }
        });
        out
    }

    /// Points every view of storage `from` (index views of indirect
    /// operands included) at storage `to`, keeping offsets and patterns;
    /// returns how many views changed. A pass that gives part of a
    /// storage's life to another storage of the same shape uses it.
    pub fn retarget(&mut self, from: Handle<Storage>, to: Handle<Storage>) -> usize {
        fn go(view: &mut View, from: Handle<Storage>, to: Handle<Storage>) -> usize {
            let mut n = 0;
            if view.storage == from {
                view.storage = to;
                n += 1;
            }
            match &mut view.indirect {
                Some(Indirection::Rows { index } | Indirection::Columns { index }) => {
                    n + go(index, from, to)
                }
                None => n,
            }
        }
        let mut n = 0;
        self.kind.for_each_field_mut(&mut |_, role, value| {
            if role == Role::Attr {
                return;
            }
            for view in value.views_mut() {
                n += go(view, from, to);
            }
        });
        n
    }

    /// The views the op reads (the read set for dependency analysis).
    pub fn read_set(&self) -> Vec<&View> {
        self.accesses()
            .into_iter()
            .filter(|a| a.role == Role::Read)
            .map(|a| a.view)
            .collect()
    }

    /// The views the op writes (the write set for dependency analysis).
    pub fn write_set(&self) -> Vec<&View> {
        self.accesses()
            .into_iter()
            .filter(|a| a.role == Role::Write)
            .map(|a| a.view)
            .collect()
    }

    /// Registers the op reads: register operands and the dynamic offsets
    /// of its views.
    pub fn reg_reads(&self) -> Vec<RegHandle> {
        let mut out = Vec::new();
        self.kind.for_each_field(&mut |_, role, value| {
            if role == Role::Read {
                out.extend(value.registers());
            }
            for view in value.views() {
                out.extend(view.registers());
            }
        });
        out
    }

    /// Registers the op writes.
    pub fn reg_writes(&self) -> Vec<RegHandle> {
        let mut out = Vec::new();
        self.kind.for_each_field(&mut |_, role, value| {
            if role == Role::Write {
                out.extend(value.registers());
            }
        });
        out
    }
}

fn push_view<'a>(
    out: &mut Vec<Access<'a>>,
    field: &'static str,
    role: Role,
    view: &'a View,
    is_index: bool,
) {
    out.push(Access {
        field,
        role,
        view,
        is_index,
    });
    if let Some(ind) = &view.indirect {
        push_view(out, field, Role::Read, ind.index(), true);
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

#[cfg(test)]
mod engine_tests {
    use super::OpKind;

    /// The instructions no op becomes directly: control flow (dynamic
    /// loops are regions here), `reg_set` (from `reg_alloc`), and the
    /// gather and scatter the backend makes of an indirect `dma_copy`.
    const MACHINE_ONLY: &[&str] = &[
        "dma_gather",
        "dma_scatter",
        "reg_set",
        "branch",
        "jump",
        "label",
        "nop",
    ];

    /// Every op names an instruction of `nkic_isa`, whose table gives its
    /// engines (`reg_alloc` takes `reg_set`'s), with the same fields in
    /// the same order; and every instruction is an op or machine-only. An
    /// instruction added to one table and not the other, or whose fields
    /// differ between them, fails here.
    #[test]
    fn ops_and_instructions_agree() {
        let mut wrong = Vec::new();
        for &m in OpKind::MNEMONICS {
            if m == "reg_alloc" {
                continue;
            }
            if nkic_isa::Op::engines_of(m).is_none_or(<[_]>::is_empty) {
                wrong.push(format!(
                    "op `{m}` has no instruction with engines in nkic_isa"
                ));
            } else if OpKind::field_names(m) != nkic_isa::Op::field_names(m) {
                wrong.push(format!(
                    "op `{m}` has fields {:?}, its instruction {:?}",
                    OpKind::field_names(m),
                    nkic_isa::Op::field_names(m)
                ));
            }
        }
        for &m in nkic_isa::Op::MNEMONICS {
            if !OpKind::MNEMONICS.contains(&m) && !MACHINE_ONLY.contains(&m) {
                wrong.push(format!("instruction `{m}` has no op"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert_eq!(
            nkic_isa::Op::engines_of("reg_set"),
            Some(
                OpKind::RegAlloc {
                    dst: crate::kernel::RegHandle::from_index(0).expect("handle"),
                    init: None,
                }
                .engines()
            )
        );
    }
}

#[cfg(test)]
mod tests {
    use nkic_isa::DType;

    use super::*;
    use crate::view::ViewDim;

    #[test]
    fn retarget_moves_every_view_of_a_storage_and_nothing_else() {
        let a = Handle::<Storage>::from_index(0).expect("handle");
        let b = Handle::<Storage>::from_index(1).expect("handle");
        let c = Handle::<Storage>::from_index(2).expect("handle");
        let view = |t| {
            View::new(
                t,
                DType::F32,
                0,
                &[ViewDim::new(4, 128), ViewDim::new(1, 4)],
            )
        };
        let mut op = Op::new(OpKind::TensorTensor {
            dst: view(a),
            src0: view(a),
            src1: view(b),
            op: nkic_isa::AluOp::Add,
        });
        assert_eq!(op.retarget(a, c), 2);
        let storages: Vec<_> = op.accesses().iter().map(|x| x.view.storage).collect();
        assert_eq!(storages, [c, c, b]);
        assert_eq!(op.retarget(a, c), 0);
    }
}
