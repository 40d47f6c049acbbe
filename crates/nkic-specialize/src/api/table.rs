//! The one declarative table of API functions.
//!
//! Every `nl.*`, `nisa.*` and tensor-method function is an [`ApiDef`]: its
//! dotted name, its parameters (name, kind, default), the engines it may
//! run on, the oldest target that has it, a one-line summary, the
//! constraints it checks (as text), and the Rust function that runs it.
//! The same entry drives argument binding ([`bind`]), hover text
//! ([`describe`]), the generated reference in `docs/language.md`
//! ([`reference_markdown`]) and, through its `run` function, the checks.
//!
//! Definitions live in one file per area (`tensor.rs`, `memory.rs`,
//! `isa/vector.rs`, `nl_math.rs`, …), each exporting a `DEFS` slice; the
//! [`REGISTRY`] lists those slices, so a new file is added with one line.
//!
//! # Two call forms
//!
//! An ISA function with `value_form: true` also accepts the legacy
//! value-returning form (`c = nisa.tensor_tensor(a, b, op=nl.add)`): when
//! the call does not bind to the current signature (destination first)
//! and gives no `dst=`, it is bound again without `dst` and with the
//! legacy keywords `dtype=` and `mask=`. The run function then finds no
//! `dst` and allocates the result itself ([`Bound::is_value_form`]).

use std::rc::Rc;
use std::sync::OnceLock;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::Buffer;
use nkic_isa::hash::FastBuild;
use nkic_isa::{ActFunc, AluOp, DType, Dim, Engine, ReduceCmd, Target};

use super::ApiFn;
use super::codes;
use super::consts::{self, EnumValue};
use super::isa::select::{ON_FALSE_VALUE, ON_TRUE_TILE};
use crate::args::{Arg, CallArgs};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// Runs one API function on its bound arguments; `span` is the whole call.
pub type RunFn = fn(&mut Ctx<'_>, &Bound, Span) -> Result<Value, Diagnostic>;

/// One API function. See the module doc.
#[derive(Debug)]
pub struct ApiDef {
    /// The dotted name users write: `nl.ndarray`, `nisa.dma_copy`,
    /// `tensor.reshape` (methods of `NkiTensor` start with `tensor.`).
    pub name: &'static str,
    pub params: &'static [Param],
    /// The engines that may execute it; empty for functions that only
    /// build views or values at compile time.
    pub engines: &'static [Engine],
    /// The oldest target that has it.
    pub since: Target,
    /// True for ISA functions that also accept the legacy value-returning
    /// form (module doc).
    pub value_form: bool,
    /// One sentence: what it does.
    pub summary: &'static str,
    /// The rules checked at compile time, one sentence each.
    pub constraints: &'static [&'static str],
    pub run: RunFn,
}

/// One parameter of an [`ApiDef`].
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    /// `None`: required; otherwise the default as NKI code (`nl.sbuf`, `1.0`).
    pub default: Option<&'static str>,
}

/// The kind of value a parameter takes (for documentation and hover; the
/// run functions convert and check values with [`Bound`]'s accessors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tensor (view).
    Tensor,
    /// A tensor or a compile-time number (`(P, 1)` vector or immediate).
    Scalar,
    /// A tensor or a Python number (operands of `nl.*` math).
    Operand,
    Int,
    Float,
    Bool,
    Str,
    /// A shape tuple of positive ints.
    Shape,
    DType,
    Buffer,
    /// An ALU operator (`nl.add`, …).
    AluOp,
    /// An activation function (`nl.exp`, …).
    ActFunc,
    /// A member of the named `nisa` enum (`engine`, `reduce_cmd`, …).
    Enum(&'static str),
    /// An int or a tuple of ints (axes, permutations, tile positions).
    Ints,
    /// An access pattern `[[step, num], …]`.
    Pattern,
    /// A legacy index expression or predicate (`nl.arange` grids).
    Index,
    /// Anything (documented in the summary).
    Any,
}

impl Kind {
    /// The type as shown in signatures.
    pub fn text(self) -> &'static str {
        match self {
            Kind::Tensor => "tensor",
            Kind::Scalar => "float | tensor",
            Kind::Operand => "tensor | number",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Bool => "bool",
            Kind::Str => "str",
            Kind::Shape => "tuple[int, ...]",
            Kind::DType => "dtype",
            Kind::Buffer => "buffer",
            Kind::AluOp => "alu_op",
            Kind::ActFunc => "activation",
            Kind::Enum(e) => e,
            Kind::Ints => "int | tuple[int, ...]",
            Kind::Pattern => "list[list[int]]",
            Kind::Index => "index",
            Kind::Any => "any",
        }
    }
}

/// A required parameter.
pub const fn req(name: &'static str, kind: Kind) -> Param {
    Param {
        name,
        kind,
        default: None,
    }
}

/// An optional parameter with its default as NKI code.
pub const fn opt(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param {
        name,
        kind,
        default: Some(default),
    }
}

// ------------------------------------------------------------------ shared parameters

/// `dst`: the destination tile of an ISA instruction (its first parameter).
pub const DST: Param = req("dst", Kind::Tensor);
/// `data`: the tile input of most compute instructions.
pub const DATA: Param = req("data", Kind::Tensor);
/// `src`: the tile input of copies, scans and searches.
pub const SRC: Param = req("src", Kind::Tensor);
/// `name=`: the instruction's name in listings (its last parameter).
pub const NAME: Param = opt("name", Kind::Str, "None");
/// `engine=` of an instruction the compiler places when not told.
pub const ENGINE: Param = engine("nisa.engine.unknown");
/// `engine=` of an instruction that runs on GpSimd unless told otherwise.
pub const ENGINE_GPSIMD: Param = engine("nisa.engine.gpsimd");
/// `dtype=` of an `nl.*` function's result.
pub const OUT_DTYPE: Param = opt("dtype", Kind::DType, "None");
/// `op0=` of a two-stage operator pipeline.
pub const OP0: Param = req("op0", Kind::AluOp);
/// `op1=` of a two-stage operator pipeline.
pub const OP1: Param = req("op1", Kind::AluOp);
/// `operand0=`: the scalar or `(P, 1)` operand of `op0`.
pub const OPERAND0: Param = req("operand0", Kind::Scalar);
/// `imm1=`: the optional immediate (a number or `(P, 1)` tile) of the second
/// stage of a pipeline (`activate2`, `tensor_scalar_cumulative`).
pub const IMM1: Param = opt("imm1", Kind::Scalar, "None");
/// `reverse0=`: swap the operands of `op0`.
pub const REVERSE0: Param = opt("reverse0", Kind::Bool, "False");
/// `reverse1=`: swap the operands of `op1`.
pub const REVERSE1: Param = opt("reverse1", Kind::Bool, "False");
/// `op=`: the ALU operator of an element-wise operation or a reduction.
pub const OP: Param = req("op", Kind::AluOp);
/// `reduce_op=`: the operator of an accumulating reduction.
pub const REDUCE_OP: Param = req("reduce_op", Kind::AluOp);
/// `reduce_res=`: the `(P, 1)` tile an accumulating reduction is read into.
pub const REDUCE_RES: Param = opt("reduce_res", Kind::Tensor, "None");
/// `self`: the tensor a method of `NkiTensor` is called on.
pub const SELF: Param = req("self", Kind::Tensor);
/// `x`: the tile input of an `nl.*` function.
pub const X: Param = req("x", Kind::Tensor);
/// `dim=` of a view method.
pub const DIM: Param = req("dim", Kind::Int);
/// `axis`: the trailing free axes a reduction or normalization runs over.
pub const AXIS: Param = req("axis", Kind::Ints);
/// `keepdims=`: a reduction keeps its reduced axes with size 1.
pub const KEEPDIMS: Param = opt("keepdims", Kind::Bool, "False");
/// `pattern`: an access pattern `[[step, num], …]`.
pub const PATTERN: Param = req("pattern", Kind::Pattern);
/// `offset=`: the constant term of an iota-style index expression
/// `offset + p·channel_multiplier + Σ i_k·step_k`.
pub const OFFSET: Param = opt("offset", Kind::Int, "0");
/// `predicate`: the tile that selects elements (non-zero: selected).
pub const PREDICATE: Param = req("predicate", Kind::Tensor);
/// `reverse_pred=`: select where `predicate` is zero instead.
pub const REVERSE_PRED: Param = opt("reverse_pred", Kind::Bool, "False");
/// `shape` of a new tensor.
pub const SHAPE: Param = req("shape", Kind::Shape);
/// `dtype` of a new tensor.
pub const DTYPE: Param = req("dtype", Kind::DType);
/// `buffer=` of a new tensor.
pub const BUFFER: Param = opt("buffer", Kind::Buffer, "nl.sbuf");
/// `name=` of a new tensor.
pub const TENSOR_NAME: Param = opt("name", Kind::Str, "''");
/// `reduce_cmd=` defaulting to `idle` (the accumulators are untouched).
pub const REDUCE_IDLE: Param = reduce_cmd("nisa.reduce_cmd.idle");
/// `reduce_cmd=` defaulting to `reset_reduce`.
pub const REDUCE_RESET: Param = reduce_cmd("nisa.reduce_cmd.reset_reduce");

/// The engines of an `nisa` function named after an instruction that may
/// run wherever the instruction may: [`ApiDef::engines`] takes them from
/// `nkic_isa`'s instruction table by mnemonic, so they are written once.
pub const ISA_ENGINES: &[Engine] = &[];

/// An `nisa` function named after its instruction: [`ApiDef::new`] with
/// [`ISA_ENGINES`] and the instruction's call convention, `dst` first,
/// then `$params`, then `name=` last.
macro_rules! instruction {
    ($name:literal, [$($param:expr),* $(,)?], $summary:literal, $rules:expr, $run:expr $(,)?) => {
        $crate::api::table::ApiDef::new(
            $name,
            &[
                $crate::api::table::DST,
                $($param,)*
                $crate::api::table::NAME,
            ],
            $crate::api::table::ISA_ENGINES,
            $summary,
            $rules,
            $run,
        )
    };
}
pub(crate) use instruction;

/// The engines of a function that only builds views or values at compile
/// time: none.
pub const NO_ENGINE: &[Engine] = &[];

/// `reduce_cmd=` with its default as NKI code.
const fn reduce_cmd(default: &'static str) -> Param {
    opt("reduce_cmd", Kind::Enum("reduce_cmd"), default)
}

/// `engine=` with its default as NKI code.
pub const fn engine(default: &'static str) -> Param {
    opt("engine", Kind::Enum("engine"), default)
}

impl ApiDef {
    /// A function available from trn1 on with only its current form;
    /// [`ApiDef::new_in`] and [`ApiDef::with_value_form`] adjust it.
    pub const fn new(
        name: &'static str,
        params: &'static [Param],
        engines: &'static [Engine],
        summary: &'static str,
        constraints: &'static [&'static str],
        run: RunFn,
    ) -> ApiDef {
        ApiDef {
            name,
            params,
            engines,
            since: Target::Trn1,
            value_form: false,
            summary,
            constraints,
            run,
        }
    }

    /// The engines that may execute it: its own list, or for
    /// [`ISA_ENGINES`] its instruction's in `nkic_isa`'s table.
    pub fn engines(&self) -> &'static [Engine] {
        match self.instruction() {
            Some(m) if self.engines.is_empty() => nkic_isa::Op::engines_of(m).unwrap_or(&[]),
            _ => self.engines,
        }
    }

    /// The oldest target that has it: its own `since`, or its
    /// instruction's when that is newer.
    pub fn since(&self) -> Target {
        match self.instruction().and_then(nkic_isa::Op::since_of) {
            Some(t) if t > self.since => t,
            _ => self.since,
        }
    }

    /// The mnemonic of the instruction an `nisa` function is named after.
    fn instruction(&self) -> Option<&'static str> {
        let mnemonic = self.name.strip_prefix("nisa.")?;
        nkic_isa::Op::since_of(mnemonic).map(|_| mnemonic)
    }

    /// The same function, first available on `target`.
    pub const fn new_in(mut self, target: Target) -> ApiDef {
        self.since = target;
        self
    }

    /// The same function, also accepting the legacy value form (module doc).
    pub const fn with_value_form(mut self) -> ApiDef {
        self.value_form = true;
        self
    }
}

/// The files that define API functions, one line each (a file with
/// functions at two places of the table registers two slices: the table's
/// order is the order of the reference in `docs/language.md` and breaks
/// ties between "did you mean" hints).
pub const REGISTRY: &[&[ApiDef]] = &[
    super::tensor::DEFS,
    super::isa::dma::DEFS,
    super::memory::DEFS,
    super::nl_core::DEFS,
    super::registers::DEFS,
    super::isa::tensor_engine::DEFS,
    super::isa::scalar_engine::DEFS,
    super::isa::vector::DEFS,
    super::isa::select::DEFS,
    super::isa::random::DEFS,
    super::isa::gpsimd::DEFS,
    super::host::DEFS,
    super::nl_math::DEFS,
    super::tensor::VIEW_METHOD_DEFS,
    super::nl_math::COMPOSED_DEFS,
    super::tensor::EXPAND_DEFS,
    super::nl_math::LOOP_REDUCE_DEFS,
    super::tensor::LEGACY_ALLOC_DEFS,
    super::memory::DEVICE_PRINT_DEFS,
    super::isa::collective::DEFS,
];

/// Every definition in registry order; `ApiFn(i)` is entry `i`.
pub fn all() -> &'static [&'static ApiDef] {
    static ALL: OnceLock<Vec<&'static ApiDef>> = OnceLock::new();
    ALL.get_or_init(|| REGISTRY.iter().flat_map(|defs| defs.iter()).collect())
}

/// The definition of `f`.
pub fn def(f: ApiFn) -> Option<&'static ApiDef> {
    all().get(usize::from(f.0)).copied()
}

type NameMap = std::collections::HashMap<&'static str, ApiFn, FastBuild>;
type PartsMap = std::collections::HashMap<(&'static str, &'static str), ApiFn, FastBuild>;

/// Every function by the key `key` gives its definition (the maps are
/// built once; only looked up, never iterated, so their order cannot leak
/// into output).
fn index_by<K: std::hash::Hash + Eq>(
    key: impl Fn(&'static ApiDef) -> Option<K>,
) -> std::collections::HashMap<K, ApiFn, FastBuild> {
    all()
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((key(d)?, ApiFn(u16::try_from(i).ok()?))))
        .collect()
}

/// Every function by dotted name.
fn by_name() -> &'static NameMap {
    static MAP: OnceLock<NameMap> = OnceLock::new();
    MAP.get_or_init(|| index_by(|d| Some(d.name)))
}

/// Every function by (namespace prefix, attribute): `("nl", "ndarray")`.
fn by_parts() -> &'static PartsMap {
    static MAP: OnceLock<PartsMap> = OnceLock::new();
    MAP.get_or_init(|| index_by(|d| d.name.rsplit_once('.')))
}

/// The handle of the function with dotted name `name`.
pub fn find(name: &str) -> Option<ApiFn> {
    by_name().get(name).copied()
}

/// The handle of `prefix.attr` (`find_in("nl", "ndarray")`) without
/// building the dotted name.
pub fn find_in(prefix: &str, attr: &str) -> Option<ApiFn> {
    by_parts().get(&(prefix, attr)).copied()
}

/// Hover documentation of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiDoc {
    /// `nisa.dma_copy(dst: tensor, src: tensor, …)`.
    pub signature: String,
    pub summary: String,
    /// `vector, gpsimd`, or empty.
    pub engines: String,
    /// `trn1+`, `trn2+` or `trn3+`.
    pub targets: String,
    pub constraints: Vec<String>,
}

/// The hover documentation of `f` (from the same table the checks use).
pub fn describe(f: ApiFn) -> Option<ApiDoc> {
    let d = def(f)?;
    Some(doc_of(d))
}

fn doc_of(d: &ApiDef) -> ApiDoc {
    let params: Vec<String> = d
        .params
        .iter()
        .map(|p| match p.default {
            None => format!("{}: {}", p.name, p.kind.text()),
            Some(def) => format!("{}: {} = {def}", p.name, p.kind.text()),
        })
        .collect();
    ApiDoc {
        signature: format!("{}({})", d.name, params.join(", ")),
        summary: d.summary.to_owned(),
        engines: d
            .engines()
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", "),
        targets: format!("{}+", d.since().name()),
        constraints: d.constraints.iter().map(|c| (*c).to_owned()).collect(),
    }
}

/// The "nl and nisa reference" section of `docs/language.md`, generated
/// from the table (a test keeps the file in sync).
pub fn reference_markdown() -> String {
    let mut out = String::new();
    out.push_str("## nl and nisa reference\n\n");
    out.push_str("<!-- Generated from the API table in crates/nkic-specialize/src/api/; do not edit by hand. -->\n");
    out.push_str(
        "<!-- Regenerate with `NKIC_BLESS=1 cargo test -p nkic-specialize reference_doc`. -->\n\n",
    );
    out.push_str("Every function below is checked at compile time against the rules listed under it; a violation is a diagnostic with the code shown in the table at the end.\n");
    out.push_str("ISA functions marked \"value form\" also accept the legacy call without `dst` (they then return a new tile, and take `dtype=`).\n");
    out.push_str("Every function accepts the legacy `mask=` predicate, a rectangle over the tile's index grid that restricts the operands (see \"Two call forms\" above for triangular masks).\n\n");
    for d in all() {
        let doc = doc_of(d);
        out.push_str(&format!("### `{}`\n\n", d.name));
        out.push_str(&format!("```python\n{}\n```\n\n", doc.signature));
        out.push_str(&format!("{}\n", doc.summary));
        let mut facts = Vec::new();
        if !doc.engines.is_empty() {
            facts.push(format!("engines: {}", doc.engines));
        }
        facts.push(format!("targets: {}", doc.targets));
        if d.value_form {
            facts.push("value form".to_owned());
        }
        out.push_str(&format!("*{}*\n", facts.join("; ")));
        if !doc.constraints.is_empty() {
            out.push('\n');
            for c in &doc.constraints {
                out.push_str(&format!("* {c}\n"));
            }
        }
        out.push('\n');
    }
    out.push_str("### Diagnostic codes of the API layer\n\n| code | meaning |\n| --- | --- |\n");
    for (code, meaning) in codes::ALL {
        out.push_str(&format!("| {code} | {meaning} |\n"));
    }
    out
}

/// Arguments bound to an [`ApiDef`]'s parameters.
#[derive(Debug)]
pub struct Bound {
    pub def: &'static ApiDef,
    /// The arguments given, by parameter name.
    args: Vec<(&'static str, Arg)>,
    value_form: bool,
    /// The legacy `mask=` rectangle; tensor arguments are already sliced.
    pub mask: Option<super::mask::Mask>,
    /// The whole call.
    pub span: Span,
}

/// An older signature of one function, tried when a call does not bind to
/// the current one (module doc: two call forms).
#[derive(Clone, Copy, Debug)]
enum Legacy {
    /// The value form's parameters, in place of the current ones without
    /// `dst` plus `dtype=` and `mask=`.
    ValueForm(&'static [Param]),
    /// A signature tried before the value form, kept when its `pred`
    /// argument is an index predicate of `nl.arange` grids (`iy < ix`).
    Predicate(&'static [Param]),
}

/// The legacy call forms that differ from the default value form.
const LEGACY: &[(&str, Legacy)] = &[
    (
        "nisa.memset",
        Legacy::ValueForm(&[SHAPE, req("value", Kind::Float), DTYPE, ENGINE, MASK, NAME]),
    ),
    (
        // `affine_select(pred, on_true_tile, on_false_value)`.
        "nisa.affine_select",
        Legacy::Predicate(&[
            req("pred", Kind::Index),
            ON_TRUE_TILE,
            ON_FALSE_VALUE,
            OUT_DTYPE,
            MASK,
            NAME,
        ]),
    ),
];

/// The legacy `mask=` predicate.
pub const MASK: Param = opt("mask", Kind::Index, "None");

/// The legacy form of `def` of the given kind.
fn legacy_form(def: &ApiDef, predicate: bool) -> Option<&'static [Param]> {
    LEGACY.iter().find_map(|(name, form)| match form {
        _ if *name != def.name => None,
        Legacy::ValueForm(p) if !predicate => Some(*p),
        Legacy::Predicate(p) if predicate => Some(*p),
        _ => None,
    })
}

/// The value-form parameters of `def`: its own list without `dst` plus
/// `dtype=` and `mask=`, unless [`LEGACY`] gives another.
fn legacy_params(def: &ApiDef) -> Vec<Param> {
    if let Some(params) = legacy_form(def, false) {
        return params.to_vec();
    }
    let mut v: Vec<Param> = def.params[1..].to_vec();
    for extra in ["dtype", "mask"] {
        if !v.iter().any(|p| p.name == extra) {
            v.push(opt(extra, Kind::Any, "None"));
        }
    }
    v
}

/// Binds `args` to `def` (module doc: two call forms). A function the
/// target lacks (`since` newer than the target) is an error at the call.
pub fn bind(
    ctx: &Ctx<'_>,
    def: &'static ApiDef,
    mut args: CallArgs,
    span: Span,
) -> Result<Bound, Diagnostic> {
    if ctx.target() < def.since() {
        return Err(ctx.error(
            codes::TARGET,
            format!(
                "`{}` needs {} or newer, but the target is {}",
                def.name,
                def.since().name(),
                ctx.target().name()
            ),
            span,
            "not available on this target",
        ));
    }
    let mask = super::mask::take(ctx, &mut args)?;
    let mut b = bind_forms(ctx, def, args, span)?;
    if let Some(m) = &mask
        && !m.exact
        && (b.get("dst").is_some() || def.name.contains("matmul"))
    {
        return Err(ctx
            .error(
                codes::UNSUPPORTED,
                format!(
                    "a triangular `mask=` on `{}` is not supported by nkic yet: the call writes an existing tensor",
                    def.name
                ),
                m.span,
                "not a rectangle",
            )
            .with_help("compute into a fresh tile and use `nisa.affine_select` for the triangle"));
    }
    b.mask = mask;
    Ok(b)
}

fn bind_forms(
    ctx: &Ctx<'_>,
    def: &'static ApiDef,
    args: CallArgs,
    span: Span,
) -> Result<Bound, Diagnostic> {
    let has_dst_keyword = args.keywords.iter().any(|(k, _)| &**k == "dst");
    let has_dst_param = def.params.first().is_some_and(|p| p.name == "dst");
    let legacy_ok = def.value_form && has_dst_param && !has_dst_keyword;
    // The arguments are kept for a second binding only when one can happen.
    let retry = legacy_ok.then(|| args.clone());
    let args_again = || retry.clone().unwrap_or_default();
    match bind_params(ctx, def, def.params, args, span, false) {
        // Both forms can bind positionally (`local_gather(src, index, 4,
        // 64)`); a number where the current form wants a tensor means the
        // call is the value form.
        Ok(b) if legacy_ok && !b.tensors_fit() => {
            match bind_params(ctx, def, &legacy_params(def), args_again(), span, true) {
                Ok(l) if l.tensors_fit() => Ok(l),
                _ => Ok(b),
            }
        }
        Ok(b) => Ok(b),
        Err(e) if legacy_ok => {
            if let Some(params) = legacy_form(def, true)
                && let Ok(l) = bind_params(ctx, def, params, args_again(), span, true)
                && matches!(l.value("pred"), Value::IndexPred(_))
            {
                return Ok(l);
            }
            let legacy = legacy_params(def);
            bind_params(ctx, def, &legacy, args_again(), span, true).map_err(|_| e)
        }
        Err(e) => Err(e),
    }
}

fn bind_params(
    ctx: &Ctx<'_>,
    def: &'static ApiDef,
    params: &[Param],
    args: CallArgs,
    span: Span,
    value_form: bool,
) -> Result<Bound, Diagnostic> {
    let out = args.match_params(
        ctx,
        def.name,
        params,
        |p| p.name,
        |i| params[i].default.is_none(),
        span,
    )?;
    let args = params
        .iter()
        .zip(out)
        .filter_map(|(p, a)| a.map(|a| (p.name, a)))
        .collect();
    Ok(Bound {
        def,
        args,
        value_form,
        mask: None,
        span,
    })
}

impl Bound {
    /// True when every tensor parameter got a tensor (or `None`).
    fn tensors_fit(&self) -> bool {
        self.args.iter().all(|(name, a)| {
            let kind = self
                .def
                .params
                .iter()
                .find(|p| p.name == *name)
                .map(|p| p.kind);
            kind != Some(Kind::Tensor) || matches!(a.value, Value::Tensor(_) | Value::None)
        })
    }

    /// True when the call used the legacy value-returning form.
    pub fn is_value_form(&self) -> bool {
        self.value_form
    }

    /// The legacy `dtype=` keyword of the value form.
    pub fn legacy_dtype(&self, ctx: &Ctx<'_>) -> Result<Option<DType>, Diagnostic> {
        if !self.value_form {
            return Ok(None);
        }
        match self.get("dtype") {
            None => Ok(None),
            Some(a) => dtype_of(ctx, a).map(Some),
        }
    }

    /// The legacy `dtype=` of a value form that cannot do without it.
    pub fn legacy_dtype_required(&self, ctx: &Ctx<'_>) -> Result<DType, Diagnostic> {
        self.legacy_dtype(ctx)?
            .ok_or_else(|| self.legacy_missing(ctx, "dtype"))
    }

    /// The error for a value-form call without its argument `name`.
    pub fn legacy_missing(&self, ctx: &Ctx<'_>, name: &str) -> Diagnostic {
        ctx.error(
            crate::codes::BAD_ARGUMENTS,
            format!("the value form of `{}` needs `{name}`", self.def.name),
            self.span,
            format!("no {name}"),
        )
    }

    /// A legacy-only argument of the value form (`shape` of `memset`).
    pub fn legacy(&self, name: &str) -> Option<&Arg> {
        if !self.value_form {
            return None;
        }
        self.get(name)
    }

    /// The argument given for `name` (`None` when absent or Python `None`).
    pub fn get(&self, name: &str) -> Option<&Arg> {
        self.args
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| a)
            .filter(|a| !a.value.is_none())
    }

    /// The argument's raw value, or `Value::None`.
    pub fn value(&self, name: &str) -> Value {
        self.get(name).map_or(Value::None, |a| a.value.clone())
    }

    /// The span of argument `name`, or of the call when it is absent.
    pub fn span_of(&self, name: &str) -> Span {
        self.get(name).map_or(self.span, |a| a.span)
    }

    fn missing(&self, ctx: &Ctx<'_>, name: &str) -> Diagnostic {
        ctx.error(
            crate::codes::BAD_ARGUMENTS,
            format!("`{}` needs a value for `{name}`", self.def.name),
            self.span,
            format!("`{name}` is not given"),
        )
    }

    /// Argument `name`, which the call needs; else the error `message` at
    /// the call, labelled "missing".
    pub fn needed(&self, ctx: &Ctx<'_>, name: &str, message: &str) -> Result<Arg, Diagnostic> {
        self.get(name)
            .cloned()
            .ok_or_else(|| ctx.error(crate::codes::BAD_ARGUMENTS, message, self.span, "missing"))
    }

    /// A required tensor argument.
    pub fn tensor(&self, ctx: &Ctx<'_>, name: &str) -> Result<Rc<Tensor>, Diagnostic> {
        match self.opt_tensor(ctx, name)? {
            Some(t) => Ok(t),
            None => Err(self.missing(ctx, name)),
        }
    }

    /// A required tensor argument that is not in PSUM; else a buffer error:
    /// `message` followed by the tensor [`check::describe`]d, labelled
    /// `label`, with `help` when given.
    ///
    /// [`check::describe`]: super::check::describe
    pub fn tensor_off_psum(
        &self,
        ctx: &Ctx<'_>,
        name: &str,
        message: &str,
        label: &str,
        help: Option<&str>,
    ) -> Result<Rc<Tensor>, Diagnostic> {
        let t = self.tensor(ctx, name)?;
        if t.buffer != Buffer::Psum {
            return Ok(t);
        }
        let d =
            super::check::tensor_error(ctx, codes::BUFFER, message, &t, self.span_of(name), label);
        Err(match help {
            Some(h) => d.with_help(h),
            None => d,
        })
    }

    /// An optional tensor argument.
    pub fn opt_tensor(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<Rc<Tensor>>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        match &a.value {
            Value::Tensor(t) => Ok(Some(t.clone())),
            v => Err(match super::blocks::as_blocks(v) {
                Some(b) => super::blocks::whole_use(ctx, b, a.span, &format!("`{name}`")),
                None => ctx.error(
                    codes::ARG_TYPE,
                    format!(
                        "`{}` expects a tensor for `{name}`, found a {}",
                        self.def.name,
                        v.type_name()
                    ),
                    a.span,
                    "not a tensor",
                ),
            }),
        }
    }

    /// An optional compile-time int.
    pub fn int(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<i64>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        match (&a.value, a.value.as_int()) {
            (Value::Bool(_), _) | (_, None) => Err(self.wrong(ctx, a, name, "an int")),
            (_, Some(i)) => Ok(Some(i)),
        }
    }

    /// A compile-time int with a default.
    pub fn int_or(&self, ctx: &Ctx<'_>, name: &str, default: i64) -> Result<i64, Diagnostic> {
        Ok(self.int(ctx, name)?.unwrap_or(default))
    }

    /// An optional compile-time number.
    pub fn float(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<f64>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        match a.value {
            Value::Int(_) | Value::Float(_) => Ok(a.value.as_float()),
            _ => Err(self.wrong(ctx, a, name, "a number")),
        }
    }

    /// A bool with a default.
    pub fn bool_or(&self, ctx: &Ctx<'_>, name: &str, default: bool) -> Result<bool, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(default);
        };
        match a.value {
            Value::Bool(b) => Ok(b),
            Value::Int(i) if i == 0 || i == 1 => Ok(i == 1),
            _ => Err(self.wrong(ctx, a, name, "a bool")),
        }
    }

    /// An optional string.
    pub fn string(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<String>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        match &a.value {
            Value::Str(s) => Ok(Some(s.to_string())),
            _ => Err(self.wrong(ctx, a, name, "a string")),
        }
    }

    /// The `name=` instruction or tensor name.
    pub fn name_arg(&self, ctx: &Ctx<'_>) -> Result<Option<String>, Diagnostic> {
        Ok(self.string(ctx, "name")?.filter(|s| !s.is_empty()))
    }

    /// An optional dtype.
    pub fn dtype(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<DType>, Diagnostic> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => dtype_of(ctx, a).map(Some),
        }
    }

    /// An optional buffer.
    pub fn buffer(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<Buffer>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        match &a.value {
            Value::Buffer(b) => Ok(Some(*b)),
            Value::Str(s) => Err(ctx
                .error(
                    codes::ARG_TYPE,
                    format!("buffers are named values, not strings: found '{s}'"),
                    a.span,
                    "a string",
                )
                .with_help(format!("write `nl.{s}`"))),
            _ => Err(self.wrong(ctx, a, name, "a buffer such as `nl.sbuf`")),
        }
    }

    /// A shape tuple (an int is a 1-D shape).
    pub fn shape(&self, ctx: &Ctx<'_>, name: &str) -> Result<Vec<u64>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Err(self.missing(ctx, name));
        };
        shape_of(ctx, a)
    }

    /// An optional member of `nisa.<enum_name>`; raw ints are rejected.
    pub fn enum_member(
        &self,
        ctx: &Ctx<'_>,
        name: &str,
        enum_name: &'static str,
    ) -> Result<Option<&'static str>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        enum_member_of(ctx, a, enum_name).map(Some)
    }

    /// `reverse0=` and `reverse1=` of a two-stage operator pipeline
    /// (`False` when absent).
    pub fn reverses(&self, ctx: &Ctx<'_>) -> Result<[bool; 2], Diagnostic> {
        Ok([
            self.bool_or(ctx, REVERSE0.name, false)?,
            self.bool_or(ctx, REVERSE1.name, false)?,
        ])
    }

    /// The `reduce_cmd=` accumulator command, if given.
    pub fn reduce_cmd(&self, ctx: &Ctx<'_>) -> Result<Option<ReduceCmd>, Diagnostic> {
        Ok(self
            .enum_member(ctx, "reduce_cmd", "reduce_cmd")?
            .and_then(ReduceCmd::from_name))
    }

    /// The `reduce_cmd=` of an instruction whose accumulators have no
    /// initial value: when not given, `reset_reduce` if the call asks for
    /// a reduction (`reducing`), else `idle`; `load_reduce` is an error.
    pub fn reduce_cmd_without_load(
        &self,
        ctx: &Ctx<'_>,
        reducing: bool,
    ) -> Result<ReduceCmd, Diagnostic> {
        let cmd = match self.reduce_cmd(ctx)? {
            Some(c) => c,
            None if reducing => ReduceCmd::ResetReduce,
            None => ReduceCmd::Idle,
        };
        if cmd == ReduceCmd::LoadReduce {
            let short = self.def.name.rsplit('.').next().unwrap_or(self.def.name);
            return Err(ctx.error(
                codes::BAD_ENUM,
                format!("`{short}` has no `load_reduce` (it has no initial value)"),
                self.span_of("reduce_cmd"),
                "not available",
            ));
        }
        Ok(cmd)
    }

    /// An optional ALU operator (`nl.add`, …).
    pub fn alu_op(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<AluOp>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        alu_op_of(ctx, a).map(Some)
    }

    /// An optional activation function (`nl.exp`, …).
    pub fn act_func(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<ActFunc>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        act_func_of(ctx, a).map(Some)
    }

    /// An optional tuple of ints (an int is a 1-tuple); negative entries are kept.
    pub fn ints(&self, ctx: &Ctx<'_>, name: &str) -> Result<Option<Vec<i64>>, Diagnostic> {
        let Some(a) = self.get(name) else {
            return Ok(None);
        };
        ints_of(ctx, a).map(Some)
    }

    fn wrong(&self, ctx: &Ctx<'_>, a: &Arg, name: &str, what: &str) -> Diagnostic {
        ctx.error(
            codes::ARG_TYPE,
            format!(
                "`{}` expects {what} for `{name}`, found {}",
                self.def.name,
                crate::format::short_repr(&a.value)
            ),
            a.span,
            format!("not {what}"),
        )
    }
}

/// The dtype in `a` (an `nl.*` dtype, a NumPy dtype, or a dtype name string).
pub fn dtype_of(ctx: &Ctx<'_>, a: &Arg) -> Result<DType, Diagnostic> {
    let dt = match &a.value {
        Value::DType(d) => *d,
        Value::Str(s) => match s.parse::<DType>() {
            Ok(d) => d,
            Err(_) => {
                return Err(ctx.error(
                    codes::ARG_TYPE,
                    format!("'{s}' is not a dtype"),
                    a.span,
                    "unknown dtype",
                ));
            }
        },
        v => {
            return Err(ctx.error(
                codes::ARG_TYPE,
                format!(
                    "expected a dtype such as `nl.float32`, found a {}",
                    v.type_name()
                ),
                a.span,
                "not a dtype",
            ));
        }
    };
    if !ctx.target().supports_dtype(dt) {
        return Err(ctx
            .error(
                codes::DTYPE,
                format!("{dt} does not exist on {}", ctx.target()),
                a.span,
                format!("not available on {}", ctx.target()),
            )
            .with_note("fp8 e4m3fn, e8m0 and the packed x4 types need trn3"));
    }
    Ok(dt)
}

/// A shape tuple in `a`.
pub fn shape_of(ctx: &Ctx<'_>, a: &Arg) -> Result<Vec<u64>, Diagnostic> {
    let items: Vec<Value> = match &a.value {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        Value::Int(_) => vec![a.value.clone()],
        v => {
            return Err(ctx.error(
                codes::ARG_TYPE,
                format!("expected a shape tuple, found a {}", v.type_name()),
                a.span,
                "not a shape",
            ));
        }
    };
    if items.is_empty() || items.len() > nkic_ir::MAX_VIEW_DIMS {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "a tensor has 1 to {} dims, found a shape of {} dims",
                nkic_ir::MAX_VIEW_DIMS,
                items.len()
            ),
            a.span,
            "bad rank",
        ));
    }
    items
        .iter()
        .map(|v| match (v, v.as_int()) {
            (Value::Bool(_), _) => Err(bad_dim(ctx, a, v)),
            (_, Some(n)) if n > 0 => Ok(n as u64),
            _ => Err(bad_dim(ctx, a, v)),
        })
        .collect()
}

fn bad_dim(ctx: &Ctx<'_>, a: &Arg, v: &Value) -> Diagnostic {
    ctx.error(
        codes::SHAPE,
        format!(
            "dimension sizes must be positive ints, found {}",
            crate::format::short_repr(v)
        ),
        a.span,
        "bad dimension",
    )
}

/// A tuple of ints (an int is a 1-tuple).
pub fn ints_of(ctx: &Ctx<'_>, a: &Arg) -> Result<Vec<i64>, Diagnostic> {
    let items: Vec<Value> = match &a.value {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        v => vec![v.clone()],
    };
    items
        .iter()
        .map(|v| {
            v.as_int()
                .filter(|_| !matches!(v, Value::Bool(_)))
                .ok_or_else(|| {
                    ctx.error(
                        codes::ARG_TYPE,
                        format!("expected ints, found {}", crate::format::short_repr(v)),
                        a.span,
                        "not an int",
                    )
                })
        })
        .collect()
}

/// Why an access pattern `[[step, num], …]` was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadPattern {
    /// Not a list or tuple.
    NotAList,
    /// No pairs, or more than allowed.
    Length,
    /// An entry is not a list or tuple.
    NotAPair,
    /// An entry is not two ints with `num` in range.
    Pair,
}

impl BadPattern {
    /// The reason in the words of an instruction's pattern (1 to 4 pairs,
    /// `1 <= num <= 65535`, [`instruction_pattern`]).
    pub fn why(self) -> &'static str {
        match self {
            BadPattern::NotAList => "expected [[step, num], ...]",
            BadPattern::Length => "1 to 4 [step, num] pairs",
            BadPattern::NotAPair => "each entry is [step, num]",
            BadPattern::Pair => "each entry is [step, num] with 1 <= num <= 65535",
        }
    }
}

/// The `(step, num)` pairs of an access pattern `[[step, num], …]`: 1 to
/// `max_pairs` entries, each `num` in `nums`.
pub fn step_num_pairs(
    v: &Value,
    max_pairs: usize,
    nums: std::ops::RangeInclusive<i64>,
) -> Result<Vec<(i64, i64)>, BadPattern> {
    let list = |v: &Value| match v {
        Value::List(l) => Some(l.borrow().clone()),
        Value::Tuple(t) => Some(t.to_vec()),
        _ => None,
    };
    let items = list(v).ok_or(BadPattern::NotAList)?;
    if items.is_empty() || items.len() > max_pairs {
        return Err(BadPattern::Length);
    }
    items
        .iter()
        .map(|item| {
            let pair = list(item).ok_or(BadPattern::NotAPair)?;
            match (
                pair.first().and_then(Value::as_int),
                pair.get(1).and_then(Value::as_int),
                pair.len(),
            ) {
                (Some(step), Some(n), 2) if nums.contains(&n) => Ok((step, n)),
                _ => Err(BadPattern::Pair),
            }
        })
        .collect()
}

/// The access pattern of an instruction (`iota`, `affine_select`): 1 to 4
/// `[step, num]` pairs with `1 <= num <= 65535`.
pub fn instruction_pattern(v: &Value) -> Result<Vec<Dim>, BadPattern> {
    let pairs = step_num_pairs(v, 4, 1..=65535)?;
    Ok(pairs
        .into_iter()
        .map(|(step, n)| Dim::new(step, n as u32))
        .collect())
}

/// The member of `nisa.<enum_name>` in `a`.
pub fn enum_member_of(
    ctx: &Ctx<'_>,
    a: &Arg,
    enum_name: &'static str,
) -> Result<&'static str, Diagnostic> {
    if let Value::Ext(e) = &a.value
        && let Some(ev) = e.as_any().downcast_ref::<EnumValue>()
    {
        if ev.enum_name == enum_name {
            return Ok(ev.member);
        }
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "expected a member of `nisa.{enum_name}`, found `nisa.{}.{}`",
                ev.enum_name, ev.member
            ),
            a.span,
            "wrong enum",
        ));
    }
    let mut d = ctx.error(
        codes::BAD_ENUM,
        format!(
            "expected a member of `nisa.{enum_name}`, found {}",
            crate::format::short_repr(&a.value)
        ),
        a.span,
        format!("not a `nisa.{enum_name}` member"),
    );
    if let Some(members) = consts::enum_members(enum_name) {
        let list: Vec<String> = members
            .iter()
            .map(|m| format!("nisa.{enum_name}.{m}"))
            .collect();
        d = d.with_note(format!("the members are {}", list.join(", ")));
    }
    if a.value.as_int().is_some() {
        d = d.with_help("NKI requires named enum members, not raw ints");
    }
    Err(d)
}

/// The dotted name behind an operator/function value: `nl.add` for the
/// function `nl.add` or the operator constant.
fn op_name(v: &Value) -> Option<&'static str> {
    match v {
        Value::Api(f) => def(*f).map(|d| d.name),
        Value::Ext(e) => e.as_any().downcast_ref::<consts::OpValue>().map(|o| o.name),
        _ => None,
    }
}

/// The ALU operator in `a` (`nl.add`, `np.add`, …).
pub fn alu_op_of(ctx: &Ctx<'_>, a: &Arg) -> Result<AluOp, Diagnostic> {
    operator_of(
        ctx,
        a,
        consts::alu_op_by_name,
        [
            "an ALU operator",
            "nl.add",
            "the operators are listed in isa.md §2.3",
        ],
    )
}

/// The activation function in `a` (`nl.exp`, …).
pub fn act_func_of(ctx: &Ctx<'_>, a: &Arg) -> Result<ActFunc, Diagnostic> {
    operator_of(
        ctx,
        a,
        consts::act_func_by_name,
        [
            "an activation function",
            "nl.exp",
            "the activation functions are listed in isa.md §2.4",
        ],
    )
}

/// The operator or function in `a` that `by_name` finds by its dotted
/// name; the error names `what` it must be, an `example` and a `note`.
fn operator_of<T>(
    ctx: &Ctx<'_>,
    a: &Arg,
    by_name: fn(&str) -> Option<T>,
    [what, example, note]: [&str; 3],
) -> Result<T, Diagnostic> {
    if let Some(op) = op_name(&a.value).and_then(by_name) {
        return Ok(op);
    }
    Err(ctx
        .error(
            codes::BAD_ENUM,
            format!(
                "expected {what} such as `{example}`, found {}",
                crate::format::short_repr(&a.value)
            ),
            a.span,
            format!("not {what}"),
        )
        .with_note(note.to_string()))
}
