//! The abstract syntax tree of the Python subset nkic reads.
//!
//! The tree mirrors Python's own `ast` module closely (names and shapes), so
//! that kernel authors and later stages can rely on familiar structure. Every
//! node carries the byte [`Span`] it was parsed from. The tree holds no
//! semantic data and is not changed after parsing.
//!
//! Recovered regions of malformed input appear as [`StmtKind::Error`] and
//! [`ExprKind::Error`]; a diagnostic has always been reported for them.
//!
//! Literals are decoded: integers to `u128` (a larger literal is an error),
//! floats to `f64`, strings to their value (escapes resolved, implicit
//! concatenation merged). A string concatenation that includes an f-string is
//! an [`ExprKind::FString`].
//!
//! # Host code
//!
//! A kernel file is usually a whole Python program: the kernel functions plus
//! code that runs on the host (tests, argument parsing, NumPy reference code,
//! a `main` guard). [`Module::host_code`] lists, by index into
//! [`Module::body`], the top-level statements that are host code. The rule:
//!
//! - imports, function and class definitions (decorated or not) and the module
//!   docstring are *kernel-level* statements;
//! - an assignment or annotated assignment at the top level is kernel-level if
//!   its value is a constant expression: literals, names, attribute accesses,
//!   subscripts, operators and displays of those, without calls, lambdas,
//!   comprehensions, `await` or `yield`;
//! - everything else at the top level is host code, notably
//!   `if __name__ == "__main__":` blocks, top-level loops, `try` blocks,
//!   `with` blocks and expression statements such as calls.
//!
//! Host statements are fully parsed (so syntax errors in them are reported);
//! it is for later stages to skip them.

use nkic_diag::Span;
use std::sync::Arc;

/// A parsed file.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub body: Vec<Stmt>,
    pub span: Span,
    /// Indices into `body` of the top-level statements that are host code,
    /// ascending (see the module documentation for the rule).
    pub host_code: Vec<usize>,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// A name in a definition, import, attribute or parameter position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: Name,
    pub span: Span,
}

/// An identifier (or dotted import path) as written in the source.
///
/// It derefs to `str` and compares with `str`, `&str` and `String`. The
/// text is shared (`Arc<str>`): the parser makes one per distinct
/// identifier of a file and clones it for the others (`Ctx::name`), and
/// reading it is a plain dereference, which the specializer does at every
/// evaluation of a name (inline bytes, validated by `str::from_utf8` at
/// each read, were 8 % of the instructions of a MoE kernel's check). Use
/// `to_string()` (or `String::from`) where a `String` is needed.
#[derive(Clone)]
pub struct Name(Arc<str>, u64);

impl Name {
    /// A name with the text `text`.
    pub fn new(text: &str) -> Name {
        Name::with_hash(text, name_hash(text))
    }

    /// [`Name::new`] with `hash` the text's [`name_hash`].
    pub(crate) fn with_hash(text: &str, hash: u64) -> Name {
        debug_assert_eq!(hash, name_hash(text), "a name's hash is its text's");
        Name(Arc::from(text), hash)
    }

    /// The name's [`name_hash`], computed when the name was made.
    pub fn key_hash(&self) -> u64 {
        self.1
    }

    /// The text of the name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The hash by which the specializer's scopes find a name (the 64-bit
/// FNV-1a of its bytes). Every [`Name`] carries its own, so looking a
/// name up in a chain of scopes hashes nothing.
pub fn name_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Default for Name {
    fn default() -> Name {
        Name::new("")
    }
}

impl std::ops::Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Name {
        Name::new(&text)
    }
}

impl From<Name> for String {
    fn from(name: Name) -> String {
        name.as_str().to_string()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `def name(params) -> returns: body`, with decorators, maybe `async`.
    FunctionDef(Box<FunctionDef>),
    /// `class name(bases): body`, with decorators.
    ClassDef(Box<ClassDef>),
    /// `return value`.
    Return(Option<Expr>),
    /// `del a, b[0]`.
    Delete(Vec<Expr>),
    /// `a = b = value`: every target in order, then the value.
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `target op= value`.
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    /// `target: annotation [= value]`.
    AnnAssign {
        target: Expr,
        annotation: Expr,
        value: Option<Expr>,
    },
    /// `for target in iter: body else: orelse`, maybe `async`.
    For {
        is_async: bool,
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// `while test: body else: orelse`.
    While {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// `if test: body` with `elif` chains nested as a single `If` in `orelse`.
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// `with a as b, c: body`, maybe `async`.
    With {
        is_async: bool,
        items: Vec<WithItem>,
        body: Vec<Stmt>,
    },
    /// `raise exc from cause`.
    Raise {
        exc: Option<Expr>,
        cause: Option<Expr>,
    },
    /// `try: body except ...: ... else: orelse finally: finalbody`.
    Try {
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    },
    /// `assert test, msg`.
    Assert {
        test: Expr,
        msg: Option<Expr>,
    },
    /// `import a.b as c, d`.
    Import(Vec<Alias>),
    /// `from ..module import a as b, c` (`level` counts the leading dots;
    /// `import *` is one alias named `*`).
    ImportFrom {
        module: Option<Ident>,
        names: Vec<Alias>,
        level: u32,
    },
    /// `global a, b`.
    Global(Vec<Ident>),
    /// `nonlocal a, b`.
    Nonlocal(Vec<Ident>),
    /// An expression used as a statement (calls, docstrings).
    Expr(Expr),
    Pass,
    Break,
    Continue,
    /// A region that could not be parsed; its diagnostic has been reported.
    /// Statements of an indented block that followed a broken header are
    /// kept here, so errors inside them are reported too.
    Error(Vec<Stmt>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    pub is_async: bool,
    pub decorators: Vec<Expr>,
    pub name: Ident,
    pub params: Params,
    pub returns: Option<Expr>,
    pub body: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClassDef {
    pub decorators: Vec<Expr>,
    pub name: Ident,
    /// Base classes and keywords (`metaclass=...`) as call arguments.
    pub bases: Vec<Arg>,
    pub body: Vec<Stmt>,
}

/// The parameter list of a `def` or `lambda`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Params {
    /// Parameters before a `/`.
    pub posonly: Vec<Param>,
    /// Ordinary positional-or-keyword parameters.
    pub args: Vec<Param>,
    /// `*args`.
    pub vararg: Option<Param>,
    /// Parameters after `*` or `*args`.
    pub kwonly: Vec<Param>,
    /// `**kwargs`.
    pub kwarg: Option<Param>,
    pub span: Span,
}

impl Params {
    /// Every parameter in source order: positional-only, ordinary,
    /// `*args`, keyword-only, `**kwargs`.
    pub fn iter(&self) -> impl Iterator<Item = &Param> {
        self.posonly
            .iter()
            .chain(&self.args)
            .chain(&self.vararg)
            .chain(&self.kwonly)
            .chain(&self.kwarg)
    }
}

/// One parameter: `name: annotation = default`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub annotation: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

/// `import` item: `a.b.c as d`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alias {
    /// The dotted name as written (`a.b.c`), or `*`.
    pub name: Ident,
    pub asname: Option<Ident>,
    pub span: Span,
}

/// `with` item: `context as target`.
#[derive(Clone, Debug, PartialEq)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
    pub span: Span,
}

/// `except type as name: body`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExceptHandler {
    pub type_: Option<Expr>,
    pub name: Option<Ident>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// The expression kinds with no sub-expression, as one or-pattern (for
/// the walks that descend into every other kind: the list lives here
/// once, and a new leaf kind is added to it).
#[macro_export]
macro_rules! leaf_exprs {
    () => {
        $crate::ast::ExprKind::Int(_)
            | $crate::ast::ExprKind::Float(_)
            | $crate::ast::ExprKind::Imaginary(_)
            | $crate::ast::ExprKind::Str(_)
            | $crate::ast::ExprKind::Bytes(_)
            | $crate::ast::ExprKind::Bool(_)
            | $crate::ast::ExprKind::None
            | $crate::ast::ExprKind::Ellipsis
            | $crate::ast::ExprKind::Name(_)
            | $crate::ast::ExprKind::Error
    };
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// `a and b and c` / `a or b`.
    BoolOp {
        op: BoolOp,
        values: Vec<Expr>,
    },
    /// `target := value`.
    NamedExpr {
        target: Box<Expr>,
        value: Box<Expr>,
    },
    BinOp {
        left: Box<Expr>,
        op: BinOp,
        right: Box<Expr>,
    },
    UnaryOp {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Lambda {
        params: Box<Params>,
        body: Box<Expr>,
    },
    /// `body if test else orelse`.
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    Dict(Vec<DictItem>),
    Set(Vec<Expr>),
    ListComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    SetComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    DictComp {
        key: Box<Expr>,
        value: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    GeneratorExp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    Await(Box<Expr>),
    Yield(Option<Box<Expr>>),
    YieldFrom(Box<Expr>),
    /// `a < b <= c`: the first operand, then each operator with its right
    /// operand.
    Compare {
        left: Box<Expr>,
        comparisons: Vec<(CmpOp, Expr)>,
    },
    Call {
        func: Box<Expr>,
        args: Vec<Arg>,
    },
    Int(u128),
    Float(f64),
    Imaginary(f64),
    Str(String),
    Bytes(Vec<u8>),
    FString(Vec<FStringPart>),
    Bool(bool),
    None,
    Ellipsis,
    Attribute {
        value: Box<Expr>,
        attr: Ident,
    },
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `*value` in a display, call or assignment target.
    Starred(Box<Expr>),
    Name(Name),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// `lower:upper:step` inside a subscript.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    /// A region that could not be parsed; its diagnostic has been reported.
    Error,
}

/// One argument of a call (or one base of a class).
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub kind: ArgKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ArgKind {
    Positional(Expr),
    /// `*iterable`.
    Star(Expr),
    /// `name=value`.
    Keyword(Ident, Expr),
    /// `**mapping`.
    DoubleStar(Expr),
}

/// One entry of a dict display.
#[derive(Clone, Debug, PartialEq)]
pub enum DictItem {
    KeyValue(Expr, Expr),
    /// `**mapping`.
    Unpack(Expr),
}

/// `for target in iter if cond...` inside a comprehension.
#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub is_async: bool,
    pub target: Expr,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
    pub span: Span,
}

/// A piece of an f-string.
#[derive(Clone, Debug, PartialEq)]
pub enum FStringPart {
    /// Literal text (escapes resolved, `{{` as `{`).
    Literal(String),
    /// A replacement field.
    Field(Box<FStringField>),
}

/// `{value=!conversion:format_spec}`.
#[derive(Clone, Debug, PartialEq)]
pub struct FStringField {
    pub value: Expr,
    /// For a self-documenting field `{x = }`, the text printed before the
    /// value: the expression as written plus `=` and whitespace.
    pub debug_text: Option<String>,
    /// `r`, `s` or `a`.
    pub conversion: Option<char>,
    pub format_spec: Option<Vec<FStringPart>>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mult,
    MatMult,
    Div,
    Mod,
    Pow,
    LShift,
    RShift,
    BitOr,
    BitXor,
    BitAnd,
    FloorDiv,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Invert,
    Not,
    UAdd,
    USub,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    Is,
    IsNot,
    In,
    NotIn,
}

impl BinOp {
    /// The operator as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mult => "*",
            BinOp::MatMult => "@",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::FloorDiv => "//",
        }
    }
}

impl UnaryOp {
    /// The operator as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            UnaryOp::Invert => "~",
            UnaryOp::Not => "not",
            UnaryOp::UAdd => "+",
            UnaryOp::USub => "-",
        }
    }
}

impl CmpOp {
    /// The operator as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
        }
    }
}

impl BoolOp {
    /// The operator as written in source.
    pub fn as_str(self) -> &'static str {
        match self {
            BoolOp::And => "and",
            BoolOp::Or => "or",
        }
    }
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }

    /// An error expression covering `span`.
    pub fn error(span: Span) -> Expr {
        Expr::new(ExprKind::Error, span)
    }
}

impl Stmt {
    pub fn new(kind: StmtKind, span: Span) -> Stmt {
        Stmt { kind, span }
    }
}

impl Module {
    /// Whether the top-level statement at `index` is host code.
    pub fn is_host_code(&self, index: usize) -> bool {
        self.host_code.binary_search(&index).is_ok()
    }

    /// The top-level statements that are not host code, in order.
    pub fn kernel_items(&self) -> impl Iterator<Item = &Stmt> {
        self.body
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.is_host_code(*i))
            .map(|(_, s)| s)
    }

    /// A copy with every span set to `0..0`, for comparing trees parsed from
    /// different texts (the unparse round trip).
    pub fn without_spans(&self) -> Module {
        let mut module = self.clone();
        crate::visit::erase_spans(&mut module);
        module
    }
}
