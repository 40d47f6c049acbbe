//! Checks shared by many API functions: buffers, partition counts and
//! start partitions, free sizes, shape agreement, dtypes per target.
//!
//! Every check returns a `Diagnostic` naming what was expected and what
//! was found, with the concrete shapes, buffers and dtypes, at the span of
//! the offending argument.

use nkic_diag::{Diagnostic, Span};
use nkic_ir::Buffer;
use nkic_isa::{DType, Engine};

use super::codes;
use super::table::Bound;
use crate::ctx::Ctx;
use crate::value::Tensor;

/// The maximum partition count of an operand.
pub const PMAX: u64 = 128;

/// `(128, 512)` style text of a shape.
pub fn shape_text(shape: &[u64]) -> String {
    if shape.len() == 1 {
        return format!("({},)", shape[0]);
    }
    let parts: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("({})", parts.join(", "))
}

/// The most bytes one tensor may have: the IR's byte offsets and strides
/// are `i64`.
pub const MAX_TENSOR_BYTES: u64 = i64::MAX as u64;

/// A tensor of `shape` and `dtype` fits [`MAX_TENSOR_BYTES`]; checked where
/// a kernel argument or an allocation is made, so that no later size
/// computation overflows.
pub fn tensor_bytes(
    ctx: &Ctx<'_>,
    shape: &[u64],
    dtype: DType,
    span: Span,
    label: &str,
) -> Result<(), Diagnostic> {
    let bytes = shape
        .iter()
        .try_fold(u64::from(dtype.size()), |acc, &d| acc.checked_mul(d));
    match bytes {
        Some(b) if b <= MAX_TENSOR_BYTES => Ok(()),
        _ => Err(ctx
            .error(
                codes::TENSOR_SIZE,
                format!(
                    "a {dtype} tensor of shape {} has more than 2^63 bytes",
                    shape_text(shape)
                ),
                span,
                label,
            )
            .with_note("tensor sizes, offsets and strides are 63-bit byte counts")),
    }
}

/// `float32 (128, 512) sbuf` description of a tensor.
pub fn describe(t: &Tensor) -> String {
    format!(
        "{} {} in {}",
        t.dtype(),
        shape_text(&t.shape),
        t.buffer.name()
    )
}

/// The error at `span` about tensor `t`: `message` followed by `t`
/// [`describe`]d (`"`nl.store` writes HBM, found `dst`"` gives "… found
/// `dst` float32 (128, 512) sbuf").
pub fn tensor_error(
    ctx: &Ctx<'_>,
    code: &'static str,
    message: &str,
    t: &Tensor,
    span: Span,
    label: &str,
) -> Diagnostic {
    ctx.error(code, format!("{message} {}", describe(t)), span, label)
}

/// The partition count P of an on-chip tensor (its first dim).
pub fn partitions(t: &Tensor) -> u64 {
    t.shape.first().copied().unwrap_or(1)
}

/// The free size F of an on-chip tensor (product of the other dims).
pub fn free_size(t: &Tensor) -> u64 {
    t.shape.iter().skip(1).product()
}

/// Elements per partition row of the tensor's storage, in the view's dtype.
pub fn partition_stride(ctx: &Ctx<'_>, t: &Tensor) -> i64 {
    let st = ctx.storage(t.storage());
    let bytes: u64 = st.shape.iter().skip(1).product::<u64>() * u64::from(st.dtype.size());
    (bytes / u64::from(t.dtype().size().max(1))) as i64
}

/// The first partition an on-chip tensor covers (manual address included).
pub fn start_partition(ctx: &Ctx<'_>, t: &Tensor) -> u64 {
    let st = ctx.storage(t.storage());
    let base = st.address.map_or(0, |a| u64::from(a.partition));
    let stride = partition_stride(ctx, t).max(1);
    base + (t.view.offset.max(0) / stride) as u64
}

/// The index of the partition dim of an on-chip tensor: 0, or the number
/// of legacy block dims before it (the first dim whose stride is the
/// storage's partition row length).
pub fn partition_dim(ctx: &Ctx<'_>, t: &Tensor) -> usize {
    let pstride = partition_stride(ctx, t);
    t.view
        .dims
        .iter()
        .position(|d| d.stride == pstride)
        .unwrap_or(0)
}

/// Requires an SBUF or PSUM tensor.
pub fn on_chip(ctx: &Ctx<'_>, t: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    if t.buffer.is_on_chip() {
        return Ok(());
    }
    Err(ctx
        .error(
            codes::BUFFER,
            format!("{what} must be in SBUF or PSUM, found {}", describe(t)),
            span,
            format!("in {}", t.buffer.name()),
        )
        .with_help("load it into an SBUF tile first (`nisa.dma_copy` or `nl.load`)"))
}

/// `dst` (at `span`) has `src`'s dtype, as an instruction that does not
/// cast needs; else a dtype error labelled `label` whose text `message`
/// makes from the dtypes of `src` and `dst`.
pub fn same_dtype(
    ctx: &Ctx<'_>,
    src: &Tensor,
    dst: &Tensor,
    span: Span,
    label: impl Into<String>,
    message: impl FnOnce(DType, DType) -> String,
) -> Result<(), Diagnostic> {
    if dst.dtype() == src.dtype() {
        return Ok(());
    }
    Err(ctx.error(codes::DTYPE, message(src.dtype(), dst.dtype()), span, label))
}

/// The error that argument `name` of call `b` is out of range:
/// "{rule}, found {v}".
pub fn out_of_range(
    ctx: &Ctx<'_>,
    b: &Bound,
    name: &str,
    rule: impl std::fmt::Display,
    v: impl std::fmt::Display,
) -> Diagnostic {
    ctx.error(
        codes::VALUE,
        format!("{rule}, found {v}"),
        b.span_of(name),
        "out of range",
    )
}

/// Requires one of `allowed` buffers.
pub fn buffer_in(
    ctx: &Ctx<'_>,
    t: &Tensor,
    allowed: &[Buffer],
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    if allowed.contains(&t.buffer) {
        return Ok(());
    }
    let names: Vec<&str> = allowed.iter().map(|b| b.name()).collect();
    Err(ctx.error(
        codes::BUFFER,
        format!(
            "{what} must be in {}, found {}",
            names.join(" or "),
            describe(t)
        ),
        span,
        format!("in {}", t.buffer.name()),
    ))
}

/// The operand rules of a compute instruction (isa.md §2.1): on chip,
/// P ≤ 128, at least one free dim, and a legal start partition.
pub fn operand(ctx: &Ctx<'_>, t: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    on_chip(ctx, t, span, what)?;
    partition_count(ctx, t, span, what)?;
    partition_start(ctx, t, span, what)
}

/// P ≤ 128.
pub fn partition_count(
    ctx: &Ctx<'_>,
    t: &Tensor,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    if t.buffer.is_on_chip() && partition_dim(ctx, t) != 0 {
        return Err(ctx
            .error(
                codes::LEGACY,
                format!(
                    "{what} still has block dims before its partition dim (shape {})",
                    shape_text(&t.shape)
                ),
                span,
                "a block tensor",
            )
            .with_help("index the block dims first, e.g. `t[b]`"));
    }
    let p = partitions(t);
    if p <= PMAX {
        return Ok(());
    }
    Err(ctx
        .error(
            codes::PARTITION_SIZE,
            format!(
                "{what} partition dimension {p} exceeds the maximum of 128 (shape {})",
                shape_text(&t.shape)
            ),
            span,
            format!("{p} partitions"),
        )
        .with_help("tile the partition dim by 128 (`nl.tile_size.pmax`)"))
}

/// The quadrant rule for the first partition (language.md §6.4).
pub fn partition_start(
    ctx: &Ctx<'_>,
    t: &Tensor,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    let n = partitions(t);
    let start = start_partition(ctx, t);
    let (ok, allowed) = match n {
        65.. => (start == 0, "0"),
        33..=64 => (start == 0 || start == 64, "0 or 64"),
        _ => (start.is_multiple_of(32) && start < 128, "0, 32, 64 or 96"),
    };
    if ok {
        return Ok(());
    }
    Err(ctx.error(
        codes::PARTITION_START,
        format!(
            "{what} covers {n} partitions starting at partition {start}, but an operand of {n} partitions must start at {allowed}"
        ),
        span,
        format!("starts at partition {start}"),
    ))
}

/// Equal partition counts and equal free sizes.
pub fn same_pf(
    ctx: &Ctx<'_>,
    a: (&Tensor, &str),
    b: (&Tensor, &str, Span),
) -> Result<(), Diagnostic> {
    let (pa, fa) = (partitions(a.0), free_size(a.0));
    let (pb, fb) = (partitions(b.0), free_size(b.0));
    if pa == pb && fa == fb {
        return Ok(());
    }
    Err(ctx.error(
        codes::SHAPE,
        format!(
            "`{}` has shape {} ({pa} partitions × {fa} elements) but `{}` has shape {} ({pb} partitions × {fb} elements)",
            a.1,
            shape_text(&a.0.shape),
            b.1,
            shape_text(&b.0.shape)
        ),
        b.2,
        "partition count or free size differs",
    ))
}

/// The free-size limit of a Vector/Scalar/GpSimd operand (isa.md §2.1).
pub fn engine_free_size(
    ctx: &Ctx<'_>,
    t: &Tensor,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    let fig = ctx.target().figures();
    let limit = if t.buffer == Buffer::Psum {
        u64::from(fig.max_free_elems_psum)
    } else {
        u64::from(fig.max_free_elems_sbuf)
    };
    let f = free_size(t);
    if f <= limit {
        return Ok(());
    }
    Err(ctx.error(
        codes::FREE_SIZE,
        format!(
            "{what} has {f} elements per partition (shape {}), above the limit of {limit} for {}",
            shape_text(&t.shape),
            t.buffer.name()
        ),
        span,
        format!("{f} elements per partition"),
    ))
}

/// GpSimd cannot touch PSUM.
pub fn not_psum_on(
    ctx: &Ctx<'_>,
    t: &Tensor,
    engine: Engine,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    if t.buffer != Buffer::Psum {
        return Ok(());
    }
    Err(ctx.error(
        codes::BUFFER,
        format!("{what} is in PSUM, which {} cannot access", engine.name()),
        span,
        "in psum",
    ))
}

/// `dst` (at `span`) has the dtype `data` of the `data` argument: the
/// instruction does not cast.
pub fn dtype_of_data(
    ctx: &Ctx<'_>,
    dst: &Tensor,
    span: Span,
    data: DType,
) -> Result<(), Diagnostic> {
    let message = format!("`dst` must have `data`'s dtype {data}, found");
    dtype_is(ctx, dst, data, span, &message)
}

/// `t` (at `span`) has the dtype `want`: the instruction does not cast.
/// The error is `message` followed by `t` [`describe`]d.
pub fn dtype_is(
    ctx: &Ctx<'_>,
    t: &Tensor,
    want: DType,
    span: Span,
    message: &str,
) -> Result<(), Diagnostic> {
    if t.dtype() == want {
        return Ok(());
    }
    Err(tensor_error(
        ctx,
        codes::DTYPE,
        message,
        t,
        span,
        "dtype differs",
    ))
}

/// The dtype exists on the target.
pub fn dtype_on_target(ctx: &Ctx<'_>, dt: DType, span: Span) -> Result<(), Diagnostic> {
    if ctx.target().supports_dtype(dt) {
        return Ok(());
    }
    Err(ctx.error(
        codes::DTYPE,
        format!("{dt} does not exist on {}", ctx.target()),
        span,
        format!("not available on {}", ctx.target()),
    ))
}

/// A run-time row index (`.ap(vector_offset=...)`, a tensor subscript of an
/// HBM tensor): an SBUF `(P, 1)` integer tensor with a legal partition
/// count. `what` names it in the message.
pub fn row_index(ctx: &Ctx<'_>, idx: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    if idx.buffer != Buffer::Sbuf || !idx.dtype().is_int() || free_size(idx) != 1 {
        return Err(ctx.error(
            codes::ARG_TYPE,
            format!(
                "{what} must be an SBUF (P, 1) int tensor, found {}",
                describe(idx)
            ),
            span,
            "bad index tensor",
        ));
    }
    partition_count(ctx, idx, span, what)
}

/// Requires a float dtype.
pub fn float_dtype(ctx: &Ctx<'_>, t: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    if t.dtype().is_float() {
        return Ok(());
    }
    let message = format!("{what} must have a float dtype, found");
    Err(tensor_error(
        ctx,
        codes::DTYPE,
        &message,
        t,
        span,
        "not a float dtype",
    ))
}

/// `t`'s dtype is one of `allowed` (E0505 naming them).
pub fn dtype_in(
    ctx: &Ctx<'_>,
    t: &Tensor,
    allowed: &[DType],
    what: &str,
    span: Span,
) -> Result<(), Diagnostic> {
    if allowed.contains(&t.dtype()) {
        return Ok(());
    }
    let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
    Err(ctx.error(
        codes::DTYPE,
        format!(
            "{what} must be one of {}, found {}",
            names.join(", "),
            describe(t)
        ),
        span,
        "dtype not allowed",
    ))
}
