//! The first, small API table: dtypes, buffers, `nl.ndarray`,
//! `nisa.dma_copy`, tensor `shape`/`dtype`/`buffer`/`ndim` and basic
//! subscripts (ints, slices, `nl.ds`, `...`; language.md §6.5). It lets the
//! evaluator be tested end to end; the API layer replaces it.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, View};
use nkic_isa::{DType, OobMode};

use super::ApiFn;
use crate::args::{Arg, CallArgs};
use crate::ctx::Ctx;
use crate::value::{IntOrReg, Namespace, Tensor, Value};

/// Index out of bounds in a subscript.
const E_INDEX: &str = "E0500";
/// A wrong kind of value for an API parameter.
const E_ARG_TYPE: &str = "E0501";
/// Shapes that do not agree.
const E_SHAPE: &str = "E0502";
/// A partition dim above 128 or a buffer rule broken.
const E_PARTITION: &str = "E0503";

const NDARRAY: ApiFn = ApiFn(0);
const DMA_COPY: ApiFn = ApiFn(1);

pub(super) fn lookup(_ctx: &Ctx<'_>, ns: Namespace, attr: &str) -> Option<Value> {
    match ns {
        Namespace::Language => {
            if let Ok(dt) = attr.parse::<DType>()
                && dt.name() == attr
            {
                return Some(Value::DType(dt));
            }
            match attr {
                "ndarray" => Some(Value::Api(NDARRAY)),
                "hbm" => Some(Value::Buffer(Buffer::PrivateHbm)),
                _ => Buffer::from_name(attr).map(Value::Buffer),
            }
        }
        Namespace::Isa => match attr {
            "dma_copy" => Some(Value::Api(DMA_COPY)),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn name(f: ApiFn) -> &'static str {
    match f {
        NDARRAY => "nl.ndarray",
        DMA_COPY => "nisa.dma_copy",
        _ => "<api>",
    }
}

pub(super) fn call(
    ctx: &mut Ctx<'_>,
    f: ApiFn,
    args: CallArgs,
    span: Span,
) -> Result<Value, Diagnostic> {
    match f {
        NDARRAY => ndarray(ctx, args, span),
        DMA_COPY => dma_copy(ctx, args, span),
        _ => Err(ctx.error(E_ARG_TYPE, "unknown API function", span, "here")),
    }
}

fn ndarray(ctx: &mut Ctx<'_>, args: CallArgs, span: Span) -> Result<Value, Diagnostic> {
    let [shape, dtype, buffer, name, _address] = args.bind(
        ctx,
        "nl.ndarray",
        ["shape", "dtype", "buffer", "name", "address"],
        2,
        span,
    )?;
    let (shape, dtype) = (shape.expect("bound"), dtype.expect("bound"));
    let dims = shape_of(ctx, &shape)?;
    let Value::DType(dt) = dtype.value else {
        return Err(ctx.error(
            E_ARG_TYPE,
            format!("expected a dtype, found a {}", dtype.value.type_name()),
            dtype.span,
            "not a dtype",
        ));
    };
    let buffer = match buffer {
        None => Buffer::Sbuf,
        Some(Arg {
            value: Value::Buffer(b),
            ..
        }) => b,
        Some(a) => {
            return Err(ctx.error(
                E_ARG_TYPE,
                format!(
                    "expected a buffer such as `nl.sbuf`, found a {}",
                    a.value.type_name()
                ),
                a.span,
                "not a buffer",
            ));
        }
    };
    if buffer.is_on_chip() {
        if dims.len() < 2 {
            return Err(ctx.error(
                E_SHAPE,
                format!("an on-chip tensor needs at least 2 dims, found shape {dims:?}"),
                shape.span,
                "partition dim and at least one free dim expected",
            ));
        }
        if dims[0] > 128 {
            return Err(ctx.error(
                E_PARTITION,
                format!(
                    "size of partition dimension {} exceeds architecture limitation of 128",
                    dims[0]
                ),
                shape.span,
                "partition dim above 128",
            ));
        }
    }
    let name = match name {
        Some(Arg {
            value: Value::Str(s),
            ..
        }) => s.to_string(),
        _ => String::new(),
    };
    let storage = ctx.alloc_storage(&name, buffer, dt, &dims, span);
    let view = ctx.builder().full_view(storage);
    Ok(Value::tensor(Tensor {
        view,
        shape: dims,
        buffer,
    }))
}

fn dma_copy(ctx: &mut Ctx<'_>, args: CallArgs, span: Span) -> Result<Value, Diagnostic> {
    let [dst, src, _priority, _oob, _dge, _engine, name] = args.bind(
        ctx,
        "nisa.dma_copy",
        [
            "dst", "src", "priority", "oob_mode", "dge_mode", "engine", "name",
        ],
        2,
        span,
    )?;
    let dst = tensor_arg(ctx, dst.expect("bound"))?;
    let src_arg = src.expect("bound");
    let src_span = src_arg.span;
    let src = tensor_arg(ctx, src_arg)?;
    if dst.0.view.num_elements() != src.0.view.num_elements() {
        return Err(ctx
            .error(
                E_SHAPE,
                format!(
                    "`dst` has shape {:?} but `src` has shape {:?}",
                    dst.0.shape, src.0.shape
                ),
                span,
                "shapes differ",
            )
            .with_secondary(ctx.file(), src_span, "the source"));
    }
    if src.0.buffer == Buffer::Psum {
        return Err(ctx.error(
            E_PARTITION,
            "`dma_copy` cannot read PSUM",
            src_span,
            "a PSUM tensor",
        ));
    }
    let mut op = nkic_ir::Op::new(OpKind::DmaCopy {
        dst: dst.0.view.clone(),
        src: src.0.view.clone(),
        accumulate: false,
        dge: None,
        oob: OobMode::Error,
        priority: None,
    });
    if let Some(Arg {
        value: Value::Str(s),
        ..
    }) = name
    {
        op.name = Some(s.to_string());
    }
    ctx.push_op(op, span)?;
    Ok(Value::None)
}

fn tensor_arg(ctx: &Ctx<'_>, arg: Arg) -> Result<(Rc<Tensor>, Span), Diagnostic> {
    match arg.value {
        Value::Tensor(t) => Ok((t, arg.span)),
        v => Err(ctx.error(
            E_ARG_TYPE,
            format!("expected a tensor, found a {}", v.type_name()),
            arg.span,
            "not a tensor",
        )),
    }
}

fn shape_of(ctx: &Ctx<'_>, arg: &Arg) -> Result<Vec<u64>, Diagnostic> {
    let items: Vec<Value> = match &arg.value {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        Value::Int(_) => vec![arg.value.clone()],
        v => {
            return Err(ctx.error(
                E_ARG_TYPE,
                format!("expected a shape tuple, found a {}", v.type_name()),
                arg.span,
                "not a shape",
            ));
        }
    };
    items
        .iter()
        .map(|v| match v.as_int() {
            Some(n) if n > 0 => Ok(n as u64),
            _ => Err(ctx.error(
                E_SHAPE,
                format!(
                    "dimension sizes must be positive ints, found {}",
                    crate::format::repr(v)
                ),
                arg.span,
                "bad dimension",
            )),
        })
        .collect()
}

pub(super) fn attribute(
    ctx: &mut Ctx<'_>,
    value: &Value,
    attr: &str,
    span: Span,
) -> Result<Value, Diagnostic> {
    if let Value::Tensor(t) = value {
        let ints = |v: &[u64]| Value::tuple(v.iter().map(|&d| Value::Int(d as i64)).collect());
        match attr {
            "shape" => return Ok(ints(&t.shape)),
            "dtype" => return Ok(Value::DType(t.dtype())),
            "buffer" => return Ok(Value::Buffer(t.buffer)),
            "ndim" => return Ok(Value::Int(t.shape.len() as i64)),
            _ => {}
        }
    }
    Err(ctx.error(
        crate::codes::NO_ATTRIBUTE,
        format!("{} has no attribute `{attr}`", value.type_name()),
        span,
        "unknown attribute",
    ))
}

pub(super) fn subscript(
    ctx: &mut Ctx<'_>,
    value: &Value,
    key: &Value,
    span: Span,
) -> Result<Value, Diagnostic> {
    let Value::Tensor(t) = value else {
        return Err(ctx.error(
            crate::codes::TYPE_ERROR,
            format!("a {} cannot be indexed", value.type_name()),
            span,
            "not subscriptable",
        ));
    };
    let items: Vec<Value> = match key {
        Value::Tuple(items) => items.to_vec(),
        k => vec![k.clone()],
    };
    let ndim = t.shape.len();
    let n_ellipsis = items
        .iter()
        .filter(|v| matches!(v, Value::Ellipsis))
        .count();
    if n_ellipsis > 1 || items.len() - n_ellipsis > ndim {
        return Err(ctx.error(
            E_INDEX,
            format!("too many indices for a tensor of shape {:?}", t.shape),
            span,
            "too many indices",
        ));
    }
    // Expand `...` and missing trailing dims to full slices.
    let mut expanded: Vec<Option<Value>> = Vec::with_capacity(ndim);
    for it in &items {
        if matches!(it, Value::Ellipsis) {
            for _ in 0..ndim - (items.len() - 1) {
                expanded.push(None);
            }
        } else {
            expanded.push(Some(it.clone()));
        }
    }
    expanded.resize(ndim, None);
    let on_chip = t.buffer.is_on_chip();
    let mut view = t.view.clone();
    // The dims kept, as (index into view dims, removable-by-int flag).
    let mut keep: Vec<bool> = Vec::with_capacity(ndim);
    let mut dyn_offset = None;
    for (dim, item) in expanded.iter().enumerate() {
        let size = t.shape[dim];
        let (start, count, step, is_int) = match item {
            None => (0, size, 1, false),
            Some(v) => match v {
                Value::Int(_) | Value::Bool(_) => {
                    let i = v.as_int().unwrap_or(0);
                    let j = if i < 0 { i + size as i64 } else { i };
                    if j < 0 || j >= size as i64 {
                        return Err(ctx.error(
                            E_INDEX,
                            format!("index {i} is out of bounds for dim {dim} of size {size}"),
                            span,
                            "out of bounds",
                        ));
                    }
                    (j as u64, 1, 1, true)
                }
                Value::Slice(s) => {
                    let step = match s.step.as_int() {
                        None if s.step.is_none() => 1,
                        Some(st) if st >= 1 => st,
                        _ => {
                            return Err(ctx.error(
                                E_INDEX,
                                "slice steps must be positive ints",
                                span,
                                "bad step",
                            ));
                        }
                    };
                    let clamp = |v: &Value, default: i64| -> Option<i64> {
                        if v.is_none() {
                            return Some(default);
                        }
                        let i = v.as_int()?;
                        let i = if i < 0 { i + size as i64 } else { i };
                        Some(i.clamp(0, size as i64))
                    };
                    let (Some(a), Some(b)) = (clamp(&s.lower, 0), clamp(&s.upper, size as i64))
                    else {
                        return Err(ctx.error(
                            E_INDEX,
                            "slice bounds must be ints",
                            span,
                            "bad slice",
                        ));
                    };
                    if a >= b {
                        return Err(ctx.error(
                            E_INDEX,
                            format!("the slice {a}:{b} of dim {dim} (size {size}) is empty"),
                            span,
                            "empty slice",
                        ));
                    }
                    (a as u64, (b - a) as u64, step as u64, false)
                }
                Value::Ds(ds) => {
                    let size_ds = ds.size.max(0) as u64;
                    match ds.start {
                        IntOrReg::Int(s) => {
                            if s < 0 || s as u64 + size_ds > size {
                                return Err(ctx.error(
                                    E_INDEX,
                                    format!(
                                        "nl.ds({s}, {size_ds}) is out of bounds for dim {dim} of size {size}"
                                    ),
                                    span,
                                    "out of bounds",
                                ));
                            }
                            (s as u64, size_ds, 1, false)
                        }
                        IntOrReg::Reg(r) => {
                            if dyn_offset.is_some() {
                                return Err(ctx.error(
                                    E_INDEX,
                                    "only one dynamic index per subscript is supported",
                                    span,
                                    "second dynamic index",
                                ));
                            }
                            if size_ds > size {
                                return Err(ctx.error(
                                    E_INDEX,
                                    format!(
                                        "nl.ds size {size_ds} exceeds dim {dim} of size {size}"
                                    ),
                                    span,
                                    "too large",
                                ));
                            }
                            dyn_offset = Some((dim, r));
                            (0, size_ds, 1, false)
                        }
                    }
                }
                other => {
                    return Err(ctx.error(
                        E_INDEX,
                        format!("a {} cannot index a tensor", other.type_name()),
                        span,
                        "bad index",
                    ));
                }
            },
        };
        let Some(v) = view.slice(dim, start, start + (count - 1) * step + 1, step) else {
            return Err(ctx.error(E_INDEX, "index out of bounds", span, "out of bounds"));
        };
        view = v;
        keep.push(!is_int || (on_chip && dim == 0));
    }
    if let Some((dim, r)) = dyn_offset {
        let stride = view.dims[dim].stride;
        view.offset += r.offset * stride;
        view = view.with_dyn_offset(r.reg, r.scale * stride);
    }
    let min_dims = if on_chip { 2 } else { 1 };
    let mut kept = keep.iter().filter(|&&k| k).count();
    // Keep the last int-indexed dims (size 1) to stay at the minimum rank.
    for k in keep.iter_mut().rev() {
        if kept >= min_dims {
            break;
        }
        if !*k {
            *k = true;
            kept += 1;
        }
    }
    let mut dims = Vec::new();
    let mut shape = Vec::new();
    for (dim, &k) in keep.iter().enumerate() {
        if k {
            dims.push(view.dims[dim]);
            shape.push(view.dims[dim].count);
        }
    }
    let view = View { dims, ..view };
    Ok(Value::tensor(Tensor {
        view,
        shape,
        buffer: t.buffer,
    }))
}
