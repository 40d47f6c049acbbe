//! The NKI API surface: the `nki.language` (`nl`) and `nki.isa` (`nisa`)
//! functions and constants, tensor views and indexing — the seam between
//! the evaluator and the API layer.
//!
//! # Contract
//!
//! The evaluator (everything outside `api/`) runs the meta-language; this
//! module gives meaning to NKI names and run-time values. The evaluator
//! calls exactly these functions:
//!
//! * [`lookup`]`(ctx, ns, attr)` — the value of `ns.attr` for a compiler
//!   namespace (`nl.float32`, `nl.sbuf`, `nisa.dma_copy`, `nl.tile_size`,
//!   `nisa.engine`, …), or `None` when the namespace has no such name (the
//!   evaluator then reports E0205). Functions are returned as
//!   [`Value::Api`] with an [`ApiFn`] handle; nested namespaces as
//!   [`Value::Namespace`]`(Namespace::Sub("nl.tile_size"))`; opaque
//!   objects as [`Value::Ext`]. The evaluator asks its own intrinsics
//!   first (`range`-like iterators, `nl.dynamic_range`, `nl.fori_loop`,
//!   `nl.while_loop`, `nl.program_id`, `nl.num_programs`,
//!   `nl.program_ndim`, `nl.no_reorder`, `nl.ds`, `nl.arange`,
//!   `nl.mgrid`, `nki.jit`, NumPy and `math`), so those names never reach
//!   this module.
//! * [`call`]`(ctx, f, args, span)` — runs API function `f`. `args` are
//!   evaluated, with spans; `span` is the whole call. A method obtained
//!   from [`attribute`] as [`Value::BoundMethod`] `{ receiver, func:
//!   Value::Api(f) }` is called with the receiver as the first positional
//!   argument. Ops are recorded with [`Ctx::push_op`] (which enforces the
//!   op budget) and storages with [`Ctx::alloc_storage`]; errors are
//!   `Diagnostic`s built with [`Ctx::error`] using codes E0500–E0899 (the
//!   evaluator adds loop-iteration and call-chain notes as the error
//!   propagates). User callbacks (`fori_loop` bodies, …) go through
//!   [`Ctx::call_value`].
//! * [`attribute`]`(ctx, value, attr, span)` — `value.attr` for values the
//!   evaluator does not own: [`Value::Tensor`], [`Value::Ext`],
//!   [`Value::DType`], [`Value::Buffer`], [`Value::Register`],
//!   [`Value::Ds`].
//! * [`subscript`]`(ctx, value, key, span)` — `value[key]` for the same
//!   kinds of values. `key` is the evaluated subscript: a single item or a
//!   [`Value::Tuple`] of items, where `a:b:c` is a [`Value::Slice`], `...`
//!   is [`Value::Ellipsis`] and `None` is [`Value::None`].
//! * [`store_subscript`]`(ctx, target, key, value, aug, span)` —
//!   `target[key] = value`, or `target[key] op= value` when `aug` is set
//!   (the evaluator does not evaluate `target[key] op value` itself, so
//!   `psum[...] += nisa.nc_matmul(...)` arrives here whole).
//! * [`operator`]`(ctx, op, operands, span)` — a Python operator where
//!   some operand is a tensor or other API value (`a + b` on tiles,
//!   `-t`, `t > 0`). `inplace` is true for `x op= y` on a name.
//!
//! The evaluator owns the value model ([`crate::value`]), `Ctx` and
//! [`CallArgs`]; changes to them are additive and announced in commit
//! messages.
//!
//! # The table
//!
//! Every function is an entry of one declarative table ([`table`]): name,
//! parameters with kinds and defaults, engines, oldest target, summary and
//! constraint text, and the function that runs it. The table drives
//! argument binding, the hover text ([`describe`]) and the generated
//! reference section of `docs/language.md` ([`reference_markdown`]; a test
//! keeps the file in sync). Each area has its own file exporting a `DEFS`
//! slice, registered with one line in [`table::REGISTRY`].
//!
//! # Files
//!
//! * the table and its vocabulary: `mod.rs`, `table.rs` (entries,
//!   shared parameters, binding, legacy call forms), `rules.rs` (rules as
//!   data), `codes.rs`, `consts.rs`, `check.rs`, `emit.rs`;
//! * `nki.isa`, one file per engine or domain as in isa.md §6:
//!   `isa/dma.rs` (data movement: dma_copy, dma_transpose, dma_compute,
//!   tensor_copy, memset, iota, and the LNC=2 exchange and barrier),
//!   `isa/tensor_engine.rs`, `isa/scalar_engine.rs`, `isa/vector.rs`,
//!   `isa/select.rs`, `isa/random.rs`, `isa/gpsimd.rs` and
//!   `isa/collective.rs` (`nki.collectives`);
//! * `memory.rs` (`nl.load`, `nl.store`, `nl.load_transpose2d`, `nl.copy`,
//!   assignment, fill values, `nl.device_print`) and `registers.rs`
//!   (`nisa.register_*`);
//! * `nki.language`: `nl_core.rs` (nl.matmul, nl.transpose), `nl_math.rs`
//!   (element-wise math, reductions, softmax, rms_norm, the functions
//!   composed from other ops such as `sin` and `fmod`, legacy
//!   `loop_reduce`, …);
//! * tensors and values: `tensor.rs` (tensor model, creation incl. the
//!   legacy `ncc.*` allocation, subscripts, view methods incl. reshaping
//!   and indirect views, `nl.expand_dims`), `blocks.rs`, `mask.rs` (legacy `mask=`),
//!   `operators.rs` (Python operators on tiles, `+=` accumulation) and
//!   `lower.rs` (the element-wise lowering they share with `nl.*` and
//!   `nisa.tensor_tensor`/`tensor_scalar`).
//!
//! Shared helpers for new files: [`table`] has the shared parameters
//! (`DST`, `NAME`, `ENGINE`, the two-stage operator set, …), the
//! [`ApiDef::new`] constructor and the `instruction!` macro (an `nisa`
//! function named after its instruction: `dst` first, `name=` last, the
//! instruction's engines); [`rules`] has rules as data, each writing
//! its constraint sentence and running its check (tiles of equal shape,
//! not both in PSUM, binary arithmetic operators, `reduce_res`);
//! [`table::Bound`]'s accessors convert and
//! check arguments; [`check`] has the operand rules (on chip, P ≤ 128,
//! start partition, equal P/F, free-size limits, PSUM access); [`emit`]
//! records ops and handles `engine=`, `name=` and the legacy value form.
//! Diagnostic codes come from [`codes`] (append new ones there, and index
//! them in `docs/diagnostics.md`). For `nl.*` element-wise functions use
//! [`lower::elementwise`] (the lowering operators use, so `a + b` and
//! `nl.add(a, b)` give the same IR) and [`lower::scalar_operand`];
//! allocate result tiles with [`emit::new_result`] so legacy `mask=`
//! calls keep their full result shape ([`mask`] slices the arguments
//! before `run` sees them). A legacy value-form `nc_matmul` result is a
//! [`isa::tensor_engine::PendingMatmul`]; [`materialize`] records it.

pub mod blocks;
pub mod check;
pub mod codes;
pub mod consts;
pub mod emit;
pub mod fill;
pub mod host;
pub mod isa;
pub mod lower;
pub mod mask;
pub mod memory;
pub mod nl_core;
pub mod nl_math;
pub mod operators;
pub mod registers;
pub mod rules;
pub mod table;
pub mod tensor;

use nkic_diag::{Diagnostic, Span};
use nkic_isa::DType;
use nkic_syntax::ast::{BinOp, CmpOp};

use crate::args::CallArgs;
use crate::codes as eval_codes;
use crate::ctx::Ctx;
use crate::value::{BoundMethod, Namespace, Value};

pub use operators::apply as operator;
pub use table::{ApiDef, ApiDoc, describe, reference_markdown};

/// A handle naming one API function (an index into this module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ApiFn(pub u16);

/// A Python operator applied to API values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Binary(BinOp),
    Compare(CmpOp),
    Neg,
    Pos,
    Invert,
}

impl Operator {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Binary(op) => op.as_str(),
            Operator::Compare(op) => op.as_str(),
            Operator::Neg => "-",
            Operator::Pos => "+",
            Operator::Invert => "~",
        }
    }
}

/// The value of `ns.attr`, or `None` when `ns` has no attribute `attr`.
pub fn lookup(ctx: &Ctx<'_>, ns: Namespace, attr: &str) -> Option<Value> {
    consts::lookup(ctx, ns, attr).or_else(|| host::lookup(ns, attr))
}

/// APIs that NKI 0.3 removed (language.md, "removed/replaced" table), with
/// what to use instead.
const REMOVED: &[(&str, &str)] = &[
    (
        "nl.atomic_rmw",
        "use `nisa.dma_compute` (a DMA that combines into its destination)",
    ),
    (
        "nl.all_reduce",
        "use `nki.collectives.all_reduce(dsts, srcs, op, replica_group)`",
    ),
    (
        "nl.static_cast",
        "convert with `nisa.tensor_copy` into a tile of the target dtype (or `nl.copy(x, dtype=...)`)",
    ),
    (
        "nl.gemm_grid",
        "write the loop over tiles with `nl.affine_range`",
    ),
    (
        "nisa.tensor_copy_dynamic_src",
        "use `nisa.tensor_copy` with a dynamic view of `src`: `.ap(..., scalar_offset=...)` or `nl.ds(reg, n)`",
    ),
    (
        "nisa.tensor_copy_dynamic_dst",
        "use `nisa.tensor_copy` with a dynamic view of `dst`: `.ap(..., scalar_offset=...)` or `nl.ds(reg, n)`",
    ),
];

/// Adds to an unknown-attribute error on `nl`/`nisa` a note naming the
/// replacement of a removed API, or a "did you mean" help for a close
/// name of the API table.
pub fn no_attribute_hints(ns: Namespace, attr: &str, mut d: Diagnostic) -> Diagnostic {
    let prefix = match ns {
        Namespace::Language => "nl",
        Namespace::Isa => "nisa",
        _ => return d,
    };
    let full = format!("{prefix}.{attr}");
    if let Some((_, instead)) = REMOVED.iter().find(|(n, _)| *n == full) {
        return d
            .with_note(format!("`{full}` was removed in NKI 0.3"))
            .with_help(instead.to_string());
    }
    let mut names: Vec<&str> = table::all()
        .iter()
        .filter_map(|def| def.name.strip_prefix(prefix)?.strip_prefix('.'))
        .collect();
    if ns == Namespace::Language {
        names.extend(DType::ALL.iter().map(|t| t.name()));
    }
    if let Some(close) = crate::args::closest(attr, &names) {
        d = d.with_help(format!("did you mean `{prefix}.{close}`?"));
    }
    d
}

/// The dotted name of `f` for messages (`nisa.dma_copy`).
pub fn name(f: ApiFn) -> &'static str {
    table::def(f).map_or("<api>", |d| d.name)
}

/// Calls API function `f`.
pub fn call(ctx: &mut Ctx<'_>, f: ApiFn, args: CallArgs, span: Span) -> Result<Value, Diagnostic> {
    let Some(def) = table::def(f) else {
        return Err(ctx.error(codes::ARG_TYPE, "unknown API function", span, "here"));
    };
    if def.name == "instruction.depends_on" {
        return depends_on(ctx, args, span);
    }
    let mut args = args;
    mask::resolve_pending(ctx, &mut args)?;
    raw_enum_ints(ctx, def, &mut args);
    let args = materialize_args(ctx, args)?;
    let bound = table::bind(ctx, def, args, span)?;
    (def.run)(ctx, &bound, span)
}

/// A raw int where a `nisa` enum member belongs (`dge_mode=3`, which the
/// maintained NKI library still passes) becomes the member with that
/// value (isa.md numbering), with an E0514 warning naming the member. NKI
/// 0.3 requires named members, so this is a compatibility step; an int
/// that names no member is left for the usual E0514 error.
fn raw_enum_ints(ctx: &mut Ctx<'_>, def: &ApiDef, args: &mut CallArgs) {
    let enum_of = |name: &str| {
        def.params
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| match p.kind {
                table::Kind::Enum(e) => Some(e),
                _ => None,
            })
    };
    let convert = |ctx: &mut Ctx<'_>, enum_name: &'static str, a: &mut crate::args::Arg| {
        let Value::Int(i) = a.value else {
            return;
        };
        let Some(member) = consts::enum_member_by_value(enum_name, i) else {
            return;
        };
        let Some(v) = consts::enum_value(enum_name, member) else {
            return;
        };
        let d = Diagnostic::warning(
            codes::BAD_ENUM,
            format!("a raw int for `nisa.{enum_name}`: {i} is read as `nisa.{enum_name}.{member}`"),
        )
        .with_primary(ctx.file(), a.span, format!("nisa.{enum_name}.{member}"))
        .with_help(format!(
            "write `nisa.{enum_name}.{member}`: NKI 0.3 and later take named enum members"
        ));
        ctx.warn(d);
        a.value = v;
    };
    for (i, a) in args.positional.iter_mut().enumerate() {
        if let Some(e) = def.params.get(i).and_then(|p| enum_of(p.name)) {
            convert(ctx, e, a);
        }
    }
    for (k, a) in args.keywords.iter_mut() {
        if let Some(e) = enum_of(k) {
            convert(ctx, e, a);
        }
    }
}

fn depends_on(ctx: &mut Ctx<'_>, mut args: CallArgs, span: Span) -> Result<Value, Diagnostic> {
    if !args.keywords.is_empty() || args.positional.is_empty() {
        return Err(ctx.error(
            eval_codes::BAD_ARGUMENTS,
            "`depends_on` takes instruction handles as positional arguments",
            span,
            "bad arguments",
        ));
    }
    let this = args.positional.remove(0);
    let Some(ins) = emit::instruction(&this.value) else {
        return Err(ctx.error(
            codes::ARG_TYPE,
            "`depends_on` is called on an instruction handle",
            span,
            "here",
        ));
    };
    emit::depends_on(ctx, ins, &args.positional)?;
    Ok(this.value.clone())
}

/// `value.attr` for tensors and other API values.
pub fn attribute(
    ctx: &mut Ctx<'_>,
    value: &Value,
    attr: &str,
    span: Span,
) -> Result<Value, Diagnostic> {
    let value = &materialize(ctx, value)?;
    match value {
        Value::Tensor(t) => return tensor::attribute(ctx, t, attr, span),
        Value::Ext(e) => {
            if let Some(b) = blocks::as_blocks(value) {
                return blocks::attribute(ctx, b, attr, span);
            }
            if let Some(a) = host::as_array(value)
                && let Some(v) = host::attribute(ctx, value, a, attr, span)
            {
                return v;
            }
            if let Some(f) = host::as_temp_file(value)
                && attr == "name"
            {
                return Ok(Value::Str(f.name.clone()));
            }
            if let Some(info) = e.as_any().downcast_ref::<crate::builtins::NumInfo>()
                && let Some(v) = info.attr(attr)
            {
                return Ok(v);
            }
            if let Some(ev) = e.as_any().downcast_ref::<consts::EnumValue>() {
                match attr {
                    "name" => return Ok(Value::str(ev.member)),
                    "value" => return Ok(Value::Int(ev.value)),
                    _ => {}
                }
            }
            if e.as_any().is::<emit::Instruction>()
                && attr == "depends_on"
                && let Some(f) = table::find("instruction.depends_on")
            {
                return Ok(Value::BoundMethod(std::rc::Rc::new(BoundMethod {
                    receiver: value.clone(),
                    func: Value::Api(f),
                })));
            }
        }
        Value::DType(dt) => match attr {
            "itemsize" => return Ok(Value::Int(i64::from(dt.size()))),
            "name" => return Ok(Value::str(dt.name())),
            "min" | "max" => {
                if let Some(v) = dtype_limit(*dt, attr == "max") {
                    return Ok(v);
                }
            }
            _ => {}
        },
        Value::Buffer(b) if attr == "name" => return Ok(Value::str(b.name())),
        _ => {}
    }
    Err(ctx.error(
        eval_codes::NO_ATTRIBUTE,
        format!("{} has no attribute `{attr}`", value.type_name()),
        span,
        "unknown attribute",
    ))
}

/// The legacy `nl.float32.min` / `.max` constants: the most negative and
/// most positive finite values (integers: the range). `bfloat16.min` is
/// the bit pattern 0xff80, negative infinity, as legacy NKI defined it.
fn dtype_limit(dt: DType, max: bool) -> Option<Value> {
    let float = |lo: f64, hi: f64| Some(Value::Float(if max { hi } else { lo }));
    let int = |lo: i64, hi: i64| Some(Value::Int(if max { hi } else { lo }));
    match dt {
        DType::F32 | DType::TF32 => float(-f64::from(f32::MAX), f64::from(f32::MAX)),
        DType::F16 => float(-65504.0, 65504.0),
        DType::BF16 => float(f64::NEG_INFINITY, 3.3895313892515355e38),
        DType::F8E4M3 => float(-240.0, 240.0),
        DType::F8E4M3FN => float(-448.0, 448.0),
        DType::F8E5M2 => float(-57344.0, 57344.0),
        DType::I8 => int(-128, 127),
        DType::I16 => int(-32768, 32767),
        DType::I32 => int(i64::from(i32::MIN), i64::from(i32::MAX)),
        DType::U8 | DType::Bool => int(0, 255),
        DType::U16 => int(0, 65535),
        DType::U32 => int(0, i64::from(u32::MAX)),
        _ => None,
    }
}

/// `value[key]` for tensors and other API values.
pub fn subscript(
    ctx: &mut Ctx<'_>,
    value: &Value,
    key: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    let value = &materialize(ctx, value)?;
    if let Some(b) = blocks::as_blocks(value) {
        return blocks::subscript(ctx, b, key, span);
    }
    if let Some(a) = host::as_array(value) {
        return host::subscript(ctx, a, key, span);
    }
    match value {
        Value::Tensor(t) => tensor::subscript(ctx, t, key, span),
        Value::Ext(e) if e.as_any().is::<consts::TypingMarker>() => Ok(value.clone()),
        _ => Err(ctx.error(
            eval_codes::TYPE_ERROR,
            format!("{} cannot be indexed", crate::format::a_type(value)),
            span,
            "not subscriptable",
        )),
    }
}

/// `target[key] = value` or `target[key] aug= value`.
pub fn store_subscript(
    ctx: &mut Ctx<'_>,
    target: &Value,
    key: &Value,
    value: Value,
    aug: Option<BinOp>,
    span: Span,
) -> Result<(), Diagnostic> {
    if let Some(a) = host::as_array(target) {
        let value = match aug {
            Some(op) => {
                let cur = host::subscript(ctx, a, key, span)?;
                ctx.binary(op, cur, value, true, span)?
            }
            None => value,
        };
        return host::store_subscript(ctx, a, key, &value, span);
    }
    let target = match (target, blocks::as_blocks(target)) {
        (Value::Tensor(t), _) => tensor::subscript(ctx, t, key, span)?,
        (_, Some(b)) => {
            let selected = blocks::subscript(ctx, b, key, span)?;
            if let Some(rest) = blocks::as_blocks(&selected) {
                return Err(blocks::whole_use(ctx, rest, span, "the assignment target"));
            }
            selected
        }
        _ => {
            return Err(ctx.error(
                eval_codes::TYPE_ERROR,
                format!(
                    "{} does not support item assignment",
                    crate::format::a_type(target)
                ),
                span,
                "not assignable",
            ));
        }
    };
    let Value::Tensor(dst) = materialize(ctx, &target)? else {
        return Err(ctx.error(codes::INDEX, "bad subscript", span, "here"));
    };
    match aug {
        None => {
            // `psum[...] = nisa.nc_matmul(a, b)` writes the matmul there.
            if let Value::Ext(e) = &value
                && let Some(mm) = e
                    .as_any()
                    .downcast_ref::<isa::tensor_engine::PendingMatmul>()
            {
                if dst.buffer != nkic_ir::Buffer::Psum {
                    return Err(check::tensor_error(
                        ctx,
                        codes::ACCUMULATE,
                        "a matmul result is written to PSUM, but the target is",
                        &dst,
                        span,
                        "not a PSUM tile",
                    ));
                }
                mm.record(ctx, Some((dst.clone(), span)), Some(false))?;
                return Ok(());
            }
            if let Some(r) = nl_math::PendingLoopReduce::of(&value) {
                return r.record(ctx, &dst, span);
            }
            let value = materialize(ctx, &value)?;
            memory::assign(ctx, &dst, &value, span)
        }
        Some(op) => operators::store_aug(ctx, &dst, op, &value, span),
    }
}

/// Records a pending legacy matmul (see `isa::tensor_engine`) into a fresh PSUM
/// tile; other values are returned unchanged.
pub fn materialize(ctx: &mut Ctx<'_>, v: &Value) -> Result<Value, Diagnostic> {
    if let Value::Ext(e) = v
        && let Some(p) = e.as_any().downcast_ref::<mask::PendingGrid>()
    {
        return Err(p.error.clone());
    }
    if let Value::Ext(e) = v
        && let Some(p) = e.as_any().downcast_ref::<tensor::OutOfBoundsView>()
    {
        return Err(p.error.clone());
    }
    if let Value::Ext(e) = v
        && let Some(mm) = e
            .as_any()
            .downcast_ref::<isa::tensor_engine::PendingMatmul>()
    {
        let t = mm.record(ctx, None, Some(false))?;
        return Ok(Value::Tensor(t));
    }
    if let Some(r) = nl_math::PendingLoopReduce::of(v) {
        return Err(r.unassigned(ctx));
    }
    Ok(v.clone())
}

fn materialize_args(ctx: &mut Ctx<'_>, mut args: CallArgs) -> Result<CallArgs, Diagnostic> {
    for a in args.positional.iter_mut() {
        a.value = materialize(ctx, &a.value)?;
    }
    for (_, a) in args.keywords.iter_mut() {
        a.value = materialize(ctx, &a.value)?;
    }
    Ok(args)
}

#[cfg(test)]
mod tests;
