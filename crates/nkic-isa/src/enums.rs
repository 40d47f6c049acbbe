//! Small named enums of the instruction set: ALU operators, activation
//! functions, accumulator commands, DMA modes and register/branch operators.
//!
//! Every enum here has one spelling used by the `.nkasm` printer and
//! assembler (`name`/`from_name`), which is the NKI spelling where NKI has one
//! (`nl.add` prints as `add`, `nisa.reduce_cmd.reset_reduce` as
//! `reset_reduce`). The `named_enum!` macro keeps the variant list, the
//! spelling and the `ALL` table in one place.

use std::fmt;

/// Declares a fieldless enum with a stable text spelling per variant.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The spelling used in `.nkasm` text.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }

            /// The variant spelled `text`, if any.
            pub fn from_name(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// The operators of the Vector/Scalar/GpSimd ALUs (isa.md §2.3).
    ///
    /// Binary operators compute `lhs op rhs`; which operand is the lhs is
    /// decided by each instruction (`reverse*` flags). Unary operators
    /// (`invert`, `abs`, `square`, `relu`, `rsqrt`, `reciprocal`) ignore
    /// their second operand. `bypass` passes the lhs through unchanged, and
    /// `average` is only legal in `tensor_partition_reduce`.
    pub enum AluOp {
        Invert = "invert",
        BitwiseAnd = "bitwise_and",
        BitwiseOr = "bitwise_or",
        BitwiseXor = "bitwise_xor",
        LeftShift = "left_shift",
        RightShift = "right_shift",
        Add = "add",
        Subtract = "subtract",
        Multiply = "multiply",
        Maximum = "maximum",
        Minimum = "minimum",
        Equal = "equal",
        NotEqual = "not_equal",
        GreaterEqual = "greater_equal",
        Greater = "greater",
        LessEqual = "less_equal",
        Less = "less",
        LogicalAnd = "logical_and",
        LogicalOr = "logical_or",
        LogicalXor = "logical_xor",
        Power = "power",
        AbsMax = "abs_max",
        AbsMin = "abs_min",
        Abs = "abs",
        Square = "square",
        Relu = "relu",
        Rsqrt = "rsqrt",
        Reciprocal = "reciprocal",
        Bypass = "bypass",
        Average = "average",
    }
}

impl AluOp {
    /// True for the operators that work on raw integer bits.
    pub fn is_bitvec(self) -> bool {
        matches!(
            self,
            AluOp::Invert
                | AluOp::BitwiseAnd
                | AluOp::BitwiseOr
                | AluOp::BitwiseXor
                | AluOp::LeftShift
                | AluOp::RightShift
        )
    }

    /// True for the operators that take one operand.
    pub fn is_unary(self) -> bool {
        matches!(
            self,
            AluOp::Invert
                | AluOp::Abs
                | AluOp::Square
                | AluOp::Relu
                | AluOp::Rsqrt
                | AluOp::Reciprocal
                | AluOp::Bypass
        )
    }

    /// True for the comparison operators, which produce 1.0 or 0.0.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            AluOp::Equal
                | AluOp::NotEqual
                | AluOp::GreaterEqual
                | AluOp::Greater
                | AluOp::LessEqual
                | AluOp::Less
        )
    }

    /// True for the operators legal as a reduction (isa.md §2.3, column "Red").
    pub fn is_reduction(self) -> bool {
        matches!(
            self,
            AluOp::BitwiseAnd
                | AluOp::BitwiseOr
                | AluOp::BitwiseXor
                | AluOp::Add
                | AluOp::Subtract
                | AluOp::Multiply
                | AluOp::Maximum
                | AluOp::Minimum
                | AluOp::LogicalAnd
                | AluOp::LogicalOr
                | AluOp::LogicalXor
        )
    }

    /// The identity element of a reduction operator as an `f32`, if it has
    /// one (0 for add/subtract/or/xor, 1 for multiply/and, −inf for maximum,
    /// +inf for minimum).
    pub fn reduction_identity(self) -> Option<f32> {
        match self {
            AluOp::Add
            | AluOp::Subtract
            | AluOp::BitwiseOr
            | AluOp::BitwiseXor
            | AluOp::LogicalOr
            | AluOp::LogicalXor
            | AluOp::AbsMax => Some(0.0),
            AluOp::Multiply | AluOp::LogicalAnd => Some(1.0),
            AluOp::Maximum => Some(f32::NEG_INFINITY),
            AluOp::Minimum | AluOp::AbsMin => Some(f32::INFINITY),
            _ => None,
        }
    }
}

named_enum! {
    /// The Scalar engine's activation functions (isa.md §2.4).
    pub enum ActFunc {
        Copy = "copy",
        Square = "square",
        Sigmoid = "sigmoid",
        Relu = "relu",
        Prelu = "prelu",
        Gelu = "gelu",
        GeluDx = "gelu_dx",
        GeluApprxTanh = "gelu_apprx_tanh",
        GeluApprxSigmoid = "gelu_apprx_sigmoid",
        GeluApprxSigmoidDx = "gelu_apprx_sigmoid_dx",
        Silu = "silu",
        SiluDx = "silu_dx",
        Tanh = "tanh",
        Softplus = "softplus",
        Mish = "mish",
        Erf = "erf",
        ErfDx = "erf_dx",
        Exp = "exp",
        Log = "log",
        Sin = "sin",
        Arctan = "arctan",
        Sqrt = "sqrt",
        Rsqrt = "rsqrt",
        Reciprocal = "reciprocal",
        Sign = "sign",
        Abs = "abs",
    }
}

named_enum! {
    /// What an instruction does with its engine's per-partition accumulator
    /// registers before adding its own contribution (isa.md §2.5).
    pub enum ReduceCmd {
        /// Leave the accumulators alone and contribute nothing.
        Idle = "idle",
        /// Set the accumulators to the identity of the reduce operator and
        /// contribute nothing.
        Reset = "reset",
        /// Keep the accumulators and combine this instruction's row reduction in.
        Reduce = "reduce",
        /// Set the accumulators to the identity, then combine.
        ResetReduce = "reset_reduce",
        /// Set the accumulators to the instruction's initial value, then combine.
        LoadReduce = "load_reduce",
    }
}

impl ReduceCmd {
    /// True when the instruction combines its row reduction into the accumulators.
    pub fn contributes(self) -> bool {
        matches!(
            self,
            ReduceCmd::Reduce | ReduceCmd::ResetReduce | ReduceCmd::LoadReduce
        )
    }
}

named_enum! {
    /// How a DMA instruction's descriptors are generated (isa.md §5.2). Only
    /// the cost differs; the data moved is the same.
    pub enum DgeMode {
        /// Descriptors precomputed by the host (static addresses only).
        None = "none",
        /// Descriptors generated by GpSimd software at run time.
        Swdge = "swdge",
        /// Descriptors generated by a hardware DGE block (v3+).
        Hwdge = "hwdge",
    }
}

named_enum! {
    /// The TensorE performance mode of `nc_matmul`.
    pub enum MatmulPerfMode {
        /// Ordinary matmul: contraction over the partition dim.
        None = "none",
        /// FP8 double-row mode (v3+): contraction over partition × 2.
        DoubleRow = "double_row",
    }
}

named_enum! {
    /// What a DMA does with an element whose dynamic address is out of bounds.
    pub enum OobMode {
        /// Stop the program with a runtime fault.
        Error = "error",
        /// Skip that element (or row) and continue.
        Skip = "skip",
    }
}

named_enum! {
    /// Operators of the sequencer's 32-bit integer register ALU (`reg_alu`).
    ///
    /// Arithmetic wraps modulo 2^32. `div`/`rem` are signed and fault on a
    /// zero divisor; `shr` is logical and `sar` arithmetic; shift amounts are
    /// taken modulo 32. `min`/`max` compare as signed integers.
    pub enum RegAluOp {
        Add = "add",
        Sub = "sub",
        Mul = "mul",
        Div = "div",
        Rem = "rem",
        And = "and",
        Or = "or",
        Xor = "xor",
        Shl = "shl",
        Shr = "shr",
        Sar = "sar",
        Min = "min",
        Max = "max",
    }
}

named_enum! {
    /// Comparisons of `branch` on 32-bit registers, as signed integers.
    pub enum BranchCond {
        Eq = "eq",
        Ne = "ne",
        Lt = "lt",
        Le = "le",
        Gt = "gt",
        Ge = "ge",
    }
}

impl BranchCond {
    /// Evaluates the condition on two signed 32-bit values.
    pub fn holds(self, a: i32, b: i32) -> bool {
        match self {
            BranchCond::Eq => a == b,
            BranchCond::Ne => a != b,
            BranchCond::Lt => a < b,
            BranchCond::Le => a <= b,
            BranchCond::Gt => a > b,
            BranchCond::Ge => a >= b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &op in AluOp::ALL {
            assert_eq!(AluOp::from_name(op.name()), Some(op));
        }
        for &f in ActFunc::ALL {
            assert_eq!(ActFunc::from_name(f.name()), Some(f));
        }
        for &c in ReduceCmd::ALL {
            assert_eq!(ReduceCmd::from_name(c.name()), Some(c));
        }
        assert_eq!(AluOp::from_name("divide"), None);
        assert_eq!(ActFunc::ALL.len(), 26);
    }

    #[test]
    fn classes() {
        assert!(AluOp::BitwiseXor.is_bitvec());
        assert!(!AluOp::Add.is_bitvec());
        assert!(AluOp::Add.is_reduction());
        assert!(!AluOp::Power.is_reduction());
        assert_eq!(AluOp::Maximum.reduction_identity(), Some(f32::NEG_INFINITY));
        assert!(BranchCond::Lt.holds(-1, 0));
        assert!(!BranchCond::Ge.holds(-1, 0));
        assert!(ReduceCmd::LoadReduce.contributes());
        assert!(!ReduceCmd::Reset.contributes());
    }
}
