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
    /// `np.dtype(x)`: the dtype `x` names.
    NpDtype,
    /// `np.finfo(dtype)` / `np.iinfo(dtype)`: the dtype's limits
    /// (`NumInfo`).
    NpFinfo,
    NpIinfo,
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
    StaticMethod,
    ClassMethod,
    Property,
    /// A method of a builtin type (`list.append`, `str.join`, …), called
    /// with its receiver first.
    Method(&'static str),
    /// Does nothing and returns `None` (`object.__init__`).
    NoOp,
    /// `operator.add`, `operator.mul`, …: a binary operator as a function.
    Operator(&'static str),
    /// `itertools.product(*iterables, repeat=1)`.
    Product,
    /// `itertools.chain(*iterables)`.
    Chain,
    /// A decorator that returns what it decorates (`functools.wraps(f)`,
    /// `functools.lru_cache`).
    NoOpDecorator,
    OsGetenv,
    /// The `NotImplemented` singleton a rich comparison method returns to
    /// let the other operand's reflected method answer (not callable).
    NotImplemented,
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
            B::NpDtype => "numpy.dtype",
            B::NpFinfo => "numpy.finfo",
            B::NpIinfo => "numpy.iinfo",
            B::NpExp => "numpy.exp",
            B::Dataclass => "dataclass",
            B::DataclassField => "field",
            B::EnumAuto => "auto",
            B::Reduce => "functools.reduce",
            B::Partial => "functools.partial",
            B::StaticMethod => "staticmethod",
            B::ClassMethod => "classmethod",
            B::Property => "property",
            B::Method(name) => name,
            B::NoOp => "object.__init__",
            B::Operator(name) => name,
            B::Product => "itertools.product",
            B::Chain => "itertools.chain",
            B::NoOpDecorator => "decorator",
            B::OsGetenv => "os.getenv",
            B::NotImplemented => "NotImplemented",
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
            "NotImplemented" => B::NotImplemented,
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

use std::cell::RefCell;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_isa::DType;

use crate::args::{Arg, CallArgs};
use crate::ctx::Ctx;
use crate::value::{ClassKind, Dict, Namespace, RangeKind, RangeValue, SliceValue, Value};
use crate::{codes, format};

/// `ns.attr` for the standard-library namespaces the evaluator provides.
pub(crate) fn module_attr(ctx: &Ctx<'_>, ns: Namespace, attr: &str) -> Option<Value> {
    use Builtin as B;
    let b = |x| Some(Value::Builtin(x));
    match ns {
        Namespace::Math => match attr {
            "sqrt" => b(B::MathSqrt),
            "ceil" => b(B::MathCeil),
            "floor" => b(B::MathFloor),
            "trunc" => b(B::MathTrunc),
            "log" => b(B::MathLog),
            "log2" => b(B::MathLog2),
            "log10" => b(B::MathLog10),
            "exp" => b(B::MathExp),
            "pow" => b(B::MathPow),
            "fabs" => b(B::MathFabs),
            "prod" => b(B::MathProd),
            "gcd" => b(B::MathGcd),
            "isclose" => b(B::MathIsclose),
            "isqrt" => b(B::MathIsqrt),
            "cos" => b(B::MathCos),
            "sin" => b(B::MathSin),
            "tanh" => b(B::MathTanh),
            "pi" => Some(Value::Float(std::f64::consts::PI)),
            "e" => Some(Value::Float(std::f64::consts::E)),
            "inf" => Some(Value::Float(f64::INFINITY)),
            "nan" => Some(Value::Float(f64::NAN)),
            _ => None,
        },
        Namespace::Numpy => match attr {
            "prod" => b(B::NpProd),
            "sqrt" => b(B::NpSqrt),
            "ceil" => b(B::NpCeil),
            "floor" => b(B::NpFloor),
            "log2" => b(B::NpLog2),
            "dtype" => b(B::NpDtype),
            "finfo" => b(B::NpFinfo),
            "iinfo" => b(B::NpIinfo),
            "exp" => b(B::NpExp),
            "inf" => Some(Value::Float(f64::INFINITY)),
            "pi" => Some(Value::Float(std::f64::consts::PI)),
            "float32" => Some(Value::DType(DType::F32)),
            "float16" => Some(Value::DType(DType::F16)),
            "int8" => Some(Value::DType(DType::I8)),
            "int16" => Some(Value::DType(DType::I16)),
            "int32" => Some(Value::DType(DType::I32)),
            "uint8" => Some(Value::DType(DType::U8)),
            "uint16" => Some(Value::DType(DType::U16)),
            "uint32" => Some(Value::DType(DType::U32)),
            "bool_" => Some(Value::DType(DType::Bool)),
            _ => None,
        },
        Namespace::Dataclasses => match attr {
            "dataclass" => b(B::Dataclass),
            "field" => b(B::DataclassField),
            _ => None,
        },
        Namespace::Enum => match attr {
            "Enum" => Some(Value::Class(ctx.bases.enum_.clone())),
            "IntEnum" => Some(Value::Class(ctx.bases.int_enum.clone())),
            "auto" => b(B::EnumAuto),
            _ => None,
        },
        Namespace::Functools => match attr {
            "reduce" => b(B::Reduce),
            "partial" => b(B::Partial),
            "wraps" | "lru_cache" | "cache" => b(B::NoOpDecorator),
            _ => None,
        },
        Namespace::Operator => {
            const OPS: &[&str] = &[
                "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor",
                "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge", "neg",
            ];
            OPS.iter()
                .find(|o| **o == attr)
                .map(|o| Value::Builtin(B::Operator(o)))
        }
        Namespace::Itertools => match attr {
            "product" => b(B::Product),
            "chain" => b(B::Chain),
            _ => None,
        },
        // The environment is empty at compile time, so a compile never
        // depends on the shell it runs in; `os.environ` is a fresh dict.
        Namespace::Os => match attr {
            "environ" => Some(Value::Dict(Rc::new(std::cell::RefCell::new(
                Dict::default(),
            )))),
            "getenv" => b(B::OsGetenv),
            _ => None,
        },
        // Only for `print(..., file=sys.stderr)`, which prints as usual.
        Namespace::Sys => match attr {
            "stdout" | "stderr" => Some(Value::None),
            _ => None,
        },
        // Annotations only: every name is an opaque placeholder.
        Namespace::PyTyping => Some(Value::Builtin(B::Tuple)),
        _ => None,
    }
}

impl Ctx<'_> {
    fn want_number(&self, a: &Arg, what: &str) -> Result<f64, Diagnostic> {
        a.value
            .as_float()
            .ok_or_else(|| self.arg_needs(a, what, "a number", "not a number"))
    }

    fn want_int(&self, a: &Arg, what: &str) -> Result<i64, Diagnostic> {
        match &a.value {
            Value::Register(_) | Value::Tensor(_) => Err(self.error(
                codes::RUNTIME_VALUE,
                crate::format::found(format_args!("`{what}` needs a compile-time int"), &a.value),
                a.span,
                "a run-time value",
            )),
            _ => self.int_arg(a, what),
        }
    }

    /// Argument `a` of `func` as an int, or the type error that it is not
    /// one.
    pub(crate) fn int_arg(&self, a: &Arg, func: &str) -> Result<i64, Diagnostic> {
        a.value
            .as_int()
            .ok_or_else(|| self.arg_needs(a, func, "an int", "not an int"))
    }

    fn one_arg(&self, args: CallArgs, name: &str, span: Span) -> Result<Arg, Diagnostic> {
        let [x] = args.bind(self, name, ["x"], 1, span)?;
        Ok(x.expect("bound"))
    }

    fn float_to_int(&self, f: f64, span: Span) -> Result<Value, Diagnostic> {
        if !f.is_finite() {
            return Err(self.error(
                codes::VALUE_ERROR,
                format!("cannot convert {} to an int", format::float_repr(f)),
                span,
                "not finite",
            ));
        }
        self.int_result(
            Some(f as i64).filter(|_| f.abs() < 1e15),
            "int conversion",
            span,
        )
    }

    /// Calls builtin `b`.
    pub(crate) fn call_builtin(
        &mut self,
        b: Builtin,
        mut args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        use Builtin as B;
        let name = b.name();
        match b {
            B::Len => {
                let x = self.one_arg(args, name, span)?;
                let n = match &x.value {
                    Value::List(l) => l.borrow().len(),
                    Value::Tuple(t) => t.len(),
                    Value::Str(s) => s.chars().count(),
                    Value::Dict(d) => d.borrow().len(),
                    Value::Range(r) => r.len() as usize,
                    Value::Object(o) if o.class.lookup("__len__").is_some() => {
                        let f = o.class.lookup("__len__").unwrap_or(Value::None);
                        let a = CallArgs::positional(vec![x.clone()]);
                        return self.call(&f, a, span);
                    }
                    Value::Tensor(t) => t.shape.first().copied().unwrap_or(1) as usize,
                    v if crate::api::host::as_array(v).is_some() => {
                        crate::api::host::len(self, v, x.span)?
                    }
                    v => self.iterate(v, x.span)?.len(),
                };
                Ok(Value::Int(n as i64))
            }
            B::Min | B::Max => {
                let key = args.take_keyword("key").map(|a| a.value);
                let default = args.take_keyword("default");
                let items: Vec<Value> = if args.positional.len() == 1 {
                    let a = &args.positional[0];
                    self.iterate(&a.value, a.span)?
                } else {
                    args.positional.iter().map(|a| a.value.clone()).collect()
                };
                if items.is_empty() {
                    return match default {
                        Some(d) => Ok(d.value),
                        None => Err(self.error(
                            codes::VALUE_ERROR,
                            format!("`{name}` of an empty sequence"),
                            span,
                            "empty",
                        )),
                    };
                }
                let mut best = items[0].clone();
                let mut best_key = self.apply_key(&key, &best, span)?;
                for it in items.into_iter().skip(1) {
                    let k = self.apply_key(&key, &it, span)?;
                    let ord = self.order(&k, &best_key, span)?;
                    if (b == B::Min && ord.is_lt()) || (b == B::Max && ord.is_gt()) {
                        best = it;
                        best_key = k;
                    }
                }
                Ok(best)
            }
            B::Abs => {
                let x = self.one_arg(args, name, span)?;
                match &x.value {
                    Value::Float(f) => Ok(Value::Float(f.abs())),
                    v if v.as_int().is_some() => {
                        self.int_result(v.as_int().and_then(i64::checked_abs), "`abs`", span)
                    }
                    _ => Err(self.bad_arg(&x, name, "a number")),
                }
            }
            B::Int => {
                if args.is_empty() {
                    return Ok(Value::Int(0));
                }
                let x = self.one_arg(args, name, span)?;
                match &x.value {
                    Value::Float(f) => self.float_to_int(*f, x.span),
                    Value::Str(s) => s.trim().parse::<i64>().map_or_else(
                        |_| {
                            Err(self.error(
                                codes::VALUE_ERROR,
                                format!("invalid literal for int(): {}", format::str_repr(s)),
                                x.span,
                                "not an int",
                            ))
                        },
                        |i| self.int_result(Some(i), "int conversion", x.span),
                    ),
                    Value::Register(_) | Value::Tensor(_) => Err(self.error(
                        codes::RUNTIME_VALUE,
                        format!(
                            "`int()` of {} is not known at compile time",
                            crate::format::a_type(&x.value)
                        ),
                        x.span,
                        "a run-time value",
                    )),
                    v => v
                        .as_int()
                        .map(Value::Int)
                        .ok_or_else(|| self.bad_arg(&x, name, "a number or string")),
                }
            }
            B::Float => {
                if args.is_empty() {
                    return Ok(Value::Float(0.0));
                }
                let x = self.one_arg(args, name, span)?;
                match &x.value {
                    Value::Str(s) => {
                        let t = s.trim().to_ascii_lowercase();
                        let f = match t.as_str() {
                            "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
                            "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
                            "nan" => Some(f64::NAN),
                            _ => t.parse::<f64>().ok(),
                        };
                        f.map(Value::Float).ok_or_else(|| {
                            self.error(
                                codes::VALUE_ERROR,
                                format!(
                                    "could not convert string to float: {}",
                                    format::str_repr(s)
                                ),
                                x.span,
                                "not a float",
                            )
                        })
                    }
                    v => v
                        .as_float()
                        .map(Value::Float)
                        .ok_or_else(|| self.bad_arg(&x, name, "a number or string")),
                }
            }
            B::Bool => {
                if args.is_empty() {
                    return Ok(Value::Bool(false));
                }
                let x = self.one_arg(args, name, span)?;
                Ok(Value::Bool(self.truthy(&x.value, x.span)?))
            }
            B::Str | B::Repr => {
                if args.is_empty() {
                    return Ok(Value::str(""));
                }
                let x = self.one_arg(args, name, span)?;
                let text = if b == B::Str {
                    self.value_str(&x.value, span)?
                } else {
                    format::repr(&x.value)
                };
                self.charge_bytes(text.len() as u64, span)?;
                Ok(Value::str(&text))
            }
            B::Range => self.make_range(RangeKind::Range, args, span),
            B::Enumerate => {
                let [it, start] = args.bind(self, name, ["iterable", "start"], 1, span)?;
                let it = it.expect("bound");
                let start = match &start {
                    Some(s) => self.want_int(s, name)?,
                    None => 0,
                };
                let items = self.iterate(&it.value, it.span)?;
                Ok(Value::list(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| Value::tuple(vec![Value::Int(start + i as i64), v]))
                        .collect(),
                ))
            }
            B::Zip => {
                args.take_keyword("strict");
                let mut lists = Vec::new();
                for a in &args.positional {
                    lists.push(self.iterate(&a.value, a.span)?);
                }
                let n = lists.iter().map(Vec::len).min().unwrap_or(0);
                Ok(Value::list(
                    (0..n)
                        .map(|i| Value::tuple(lists.iter().map(|l| l[i].clone()).collect()))
                        .collect(),
                ))
            }
            B::Isinstance | B::Issubclass => {
                let [x, ty] = args.bind(self, name, ["obj", "classinfo"], 2, span)?;
                let (x, ty) = (x.expect("bound"), ty.expect("bound"));
                let types: Vec<Value> = match &ty.value {
                    Value::Tuple(t) => t.to_vec(),
                    v => vec![v.clone()],
                };
                let mut res = false;
                for t in &types {
                    res |= if b == B::Isinstance {
                        self.isinstance(&x.value, t, ty.span)?
                    } else {
                        match (&x.value, t) {
                            (Value::Class(a), Value::Class(c)) => a.is_subclass_of(c),
                            _ => x.value.py_eq(t) == Some(true),
                        }
                    };
                }
                Ok(Value::Bool(res))
            }
            B::Sum => {
                let [it, start] = args.bind(self, name, ["iterable", "start"], 1, span)?;
                let it = it.expect("bound");
                let mut acc = start.map_or(Value::Int(0), |s| s.value);
                for v in self.iterate(&it.value, it.span)? {
                    acc = self.binary(nkic_syntax::ast::BinOp::Add, acc, v, false, span)?;
                }
                Ok(acc)
            }
            B::All | B::Any => {
                let x = self.one_arg(args, name, span)?;
                for v in self.iterate(&x.value, x.span)? {
                    let t = self.truthy(&v, x.span)?;
                    if b == B::All && !t {
                        return Ok(Value::Bool(false));
                    }
                    if b == B::Any && t {
                        return Ok(Value::Bool(true));
                    }
                }
                Ok(Value::Bool(b == B::All))
            }
            B::Divmod => {
                let [a, c] = args.bind(self, name, ["a", "b"], 2, span)?;
                let (a, c) = (a.expect("bound").value, c.expect("bound").value);
                let q = self.binary(
                    nkic_syntax::ast::BinOp::FloorDiv,
                    a.clone(),
                    c.clone(),
                    false,
                    span,
                )?;
                let r = self.binary(nkic_syntax::ast::BinOp::Mod, a, c, false, span)?;
                Ok(Value::tuple(vec![q, r]))
            }
            B::Round => {
                let [x, nd] = args.bind(self, name, ["number", "ndigits"], 1, span)?;
                let x = x.expect("bound");
                let f = self.want_number(&x, name)?;
                match nd.filter(|n| !n.value.is_none()) {
                    None => {
                        // Python rounds half to even.
                        let r = f.round();
                        let r = if (f - f.trunc()).abs() == 0.5 {
                            2.0 * (f / 2.0).round()
                        } else {
                            r
                        };
                        self.float_to_int(r, x.span)
                    }
                    Some(n) => {
                        let n = self.want_int(&n, name)?;
                        if let Value::Int(i) = x.value {
                            return Ok(Value::Int(i));
                        }
                        let p = 10f64.powi(n as i32);
                        Ok(Value::Float((f * p).round() / p))
                    }
                }
            }
            B::Sorted => {
                let key = args.take_keyword("key").map(|a| a.value);
                let reverse = match args.take_keyword("reverse") {
                    Some(r) => self.truthy(&r.value, r.span)?,
                    None => false,
                };
                let x = self.one_arg(args, name, span)?;
                let items = self.iterate(&x.value, x.span)?;
                Ok(Value::list(self.sort_values(items, &key, reverse, span)?))
            }
            B::Reversed => {
                let x = self.one_arg(args, name, span)?;
                let mut items = self.iterate(&x.value, x.span)?;
                items.reverse();
                Ok(Value::list(items))
            }
            B::List | B::Tuple => {
                let items = match args.positional.first() {
                    Some(a) => {
                        let a = a.clone();
                        if args.len() > 1 {
                            return Err(self.error(
                                codes::BAD_ARGUMENTS,
                                format!("`{name}` takes at most 1 argument"),
                                span,
                                "too many arguments",
                            ));
                        }
                        self.iterate(&a.value, a.span)?
                    }
                    None => Vec::new(),
                };
                Ok(if b == B::List {
                    Value::list(items)
                } else {
                    Value::tuple(items)
                })
            }
            B::Dict => {
                let mut d = Dict::default();
                if let Some(a) = args.positional.first().cloned() {
                    match &a.value {
                        Value::Dict(o) => d = o.borrow().clone(),
                        v => {
                            for pair in self.iterate(v, a.span)? {
                                let kv = self.iterate(&pair, a.span)?;
                                if kv.len() != 2 {
                                    return Err(self.error(
                                        codes::VALUE_ERROR,
                                        "dict() needs key-value pairs",
                                        a.span,
                                        "not a pair",
                                    ));
                                }
                                self.check_hashable(&kv[0], a.span)?;
                                d.insert(kv[0].clone(), kv[1].clone());
                            }
                        }
                    }
                }
                for (k, a) in args.keywords {
                    d.insert(Value::Str(k), a.value);
                }
                Ok(Value::Dict(Rc::new(RefCell::new(d))))
            }
            B::Slice => {
                let vals: Vec<Value> = args.positional.iter().map(|a| a.value.clone()).collect();
                let (lower, upper, step) = match vals.as_slice() {
                    [u] => (Value::None, u.clone(), Value::None),
                    [l, u] => (l.clone(), u.clone(), Value::None),
                    [l, u, s] => (l.clone(), u.clone(), s.clone()),
                    _ => {
                        return Err(self.error(
                            codes::BAD_ARGUMENTS,
                            "`slice` takes 1 to 3 arguments",
                            span,
                            "here",
                        ));
                    }
                };
                Ok(Value::Slice(Rc::new(SliceValue { lower, upper, step })))
            }
            B::Getattr | B::Hasattr => {
                let [o, n, default] =
                    args.bind(self, name, ["object", "name", "default"], 2, span)?;
                let (o, n) = (o.expect("bound"), n.expect("bound"));
                let Value::Str(attr) = &n.value else {
                    return Err(self.bad_arg(&n, name, "a string"));
                };
                match self.get_attr(&o.value, attr, n.span) {
                    Ok(v) => Ok(if b == B::Hasattr {
                        Value::Bool(true)
                    } else {
                        v
                    }),
                    Err(e) if e.code == codes::NO_ATTRIBUTE => match (b, default) {
                        (B::Hasattr, _) => Ok(Value::Bool(false)),
                        (_, Some(d)) => Ok(d.value),
                        _ => Err(e),
                    },
                    Err(e) => Err(e),
                }
            }
            B::Setattr => {
                let [o, n, v] = args.bind(self, name, ["object", "name", "value"], 3, span)?;
                let (o, n, v) = (o.expect("bound"), n.expect("bound"), v.expect("bound"));
                let Value::Str(attr) = &n.value else {
                    return Err(self.bad_arg(&n, name, "a string"));
                };
                self.set_attr(&o.value, attr, v.value, span)?;
                Ok(Value::None)
            }
            B::Print => {
                let sep = args
                    .take_keyword("sep")
                    .map(|a| format::str(&a.value))
                    .unwrap_or_else(|| " ".into());
                let end = args
                    .take_keyword("end")
                    .map(|a| format::str(&a.value))
                    .unwrap_or_default();
                args.take_keyword("flush");
                args.take_keyword("file");
                if let Some((k, a)) = args.keywords.first() {
                    return Err(self.error(
                        codes::BAD_ARGUMENTS,
                        format!("`print` has no parameter named `{k}`"),
                        a.span,
                        "unknown keyword",
                    ));
                }
                let mut parts = Vec::new();
                for a in &args.positional {
                    parts.push(self.value_str(&a.value, a.span)?);
                }
                let text = format!("{}{}", parts.join(&sep), end.trim_end_matches('\n'));
                let location = match self.sources.get(self.file) {
                    Some(f) => format!("{}:{}", f.name(), f.line_col(span.start).line),
                    None => format!("{}:{}", self.file, span.start),
                };
                self.prints.push(crate::Print {
                    file: self.file,
                    span,
                    location,
                    program: self.program_index,
                    text,
                });
                Ok(Value::None)
            }
            B::Type => {
                let x = self.one_arg(args, name, span)?;
                Ok(match &x.value {
                    Value::Object(o) => Value::Class(o.class.clone()),
                    Value::Int(_) => Value::Builtin(B::Int),
                    Value::Float(_) => Value::Builtin(B::Float),
                    Value::Bool(_) => Value::Builtin(B::Bool),
                    Value::Str(_) => Value::Builtin(B::Str),
                    Value::List(_) => Value::Builtin(B::List),
                    Value::Tuple(_) => Value::Builtin(B::Tuple),
                    Value::Dict(_) => Value::Builtin(B::Dict),
                    other => Value::str(&other.type_name()),
                })
            }
            B::Map | B::Filter => {
                let mut pos = args.positional.into_iter();
                let (Some(f), Some(first)) = (pos.next(), pos.next()) else {
                    return Err(self.error(
                        codes::BAD_ARGUMENTS,
                        format!("`{name}` needs a function and an iterable"),
                        span,
                        "here",
                    ));
                };
                let mut lists = vec![self.iterate(&first.value, first.span)?];
                for a in pos {
                    lists.push(self.iterate(&a.value, a.span)?);
                }
                let n = lists.iter().map(Vec::len).min().unwrap_or(0);
                let mut out = Vec::new();
                for i in 0..n {
                    let call_args = CallArgs::positional(
                        lists.iter().map(|l| Arg::new(l[i].clone(), span)).collect(),
                    );
                    if b == B::Map {
                        out.push(self.call(&f.value, call_args, span)?);
                    } else {
                        let keep = if f.value.is_none() {
                            self.truthy(&lists[0][i], span)?
                        } else {
                            let r = self.call(&f.value, call_args, span)?;
                            self.truthy(&r, span)?
                        };
                        if keep {
                            out.push(lists[0][i].clone());
                        }
                    }
                }
                Ok(Value::list(out))
            }
            B::Pow | B::MathPow => {
                let [a, c] = args.bind(self, name, ["base", "exp"], 2, span)?;
                let (a, c) = (a.expect("bound").value, c.expect("bound").value);
                if b == B::MathPow {
                    let (x, y) = (a.as_float(), c.as_float());
                    return match (x, y) {
                        (Some(x), Some(y)) => Ok(Value::Float(x.powf(y))),
                        _ => Err(self.bad_operands("**", &a, &c, span)),
                    };
                }
                self.binary(nkic_syntax::ast::BinOp::Pow, a, c, false, span)
            }
            B::Callable => {
                let x = self.one_arg(args, name, span)?;
                Ok(Value::Bool(matches!(
                    x.value,
                    Value::Function(_)
                        | Value::BoundMethod(_)
                        | Value::Builtin(_)
                        | Value::Class(_)
                        | Value::Api(_)
                        | Value::Intrinsic(_)
                )))
            }
            B::Super => self.make_super(span),
            B::Ord => {
                let x = self.one_arg(args, name, span)?;
                match x.value.as_str().map(|s| s.chars().collect::<Vec<_>>()) {
                    Some(c) if c.len() == 1 => Ok(Value::Int(c[0] as i64)),
                    _ => Err(self.bad_arg(&x, name, "a one-character string")),
                }
            }
            B::Chr => {
                let x = self.one_arg(args, name, span)?;
                let i = self.want_int(&x, name)?;
                match u32::try_from(i).ok().and_then(char::from_u32) {
                    Some(c) => Ok(Value::str(c.encode_utf8(&mut [0; 4]))),
                    None => Err(self.error(
                        codes::VALUE_ERROR,
                        format!("chr() arg {i} not in range"),
                        x.span,
                        "out of range",
                    )),
                }
            }
            B::NpDtype => {
                let x = self.one_arg(args, name, span)?;
                let dt = match &x.value {
                    Value::DType(d) => Some(*d),
                    Value::Str(s) => DType::ALL.iter().copied().find(|d| d.name() == &**s),
                    _ => None,
                };
                dt.map(Value::DType).ok_or_else(|| {
                    self.arg_needs(&x, "np.dtype", "a dtype or a dtype name", "not a dtype")
                })
            }
            B::NpFinfo | B::NpIinfo => {
                let x = self.one_arg(args, name, span)?;
                let float = b == B::NpFinfo;
                match &x.value {
                    Value::DType(d) if d.is_float() == float && NumInfo::known(*d) => {
                        Ok(Value::Ext(Rc::new(NumInfo { dtype: *d })))
                    }
                    v => Err(self.error(
                        codes::VALUE_ERROR,
                        format!(
                            "`{name}` needs {} dtype, found {}",
                            if float {
                                "a floating-point"
                            } else {
                                "an integer"
                            },
                            match v {
                                Value::DType(d) => d.name().to_owned(),
                                v => format::a_type(v),
                            }
                        ),
                        x.span,
                        if float {
                            "not a float dtype"
                        } else {
                            "not an integer dtype"
                        },
                    )),
                }
            }
            B::Exception(kind) => {
                let parts: Vec<String> = args
                    .positional
                    .iter()
                    .map(|a| format::str(&a.value))
                    .collect();
                Ok(Value::str(&if parts.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}: {}", parts.join(", "))
                }))
            }
            B::MathSqrt
            | B::NpSqrt
            | B::MathLog
            | B::MathLog2
            | B::NpLog2
            | B::MathLog10
            | B::MathExp
            | B::NpExp
            | B::MathFabs
            | B::MathCos
            | B::MathSin
            | B::MathTanh => {
                let base = if b == B::MathLog {
                    args.positional.get(1).cloned()
                } else {
                    None
                };
                if base.is_some() {
                    args.positional.truncate(1);
                }
                let x = self.one_arg(args, name, span)?;
                let f = self.want_number(&x, name)?;
                let domain = |ok: bool| -> Result<(), Diagnostic> {
                    if ok {
                        Ok(())
                    } else {
                        Err(self.error(
                            codes::VALUE_ERROR,
                            format!("math domain error in `{name}`"),
                            x.span,
                            "outside the domain",
                        ))
                    }
                };
                let r = match b {
                    B::MathSqrt | B::NpSqrt => {
                        domain(f >= 0.0 || b == B::NpSqrt)?;
                        f.sqrt()
                    }
                    B::MathLog => {
                        domain(f > 0.0)?;
                        match &base {
                            Some(bs) => f.ln() / self.want_number(bs, name)?.ln(),
                            None => f.ln(),
                        }
                    }
                    B::MathLog2 | B::NpLog2 => {
                        domain(f > 0.0 || b == B::NpLog2)?;
                        f.log2()
                    }
                    B::MathLog10 => {
                        domain(f > 0.0)?;
                        f.log10()
                    }
                    B::MathExp | B::NpExp => f.exp(),
                    B::MathFabs => f.abs(),
                    B::MathCos => f.cos(),
                    B::MathSin => f.sin(),
                    _ => f.tanh(),
                };
                Ok(Value::Float(r))
            }
            B::MathCeil | B::MathFloor | B::MathTrunc | B::NpCeil | B::NpFloor => {
                let x = self.one_arg(args, name, span)?;
                if let Some(i) = x
                    .value
                    .as_int()
                    .filter(|_| !matches!(x.value, Value::Float(_)))
                {
                    return Ok(if matches!(b, B::NpCeil | B::NpFloor) {
                        Value::Float(i as f64)
                    } else {
                        Value::Int(i)
                    });
                }
                let f = self.want_number(&x, name)?;
                let r = match b {
                    B::MathCeil | B::NpCeil => f.ceil(),
                    B::MathFloor | B::NpFloor => f.floor(),
                    _ => f.trunc(),
                };
                if matches!(b, B::NpCeil | B::NpFloor) {
                    Ok(Value::Float(r))
                } else {
                    self.float_to_int(r, x.span)
                }
            }
            B::MathProd | B::NpProd => {
                args.take_keyword("start");
                let x = self.one_arg(args, name, span)?;
                let mut acc = Value::Int(1);
                let items = match &x.value {
                    v if v.as_float().is_some() => vec![v.clone()],
                    v => self.iterate(v, x.span)?,
                };
                for v in items {
                    acc = self.binary(nkic_syntax::ast::BinOp::Mult, acc, v, false, span)?;
                }
                Ok(acc)
            }
            B::MathGcd => {
                let mut g: i64 = 0;
                for a in &args.positional {
                    let mut x = self.want_int(a, name)?.abs();
                    let mut y = g;
                    while y != 0 {
                        (x, y) = (y, x % y);
                    }
                    g = x;
                }
                Ok(Value::Int(g))
            }
            B::MathIsclose => {
                let rel = args
                    .take_keyword("rel_tol")
                    .map(|a| a.value.as_float().unwrap_or(1e-9))
                    .unwrap_or(1e-9);
                let abs = args
                    .take_keyword("abs_tol")
                    .map(|a| a.value.as_float().unwrap_or(0.0))
                    .unwrap_or(0.0);
                let [a, c] = args.bind(self, name, ["a", "b"], 2, span)?;
                let (a, c) = (
                    self.want_number(&a.expect("bound"), name)?,
                    self.want_number(&c.expect("bound"), name)?,
                );
                Ok(Value::Bool(
                    (a - c).abs() <= (rel * a.abs().max(c.abs())).max(abs),
                ))
            }
            B::MathIsqrt => {
                let x = self.one_arg(args, name, span)?;
                let i = self.want_int(&x, name)?;
                if i < 0 {
                    return Err(self.error(
                        codes::VALUE_ERROR,
                        "isqrt of a negative number",
                        x.span,
                        "negative",
                    ));
                }
                let mut r = (i as f64).sqrt() as i64;
                while r * r > i {
                    r -= 1;
                }
                while (r + 1) * (r + 1) <= i {
                    r += 1;
                }
                Ok(Value::Int(r))
            }
            B::NotImplemented => Err(self
                .error(
                    codes::NOT_CALLABLE,
                    "`NotImplemented` is not callable",
                    span,
                    "called here",
                )
                .with_help("`raise NotImplementedError(...)` is the exception")),
            B::OsGetenv => {
                // `os.getenv(name, default=None)` in the empty compile-time
                // environment: the default.
                let [key, default] = args.bind(self, "os.getenv", ["key", "default"], 1, span)?;
                if let Some(k) = key
                    && k.value.as_str().is_none()
                {
                    return Err(self.error(
                        codes::TYPE_ERROR,
                        format!(
                            "`os.getenv` takes a str, found {}",
                            format::a_type(&k.value)
                        ),
                        k.span,
                        "not a str",
                    ));
                }
                Ok(default.map_or(Value::None, |d| d.value))
            }
            B::Dataclass | B::NoOpDecorator => {
                // `@dataclass` and `@dataclass(frozen=True)`: with a class,
                // return it; otherwise return the decorator itself.
                match args.positional.first() {
                    Some(a) if matches!(a.value, Value::Class(_) | Value::Function(_)) => {
                        Ok(a.value.clone())
                    }
                    _ => Ok(Value::Builtin(b)),
                }
            }
            B::DataclassField => {
                let default = args.take_keyword("default").map(|a| a.value);
                let default_factory = args.take_keyword("default_factory").map(|a| a.value);
                Ok(Value::Ext(Rc::new(crate::eval::FieldMarker {
                    default,
                    default_factory,
                })))
            }
            B::EnumAuto => Ok(Value::Ext(Rc::new(crate::eval::AutoMarker))),
            B::Reduce => {
                let [f, it, init] =
                    args.bind(self, name, ["function", "iterable", "initial"], 2, span)?;
                let (f, it) = (f.expect("bound"), it.expect("bound"));
                let mut items = self.iterate(&it.value, it.span)?.into_iter();
                let mut acc = match init {
                    Some(i) => i.value,
                    None => items.next().ok_or_else(|| {
                        self.error(
                            codes::VALUE_ERROR,
                            "reduce() of an empty sequence with no initial value",
                            it.span,
                            "empty",
                        )
                    })?,
                };
                for v in items {
                    let a = CallArgs::positional(vec![Arg::new(acc, span), Arg::new(v, span)]);
                    acc = self.call(&f.value, a, span)?;
                }
                Ok(acc)
            }
            B::Partial => {
                if args.positional.is_empty() {
                    return Err(self.error(
                        codes::BAD_ARGUMENTS,
                        "`partial` needs a function",
                        span,
                        "here",
                    ));
                }
                Ok(Value::Ext(Rc::new(Partial { args })))
            }
            B::StaticMethod | B::ClassMethod | B::Property => {
                let x = self.one_arg(args, name, span)?;
                Ok(x.value)
            }
            B::NoOp => Ok(Value::None),
            B::Operator(name) => {
                use nkic_syntax::ast::{BinOp, CmpOp, UnaryOp};
                let vals: Vec<Value> = args.positional.iter().map(|a| a.value.clone()).collect();
                if name == "neg" {
                    let [x] = vals.as_slice() else {
                        return Err(self.error(
                            codes::BAD_ARGUMENTS,
                            "`operator.neg` takes 1 argument",
                            span,
                            "here",
                        ));
                    };
                    return self.unary(UnaryOp::USub, x.clone(), span);
                }
                let [l, r] = vals.as_slice() else {
                    return Err(self.error(
                        codes::BAD_ARGUMENTS,
                        format!("`operator.{name}` takes 2 arguments"),
                        span,
                        "here",
                    ));
                };
                let (l, r) = (l.clone(), r.clone());
                let bin = match name {
                    "add" => Some(BinOp::Add),
                    "sub" => Some(BinOp::Sub),
                    "mul" => Some(BinOp::Mult),
                    "truediv" => Some(BinOp::Div),
                    "floordiv" => Some(BinOp::FloorDiv),
                    "mod" => Some(BinOp::Mod),
                    "pow" => Some(BinOp::Pow),
                    "and_" => Some(BinOp::BitAnd),
                    "or_" => Some(BinOp::BitOr),
                    "xor" => Some(BinOp::BitXor),
                    "lshift" => Some(BinOp::LShift),
                    "rshift" => Some(BinOp::RShift),
                    _ => None,
                };
                if let Some(op) = bin {
                    return self.binary(op, l, r, false, span);
                }
                let cmp = match name {
                    "eq" => CmpOp::Eq,
                    "ne" => CmpOp::NotEq,
                    "lt" => CmpOp::Lt,
                    "le" => CmpOp::LtE,
                    "gt" => CmpOp::Gt,
                    _ => CmpOp::GtE,
                };
                self.compare(cmp, &l, &r, span)
            }
            B::Product => {
                let repeat = match args.take_keyword("repeat") {
                    Some(r) => self.want_int(&r, name)?.max(0) as usize,
                    None => 1,
                };
                let mut pools = Vec::new();
                for a in &args.positional {
                    pools.push(self.iterate(&a.value, a.span)?);
                }
                let pools: Vec<Vec<Value>> =
                    (0..repeat).flat_map(|_| pools.iter().cloned()).collect();
                let mut out: Vec<Vec<Value>> = vec![Vec::new()];
                for pool in &pools {
                    if out.len().saturating_mul(pool.len()) > 10_000_000 {
                        return Err(self.error(
                            codes::OP_BUDGET,
                            "`itertools.product` is too large to expand",
                            span,
                            "too large",
                        ));
                    }
                    out = out
                        .iter()
                        .flat_map(|prefix| {
                            pool.iter().map(move |x| {
                                let mut p = prefix.clone();
                                p.push(x.clone());
                                p
                            })
                        })
                        .collect();
                }
                Ok(Value::list(out.into_iter().map(Value::tuple).collect()))
            }
            B::Chain => {
                let mut out = Vec::new();
                for a in &args.positional {
                    out.extend(self.iterate(&a.value, a.span)?);
                }
                Ok(Value::list(out))
            }
            B::Method(m) => self.call_method(m, args, span),
        }
    }

    fn bad_arg(&self, a: &Arg, func: &str, want: &str) -> Diagnostic {
        self.arg_needs(a, func, want, "wrong type")
    }

    /// The type error of argument `a` of `func`, which needs `want`:
    /// "`{func}` needs {want}, found …", labelled `label`.
    pub(crate) fn arg_needs(&self, a: &Arg, func: &str, want: &str, label: &str) -> Diagnostic {
        self.type_error(
            format_args!("`{func}` needs {want}"),
            &a.value,
            a.span,
            label,
        )
    }

    /// `str(v)`, calling a user `__str__`/`__repr__` when there is one.
    pub(crate) fn value_str(&mut self, v: &Value, span: Span) -> Result<String, Diagnostic> {
        if let Value::Object(o) = v {
            for m in ["__str__", "__repr__"] {
                if let Some(f) = o.class.lookup(m) {
                    let r = self.call(
                        &f,
                        CallArgs::positional(vec![Arg::new(v.clone(), span)]),
                        span,
                    )?;
                    return Ok(format::str(&r));
                }
            }
        }
        Ok(format::str(v))
    }

    fn apply_key(
        &mut self,
        key: &Option<Value>,
        v: &Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match key {
            Some(k) if !k.is_none() => self.call(
                k,
                CallArgs::positional(vec![Arg::new(v.clone(), span)]),
                span,
            ),
            _ => Ok(v.clone()),
        }
    }

    /// A stable sort by `key` (insertion sort on computed keys, with the
    /// evaluator's fallible ordering).
    fn sort_values(
        &mut self,
        items: Vec<Value>,
        key: &Option<Value>,
        reverse: bool,
        span: Span,
    ) -> Result<Vec<Value>, Diagnostic> {
        let mut keyed = Vec::with_capacity(items.len());
        for v in items {
            keyed.push((self.apply_key(key, &v, span)?, v));
        }
        // Merge sort keeps it stable and O(n log n) with a fallible compare.
        let mut out: Vec<(Value, Value)> = Vec::with_capacity(keyed.len());
        for kv in keyed {
            let mut lo = 0;
            let mut hi = out.len();
            while lo < hi {
                let mid = (lo + hi) / 2;
                let ord = self.order(&kv.0, &out[mid].0, span)?;
                let after = if reverse { ord.is_le() } else { ord.is_ge() };
                if after {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            out.insert(lo, kv);
        }
        Ok(out.into_iter().map(|(_, v)| v).collect())
    }

    fn isinstance(&self, x: &Value, ty: &Value, span: Span) -> Result<bool, Diagnostic> {
        use Builtin as B;
        Ok(match ty {
            Value::Builtin(B::Int) => {
                matches!(x, Value::Int(_) | Value::Bool(_))
                    || matches!(x, Value::Object(o) if o.class.kind == ClassKind::IntEnum)
            }
            Value::Builtin(B::Float) => matches!(x, Value::Float(_)),
            Value::Builtin(B::Bool) => matches!(x, Value::Bool(_)),
            Value::Builtin(B::Str) => matches!(x, Value::Str(_)),
            Value::Builtin(B::List) => matches!(x, Value::List(_)),
            Value::Builtin(B::Tuple) => matches!(x, Value::Tuple(_)),
            Value::Builtin(B::Dict) => matches!(x, Value::Dict(_)),
            Value::Builtin(B::Range) => matches!(x, Value::Range(_)),
            Value::Builtin(B::Slice) => matches!(x, Value::Slice(_)),
            Value::Builtin(_) => false,
            Value::Class(c) => match x {
                Value::Object(o) => {
                    o.class.is_subclass_of(c) || (c.builtin && c.name.as_ref() == "object")
                }
                _ => c.builtin && c.name.as_ref() == "object",
            },
            // `isinstance(t, nl.ndarray)` and similar API types.
            Value::Api(_) => matches!(x, Value::Tensor(_)),
            other => {
                return Err(self.type_error(
                    "`isinstance` needs a type",
                    other,
                    span,
                    "not a type",
                ));
            }
        })
    }

    /// A method of a builtin type; `args.positional[0]` is the receiver.
    fn call_method(
        &mut self,
        m: &'static str,
        mut args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let recv = args.positional.remove(0).value;
        let arg = |args: &CallArgs, i: usize| args.positional.get(i).cloned();
        let missing = |ctx: &Self| {
            ctx.error(
                codes::BAD_ARGUMENTS,
                format!("`{m}` is missing an argument"),
                span,
                "here",
            )
        };
        match (&recv, m) {
            (Value::List(l), "append") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                l.borrow_mut().push(a.value);
                Ok(Value::None)
            }
            (Value::List(l), "extend") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                let items = self.iterate(&a.value, a.span)?;
                l.borrow_mut().extend(items);
                Ok(Value::None)
            }
            (Value::List(l), "insert") => {
                let (Some(i), Some(v)) = (arg(&args, 0), arg(&args, 1)) else {
                    return Err(missing(self));
                };
                let len = l.borrow().len() as i64;
                let i = self.want_int(&i, m)?;
                let i = if i < 0 { (i + len).max(0) } else { i.min(len) };
                l.borrow_mut().insert(i as usize, v.value);
                Ok(Value::None)
            }
            (Value::List(l), "pop") => {
                let len = l.borrow().len();
                let i = match arg(&args, 0) {
                    Some(a) => self.list_index(&a.value, len, a.span)?,
                    None if len > 0 => len - 1,
                    None => {
                        return Err(self.error(
                            codes::INDEX_ERROR,
                            "pop from an empty list",
                            span,
                            "empty",
                        ));
                    }
                };
                Ok(l.borrow_mut().remove(i))
            }
            (Value::List(l), "remove") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                let pos = l
                    .borrow()
                    .iter()
                    .position(|x| x.py_eq(&a.value) == Some(true));
                match pos {
                    Some(p) => {
                        l.borrow_mut().remove(p);
                        Ok(Value::None)
                    }
                    None => Err(self.error(
                        codes::VALUE_ERROR,
                        "list.remove(x): x not in list",
                        a.span,
                        "not found",
                    )),
                }
            }
            (Value::List(l), "reverse") => {
                l.borrow_mut().reverse();
                Ok(Value::None)
            }
            (Value::List(l), "sort") => {
                let key = args.take_keyword("key").map(|a| a.value);
                let reverse = match args.take_keyword("reverse") {
                    Some(r) => self.truthy(&r.value, r.span)?,
                    None => false,
                };
                let items = l.borrow().clone();
                let sorted = self.sort_values(items, &key, reverse, span)?;
                *l.borrow_mut() = sorted;
                Ok(Value::None)
            }
            (Value::List(l), "copy") => Ok(Value::list(l.borrow().clone())),
            (Value::List(l), "clear") => {
                l.borrow_mut().clear();
                Ok(Value::None)
            }
            (Value::List(_) | Value::Tuple(_) | Value::Str(_), "index") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                if let (Value::Str(s), Value::Str(sub)) = (&recv, &a.value) {
                    return match s.find(&**sub) {
                        Some(i) => Ok(Value::Int(s[..i].chars().count() as i64)),
                        None => Err(self.error(
                            codes::VALUE_ERROR,
                            "substring not found",
                            a.span,
                            "not found",
                        )),
                    };
                }
                let mut found = None;
                for (i, x) in self.iterate(&recv, span)?.iter().enumerate() {
                    if self.eq_values(x, &a.value, span)? {
                        found = Some(i);
                        break;
                    }
                }
                match found {
                    Some(i) => Ok(Value::Int(i as i64)),
                    None => Err(self.error(
                        codes::VALUE_ERROR,
                        format!("{} is not in the sequence", format::repr(&a.value)),
                        a.span,
                        "not found",
                    )),
                }
            }
            (Value::List(_) | Value::Tuple(_) | Value::Str(_), "count") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                if let (Value::Str(s), Value::Str(sub)) = (&recv, &a.value) {
                    return Ok(Value::Int(s.matches(&**sub).count() as i64));
                }
                let mut n = 0;
                for x in self.iterate(&recv, span)? {
                    if self.eq_values(&x, &a.value, span)? {
                        n += 1;
                    }
                }
                Ok(Value::Int(n))
            }
            (Value::Dict(d), "keys") => Ok(Value::list(
                d.borrow().entries.iter().map(|(k, _)| k.clone()).collect(),
            )),
            (Value::Dict(d), "values") => Ok(Value::list(
                d.borrow().entries.iter().map(|(_, v)| v.clone()).collect(),
            )),
            (Value::Dict(d), "items") => Ok(Value::list(
                d.borrow()
                    .entries
                    .iter()
                    .map(|(k, v)| Value::tuple(vec![k.clone(), v.clone()]))
                    .collect(),
            )),
            (Value::Dict(d), "get") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                let default = arg(&args, 1).map_or(Value::None, |a| a.value);
                Ok(d.borrow().get(&a.value).cloned().unwrap_or(default))
            }
            (Value::Dict(d), "pop") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                let removed = d.borrow_mut().remove(&a.value);
                match (removed, arg(&args, 1)) {
                    (Some(v), _) => Ok(v),
                    (None, Some(default)) => Ok(default.value),
                    (None, None) => Err(self.error(
                        codes::INDEX_ERROR,
                        format!("key {} is not in the dict", format::repr(&a.value)),
                        a.span,
                        "missing key",
                    )),
                }
            }
            (Value::Dict(d), "popitem") => {
                let last = d.borrow_mut().pop_last();
                match last {
                    Some((k, v)) => Ok(Value::tuple(vec![k, v])),
                    None => Err(self.error(
                        codes::INDEX_ERROR,
                        "popitem from an empty dict",
                        span,
                        "empty",
                    )),
                }
            }
            (Value::Dict(d), "setdefault") => {
                let a = arg(&args, 0).ok_or_else(|| missing(self))?;
                self.check_hashable(&a.value, a.span)?;
                let default = arg(&args, 1).map_or(Value::None, |a| a.value);
                let existing = d.borrow().get(&a.value).cloned();
                Ok(match existing {
                    Some(v) => v,
                    None => {
                        d.borrow_mut().insert(a.value, default.clone());
                        default
                    }
                })
            }
            (Value::Dict(d), "update") => {
                if let Some(a) = arg(&args, 0) {
                    match &a.value {
                        Value::Dict(o) => {
                            let entries = o.borrow().entries.clone();
                            for (k, v) in entries {
                                d.borrow_mut().insert(k, v);
                            }
                        }
                        other => {
                            return Err(self.type_error(
                                "`update` needs a dict",
                                other,
                                a.span,
                                "not a dict",
                            ));
                        }
                    }
                }
                for (k, a) in args.keywords {
                    d.borrow_mut().insert(Value::Str(k), a.value);
                }
                Ok(Value::None)
            }
            (Value::Dict(d), "copy") => Ok(Value::Dict(Rc::new(RefCell::new(d.borrow().clone())))),
            (Value::Dict(d), "clear") => {
                d.borrow_mut().clear();
                Ok(Value::None)
            }
            (Value::Str(s), _) => self.str_method(s, m, args, span),
            (Value::Int(i), "bit_length") => {
                Ok(Value::Int(64 - i64::from(i.unsigned_abs().leading_zeros())))
            }
            (Value::Float(f), "is_integer") => Ok(Value::Bool(f.fract() == 0.0)),
            _ => Err(self.error(
                codes::NO_ATTRIBUTE,
                format!("{} has no method `{m}`", recv.type_name()),
                span,
                "unknown method",
            )),
        }
    }

    fn str_method(
        &mut self,
        s: &str,
        m: &str,
        args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let sarg = |i: usize| -> Option<String> {
            args.positional
                .get(i)
                .and_then(|a| a.value.as_str().map(str::to_owned))
        };
        Ok(match m {
            "format" => {
                let mut out = String::new();
                let mut auto = 0usize;
                let mut rest = s;
                while let Some(i) = rest.find(['{', '}']) {
                    out.push_str(&rest[..i]);
                    let c = rest.as_bytes()[i];
                    if rest[i + 1..].starts_with(c as char) {
                        out.push(c as char);
                        rest = &rest[i + 2..];
                        continue;
                    }
                    if c == b'}' {
                        return Err(self.error(
                            codes::FORMAT_SPEC,
                            "single `}` in format string",
                            span,
                            "here",
                        ));
                    }
                    let Some(end) = rest[i..].find('}') else {
                        return Err(self.error(
                            codes::FORMAT_SPEC,
                            "unclosed `{` in format string",
                            span,
                            "here",
                        ));
                    };
                    let field = &rest[i + 1..i + end];
                    let (name, spec) = field.split_once(':').unwrap_or((field, ""));
                    let v = if name.is_empty() {
                        auto += 1;
                        args.positional.get(auto - 1).map(|a| a.value.clone())
                    } else if let Ok(k) = name.parse::<usize>() {
                        args.positional.get(k).map(|a| a.value.clone())
                    } else {
                        args.keywords
                            .iter()
                            .find(|(k, _)| &**k == name)
                            .map(|(_, a)| a.value.clone())
                    };
                    let Some(v) = v else {
                        return Err(self.error(
                            codes::FORMAT_SPEC,
                            format!("no argument for `{{{field}}}`"),
                            span,
                            "missing argument",
                        ));
                    };
                    match format::format_value(&v, spec) {
                        Ok(t) => out.push_str(&t),
                        Err(msg) => return Err(self.error(codes::FORMAT_SPEC, msg, span, "here")),
                    }
                    rest = &rest[i + end + 1..];
                }
                out.push_str(rest);
                self.charge_bytes(out.len() as u64, span)?;
                Value::str(&out)
            }
            "join" => {
                let a = args.positional.first().cloned().ok_or_else(|| {
                    self.error(
                        codes::BAD_ARGUMENTS,
                        "`join` needs an iterable",
                        span,
                        "here",
                    )
                })?;
                let mut parts: Vec<Rc<str>> = Vec::new();
                for v in self.iterate(&a.value, a.span)? {
                    match v {
                        Value::Str(p) => parts.push(p),
                        other => {
                            return Err(self.type_error(
                                "`join` needs strings",
                                &other,
                                a.span,
                                "not a string",
                            ));
                        }
                    }
                }
                let total = parts.iter().map(|p| p.len() as u64).sum::<u64>()
                    + (s.len() as u64).saturating_mul(parts.len().saturating_sub(1) as u64);
                self.charge_bytes(total, span)?;
                let mut out = String::with_capacity(total as usize);
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push_str(s);
                    }
                    out.push_str(p);
                }
                Value::str(&out)
            }
            "split" => {
                let parts: Vec<Value> = match sarg(0) {
                    Some(sep) if !sep.is_empty() => s.split(sep.as_str()).map(Value::str).collect(),
                    _ => s.split_whitespace().map(Value::str).collect(),
                };
                Value::list(parts)
            }
            "startswith" => Value::Bool(sarg(0).is_some_and(|p| s.starts_with(p.as_str()))),
            "endswith" => Value::Bool(sarg(0).is_some_and(|p| s.ends_with(p.as_str()))),
            "upper" => Value::str(&s.to_uppercase()),
            "lower" => Value::str(&s.to_lowercase()),
            "title" => Value::str(
                &s.split(' ')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next()
                            .map(|f| {
                                f.to_uppercase().collect::<String>() + &c.as_str().to_lowercase()
                            })
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            "replace" => match (sarg(0), sarg(1)) {
                (Some(a), Some(b)) => {
                    let hits = if a.is_empty() {
                        s.chars().count() + 1
                    } else {
                        s.matches(a.as_str()).count()
                    };
                    let len = (s.len() as u64)
                        .saturating_add((hits as u64).saturating_mul(b.len() as u64));
                    self.charge_bytes(len, span)?;
                    Value::str(&s.replace(a.as_str(), &b))
                }
                _ => {
                    return Err(self.error(
                        codes::BAD_ARGUMENTS,
                        "`replace` needs two strings",
                        span,
                        "here",
                    ));
                }
            },
            "strip" => Value::str(match sarg(0) {
                Some(c) => s.trim_matches(|x| c.contains(x)),
                None => s.trim(),
            }),
            "lstrip" => Value::str(match sarg(0) {
                Some(c) => s.trim_start_matches(|x| c.contains(x)),
                None => s.trim_start(),
            }),
            "rstrip" => Value::str(match sarg(0) {
                Some(c) => s.trim_end_matches(|x| c.contains(x)),
                None => s.trim_end(),
            }),
            "find" => Value::Int(
                sarg(0)
                    .and_then(|p| s.find(p.as_str()))
                    .map_or(-1, |i| s[..i].chars().count() as i64),
            ),
            "isdigit" => Value::Bool(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())),
            _ => {
                return Err(self.error(
                    codes::NO_ATTRIBUTE,
                    format!("str has no method `{m}`"),
                    span,
                    "unknown method",
                ));
            }
        })
    }

    /// `range(...)` and the NKI range iterators.
    pub(crate) fn make_range(
        &mut self,
        kind: RangeKind,
        args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let name = kind.name();
        let [a, b, c, d] = if kind == RangeKind::Range {
            let [a, b, c] = args.bind(self, name, ["start", "stop", "step"], 1, span)?;
            [a, b, c, None]
        } else {
            args.bind(self, name, ["start", "stop", "step", "directives"], 1, span)?
        };
        let no_reorder = match d {
            None => false,
            Some(d) if d.value.is_none() => false,
            Some(d) => {
                match &d.value {
                    Value::Ext(e) if e.as_any().is::<crate::intrinsics::NoReorderMarker>() => true,
                    v => {
                        return Err(self.type_error(format_args!("`{name}` takes `directives=nl.no_reorder()` (or `ncc.no_reorder()`)"), v, d.span, "not a loop directive"));
                    }
                }
            }
        };
        let a = a.expect("bound");
        let (start, stop) = match &b {
            Some(b) => (self.want_int(&a, name)?, self.want_int(b, name)?),
            None => (0, self.want_int(&a, name)?),
        };
        let step = match &c {
            Some(c) => self.want_int(c, name)?,
            None => 1,
        };
        if step == 0 {
            let at = c.map_or(span, |c| c.span);
            return Err(self.error(
                codes::VALUE_ERROR,
                format!("`{name}` step must not be zero"),
                at,
                "zero step",
            ));
        }
        Ok(Value::Range(Rc::new(RangeValue {
            kind,
            start,
            stop,
            step,
            no_reorder,
        })))
    }
}

/// The result of `np.finfo(dtype)` or `np.iinfo(dtype)`: NumPy's
/// (and `ml_dtypes`') limits of `dtype`, read through attributes.
#[derive(Debug)]
pub(crate) struct NumInfo {
    pub(crate) dtype: DType,
}

impl NumInfo {
    /// Whether the limits of `dt` are known (every plain float and
    /// integer dtype; not the packed x4 or MX ones).
    fn known(dt: DType) -> bool {
        NumInfo { dtype: dt }.attr("max").is_some()
    }

    /// `info.attr`: `bits`, `dtype`, `min`, `max`; for floats also `eps`,
    /// `tiny` and `smallest_normal`.
    pub(crate) fn attr(&self, attr: &str) -> Option<Value> {
        let dt = self.dtype;
        match attr {
            "bits" => return Some(Value::Int(i64::from(dt.size()) * 8)),
            "dtype" => return Some(Value::DType(dt)),
            _ => {}
        }
        // The largest finite value is nkic-isa's (`numerics::max_finite`);
        // floats add their epsilon and smallest-normal exponents.
        let max = nkic_isa::numerics::max_finite(dt);
        if dt.is_float() {
            let (eps, tiny) = match dt {
                DType::F32 | DType::TF32 => (-23, -126),
                DType::F16 => (-10, -14),
                DType::BF16 => (-7, -126),
                DType::F8E4M3 | DType::F8E4M3FN => (-3, -6),
                DType::F8E5M2 => (-2, -14),
                _ => return None,
            };
            let v = match attr {
                "max" => max,
                "min" => -max,
                "eps" => 2f64.powi(eps),
                "tiny" | "smallest_normal" => 2f64.powi(tiny),
                _ => return None,
            };
            return Some(Value::Float(v));
        }
        if !dt.is_int() {
            return None;
        }
        let max = max as i64;
        match attr {
            "min" if dt.is_signed_int() => Some(Value::Int(-max - 1)),
            "min" => Some(Value::Int(0)),
            "max" => Some(Value::Int(max)),
            _ => None,
        }
    }
}

impl crate::value::ApiObject for NumInfo {
    fn type_name(&self) -> &'static str {
        if self.dtype.is_float() {
            "finfo"
        } else {
            "iinfo"
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn display(&self) -> String {
        format!("{}(dtype={})", self.type_name(), self.dtype.name())
    }
}

/// `functools.partial(f, *args, **kwargs)`.
#[derive(Debug)]
pub(crate) struct Partial {
    pub(crate) args: CallArgs,
}

crate::value::api_object!(Partial, "functools.partial");

/// Expands a call of a `partial` object.
pub(crate) fn partial_call(p: &Partial, args: CallArgs) -> (Value, CallArgs) {
    let mut pos = p.args.positional.clone();
    let func = pos.remove(0).value;
    pos.extend(args.positional);
    let mut keywords = p.args.keywords.clone();
    for (k, a) in args.keywords {
        keywords.retain(|(x, _)| *x != k);
        keywords.push((k, a));
    }
    (
        func,
        CallArgs {
            positional: pos,
            keywords,
        },
    )
}
