//! The instruction set: one declarative table of every instruction, and the
//! `Instruction` header (semaphore waits and signals, line-table entry).
//!
//! The instruction table below is the single place an instruction is
//! defined. For each instruction it gives the Rust variant, the `.nkasm`
//! mnemonic, the engines that may execute it, the oldest target that has
//! it, and its fields in order with their types and roles (`read`, `write`
//! or `attr`). From the table `instructions!` generates one struct per
//! instruction (`insn::TensorCopy { dst, src }`, as Cranelift's
//! instruction formats), the `Op` enum whose variant of the same name
//! carries it, the mnemonic and engine tables, operand discovery (`Op::operands`, used by
//! the verifier, the cost model and the simulator's sanitizers), and the
//! field walk and field parser that the printer and assembler share.
//! Exact semantics of every instruction are documented in `docs/isa.md`.
//!
//! The table is the macro [`instruction_table!`](crate::instruction_table),
//! which hands its entries to a generator: `instructions!` here, and
//! `nkic-ir`'s, which makes the tile IR's op of every instruction with the
//! same fields (views for access patterns). Two annotations are for that
//! one:
//! * `machine` after the target marks an instruction the tile IR has no op
//!   for (control flow, the register instructions, whose IR ops name
//!   virtual registers, and the gather and scatter a `dma_copy` becomes);
//! * `=> Attr(open: choice)` marks a field the IR may leave open (`None`)
//!   for the compiler to decide; lowering asks its `choice`.
//!
//! One more annotation says how an operand's partitions or rows follow
//! another field (its [`Layout`], in `Operand::layout` and
//! `Op::layouts_of`): `=> Read [mx_scale_of: data]` marks an MX scale
//! operand, `=> Read [indexed_by: index]` the indexed side of a gather or
//! scatter. The verifier's placement and MX scale rules, the simulator's
//! footprints and race log, and the backend's partition pinning read it.
//!
//! Conventions of the fields:
//! * `dst` is always the first field and the (main) output.
//! * `src`/`src0`/`src1` are the main inputs; they are read in row-major
//!   order of their free dims, so only P and F must agree with `dst`.
//! * `Scalar` fields are an fp32 immediate or a `(P,1)` vector.
//! * Flags default to `false`, `reduce_cmd` to `idle`, optional fields to
//!   absent; these defaults are omitted from the text.

use std::fmt;

use crate::ap::{AccessPattern, Dim, Fp32, Imm, Reg, RegOrImm, Scalar};
use crate::engine::Engine;
use crate::enums::{
    ActFunc, AluOp, BranchCond, DgeMode, MatmulPerfMode, OobMode, ReduceCmd, RegAluOp,
};
use crate::field::{FieldParse, FieldValue, Names};
use crate::program::{LineId, SemId};
use crate::target::Target;

/// A branch target within one queue's stream, defined by `Op::Label`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(pub u32);

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0)
    }
}

/// What an instruction (or a tile-IR op) does with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// An input: its access patterns (views) and registers are read.
    Read,
    /// An output: its access patterns (views) and registers are written.
    Write,
    /// A parameter that is neither memory nor a register.
    Attr,
}

/// How an access-pattern field's partitions or rows follow another
/// field of the same instruction, beyond what its own pattern says (the
/// table's `[mx_scale_of: …]` and `[indexed_by: …]` annotations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// The pattern says everything.
    Plain,
    /// An MX scale operand of the named data operand (isa.md §6.2): it
    /// starts at offset 0, 4, 8 or 12 of the data's first quadrant and
    /// holds 4 rows per 32-partition quadrant of the data, so its
    /// partitions move with the data's.
    MxScaleOf(&'static str),
    /// The indexed side of a gather or scatter: the rows it touches are
    /// chosen at run time by the named index operand, so its pattern
    /// gives one row's extent.
    IndexedBy(&'static str),
}

/// One access pattern an instruction touches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operand<'a> {
    /// The field it comes from (`dst`, `src`, `bias`, …).
    pub field: &'static str,
    pub role: Role,
    /// How its partitions or rows follow another field's.
    pub layout: Layout,
    pub ap: &'a AccessPattern,
}

/// Where the assembler gets field text from; implemented by the assembler
/// over one instruction line.
pub(crate) trait FieldSource<'a> {
    /// Removes and returns the text of field `name` with its byte range.
    fn take(&mut self, name: &'static str) -> Option<(&'a str, std::ops::Range<u32>)>;
    /// Records an error at a byte range.
    fn error(&mut self, span: std::ops::Range<u32>, message: String);
    /// Records a missing required field.
    fn missing(&mut self, name: &'static str);
    /// The tensor names for access patterns.
    fn names(&self) -> &Names;
}

/// Reads one field from `src`, recording errors there.
fn take_field<'a, T: FieldParse>(src: &mut dyn FieldSource<'a>, name: &'static str) -> Option<T> {
    match src.take(name) {
        Some((text, span)) => match T::parse_text(text, src.names()) {
            Ok(v) => Some(v),
            Err(msg) => {
                src.error(span, format!("bad `{name}`: {msg}"));
                None
            }
        },
        None => match T::omitted() {
            Some(v) => Some(v),
            None => {
                src.missing(name);
                None
            }
        },
    }
}

/// A field's [`Layout`] from its table annotation (none, or
/// `[mx_scale_of: data]` / `[indexed_by: index]`).
macro_rules! field_layout {
    () => {
        Layout::Plain
    };
    (mx_scale_of $of:ident) => {
        Layout::MxScaleOf(stringify!($of))
    };
    (indexed_by $of:ident) => {
        Layout::IndexedBy(stringify!($of))
    };
}

macro_rules! instructions {
    ($(
        $(#[$meta:meta])*
        $variant:ident = $mnemonic:literal, [$($engine:ident),+], $since:ident $(, $machine:ident)? {
            $( $(#[$fmeta:meta])* $field:ident : $fty:ty => $role:ident $(( open: $choice:ident ))? $([ $layout:ident : $of:ident ])? ),* $(,)?
        }
    )*) => {
        /// One struct per instruction: its operands and parameters, in
        /// table order (the payload of its [`Op`] variant, of the same name).
        pub mod insn {
            use super::*;
            $(
                $(#[$meta])*
                #[derive(Clone, Debug, PartialEq)]
                pub struct $variant { $( $(#[$fmeta])* pub $field: $fty ),* }
            )*
        }

        $(
            impl insn::$variant {
                /// The `.nkasm` mnemonic.
                pub const MNEMONIC: &'static str = $mnemonic;
                /// The engines that may execute the instruction.
                pub const ENGINES: &'static [Engine] = &[$(Engine::$engine),+];
                /// The oldest target that has the instruction.
                pub const SINCE: Target = Target::$since;
            }
        )*

        /// One instruction's operation and operands (see `docs/isa.md`).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Op {
            $(
                $(#[$meta])*
                $variant(insn::$variant),
            )*
        }

        impl Op {
            /// Every mnemonic, in table order.
            pub const MNEMONICS: &'static [&'static str] = &[$($mnemonic),*];

            /// The `.nkasm` mnemonic (the `nki.isa` name where there is one).
            pub fn mnemonic(&self) -> &'static str {
                match self {
                    $( Op::$variant(_) => insn::$variant::MNEMONIC, )*
                }
            }

            /// The engines that may execute this instruction.
            pub fn engines(&self) -> &'static [Engine] {
                match self {
                    $( Op::$variant(_) => insn::$variant::ENGINES, )*
                }
            }

            /// The oldest target that has this instruction.
            pub fn since(&self) -> Target {
                match self {
                    $( Op::$variant(_) => insn::$variant::SINCE, )*
                }
            }

            /// The engines that may execute the instruction `mnemonic`:
            /// how the IR and the API take engines from this table.
            pub fn engines_of(mnemonic: &str) -> Option<&'static [Engine]> {
                match mnemonic {
                    $( $mnemonic => Some(insn::$variant::ENGINES), )*
                    _ => None,
                }
            }

            /// The oldest target that has the instruction `mnemonic`.
            pub fn since_of(mnemonic: &str) -> Option<Target> {
                match mnemonic {
                    $( $mnemonic => Some(insn::$variant::SINCE), )*
                    _ => None,
                }
            }

            /// The layout of every field of this instruction, in table order.
            fn layouts(&self) -> &'static [Layout] {
                match self {
                    $( Op::$variant(_) => &[$( field_layout!($($layout $of)?) ),*], )*
                }
            }

            /// The layout of every field of the instruction `mnemonic`, in
            /// table order.
            pub fn layouts_of(mnemonic: &str) -> Option<&'static [Layout]> {
                match mnemonic {
                    $( $mnemonic => Some(&[$( field_layout!($($layout $of)?) ),*]), )*
                    _ => None,
                }
            }

            /// Visits every field in table order with its name and role.
            pub fn for_each_field<'s>(&'s self, f: &mut dyn FnMut(&'static str, Role, &'s dyn FieldValue)) {
                match self {
                    $( Op::$variant(insn::$variant { $($field),* }) => {
                        $( f(stringify!($field), Role::$role, $field); )*
                    } )*
                }
            }

            /// A random instruction of table entry `index % MNEMONICS.len()`
            /// (tests only; see `random.rs`).
            #[cfg(test)]
            pub(crate) fn random(index: usize, rng: &mut crate::random::Rng) -> Op {
                let mut i = index % Op::MNEMONICS.len();
                $(
                    if i == 0 {
                        return Op::$variant(insn::$variant { $( $field: <$fty as crate::random::RandomField>::random(rng) ),* });
                    }
                    i -= 1;
                )*
                unreachable!("the index was reduced modulo the table size: {i}")
            }

            /// The names of the fields of the instruction `mnemonic`, in order.
            pub fn field_names(mnemonic: &str) -> Option<&'static [&'static str]> {
                match mnemonic {
                    $( $mnemonic => Some(&[$(stringify!($field)),*]), )*
                    _ => None,
                }
            }

            /// Parses the fields of instruction `mnemonic`; `None` after
            /// recording errors in `src`, or when the mnemonic is unknown
            /// (nothing recorded).
                        pub(crate) fn parse_fields<'a>(mnemonic: &str, src: &mut dyn FieldSource<'a>) -> Option<Op> {
                match mnemonic {
                    $( $mnemonic => {
                        $( let $field = take_field::<$fty>(src, stringify!($field)); )*
                        Some(Op::$variant(insn::$variant { $( $field: $field? ),* }))
                    } )*
                    _ => None,
                }
            }
        }
    };
}

/// The instruction table: `instruction_table!(generator args…)` expands to
/// `generator! { args… entries… }`.
///
/// `instructions!` makes the machine's `Op` of it here, and `nkic-ir`
/// makes the tile IR's `OpKind` of it (see the module doc for the entry
/// syntax, the `machine` marker and `(open: choice)` fields).
#[macro_export]
macro_rules! instruction_table {
    ($generator:ident $($args:tt)*) => { $generator! { $($args)*
    // ------------------------------------------------------------ data movement

    /// `dst = src` element by element in row-major order, casting through
    /// fp32 when dtypes differ; with `accumulate`, `dst = dst + src` in fp32.
    DmaCopy = "dma_copy", [Dma], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        accumulate: bool => Attr,
        dge: DgeMode => Attr(open: dge),
        oob: OobMode => Attr,
        /// QoS level 0–3 (v4), lower is served first.
        priority: Option<u8> => Attr,
    }
    /// `dst = transpose(src)` with the fixed permutation of src's rank.
    DmaTranspose = "dma_transpose", [Dma], Trn2 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        dge: DgeMode => Attr(open: dge),
    }
    /// Gathers HBM rows: row `w` of `src` is row `index[w]` of the tensor;
    /// with `accumulate`, adds them into `dst`.
    DmaGather = "dma_gather", [Dma], Trn1, machine {
        dst: AccessPattern => Write,
        src: AccessPattern => Read [indexed_by: index],
        index: AccessPattern => Read,
        accumulate: bool => Attr,
        oob: OobMode => Attr,
    }
    /// Scatters into HBM rows: row `w` of `dst` is row `index[w]` of the
    /// tensor; with `accumulate`, adds into it.
    DmaScatter = "dma_scatter", [Dma], Trn1, machine {
        dst: AccessPattern => Write [indexed_by: index],
        src: AccessPattern => Read,
        index: AccessPattern => Read,
        accumulate: bool => Attr,
        oob: OobMode => Attr,
    }
    /// `dst = src` with a dtype conversion through fp32 when dtypes differ.
    TensorCopy = "tensor_copy", [Vector, Scalar, GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
    }
    /// Fills `dst` with `value`.
    Memset = "memset", [Vector, GpSimd], Trn1 {
        dst: AccessPattern => Write,
        value: Imm => Attr,
    }
    /// `dst[p, i…] = offset + p·channel_multiplier + Σ i_k·step_k` in int32.
    Iota = "iota", [GpSimd], Trn1 {
        dst: AccessPattern => Write,
        pattern: Vec<Dim> => Attr,
        offset: i32 => Attr,
        channel_multiplier: i32 => Attr,
    }

    // ------------------------------------------------------------ Tensor engine

    /// `dst[m, n] (=|+=) Σ_k stationary[k, m] · moving[k, n]`.
    NcMatmul = "nc_matmul", [Tensor], Trn1 {
        dst: AccessPattern => Write,
        stationary: AccessPattern => Read,
        moving: AccessPattern => Read,
        accumulate: bool => Attr(open: accumulate),
        transpose: bool => Attr,
        perf_mode: MatmulPerfMode => Attr,
        stationary_onezero: bool => Attr,
        moving_onezero: bool => Attr,
        /// `[start_row, start_col]` of the PE tile.
        tile_position: Option<[u32; 2]> => Attr,
        /// `[row_size, col_size]` of the PE tile.
        tile_size: Option<[u32; 2]> => Attr,
    }
    /// The microscaled matmul of packed x4 operands with e8m0 scales (v4).
    NcMatmulMx = "nc_matmul_mx", [Tensor], Trn3 {
        dst: AccessPattern => Write,
        stationary: AccessPattern => Read,
        moving: AccessPattern => Read,
        stationary_scale: AccessPattern => Read [mx_scale_of: stationary],
        moving_scale: AccessPattern => Read [mx_scale_of: moving],
        accumulate: bool => Attr(open: accumulate),
        tile_position: Option<[u32; 2]> => Attr,
        tile_size: Option<[u32; 2]> => Attr,
    }
    /// `dst[f, p] = src[p, f]` (free dims of src flattened).
    NcTranspose = "nc_transpose", [Tensor, Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
    }

    // ------------------------------------------------------------ Scalar engine

    /// `dst = func(src · scale + bias)`, optionally reduced into the ScalarE
    /// accumulators.
    Activation = "activation", [Scalar], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        func: ActFunc => Attr,
        scale: Scalar => Read,
        bias: Option<Scalar> => Read,
        reduce_op: Option<AluOp> => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_res: Option<AccessPattern> => Write,
    }
    /// `activation` with `reduce_cmd=reset_reduce` and a mandatory read-out.
    ActivationReduce = "activation_reduce", [Scalar], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        func: ActFunc => Attr,
        scale: Scalar => Read,
        bias: Option<Scalar> => Read,
        reduce_op: AluOp => Attr,
        reduce_res: AccessPattern => Write,
    }
    /// Three-stage ScalarE pipeline: two ALU ops, a function, a reduction (v4).
    Activate2 = "activate2", [Scalar], Trn3 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
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
        reduce_res: Option<AccessPattern> => Write,
    }

    // ------------------------------------------------------------ Vector engine (and friends)

    /// `dst = src0 op src1` element-wise.
    TensorTensor = "tensor_tensor", [Vector, GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src0: AccessPattern => Read,
        src1: AccessPattern => Read,
        op: AluOp => Attr,
    }
    /// `dst = (src op0 operand0) op1 operand1`.
    TensorScalar = "tensor_scalar", [Vector, Scalar, GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        op0: AluOp => Attr,
        operand0: Option<Scalar> => Read,
        reverse0: bool => Attr,
        op1: Option<AluOp> => Attr,
        operand1: Option<Scalar> => Read,
        reverse1: bool => Attr,
    }
    /// `dst = (src op0 operand0) op1 src1`.
    ScalarTensorTensor = "scalar_tensor_tensor", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        op0: AluOp => Attr,
        operand0: Scalar => Read,
        reverse0: bool => Attr,
        op1: AluOp => Attr,
        src1: AccessPattern => Read,
        reverse1: bool => Attr,
    }
    /// `dst = src op0 operand0` plus a row reduction into the Vector accumulators.
    TensorScalarReduce = "tensor_scalar_reduce", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        op0: AluOp => Attr,
        operand0: Option<Scalar> => Read,
        reduce_op: AluOp => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_init: Option<Scalar> => Read,
        reduce_res: Option<AccessPattern> => Write,
        reduce_res_negate: bool => Attr,
    }
    /// Running `reg = op1(op0(src[i], imm0), reg); dst[i] = reg` per partition.
    TensorScalarCumulative = "tensor_scalar_cumulative", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        op0: AluOp => Attr,
        imm0: Scalar => Read,
        op1: AluOp => Attr,
        imm1: Option<Scalar> => Read,
        reduce_cmd: ReduceCmd => Attr,
    }
    /// Reduces the last `last_dims` free dims of `src` with `op`.
    TensorReduce = "tensor_reduce", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        op: AluOp => Attr,
        last_dims: u8 => Attr,
        negate: bool => Attr,
    }
    /// Reduces across partitions into partition row 0 of `dst`.
    TensorPartitionReduce = "tensor_partition_reduce", [GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        op: AluOp => Attr,
    }
    /// `r[i] = op1(op0(src0[i], r[i-1]), src1[i])`, `r[-1] = initial`.
    TensorTensorScan = "tensor_tensor_scan", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src0: AccessPattern => Read,
        src1: AccessPattern => Read,
        initial: Scalar => Read,
        op0: AluOp => Attr,
        op1: AluOp => Attr,
        reverse0: bool => Attr,
        reverse1: bool => Attr,
    }
    /// `dst[i] = src[i]` where `predicate[i] != 0` (xor `reverse_pred`).
    TensorCopyPredicated = "tensor_copy_predicated", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        predicate: AccessPattern => Read,
        reverse_pred: bool => Attr,
    }
    /// `dst = 1 / src` in fp32.
    Reciprocal = "reciprocal", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
    }
    /// `dst = exp(src - max_value)`, optionally summed into the accumulators (v4).
    Exponential = "exponential", [Vector], Trn3 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        max_value: Scalar => Read,
        reduce_cmd: ReduceCmd => Attr,
        reduce_init: Option<Scalar> => Read,
        reduce_res: Option<AccessPattern> => Write,
    }
    /// Keeps `src` where the free index is within two bounds, else `on_false`.
    RangeSelect = "range_select", [Vector], Trn2 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        cmp0: AluOp => Attr,
        bound0: Scalar => Read,
        cmp1: AluOp => Attr,
        bound1: Scalar => Read,
        range_start: i32 => Attr,
        on_false: Fp32 => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_res: Option<AccessPattern> => Write,
    }
    /// `dst = predicate ? on_true : on_false` with an optional max reduction.
    SelectReduce = "select_reduce", [Vector], Trn1 {
        dst: AccessPattern => Write,
        predicate: AccessPattern => Read,
        on_true: AccessPattern => Read,
        on_false: Scalar => Read,
        reverse_pred: bool => Attr,
        reduce_cmd: ReduceCmd => Attr,
        reduce_res: Option<AccessPattern> => Write,
    }
    /// The 8 largest values per partition, descending.
    Max8 = "max8", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
    }
    /// Index of the first occurrence of each of 8 values per partition.
    FindIndex8 = "nc_find_index8", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        vals: AccessPattern => Read,
    }
    /// Replaces the first occurrence of each of 8 values with `imm`.
    MatchReplace8 = "nc_match_replace8", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        vals: AccessPattern => Read,
        imm: Fp32 => Attr,
        dst_idx: Option<AccessPattern> => Write,
    }
    /// Per-partition count/mean/M2 of even and odd free positions.
    BnStats = "bn_stats", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
    }
    /// Combines `(count, mean, M2)` triples into mean and variance.
    BnAggr = "bn_aggr", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
    }
    /// Quantizes 16-bit `src` into packed MXFP8 `dst` and e8m0 scales (v4).
    QuantizeMx = "quantize_mx", [Vector], Trn3 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        dst_scale: AccessPattern => Write [mx_scale_of: dst],
    }
    /// Permutes partitions within each 32-partition quadrant.
    StreamShuffle = "nc_stream_shuffle", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        mask: Vec<u8> => Attr,
    }

    /// Random 32-bit values from the engine's per-lane XORWOW generators,
    /// truncated to `dst`'s integer dtype.
    Rng = "rng", [Vector, GpSimd], Trn1 {
        dst: AccessPattern => Write,
    }
    /// Uniform random floats in `[min, max)` from the Vector generators (v4).
    Rand2 = "rand2", [Vector], Trn3 {
        dst: AccessPattern => Write,
        min: Scalar => Read,
        max: Scalar => Read,
    }
    /// Zeroes each element with probability `prob` (no rescaling).
    Dropout = "dropout", [Vector], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        prob: Scalar => Read,
    }
    /// Seeds every lane of the Vector generators from one 32-bit value.
    SetRngSeed = "set_rng_seed", [Vector], Trn1 {
        src: AccessPattern => Read,
    }

    // ------------------------------------------------------------ GpSimd engine

    /// `dst = cmp(affine value, 0) ? src : on_false`.
    AffineSelect = "affine_select", [GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        pattern: Vec<Dim> => Attr,
        offset: i32 => Attr,
        channel_multiplier: i32 => Attr,
        cmp: AluOp => Attr,
        on_false: Fp32 => Attr,
    }
    /// Gathers free-dim positions shared by each 16-partition core.
    LocalGather = "local_gather", [GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        index: AccessPattern => Read,
        elem_per_idx: u32 => Attr,
        valid_indices: Option<u32> => Attr,
    }
    /// `dst[p, j] = src_flat[p, indices[p, j]]`.
    NGather = "nc_n_gather", [GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        indices: AccessPattern => Read,
    }
    /// Segment start/end indices of sorted segment ids.
    SequenceBounds = "sequence_bounds", [GpSimd], Trn1 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
    }
    /// Positions of nonzero elements and their count, per GpSimd core.
    NonzeroWithCount = "nonzero_with_count", [GpSimd], Trn2 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        index_offset: i32 => Attr,
        padding: i32 => Attr,
    }

    // ------------------------------------------------------------ control

    /// `dst = value`.
    RegSet = "reg_set", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        dst: Reg => Attr,
        value: i32 => Attr,
    }
    /// `dst = src`.
    RegMove = "reg_move", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        dst: Reg => Attr,
        src: Reg => Attr,
    }
    /// `dst = a op b` on 32-bit integers.
    RegAlu = "reg_alu", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        dst: Reg => Attr,
        op: RegAluOp => Attr,
        a: Reg => Attr,
        b: RegOrImm => Attr,
    }
    /// `dst = ` the single element of `src`, extended to 32 bits.
    RegLoad = "reg_load", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        dst: Reg => Attr,
        src: AccessPattern => Read,
    }
    /// Writes the low bits of register `src` to the single element of `dst`.
    RegStore = "reg_store", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        dst: AccessPattern => Write,
        src: Reg => Attr,
    }
    // `$crate::Label` is the branch target type: in `insn`, `Label` is the
    // instruction below.
    /// Jumps to `target` when `a cond b`.
    Branch = "branch", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        cond: BranchCond => Attr,
        a: Reg => Attr,
        b: RegOrImm => Attr,
        target: $crate::Label => Attr,
    }
    /// Jumps to `target`.
    Jump = "jump", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        target: $crate::Label => Attr,
    }
    /// Defines `label` at this point of the stream (prints as `L3:`).
    Label = "label", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {
        label: $crate::Label => Attr,
    }
    /// Does nothing; carries waits and signals.
    Nop = "nop", [Tensor, Vector, Scalar, GpSimd, Sync, Dma], Trn1, machine {}
    /// A barrier between the cores of a multi-core launch (`nisa.core_barrier`,
    /// LNC=2): the n-th `core_barrier` of a queue on one core completes only
    /// when the n-th `core_barrier` of the same queue on every other core has
    /// issued; everything before either barrier happens before the
    /// completion of both. `data` names the shared HBM tensor synchronised
    /// on; it moves no data, but counts as written so that a compiler's
    /// memory dependencies order earlier accesses of it before the barrier
    /// and later ones after it.
    CoreBarrier = "core_barrier", [Tensor, Vector, Scalar, GpSimd, Sync], Trn2 {
        data: Option<AccessPattern> => Write,
    }
    /// An exchange between the cores of a multi-core launch
    /// (`nisa.sendrecv`, LNC=2): `src` of this core goes to `dst` of the
    /// other core and the other core's `src` arrives in this `dst`. Paired
    /// like `core_barrier` (same queue, same rank of paired instructions);
    /// each side's `src` is read when it arrives, `dst` written when both
    /// have. `pipe` is NKI's `pipe_id` (informational here).
    SendRecv = "sendrecv", [Tensor, Vector, Scalar, GpSimd, Sync], Trn2 {
        dst: AccessPattern => Write,
        src: AccessPattern => Read,
        pipe: u8 => Attr,
    }
    } };
}

instruction_table!(instructions);

impl Op {
    /// Every access pattern the instruction reads or writes, in field order.
    pub fn operands(&self) -> Vec<Operand<'_>> {
        let mut out = Vec::new();
        let mut layouts = self.layouts().iter();
        self.for_each_field(&mut |field, role, value| {
            let layout = *layouts.next().expect("one layout per field");
            if role != Role::Attr
                && let Some(ap) = value.access_pattern()
            {
                out.push(Operand {
                    field,
                    role,
                    layout,
                    ap,
                });
            }
        });
        out
    }

    /// `dma_copy` with every option at its default.
    pub fn dma_copy(dst: AccessPattern, src: AccessPattern) -> Op {
        Op::DmaCopy(insn::DmaCopy {
            dst,
            src,
            accumulate: false,
            dge: DgeMode::None,
            oob: OobMode::Error,
            priority: None,
        })
    }

    /// A plain `nc_matmul` (no transpose, perf mode or PE tiling).
    pub fn matmul(
        dst: AccessPattern,
        stationary: AccessPattern,
        moving: AccessPattern,
        accumulate: bool,
    ) -> Op {
        Op::NcMatmul(insn::NcMatmul {
            dst,
            stationary,
            moving,
            accumulate,
            transpose: false,
            perf_mode: MatmulPerfMode::None,
            stationary_onezero: false,
            moving_onezero: false,
            tile_position: None,
            tile_size: None,
        })
    }

    /// `activation` with scale 1, no bias and no reduction.
    pub fn activation(dst: AccessPattern, src: AccessPattern, func: ActFunc) -> Op {
        Op::Activation(insn::Activation {
            dst,
            src,
            func,
            scale: Scalar::imm(1.0),
            bias: None,
            reduce_op: None,
            reduce_cmd: ReduceCmd::Idle,
            reduce_res: None,
        })
    }

    /// `tensor_scalar` with one operator and its operand.
    pub fn tensor_scalar(
        dst: AccessPattern,
        src: AccessPattern,
        op0: AluOp,
        operand0: Scalar,
    ) -> Op {
        Op::tensor_scalar_then(dst, src, op0, operand0, None)
    }

    /// `tensor_scalar` with two operators and their operands:
    /// `(src op0 operand0) op1 operand1`.
    pub fn tensor_scalar2(
        dst: AccessPattern,
        src: AccessPattern,
        op0: AluOp,
        operand0: Scalar,
        op1: AluOp,
        operand1: Scalar,
    ) -> Op {
        Op::tensor_scalar_then(dst, src, op0, operand0, Some((op1, operand1)))
    }

    /// `tensor_scalar` with an optional second operator, nothing reversed.
    fn tensor_scalar_then(
        dst: AccessPattern,
        src: AccessPattern,
        op0: AluOp,
        operand0: Scalar,
        then: Option<(AluOp, Scalar)>,
    ) -> Op {
        let (op1, operand1) = then.unzip();
        Op::TensorScalar(insn::TensorScalar {
            dst,
            src,
            op0,
            operand0: Some(operand0),
            reverse0: false,
            op1,
            operand1,
            reverse1: false,
        })
    }

    /// True for the control instructions (registers, branches, labels, nop).
    pub fn is_control(&self) -> bool {
        matches!(
            self,
            Op::RegSet(_)
                | Op::RegMove(_)
                | Op::RegAlu(_)
                | Op::RegLoad(_)
                | Op::RegStore(_)
                | Op::Branch(_)
                | Op::Jump(_)
                | Op::Label(_)
                | Op::Nop(insn::Nop {})
                | Op::CoreBarrier(_)
        )
    }

    /// True for the instructions paired across the cores of a launch
    /// (`core_barrier`, `sendrecv`): the n-th of a queue on one core pairs
    /// with the n-th of the same queue on the other core.
    pub fn is_paired(&self) -> bool {
        matches!(self, Op::CoreBarrier(_) | Op::SendRecv(_))
    }

    /// True for the DMA instructions.
    pub fn is_dma(&self) -> bool {
        matches!(
            self,
            Op::DmaCopy(_) | Op::DmaTranspose(_) | Op::DmaGather(_) | Op::DmaScatter(_)
        )
    }
}

/// A wait on a semaphore: the instruction may not start before
/// `sem >= value (+ reg)`, where `reg` is read from the queue's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SemWait {
    pub sem: SemId,
    pub value: u32,
    pub reg: Option<Reg>,
}

/// One instruction of a queue's stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub op: Op,
    /// All must hold before the instruction starts.
    pub waits: Vec<SemWait>,
    /// Each listed semaphore is incremented by one when the instruction
    /// completes (a semaphore may be listed twice to add two).
    pub signals: Vec<SemId>,
    /// The source location, an index into `Program::line_table`.
    pub line: Option<LineId>,
}

impl Instruction {
    /// An instruction without waits, signals or source location.
    pub fn new(op: Op) -> Instruction {
        Instruction {
            op,
            waits: Vec::new(),
            signals: Vec::new(),
            line: None,
        }
    }

    /// Adds a wait `sem >= value`.
    pub fn wait(mut self, sem: SemId, value: u32) -> Instruction {
        self.waits.push(SemWait {
            sem,
            value,
            reg: None,
        });
        self
    }

    /// Adds a signal of `sem`.
    pub fn signal(mut self, sem: SemId) -> Instruction {
        self.signals.push(sem);
        self
    }

    /// Sets the line-table entry.
    pub fn at(mut self, line: LineId) -> Instruction {
        self.line = Some(line);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn mnemonics_are_unique_and_fields_start_with_dst() {
        let mut seen = std::collections::BTreeSet::new();
        for &m in Op::MNEMONICS {
            assert!(seen.insert(m), "duplicate mnemonic {m}");
            let fields = Op::field_names(m).unwrap_or_default();
            let control = matches!(
                m,
                "reg_set"
                    | "reg_move"
                    | "reg_alu"
                    | "reg_load"
                    | "reg_store"
                    | "branch"
                    | "jump"
                    | "label"
                    | "nop"
                    | "core_barrier"
                    | "set_rng_seed"
            );
            if !control {
                assert_eq!(fields.first(), Some(&"dst"), "{m}");
            }
        }
        assert!(Op::MNEMONICS.len() >= 45);
        assert_eq!(Op::field_names("nop"), Some(&[][..]));
        assert_eq!(Op::field_names("frobnicate"), None);
    }

    #[test]
    fn layouts_name_operands_of_their_instruction() {
        let mut rng = crate::random::Rng::new(7);
        let mut annotated = Vec::new();
        for (index, &m) in Op::MNEMONICS.iter().enumerate() {
            let layouts = Op::layouts_of(m).expect("every mnemonic has layouts");
            assert_eq!(layouts.len(), Op::field_names(m).unwrap().len(), "{m}");
            let op = Op::random(index, &mut rng);
            let operands = op.operands();
            for o in &operands {
                let of = match o.layout {
                    Layout::Plain => continue,
                    Layout::MxScaleOf(of) | Layout::IndexedBy(of) => of,
                };
                assert!(
                    operands
                        .iter()
                        .any(|d| d.field == of && d.layout == Layout::Plain),
                    "{m}: `{}` follows `{of}`, which is not a plain operand",
                    o.field
                );
                annotated.push((m, o.field, o.layout));
            }
        }
        assert_eq!(
            annotated,
            [
                ("dma_gather", "src", Layout::IndexedBy("index")),
                ("dma_scatter", "dst", Layout::IndexedBy("index")),
                (
                    "nc_matmul_mx",
                    "stationary_scale",
                    Layout::MxScaleOf("stationary")
                ),
                ("nc_matmul_mx", "moving_scale", Layout::MxScaleOf("moving")),
                ("quantize_mx", "dst_scale", Layout::MxScaleOf("dst")),
            ]
        );
    }

    #[test]
    fn operands_follow_the_table() {
        let v = |off| AccessPattern::sbuf(0, 128, off, &[Dim::new(1, 1)], DType::F32);
        let tile = |off| AccessPattern::sbuf(0, 128, off, &[Dim::new(1, 64)], DType::BF16);
        let op = Op::Activation(insn::Activation {
            dst: tile(0),
            src: tile(128),
            func: ActFunc::Exp,
            scale: Scalar::imm(0.5),
            bias: Some(Scalar::Vector(v(256))),
            reduce_op: Some(AluOp::Add),
            reduce_cmd: ReduceCmd::ResetReduce,
            reduce_res: Some(v(260)),
        });
        let ops = op.operands();
        let summary: Vec<_> = ops.iter().map(|o| (o.field, o.role, o.ap.offset)).collect();
        assert_eq!(
            summary,
            vec![
                ("dst", Role::Write, 0),
                ("src", Role::Read, 128),
                ("bias", Role::Read, 256),
                ("reduce_res", Role::Write, 260),
            ]
        );
        assert_eq!(op.engines(), &[Engine::Scalar]);
        assert_eq!(op.since(), Target::Trn1);
        assert!(!op.is_control());
        let built = Op::activation(tile(0), tile(128), ActFunc::Exp);
        assert_eq!(
            crate::text::print(&{
                let mut p = crate::program::Program::new(Target::Trn3);
                p.stream_mut(crate::engine::Queue::Scalar)
                    .push(Instruction::new(built));
                p
            }),
            ".target trn3\n\n.queue scalar\n  activation dst=sbuf[0:128]:bf16[1,64] src=sbuf[0:128]+128:bf16[1,64] func=exp scale=1.0\n"
        );
        let mx = Op::QuantizeMx(insn::QuantizeMx {
            dst: tile(0),
            src: tile(0),
            dst_scale: tile(0),
        });
        assert_eq!(mx.since(), Target::Trn3);
        assert!(Op::Nop(insn::Nop {}).is_control());
    }
}
