//! Ops: one per run-time operation, with typed operands.
//!
//! [`OpKind`] is made from `nkic_isa`'s instruction table
//! (`nkic_isa::instruction_table!`): every instruction not marked `machine`
//! is an op of the same variant name, mnemonic and fields, each field in
//! its [`IrForm`]: a [`View`] instead of an access pattern, the IR's
//! [`Scalar`], and `Option` where the table marks the field `(open: …)`,
//! a choice the compiler still has to make (`accumulate: None` on matmuls,
//! `dge: None` on DMAs). [`OpKind::to_instruction`] turns such an op back
//! into its instruction, asking a [`Lowering`] (the backend) for placed
//! views and open choices. The doc comments of those ops are the
//! instructions'.
//!
//! The IR's own ops are written here: the register ops, which name
//! virtual registers ([`RegHandle`]) and read or write them, and
//! `reg_alloc`, which defines one. Control-flow instructions do not exist
//! here (dynamic loops are regions). The ISA's `dma_gather`/`dma_scatter`
//! are a `dma_copy` whose `src`/`dst` view has row indirection
//! (`vector_offset`); the backend picks the instruction.
//!
//! From the whole list the `ops!` macro generates `OpKind`, the mnemonic
//! table, the field walk used for operand discovery ([`Op::accesses`]) and
//! by the printer, and the field parser used by the reader. An op's
//! engines are not written here: they are its instruction's in
//! `nkic_isa`'s table, found by mnemonic.
//!
//! Field roles: `Write` fields are outputs, `Read` fields inputs, `Attr`
//! fields parameters. A view's dynamic-offset register and an indirect
//! view's index tensor are always reads, whatever the field's role.

use std::fmt;

use nkic_isa::{
    AccessPattern, ActFunc, AluOp, DgeMode, Dim, Engine, Fp32, Imm, MatmulPerfMode, OobMode,
    ReduceCmd, RegAluOp,
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

/// What an op does with a field: the instruction table's roles, so an op
/// and its instruction agree.
pub use nkic_isa::Role;

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

/// The tile IR's form of a machine instruction's field type, and how the
/// backend turns it back ([`OpKind::to_instruction`]).
pub trait IrForm: Sized {
    /// The field's type in an op.
    type Ir;
    /// The machine form of `ir`.
    fn lower<L: Lowering>(ir: &Self::Ir, l: &L) -> Result<Self, L::Error>;
}

/// What [`OpKind::to_instruction`] asks the backend: the placed form of a
/// view, and the decisions the IR leaves open (`=> Attr(open: choice)` in
/// the instruction table).
pub trait Lowering {
    type Error;
    /// The access pattern of `view` at its placed address.
    fn view(&self, view: &View) -> Result<AccessPattern, Self::Error>;
    /// The descriptor mode of a DMA whose `dge` is left open.
    fn dge(&self) -> DgeMode;
    /// Whether a matmul whose `accumulate` is left open accumulates.
    fn accumulate(&self) -> bool;
}

impl IrForm for AccessPattern {
    type Ir = View;
    fn lower<L: Lowering>(ir: &View, l: &L) -> Result<AccessPattern, L::Error> {
        l.view(ir)
    }
}

impl IrForm for nkic_isa::Scalar {
    type Ir = Scalar;
    fn lower<L: Lowering>(ir: &Scalar, l: &L) -> Result<nkic_isa::Scalar, L::Error> {
        Ok(match ir {
            Scalar::Imm(v) => nkic_isa::Scalar::Imm(*v),
            Scalar::Vector(v) => nkic_isa::Scalar::Vector(l.view(v)?),
        })
    }
}

impl<T: IrForm> IrForm for Option<T> {
    type Ir = Option<T::Ir>;
    fn lower<L: Lowering>(ir: &Option<T::Ir>, l: &L) -> Result<Option<T>, L::Error> {
        ir.as_ref().map(|v| T::lower(v, l)).transpose()
    }
}

/// Field types that are the same in an op and its instruction.
macro_rules! same_form {
    ($($t:ty),* $(,)?) => {
        $(
            impl IrForm for $t {
                type Ir = $t;
                fn lower<L: Lowering>(ir: &$t, _: &L) -> Result<$t, L::Error> {
                    Ok(ir.clone())
                }
            }
        )*
    };
}

same_form!(
    bool,
    i32,
    u32,
    u8,
    Fp32,
    Imm,
    ActFunc,
    AluOp,
    ReduceCmd,
    OobMode,
    MatmulPerfMode,
    Vec<Dim>,
    Vec<u8>,
    [u32; 2],
);

/// An instruction field's type in the op: its [`IrForm`], or an `Option`
/// of it when the IR may leave it open.
macro_rules! ir_field {
    ($fty:ty) => { <$fty as IrForm>::Ir };
    ($fty:ty, $choice:ident) => { Option<$fty> };
}

/// An op's field `$field` lowered to its instruction's: through its
/// [`IrForm`], or, when open, the `Lowering`'s `$choice`.
macro_rules! lower_field {
    ($l:ident, $field:ident, $fty:ty) => {
        <$fty as IrForm>::lower($field, $l)?
    };
    ($l:ident, $field:ident, $fty:ty, $choice:ident) => {
        $field.unwrap_or_else(|| $l.$choice())
    };
}

/// Makes `OpKind` of the IR's own ops and of every instruction of
/// `nkic_isa`'s table not marked `machine` (with its fields in their
/// [`IrForm`]), and `OpKind::to_instruction` for the latter.
macro_rules! ir_ops {
    (@munch $l:ident [$($ops:tt)*] [$($lower:tt)*]) => {
        ops! { $($ops)* }

        impl OpKind {
            /// The instruction of an op that has one with the same fields
            /// (every op but the register ops): views placed and open
            /// choices decided by `l`.
            #[allow(clippy::redundant_closure_call)]
            pub fn to_instruction<L: Lowering>(&self, $l: &L) -> Option<Result<nkic_isa::Op, L::Error>> {
                match self {
                    $($lower)*
                    _ => None,
                }
            }
        }
    };
    (@munch $l:ident [$($ops:tt)*] [$($lower:tt)*]
        $(#[$meta:meta])*
        $variant:ident = $mnemonic:literal, [$($engine:ident),+], $since:ident, machine { $($body:tt)* }
        $($rest:tt)*
    ) => {
        ir_ops!(@munch $l [$($ops)*] [$($lower)*] $($rest)*);
    };
    (@munch $l:ident [$($ops:tt)*] [$($lower:tt)*]
        $(#[$meta:meta])*
        $variant:ident = $mnemonic:literal, [$($engine:ident),+], $since:ident {
            $( $(#[$fmeta:meta])* $field:ident : $fty:ty => $role:ident $(( open: $choice:ident ))? $([ $layout:ident : $of:ident ])? ),* $(,)?
        }
        $($rest:tt)*
    ) => {
        ir_ops!(@munch $l
            [$($ops)* $(#[$meta])* $variant = $mnemonic { $( $(#[$fmeta])* $field: ir_field!($fty $(, $choice)?) => $role ),* }]
            [$($lower)* OpKind::$variant { $($field),* } => Some((|| Ok(nkic_isa::Op::$variant(nkic_isa::insn::$variant {
                $( $field: lower_field!($l, $field, $fty $(, $choice)?) ),*
            })))()),]
            $($rest)*
        );
    };
    ([$($own:tt)*] $($table:tt)*) => {
        ir_ops!(@munch l [$($own)*] [] $($table)*);
    };
}

/// The table's expansion, where its type names are `nkic_isa`'s.
mod table {
    use super::*;
    use nkic_isa::Scalar;

    // The IR's own ops, then one per instruction of the table.
    nkic_isa::instruction_table!(ir_ops [
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
    ]);
}

pub use table::OpKind;

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

    /// True when the op adds into its destination instead of overwriting
    /// it: its `accumulate` field (the table's one name for a
    /// read-modify-write of the destination: DMAs, matmuls) is set. An open
    /// `accumulate` (a matmul's, decided by the backend) counts as unset.
    pub fn accumulates(&self) -> bool {
        let mut set = false;
        self.kind.for_each_field(&mut |field, _, value| {
            set |= field == "accumulate" && value.flag() == Some(true);
        });
        set
    }

    /// Every view the op reads or writes, in field order; index views of
    /// indirect operands follow their operand as reads.
    pub fn accesses(&self) -> Vec<Access<'_>> {
        let mut out = Vec::new();
        self.kind.for_each_field(&mut |field, role, value| {
            if role == Role::Attr {
                return;
            }
            if let Some(view) = value.view() {
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
            if let Some(view) = value.view_mut() {
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
            if let Some(view) = value.view() {
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

    /// Every op names an instruction of `nkic_isa`, whose table gives its
    /// engines (`reg_alloc` takes `reg_set`'s), with the same fields in
    /// the same order. The ops made from the table agree by construction;
    /// the IR's own register ops, whose fields differ from a `machine`
    /// instruction's, are held to it here.
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
