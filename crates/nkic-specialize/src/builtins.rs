//! Python builtins and the small standard-library subset kernels use
//! (`math`, a few NumPy functions, `dataclasses`, `enum`, `functools`).

/// A builtin function or type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    Len,
    Min,
    Max,
    Abs,
    Int,
    Float,
    Bool,
    Str,
    Range,
    Enumerate,
    Zip,
    Isinstance,
    Issubclass,
    Sum,
    All,
    Any,
    Divmod,
    Round,
    Sorted,
    Reversed,
    List,
    Tuple,
    Dict,
    Slice,
    Getattr,
    Hasattr,
    Setattr,
    Print,
    Repr,
    Type,
    Map,
    Filter,
    Pow,
    Callable,
    Super,
    Ord,
    Chr,
    /// An exception type (`ValueError`, …), for `raise`.
    Exception(&'static str),
    MathSqrt,
    MathCeil,
    MathFloor,
    MathTrunc,
    MathLog,
    MathLog2,
    MathLog10,
    MathExp,
    MathPow,
    MathFabs,
    MathProd,
    MathGcd,
    MathIsclose,
    MathIsqrt,
    MathCos,
    MathSin,
    MathTanh,
    /// `numpy.prod`, `numpy.sqrt`, … on compile-time numbers.
    NpProd,
    NpSqrt,
    NpCeil,
    NpFloor,
    NpLog2,
    NpExp,
    /// `@dataclass` / `@dataclass(...)`.
    Dataclass,
    /// `dataclasses.field(...)`.
    DataclassField,
    /// `enum.auto()`.
    EnumAuto,
    /// `functools.reduce`.
    Reduce,
    /// `functools.partial`.
    Partial,
}

/// The exception type names `raise` accepts.
pub const EXCEPTIONS: &[&str] = &[
    "Exception",
    "ValueError",
    "TypeError",
    "AssertionError",
    "NotImplementedError",
    "RuntimeError",
    "KeyError",
    "IndexError",
];

impl Builtin {
    /// The Python name.
    pub fn name(self) -> &'static str {
        use Builtin as B;
        match self {
            B::Len => "len",
            B::Min => "min",
            B::Max => "max",
            B::Abs => "abs",
            B::Int => "int",
            B::Float => "float",
            B::Bool => "bool",
            B::Str => "str",
            B::Range => "range",
            B::Enumerate => "enumerate",
            B::Zip => "zip",
            B::Isinstance => "isinstance",
            B::Issubclass => "issubclass",
            B::Sum => "sum",
            B::All => "all",
            B::Any => "any",
            B::Divmod => "divmod",
            B::Round => "round",
            B::Sorted => "sorted",
            B::Reversed => "reversed",
            B::List => "list",
            B::Tuple => "tuple",
            B::Dict => "dict",
            B::Slice => "slice",
            B::Getattr => "getattr",
            B::Hasattr => "hasattr",
            B::Setattr => "setattr",
            B::Print => "print",
            B::Repr => "repr",
            B::Type => "type",
            B::Map => "map",
            B::Filter => "filter",
            B::Pow => "pow",
            B::Callable => "callable",
            B::Super => "super",
            B::Ord => "ord",
            B::Chr => "chr",
            B::Exception(name) => name,
            B::MathSqrt => "math.sqrt",
            B::MathCeil => "math.ceil",
            B::MathFloor => "math.floor",
            B::MathTrunc => "math.trunc",
            B::MathLog => "math.log",
            B::MathLog2 => "math.log2",
            B::MathLog10 => "math.log10",
            B::MathExp => "math.exp",
            B::MathPow => "math.pow",
            B::MathFabs => "math.fabs",
            B::MathProd => "math.prod",
            B::MathGcd => "math.gcd",
            B::MathIsclose => "math.isclose",
            B::MathIsqrt => "math.isqrt",
            B::MathCos => "math.cos",
            B::MathSin => "math.sin",
            B::MathTanh => "math.tanh",
            B::NpProd => "numpy.prod",
            B::NpSqrt => "numpy.sqrt",
            B::NpCeil => "numpy.ceil",
            B::NpFloor => "numpy.floor",
            B::NpLog2 => "numpy.log2",
            B::NpExp => "numpy.exp",
            B::Dataclass => "dataclass",
            B::DataclassField => "field",
            B::EnumAuto => "auto",
            B::Reduce => "functools.reduce",
            B::Partial => "functools.partial",
        }
    }

    /// True for the builtins that are types (usable with `isinstance`).
    pub fn is_type(self) -> bool {
        matches!(
            self,
            Builtin::Int
                | Builtin::Float
                | Builtin::Bool
                | Builtin::Str
                | Builtin::List
                | Builtin::Tuple
                | Builtin::Dict
                | Builtin::Range
                | Builtin::Slice
                | Builtin::Exception(_)
        )
    }

    /// The Python builtin named `name`.
    pub fn lookup(name: &str) -> Option<Builtin> {
        use Builtin as B;
        Some(match name {
            "len" => B::Len,
            "min" => B::Min,
            "max" => B::Max,
            "abs" => B::Abs,
            "int" => B::Int,
            "float" => B::Float,
            "bool" => B::Bool,
            "str" => B::Str,
            "range" => B::Range,
            "enumerate" => B::Enumerate,
            "zip" => B::Zip,
            "isinstance" => B::Isinstance,
            "issubclass" => B::Issubclass,
            "sum" => B::Sum,
            "all" => B::All,
            "any" => B::Any,
            "divmod" => B::Divmod,
            "round" => B::Round,
            "sorted" => B::Sorted,
            "reversed" => B::Reversed,
            "list" => B::List,
            "tuple" => B::Tuple,
            "dict" => B::Dict,
            "slice" => B::Slice,
            "getattr" => B::Getattr,
            "hasattr" => B::Hasattr,
            "setattr" => B::Setattr,
            "print" => B::Print,
            "repr" => B::Repr,
            "type" => B::Type,
            "map" => B::Map,
            "filter" => B::Filter,
            "pow" => B::Pow,
            "callable" => B::Callable,
            "super" => B::Super,
            "ord" => B::Ord,
            "chr" => B::Chr,
            _ => {
                let e = EXCEPTIONS.iter().find(|e| **e == name)?;
                B::Exception(e)
            }
        })
    }
}
