//! What the caller tells the specializer: the kernel to run, its argument
//! shapes and dtypes, compile-time constants, the launch grid, the target
//! and limits; and how modules are read ([`ModuleLoader`]).
//!
//! Argument specs and constants have a text form shared by the command line,
//! `nkic.toml` and the `# nkic:` directive comments ([`crate::directives`]):
//! `a=float32[256,1024]`, and a constant is `NAME=` any Python expression.
//! Literals (`N=4`, `eps=1e-6`, `flag=True`, `mode='fast'`, `dims=(1,2)`,
//! `dt=bfloat16`) and dotted names (`op=nl.add`,
//! `cmd=nisa.reduce_cmd.load_reduce`, `act=ActFnType.SiLU`) have their own
//! variants; any other expression (`[nl.add, np.multiply]`,
//! `{"a": (2, 3)}`, `Cfg(eps=1e-6, n=4)`) is kept as text
//! ([`ConstValue::Expr`]). Names and dotted names are evaluated when the
//! kernel is bound, in the kernel module's scope (docs/cli.md,
//! "Compile-time arguments").
//! Dimension sizes are positive and fit 32 bits; an int constant must fit
//! the meta-language's 32-bit ints (−2³¹ ..= 2³² − 1, language.md §4.1),
//! as a kernel could not compute a larger one either.

use std::fmt;
use std::str::FromStr;

use nkic_isa::{DType, Target};
use nkic_syntax::ast::{ExprKind, UnaryOp};

/// The default op budget (issue 4).
pub const DEFAULT_MAX_OPS: u64 = 2_000_000;
/// The default limit of nested compile-time calls.
pub const DEFAULT_MAX_CALL_DEPTH: u32 = 64;
/// The default limit of program instances in a launch grid (issue 17).
pub const DEFAULT_MAX_INSTANCES: u64 = 1024;
/// The default step budget of compile-time evaluation (issue 17): about
/// 2.5 s of a runaway loop on the 2-core machine; nki-library's MoE
/// token-generation kernels at their tests' shapes take up to ~40 million.
pub const DEFAULT_MAX_STEPS: u64 = 50_000_000;
/// The default bytes budget of compile-time values (issue 17): 256 MiB.
pub const DEFAULT_MAX_VALUE_BYTES: u64 = 256 << 20;
/// The default nesting limit of compile-time evaluation (issue 17).
pub const DEFAULT_MAX_NESTING: u32 = 3000;

/// Everything the specializer needs besides the sources.
#[derive(Clone, Debug)]
pub struct SpecializeConfig {
    /// The kernel function; `None` picks the one `@nki.jit` function.
    pub kernel: Option<String>,
    /// Tensor arguments (HBM tensors of these shapes and dtypes).
    pub args: Vec<ArgSpec>,
    /// Compile-time arguments by parameter name.
    pub consts: Vec<(String, ConstValue)>,
    /// The SPMD launch grid (1–3 dims); empty for no grid.
    pub grid: Vec<u32>,
    pub target: Target,
    /// Maximum number of IR ops per program instance.
    pub max_ops: u64,
    /// Maximum depth of nested (inlined) calls.
    pub max_call_depth: u32,
    /// Maximum compile-time evaluation steps (expressions evaluated plus
    /// statements run) per program instance (`crate::budget`).
    pub max_steps: u64,
    /// Maximum bytes of strings and sequences built by growing operations
    /// per program instance (`crate::budget`).
    pub max_value_bytes: u64,
    /// Maximum nesting of expressions and statements being evaluated, calls
    /// included; it bounds the evaluator's recursion, so the stack.
    pub max_nesting: u32,
    /// Maximum program instances of a launch grid (each is specialized).
    pub max_instances: u64,
    /// Maximum iterations of one compile-time `while` loop.
    pub max_while_iterations: u64,
    /// Maximum unrolled loop iterations (and comprehension elements) in
    /// total, so loops that record no ops still end.
    pub max_iterations: u64,
    /// Extra import roots (`--path DIR`), searched after the kernel file's
    /// directory.
    pub search_paths: Vec<String>,
    /// Record the hover side table ([`crate::Facts`]).
    pub record_facts: bool,
    /// Fill unset `kernel`, `args`, `consts` and `grid` from the file's
    /// `# nkic:` directive comments.
    pub use_directives: bool,
    /// The caller's `--lnc` override of the physical cores the launch runs
    /// on. `None`: a grid of exactly 2 instances runs on two cores (LNC=2);
    /// `Some(1)` keeps every instance on one core, where
    /// `nisa.core_barrier` has no partner (E0525).
    pub lnc: Option<u32>,
    /// Hold the low-precision float dtypes (bfloat16 and the fp8 formats)
    /// as float32: `nl.bfloat16` and its kin name float32 (the NKI
    /// simulator's `NKI_PRECISE_FP=0`, set by the Python package).
    pub low_precision_as_f32: bool,
    /// `.npy` files of the host given to the compile: `np.load` and
    /// `nl.shared_constant` see them as files the kernel saved
    /// (`api/host.rs`), and their elements count against
    /// `max_value_bytes` (`api::host::ELEMENT_BYTES` each) from the start.
    /// The Python package passes the files its compile-time arguments name;
    /// the specializer itself reads none.
    pub host_files: Vec<HostFile>,
}

/// A `.npy` file of the host, read by the caller ([`SpecializeConfig::host_files`]).
#[derive(Clone, Debug, PartialEq)]
pub struct HostFile {
    /// The path the kernel's code names it by.
    pub path: String,
    /// NumPy's dtype name: `float64`, `int64` or one of the machine's
    /// dtypes (`float32`, `int32`, `bfloat16`, …).
    pub dtype: String,
    pub shape: Vec<usize>,
    /// The elements in row-major order.
    pub values: Vec<f64>,
}

impl SpecializeConfig {
    /// The dtype a kernel's `nl.<dtype>` names under this configuration
    /// (see `low_precision_as_f32`).
    pub fn held_dtype(&self, dtype: DType) -> DType {
        let low = matches!(
            dtype,
            DType::BF16 | DType::F8E4M3 | DType::F8E4M3FN | DType::F8E5M2
        );
        if self.low_precision_as_f32 && low {
            DType::F32
        } else {
            dtype
        }
    }
}

impl Default for SpecializeConfig {
    fn default() -> Self {
        SpecializeConfig {
            kernel: None,
            args: Vec::new(),
            consts: Vec::new(),
            grid: Vec::new(),
            target: Target::Trn3,
            max_ops: DEFAULT_MAX_OPS,
            max_call_depth: DEFAULT_MAX_CALL_DEPTH,
            max_instances: DEFAULT_MAX_INSTANCES,
            max_steps: DEFAULT_MAX_STEPS,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            max_nesting: DEFAULT_MAX_NESTING,
            max_while_iterations: 1_000_000,
            max_iterations: 20_000_000,
            search_paths: Vec::new(),
            record_facts: false,
            use_directives: true,
            lnc: None,
            low_precision_as_f32: false,
            host_files: Vec::new(),
        }
    }
}

/// A tensor argument: `name=dtype[d0,d1,...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgSpec {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
}

/// A compile-time argument value.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Tuple(Vec<ConstValue>),
    DType(DType),
    /// A dotted name resolved in the kernel's module when the kernel is
    /// bound: `nl.add`, `nisa.reduce_cmd.load_reduce`, `MyEnum.A`.
    Name(Vec<String>),
    /// Any other Python expression, as source text (trimmed): a list, a
    /// dict, a constructor call (`pkg.mod.Cfg(eps=1e-6)`), ... Parsed with
    /// `nkic_syntax::parse_expression` and evaluated by the specializer in
    /// the kernel module's scope when the kernel is bound; its errors
    /// point into the text (a source file named `<const NAME>`).
    Expr(String),
}

/// Reads the text of modules a kernel imports. The core does no IO: the
/// CLI reads files, the language server answers from open editors.
///
/// `path` is a `/`-separated path built from the kernel file's name (as
/// registered in the `SourceMap`) or a search root, e.g. `kernels/util.py`
/// or `lib/pkg/__init__.py`. Return `None` when there is no such file.
pub trait ModuleLoader: Sync {
    fn read(&self, path: &str) -> Option<String>;

    /// As [`ModuleLoader::read`], but a file that exists and is not valid
    /// UTF-8 is an error saying where, so that it is reported instead of
    /// taken for a missing file. Loaders of text that is always UTF-8 (an
    /// editor's buffers, closures) keep this default.
    fn read_source(&self, path: &str) -> Result<Option<String>, NotUtf8> {
        Ok(self.read(path))
    }
}

/// A file that is not valid UTF-8 ([`ModuleLoader::read_source`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotUtf8 {
    /// The byte offset of the first invalid byte.
    pub offset: usize,
    /// The text with invalid bytes replaced (U+FFFD), to show the line.
    pub lossy: String,
}

impl NotUtf8 {
    /// Splits `bytes` into its text, or the error for its first invalid byte.
    pub fn decode(bytes: Vec<u8>) -> Result<String, NotUtf8> {
        String::from_utf8(bytes).map_err(|err| NotUtf8 {
            offset: err.utf8_error().valid_up_to(),
            lossy: String::from_utf8_lossy(err.as_bytes()).into_owned(),
        })
    }

    /// The span of the first invalid byte in `lossy` (its replacement
    /// character).
    pub fn span(&self) -> nkic_diag::Span {
        let end = self.lossy[self.offset..]
            .chars()
            .next()
            .map_or(self.offset, |c| self.offset + c.len_utf8());
        nkic_diag::Span::from_range(self.offset..end)
    }
}

/// A loader that finds nothing: every import of a user module fails.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoModules;

impl ModuleLoader for NoModules {
    fn read(&self, _path: &str) -> Option<String> {
        None
    }
}

/// Any closure works as a loader.
impl<F: Fn(&str) -> Option<String> + Sync> ModuleLoader for F {
    fn read(&self, path: &str) -> Option<String> {
        self(path)
    }
}

/// Why an argument spec or constant did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

impl FromStr for ArgSpec {
    type Err = SpecError;

    /// Parses `name=dtype[d0,d1,...]` (spaces allowed around the parts;
    /// `[]` is a 0-d tensor, which NKI does not allow, so it is rejected).
    fn from_str(s: &str) -> Result<ArgSpec, SpecError> {
        let (name, rest) = split_binding(s, "name=dtype[shape]")?;
        let rest = rest.trim();
        let (dtype, shape) = rest.split_once('[').ok_or_else(|| {
            SpecError(format!(
                "expected a shape in brackets after the dtype, as in `{name}=float32[128,512]`"
            ))
        })?;
        let dtype: DType = dtype
            .trim()
            .parse()
            .map_err(|e| SpecError(format!("{e}")))?;
        let (shape, tail) = shape
            .split_once(']')
            .ok_or_else(|| SpecError(format!("missing `]` in `{rest}`")))?;
        let tail = tail.trim();
        if !tail.is_empty() {
            return Err(SpecError(format!(
                "unexpected `{tail}` after the shape in `{rest}`"
            )));
        }
        let mut parts: Vec<&str> = shape.split(',').map(str::trim).collect();
        // One trailing comma is allowed, as in a Python tuple (`[128,]`);
        // any other empty dimension is a mistake.
        if parts.len() > 1 && parts.last() == Some(&"") {
            parts.pop();
        }
        if parts.len() > 1 && parts.contains(&"") {
            return Err(SpecError(format!("an empty dimension in `[{shape}]`")));
        }
        let dims: Vec<u64> = parts
            .into_iter()
            .filter(|d| !d.is_empty())
            .map(dimension)
            .collect::<Result<_, _>>()?;
        if dims.is_empty() {
            return Err(SpecError(format!("`{name}` needs at least one dimension")));
        }
        Ok(ArgSpec {
            name: name.to_owned(),
            dtype,
            shape: dims,
        })
    }
}

/// One dimension size of an argument spec: a positive integer of at most
/// 32 bits.
fn dimension(d: &str) -> Result<u64, SpecError> {
    if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SpecError(format!(
            "`{d}` is not a dimension size (a positive integer)"
        )));
    }
    match d.parse::<u64>() {
        Ok(0) => Err(SpecError(format!(
            "a dimension size must be positive, found `{d}`"
        ))),
        Ok(n) if n <= u64::from(u32::MAX) => Ok(n),
        _ => Err(SpecError(format!(
            "the dimension size `{d}` is too large (at most {})",
            u32::MAX
        ))),
    }
}

impl fmt::Display for ArgSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        write!(f, "{}={}[{}]", self.name, self.dtype, dims.join(","))
    }
}

impl ConstValue {
    /// Parses `name=value`.
    pub fn parse_binding(s: &str) -> Result<(String, ConstValue), SpecError> {
        let (name, value) = split_binding(s, "name=value")?;
        Ok((name.to_owned(), value.trim().parse()?))
    }
}

/// Splits `name=rest` (`form` is the expected form, for the error) and
/// checks that `name` is a parameter name; `name` is trimmed.
fn split_binding<'a>(s: &'a str, form: &str) -> Result<(&'a str, &'a str), SpecError> {
    let (name, rest) = s
        .split_once('=')
        .ok_or_else(|| SpecError(format!("expected `{form}`, found `{s}`")))?;
    let name = name.trim();
    if !is_identifier(name) {
        return Err(SpecError(format!("`{name}` is not a parameter name")));
    }
    Ok((name, rest))
}

impl FromStr for ConstValue {
    type Err = SpecError;

    /// Parses a Python literal (int, float, bool, None, string, tuple of
    /// those), a dtype name, a dotted name (`nl.add`), or else any Python
    /// expression, kept as text ([`ConstValue::Expr`]). Only text that is
    /// not a Python expression is an error.
    fn from_str(s: &str) -> Result<ConstValue, SpecError> {
        if let Ok(dt) = s.trim().parse::<DType>() {
            return Ok(ConstValue::DType(dt));
        }
        // Python spells infinities and NaN only through `float(...)`; the
        // bare words are accepted too, as `repr` prints them.
        match s.trim() {
            "inf" | "float('inf')" | "float(\"inf\")" => {
                return Ok(ConstValue::Float(f64::INFINITY));
            }
            "-inf" | "float('-inf')" | "float(\"-inf\")" => {
                return Ok(ConstValue::Float(f64::NEG_INFINITY));
            }
            "nan" | "float('nan')" | "float(\"nan\")" => return Ok(ConstValue::Float(f64::NAN)),
            _ => {}
        }
        let (expr, diags) = nkic_syntax::parse_expression(s);
        if let Some(d) = diags.first() {
            return Err(SpecError(format!(
                "`{}` is not a Python expression: {}",
                s.trim(),
                d.message
            )));
        }
        let Some(c) = from_expr(&expr) else {
            return Ok(ConstValue::Expr(s.trim().to_owned()));
        };
        if let Some(i) = out_of_range_int(&c) {
            return Err(SpecError(format!(
                "the int {i} in `{}` does not fit the specializer's 32-bit ints ({} ..= {})",
                s.trim(),
                crate::eval::INT_MIN,
                crate::eval::INT_END - 1
            )));
        }
        Ok(c)
    }
}

/// The first int of `c` outside the meta-language's 32-bit range
/// (language.md §4.1), which a kernel could not compute itself.
fn out_of_range_int(c: &ConstValue) -> Option<i64> {
    match c {
        ConstValue::Int(i) if !(crate::eval::INT_MIN..crate::eval::INT_END).contains(i) => Some(*i),
        ConstValue::Tuple(items) => items.iter().find_map(out_of_range_int),
        _ => None,
    }
}

fn from_expr(e: &nkic_syntax::ast::Expr) -> Option<ConstValue> {
    Some(match &e.kind {
        ExprKind::Int(i) => ConstValue::Int(i64::try_from(*i).ok()?),
        ExprKind::Float(f) => ConstValue::Float(*f),
        ExprKind::Bool(b) => ConstValue::Bool(*b),
        ExprKind::None => ConstValue::None,
        ExprKind::Str(s) => ConstValue::Str(s.clone()),
        ExprKind::Tuple(items) => {
            ConstValue::Tuple(items.iter().map(from_expr).collect::<Option<_>>()?)
        }
        ExprKind::UnaryOp {
            op: UnaryOp::USub,
            operand,
        } => match from_expr(operand)? {
            ConstValue::Int(i) => ConstValue::Int(-i),
            ConstValue::Float(f) => ConstValue::Float(-f),
            _ => return None,
        },
        ExprKind::Name(n) => match n.parse() {
            Ok(dt) => ConstValue::DType(dt),
            Err(_) => ConstValue::Name(vec![n.to_string()]),
        },
        ExprKind::Attribute { attr, .. } => match attr.name.parse() {
            Ok(dt) => ConstValue::DType(dt),
            Err(_) => ConstValue::Name(dotted(e)?),
        },
        _ => return None,
    })
}

/// The parts of a dotted name `a.b.c`, or `None` for any other expression.
pub(crate) fn dotted(e: &nkic_syntax::ast::Expr) -> Option<Vec<String>> {
    match &e.kind {
        ExprKind::Name(n) => Some(vec![n.to_string()]),
        ExprKind::Attribute { value, attr } => {
            let mut parts = dotted(value)?;
            parts.push(attr.name.to_string());
            Some(parts)
        }
        _ => None,
    }
}

impl fmt::Display for ConstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::None => f.write_str("None"),
            ConstValue::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            ConstValue::Int(i) => write!(f, "{i}"),
            ConstValue::Float(x) => write!(f, "{x:?}"),
            ConstValue::Str(s) => write!(f, "{s:?}"),
            ConstValue::DType(d) => write!(f, "{d}"),
            ConstValue::Name(parts) => f.write_str(&parts.join(".")),
            ConstValue::Expr(text) => f.write_str(text),
            ConstValue::Tuple(items) => {
                f.write_str("(")?;
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{it}")?;
                }
                if items.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
        }
    }
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arg_specs_parse_and_print() {
        let a: ArgSpec = "a = float32[256, 1024]".parse().unwrap();
        assert_eq!(a.name, "a");
        assert_eq!(a.dtype, DType::F32);
        assert_eq!(a.shape, vec![256, 1024]);
        assert_eq!(a.to_string(), "a=float32[256,1024]");
        assert!("a=float32".parse::<ArgSpec>().is_err());
        assert!("a=float64[2]".parse::<ArgSpec>().is_err());
        assert!("a=bf16[0]".parse::<ArgSpec>().is_err());
        assert!("1a=bf16[2]".parse::<ArgSpec>().is_err());
        let trailing: ArgSpec = "a=float32[128,]".parse().unwrap();
        assert_eq!(trailing.shape, vec![128]);
    }

    #[test]
    fn empty_dimensions_are_errors() {
        for text in [
            "a=float32[256,,1024]",
            "a=float32[,256,1024]",
            "a=float32[256,1024,,]",
        ] {
            let err = text.parse::<ArgSpec>().unwrap_err().0;
            assert!(err.starts_with("an empty dimension in `["), "{text}: {err}");
        }
    }

    #[test]
    fn arg_spec_errors_say_what_is_wrong() {
        let err = |s: &str| s.parse::<ArgSpec>().unwrap_err().0;
        assert_eq!(
            err("x=float32[4294967297,1]"),
            "the dimension size `4294967297` is too large (at most 4294967295)"
        );
        assert_eq!(
            err("x=float32[99999999999999999999999]"),
            "the dimension size `99999999999999999999999` is too large (at most 4294967295)"
        );
        assert_eq!(
            err("x=float32[0,1]"),
            "a dimension size must be positive, found `0`"
        );
        assert_eq!(
            err("x=float32[-3,1]"),
            "`-3` is not a dimension size (a positive integer)"
        );
        assert_eq!(
            err("x=float32[128,512]extra"),
            "unexpected `extra` after the shape in `float32[128,512]extra`"
        );
        assert_eq!(err("x=float32[128,512"), "missing `]` in `float32[128,512`");
        let ok: ArgSpec = "x=float32[4294967295,1] ".parse().unwrap();
        assert_eq!(ok.shape, vec![4294967295, 1]);
    }

    #[test]
    fn consts_outside_32_bits_are_rejected() {
        let err = |s: &str| s.parse::<ConstValue>().unwrap_err().0;
        assert_eq!(
            err("4294967296"),
            "the int 4294967296 in `4294967296` does not fit the specializer's 32-bit ints (-2147483648 ..= 4294967295)"
        );
        assert_eq!(
            err("(1, -2147483649)"),
            "the int -2147483649 in `(1, -2147483649)` does not fit the specializer's 32-bit ints (-2147483648 ..= 4294967295)"
        );
        check_parses(&[
            ("4294967295", ConstValue::Int(4294967295)),
            ("-2147483648", ConstValue::Int(-2147483648)),
        ]);
    }

    /// Each text parses to its value.
    fn check_parses(cases: &[(&str, ConstValue)]) {
        for (text, want) in cases {
            assert_eq!(text.parse::<ConstValue>().as_ref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn low_precision_is_held_as_f32_only_when_asked() {
        let mut config = SpecializeConfig::default();
        assert_eq!(config.held_dtype(DType::BF16), DType::BF16);
        config.low_precision_as_f32 = true;
        for d in [DType::BF16, DType::F8E4M3, DType::F8E4M3FN, DType::F8E5M2] {
            assert_eq!(config.held_dtype(d), DType::F32);
        }
        for d in [DType::F16, DType::I8, DType::F8E8M0, DType::F8E4M3FNx4] {
            assert_eq!(config.held_dtype(d), d);
        }
    }

    #[test]
    fn consts_parse() {
        assert_eq!(
            ConstValue::parse_binding("N=4").unwrap(),
            ("N".into(), ConstValue::Int(4))
        );
        let expr = |text: &str| ConstValue::Expr(text.into());
        let name = |parts: &[&str]| ConstValue::Name(parts.iter().map(|&p| p.into()).collect());
        check_parses(&[
            ("-1.5", ConstValue::Float(-1.5)),
            ("True", ConstValue::Bool(true)),
            (
                "(1, 'x')",
                ConstValue::Tuple(vec![ConstValue::Int(1), ConstValue::Str("x".into())]),
            ),
            ("nl.bfloat16", ConstValue::DType(DType::BF16)),
            ("f(x) ", expr("f(x)")),
            ("[1, 2]", expr("[1, 2]")),
            ("(1, [2])", expr("(1, [2])")),
            ("-inf", ConstValue::Float(f64::NEG_INFINITY)),
            (
                "nisa.reduce_cmd.load_reduce",
                name(&["nisa", "reduce_cmd", "load_reduce"]),
            ),
        ]);
        assert_eq!(
            "1 +".parse::<ConstValue>().unwrap_err().0,
            "`1 +` is not a Python expression: expected an expression after `+`"
        );
        assert_eq!(
            ConstValue::parse_binding("cfg=pkg.m.Cfg(eps=1e-6, n=(1, 2))").unwrap(),
            (
                "cfg".into(),
                ConstValue::Expr("pkg.m.Cfg(eps=1e-6, n=(1, 2))".into())
            )
        );
        assert_eq!(
            "(nl.add, 2)".parse::<ConstValue>().unwrap().to_string(),
            "(nl.add, 2)"
        );
        assert_eq!(
            ConstValue::Tuple(vec![ConstValue::Int(1)]).to_string(),
            "(1,)"
        );
    }
}
