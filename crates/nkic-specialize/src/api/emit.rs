//! Recording ISA ops: the `engine=` choice, the `name=` and the result of
//! an ISA call (an `NkiInstruction` handle in the current form, the new
//! tile in the legacy value form), and the destination of value-form
//! calls.

use std::cell::RefCell;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, Handle, Op, OpKind, View};
use nkic_isa::{DType, Engine};

use super::codes;
use super::table::Bound;
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// The handle an ISA call returns (`NkiInstruction`); `depends_on` adds
/// scheduling edges.
#[derive(Debug)]
pub struct Instruction {
    /// `None` for an instruction on an empty view, which is not recorded.
    pub op: Option<Handle<Op>>,
    /// For an unrecorded instruction, the recorded ones it was made to
    /// depend on: an instruction that depends on it depends on those
    /// instead, so `c.depends_on(b)` after `b.depends_on(a)` still orders
    /// `c` after `a`.
    after: RefCell<Vec<Handle<Op>>>,
}

impl Instruction {
    /// The handle of `op` (`None`: not recorded).
    pub fn new(op: Option<Handle<Op>>) -> Self {
        Self {
            op,
            after: RefCell::new(Vec::new()),
        }
    }

    /// The recorded instructions that depending on this one orders after.
    fn producers(&self) -> Vec<Handle<Op>> {
        match self.op {
            Some(op) => vec![op],
            None => self.after.borrow().clone(),
        }
    }
}

crate::value::api_object!(Instruction, "NkiInstruction", {
    fn display(&self) -> String {
        match self.op {
            Some(op) => format!("<NkiInstruction {op}>"),
            None => "<NkiInstruction (empty, not recorded)>".into(),
        }
    }
});

/// The engine chosen by `engine=` (`None` for `nisa.engine.unknown` or
/// absent), checked against the function's engines.
pub fn engine(ctx: &Ctx<'_>, b: &Bound) -> Result<Option<Engine>, Diagnostic> {
    let Some(member) = b.enum_member(ctx, "engine", "engine")? else {
        return Ok(None);
    };
    let engine = match member {
        "tensor" => Engine::Tensor,
        "vector" => Engine::Vector,
        "scalar" => Engine::Scalar,
        "gpsimd" => Engine::GpSimd,
        "sync" => Engine::Sync,
        "dma" => Engine::Dma,
        _ => return Ok(None),
    };
    if !b.def.engines().contains(&engine) {
        let names: Vec<&str> = b.def.engines().iter().map(|e| e.name()).collect();
        return Err(ctx.error(
            codes::ENGINE,
            format!(
                "`{}` cannot run on the {} engine; it runs on {}",
                b.def.name,
                engine.name(),
                names.join(", ")
            ),
            b.span_of("engine"),
            format!("engine {}", engine.name()),
        ));
    }
    Ok(Some(engine))
}

/// The destination of an ISA call: `dst` in the current form, or a new
/// tile of `shape` in `buffer` (dtype from `dtype=`, else `dtype`) in the
/// value form.
pub fn dst_or_new(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    shape: &[u64],
    dtype: DType,
    buffer: Buffer,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    if !b.is_value_form() {
        return b.tensor(ctx, "dst");
    }
    let dtype = b.legacy_dtype(ctx)?.unwrap_or(dtype);
    let prefix = format!("{}_", short_name(b.def.name));
    new_result(ctx, b, &prefix, shape, dtype, buffer, span)
}

/// A fresh result tile of a call. Under a legacy `mask=` the tile has the
/// mask's full grid shape and the returned view is its masked part; the
/// full tile is what the call evaluates to ([`finish`], or
/// [`masked_result`] for functions that build their result themselves).
pub fn new_result(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    prefix: &str,
    shape: &[u64],
    dtype: DType,
    buffer: Buffer,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let name = ctx.fresh_name(prefix);
    let Some(mask) = &b.mask else {
        let t = super::tensor::alloc(ctx, shape, dtype, buffer, &name, span, span)?;
        ctx.auto_named.insert(t.storage());
        return Ok(Rc::new(t));
    };
    // Grow the masked axes back to the grid's sizes. Result dims that are
    // not grid dims (the 8 of `max8` over a masked `(128, 512)` source)
    // keep their size and are not sliced.
    let mut full_shape = shape.to_vec();
    let mut grown = Vec::new();
    for (axis, &(lo, hi)) in mask.ranges.iter().enumerate() {
        if let Some(s) = full_shape.get_mut(axis)
            && *s == hi - lo
        {
            *s = mask.grid[axis];
            grown.push((axis, lo, hi));
        }
    }
    let full = Rc::new(super::tensor::alloc(
        ctx,
        &full_shape,
        dtype,
        buffer,
        &name,
        span,
        span,
    )?);
    let mut view = Some(full.view.clone());
    for &(axis, lo, hi) in &grown {
        if (lo, hi) != (0, mask.grid[axis]) {
            view = view.and_then(|v| v.slice(axis, lo, hi, 1));
        }
    }
    let part = match view {
        Some(view) => Rc::new(Tensor {
            shape: view.dims.iter().map(|d| d.count).collect(),
            view,
            buffer: full.buffer,
        }),
        None => full.clone(),
    };
    ctx.auto_named.insert(full.storage());
    *mask.full_result.borrow_mut() = Some(full);
    Ok(part)
}

/// The value a call with a result tile evaluates to: the full tile under
/// a mask, else `t`.
pub fn masked_result(b: &Bound, t: &Rc<Tensor>) -> Rc<Tensor> {
    b.mask
        .as_ref()
        .and_then(|m| m.full_result.borrow().clone())
        .unwrap_or_else(|| t.clone())
}

/// `tensor_copy` from `nisa.tensor_copy`.
fn short_name(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// What call `b` evaluates to for its result tile `t` (made by
/// [`new_result`] with `shape` and `prefix`) in `dtype`: `t` itself when it
/// has that dtype, else a `tensor_copy` of it into a new result tile.
pub fn cast_result(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    (prefix, shape): (&str, &[u64]),
    t: &Rc<Tensor>,
    dtype: DType,
    span: Span,
) -> Result<Value, Diagnostic> {
    if dtype == t.dtype() {
        return Ok(Value::Tensor(masked_result(b, t)));
    }
    let cast = new_result(ctx, b, prefix, shape, dtype, Buffer::Sbuf, span)?;
    let kind = OpKind::TensorCopy {
        dst: cast.view.clone(),
        src: t.view.clone(),
    };
    push(ctx, b, kind, None, span)?;
    Ok(Value::Tensor(masked_result(b, &cast)))
}

/// Records `kind` for call `b` and returns what the call evaluates to:
/// the new tile in the value form, else an `NkiInstruction`.
pub fn finish(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    kind: OpKind,
    engine: Option<Engine>,
    result: Option<&Rc<Tensor>>,
    span: Span,
) -> Result<Value, Diagnostic> {
    let h = push(ctx, b, kind, engine, span)?;
    Ok(match result {
        Some(t) if b.is_value_form() => Value::Tensor(masked_result(b, t)),
        _ => Value::Ext(Rc::new(Instruction::new(h))),
    })
}

/// Records the one-input instruction `op(dst, src)` (views of `dst` and
/// `src`) for call `b` and returns what the call evaluates to, `dst` in the
/// value form ([`finish`]).
pub fn src_to_dst(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    dst: &Rc<Tensor>,
    src: &Tensor,
    span: Span,
    op: impl FnOnce(View, View) -> OpKind,
) -> Result<Value, Diagnostic> {
    let kind = op(dst.view.clone(), src.view.clone());
    finish(ctx, b, kind, None, Some(dst), span)
}

/// Records `kind` with the call's `name=` (when the function has one).
pub fn push(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    kind: OpKind,
    engine: Option<Engine>,
    span: Span,
) -> Result<Option<Handle<Op>>, Diagnostic> {
    let mut op = Op::new(kind);
    op.engine = engine;
    if b.def.params.iter().any(|p| p.name == "name") {
        op.name = b.name_arg(ctx)?;
    }
    ctx.push_op(op, span)
}

/// The instruction handle `v` is, if it is one.
pub fn instruction(v: &Value) -> Option<&Instruction> {
    match v {
        Value::Ext(e) => e.as_any().downcast_ref::<Instruction>(),
        _ => None,
    }
}

/// `instruction.depends_on(*producers)`.
pub fn depends_on(
    ctx: &mut Ctx<'_>,
    this: &Instruction,
    producers: &[crate::args::Arg],
) -> Result<(), Diagnostic> {
    for a in producers {
        let Some(p) = instruction(&a.value) else {
            return Err(ctx.error(
                codes::ARG_TYPE,
                format!(
                    "`depends_on` takes instruction handles, found a {}",
                    a.value.type_name()
                ),
                a.span,
                "not an instruction",
            ));
        };
        // An instruction on an empty view is not recorded: its own
        // producers stand in for it on either side of the edge.
        for producer in p.producers() {
            let Some(op) = this.op else {
                this.after.borrow_mut().push(producer);
                continue;
            };
            if producer >= op {
                return Err(ctx.error(
                    codes::VALUE,
                    "an instruction can only depend on instructions recorded before it",
                    a.span,
                    "recorded later",
                ));
            }
            ctx.builder().add_dependency(op, producer);
        }
    }
    Ok(())
}
