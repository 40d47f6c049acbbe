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

mod placeholder;

use nkic_diag::{Diagnostic, Span};
use nkic_syntax::ast::{BinOp, CmpOp};

use crate::args::CallArgs;
use crate::codes;
use crate::ctx::Ctx;
use crate::value::{Namespace, Value};

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
    placeholder::lookup(ctx, ns, attr)
}

/// The dotted name of `f` for messages (`nisa.dma_copy`).
pub fn name(f: ApiFn) -> &'static str {
    placeholder::name(f)
}

/// Calls API function `f`.
pub fn call(ctx: &mut Ctx<'_>, f: ApiFn, args: CallArgs, span: Span) -> Result<Value, Diagnostic> {
    placeholder::call(ctx, f, args, span)
}

/// `value.attr` for tensors and other API values.
pub fn attribute(
    ctx: &mut Ctx<'_>,
    value: &Value,
    attr: &str,
    span: Span,
) -> Result<Value, Diagnostic> {
    placeholder::attribute(ctx, value, attr, span)
}

/// `value[key]` for tensors and other API values.
pub fn subscript(
    ctx: &mut Ctx<'_>,
    value: &Value,
    key: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    placeholder::subscript(ctx, value, key, span)
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
    let _ = (key, value);
    let what = match aug {
        Some(op) => format!("`{}=` on a subscript of", op.as_str()),
        None => "assigning to a subscript of".to_owned(),
    };
    Err(ctx.error(
        codes::UNSUPPORTED,
        format!("{what} a {} is not supported yet", target.type_name()),
        span,
        "not supported",
    ))
}

/// A Python operator on tensors or other API values.
pub fn operator(
    ctx: &mut Ctx<'_>,
    op: Operator,
    operands: &[Value],
    inplace: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    let _ = inplace;
    let types: Vec<String> = operands.iter().map(Value::type_name).collect();
    Err(ctx.error(
        codes::TYPE_ERROR,
        format!(
            "unsupported operand types for `{}`: {}",
            op.as_str(),
            types.join(" and ")
        ),
        span,
        "not defined for these values",
    ))
}
