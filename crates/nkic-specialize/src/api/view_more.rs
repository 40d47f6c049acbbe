//! The reshaping and indirect view methods of `NkiTensor`
//! (language.md §6.5–§6.7): `reshape_dim`, `flatten_dims`, `rearrange`,
//! `vector_select` and `indirect`. Like the other view methods they cost
//! nothing at run time: each returns a new view of the same storage.
//!
//! Choices where the spec is silent: `rearrange` patterns are tuples whose
//! items are names or tuples of names (a group); a group on the source side
//! splits a dim (sizes from `fixed_sizes`, one inferred), on the
//! destination side merges axes that must be contiguous in memory in the
//! order written. On-chip tensors keep their partition axis first and
//! unsplit. `t.indirect(index, num_elem)` needs contiguous free dims and
//! addresses their flattened elements: column `i` of the result is free
//! element `index[i % G, i // G]` of `t` (G = 16, or 32 on TensorE).

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, Indirection, ViewDim};
use nkic_isa::Target;

use super::check::{self, shape_text};
use super::codes;
use super::table::{ApiDef, Bound, DIM, Kind, NO_ENGINE, SELF, opt, req};
use super::tensor::{
    dim_index, is_contiguous, keeps_partition_dim, partition_view_error, req_int, this, with_view,
};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "tensor.reshape_dim",
        &[
            SELF,
            DIM,
            req("shape", Kind::Ints),
        ],
        NO_ENGINE,
        "Splits dim `dim` into the dims `shape` (row-major; one size may be -1).",
        &[
            "The sizes multiply to the dim's size.",
            "On-chip tensors cannot split the partition dim (except trivially, with size-1 dims).",
        ],
        reshape_dim,
    ),
    ApiDef::new(
        "tensor.flatten_dims",
        &[
            SELF,
            req("start", Kind::Int),
            req("end", Kind::Int),
        ],
        NO_ENGINE,
        "Merges dims `start..end` (inclusive) into one.",
        &[
            "The merged dims are contiguous in memory.",
            "On-chip tensors keep their partition dim: `start > 0`.",
        ],
        flatten_dims,
    ),
    ApiDef::new(
        "tensor.rearrange",
        &[
            SELF,
            req("src_pattern", Kind::Any),
            req("dst_pattern", Kind::Any),
            opt("fixed_sizes", Kind::Any, "None"),
        ],
        NO_ENGINE,
        "einops-style split, permute and merge: `t.rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4})`.",
        &[
            "`src_pattern` names every dim (a tuple of names splits one dim; its sizes come from `fixed_sizes`, one may be inferred).",
            "`dst_pattern` uses every name once; a tuple of names merges axes that are contiguous in that order.",
            "On-chip tensors keep their partition dim first and unsplit.",
        ],
        rearrange,
    ),
    ApiDef::new(
        "tensor.vector_select",
        &[
            SELF,
            DIM,
            req("vector_offset", Kind::Tensor),
        ],
        NO_ENGINE,
        "A per-partition row gather of an HBM tensor: row `p` of the result is row `vector_offset[p]` (an indirect view, read or written by DMA).",
        &[
            "`dim` is 0 and the tensor is in HBM.",
            "`vector_offset` is an SBUF `(P, 1)` int tensor; the result has P rows.",
        ],
        vector_select,
    ),
    ApiDef::new(
        "tensor.indirect",
        &[
            SELF,
            req("index", Kind::Tensor),
            opt("num_elem", Kind::Int, "None"),
        ],
        NO_ENGINE,
        "Tensor indirection (trn3): a `(P, num_elem)` view whose columns are free positions read at run time from `index` (snake order across partition groups).",
        &[
            "trn3 only; the tensor is SBUF or PSUM with contiguous free dims.",
            "`index` is an SBUF int tensor with the tensor's partition count; `num_elem` (default `index.size`) is at most `index.size`.",
        ],
        indirect,
    )
    .new_in(Target::Trn3),
];

fn view_error(ctx: &Ctx<'_>, message: String, span: Span, label: &str) -> Diagnostic {
    ctx.error(codes::VIEW, message, span, label)
}

/// A view that is already indirect is not made indirect again.
fn not_indirect(ctx: &Ctx<'_>, t: &Tensor, span: Span) -> Result<(), Diagnostic> {
    if t.view.indirect.is_none() {
        return Ok(());
    }
    let message = "this view is already indirect".to_owned();
    Err(view_error(ctx, message, span, "indirect twice"))
}

/// Row-major `[stride, count]` dims splitting one dim of stride `stride`.
fn split(stride: i64, sizes: &[u64]) -> Vec<ViewDim> {
    let mut out = vec![ViewDim::new(0, 1); sizes.len()];
    let mut s = stride;
    for (i, &c) in sizes.iter().enumerate().rev() {
        out[i] = ViewDim::new(s, c);
        s *= c as i64;
    }
    out
}

/// Resolves one `-1` in `sizes` so they multiply to `total`.
fn resolve_sizes(sizes: &[i64], total: u64) -> Option<Vec<u64>> {
    let known: i64 = sizes.iter().filter(|&&d| d != -1).product();
    let infer = sizes.iter().filter(|&&d| d == -1).count();
    if sizes.iter().any(|&d| d == 0 || d < -1) || known <= 0 || infer > 1 {
        return None;
    }
    let out: Vec<u64> = sizes
        .iter()
        .map(|&d| {
            if d == -1 {
                total / known as u64
            } else {
                d as u64
            }
        })
        .collect();
    (out.iter().product::<u64>() == total).then_some(out)
}

fn reshape_dim(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let dim = dim_index(ctx, &t, req_int(ctx, b, "dim")?, b.span_of("dim"))?;
    let raw = b.ints(ctx, "shape")?.unwrap_or_default();
    let Some(sizes) = resolve_sizes(&raw, t.shape[dim]) else {
        return Err(view_error(
            ctx,
            format!(
                "cannot split dim {dim} (size {}) of shape {} into {raw:?}",
                t.shape[dim],
                shape_text(&t.shape)
            ),
            b.span_of("shape"),
            "sizes do not multiply to the dim",
        ));
    };
    keeps_partition_dim(
        ctx,
        &t,
        dim == 0 && sizes.iter().filter(|&&c| c > 1).count() > 1,
        "`reshape_dim` splits",
        b.span,
    )?;
    let mut v = t.view.clone();
    let d = v.dims[dim];
    let new = split(d.stride, &sizes);
    if v.dims.len() - 1 + new.len() > nkic_ir::MAX_VIEW_DIMS {
        return Err(view_error(
            ctx,
            format!(
                "the result would have {} dims, more than {}",
                v.dims.len() - 1 + new.len(),
                nkic_ir::MAX_VIEW_DIMS
            ),
            b.span,
            "too many dims",
        ));
    }
    v.dims.splice(dim..=dim, new);
    if t.buffer.is_on_chip() && dim == 0 {
        // A trivial split keeps the partition dim first: put the size-1
        // dims after it.
        let p = v
            .dims
            .iter()
            .position(|d| d.count > 1)
            .unwrap_or(0)
            .min(sizes.len() - 1);
        let pd = v.dims.remove(p);
        v.dims.insert(0, pd);
    }
    Ok(with_view(&t, v))
}

fn flatten_dims(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let start = dim_index(ctx, &t, req_int(ctx, b, "start")?, b.span_of("start"))?;
    let end = dim_index(ctx, &t, req_int(ctx, b, "end")?, b.span_of("end"))?;
    if start > end {
        return Err(ctx.error(
            codes::AXIS,
            format!("`start` ({start}) is after `end` ({end})"),
            b.span_of("end"),
            "empty range",
        ));
    }
    keeps_partition_dim(
        ctx,
        &t,
        start == 0 && end > 0,
        "`flatten_dims` merges",
        b.span,
    )?;
    let mut v = t.view.clone();
    let group = &v.dims[start..=end];
    if !mergeable(group) {
        return Err(view_error(
            ctx,
            format!(
                "dims {start}..{end} of this {} view are not contiguous, so they cannot be merged",
                shape_text(&t.shape)
            ),
            b.span,
            "not contiguous",
        ));
    }
    let merged = merge(group);
    v.dims.splice(start..=end, [merged]);
    Ok(with_view(&t, v))
}

/// True when `dims` can be one dim: each (non-size-1) dim steps over
/// exactly the next one's extent.
fn mergeable(dims: &[ViewDim]) -> bool {
    let live: Vec<&ViewDim> = dims.iter().filter(|d| d.count > 1).collect();
    live.windows(2)
        .all(|w| w[0].stride == w[1].stride * w[1].count as i64)
}

/// One dim covering contiguous `dims` (checked by the caller).
fn merge(dims: &[ViewDim]) -> ViewDim {
    let count: u64 = dims.iter().map(|d| d.count).product();
    let stride = dims
        .iter()
        .rev()
        .find(|d| d.count > 1)
        .map_or(1, |d| d.stride);
    ViewDim::new(stride, count)
}

/// A pattern item: one name or a group of names.
enum Item {
    Name(String),
    Group(Vec<String>),
}

fn pattern_items(ctx: &Ctx<'_>, v: &Value, span: Span) -> Result<Vec<Item>, Diagnostic> {
    let bad = || {
        ctx.error(
            codes::ARG_TYPE,
            format!(
                "a rearrange pattern is a tuple of names and tuples of names, found {}",
                crate::format::short_repr(v)
            ),
            span,
            "bad pattern",
        )
    };
    let items: Vec<Value> = match v {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        _ => return Err(bad()),
    };
    items
        .iter()
        .map(|it| match it {
            Value::Str(s) => Ok(Item::Name(s.to_string())),
            Value::Tuple(_) | Value::List(_) => {
                let inner: Vec<Value> = match it {
                    Value::Tuple(t) => t.to_vec(),
                    Value::List(l) => l.borrow().clone(),
                    _ => Vec::new(),
                };
                inner
                    .iter()
                    .map(|n| match n {
                        Value::Str(s) => Ok(s.to_string()),
                        _ => Err(bad()),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Item::Group)
            }
            _ => Err(bad()),
        })
        .collect()
}

fn rearrange(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    let (ss, ds) = (b.span_of("src_pattern"), b.span_of("dst_pattern"));
    let src = pattern_items(ctx, &b.value("src_pattern"), ss)?;
    let dst = pattern_items(ctx, &b.value("dst_pattern"), ds)?;
    let mut fixed: Vec<(String, u64)> = Vec::new();
    if let Value::Dict(d) = b.value("fixed_sizes") {
        for (k, v) in d.borrow().entries.iter() {
            let (Value::Str(name), Some(n)) = (k, v.as_int()) else {
                continue;
            };
            fixed.push((name.to_string(), n.max(0) as u64));
        }
    }
    if src.len() != t.shape.len() {
        return Err(view_error(
            ctx,
            format!(
                "`src_pattern` names {} dims but the tensor has shape {}",
                src.len(),
                shape_text(&t.shape)
            ),
            ss,
            "wrong number of dims",
        ));
    }
    // Elementary axes (name, dim) after splitting the source groups.
    let mut axes: Vec<(String, ViewDim)> = Vec::new();
    for (i, item) in src.iter().enumerate() {
        let d = t.view.dims[i];
        match item {
            Item::Name(n) => axes.push((n.clone(), d)),
            Item::Group(names) => {
                let raw: Vec<i64> = names
                    .iter()
                    .map(|n| {
                        fixed
                            .iter()
                            .find(|(f, _)| f == n)
                            .map_or(-1, |(_, s)| *s as i64)
                    })
                    .collect();
                let Some(sizes) = resolve_sizes(&raw, d.count) else {
                    return Err(view_error(
                        ctx,
                        format!(
                            "cannot split dim {i} (size {}) into ({}) with fixed_sizes {raw:?}",
                            d.count,
                            names.join(", ")
                        ),
                        ss,
                        "sizes do not fit",
                    ));
                };
                if t.buffer.is_on_chip() && i == 0 && sizes.iter().filter(|&&c| c > 1).count() > 1 {
                    return Err(partition_view_error(ctx, &t, "`rearrange` splits", ss));
                }
                for (n, sd) in names.iter().zip(split(d.stride, &sizes)) {
                    axes.push((n.clone(), sd));
                }
            }
        }
    }
    let mut used = vec![false; axes.len()];
    let mut take = |name: &str| -> Result<ViewDim, Diagnostic> {
        match axes.iter().position(|(n, _)| n == name) {
            Some(i) if !used[i] => {
                used[i] = true;
                Ok(axes[i].1)
            }
            Some(_) => Err(view_error(
                ctx,
                format!("`{name}` appears twice in `dst_pattern`"),
                ds,
                "repeated name",
            )),
            None => Err(view_error(
                ctx,
                format!("`{name}` is not a name of `src_pattern`"),
                ds,
                "unknown name",
            )),
        }
    };
    let mut dims = Vec::new();
    let mut first_is_partition = false;
    for (k, item) in dst.iter().enumerate() {
        match item {
            Item::Name(n) => {
                let d = take(n)?;
                if k == 0 {
                    first_is_partition = matches!(&src[0], Item::Name(s) if s == n);
                }
                dims.push(d);
            }
            Item::Group(names) => {
                let group = names
                    .iter()
                    .map(|n| take(n))
                    .collect::<Result<Vec<_>, _>>()?;
                if !mergeable(&group) {
                    return Err(view_error(
                        ctx,
                        format!(
                            "({}) are not contiguous in memory in this order, so they cannot be merged",
                            names.join(", ")
                        ),
                        ds,
                        "not contiguous",
                    ));
                }
                dims.push(merge(&group));
            }
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(view_error(
            ctx,
            format!(
                "`{}` of `src_pattern` is missing from `dst_pattern`",
                axes[i].0
            ),
            ds,
            "name dropped",
        ));
    }
    if t.buffer.is_on_chip() && !first_is_partition {
        return Err(partition_view_error(ctx, &t, "this `rearrange` moves", ds));
    }
    if dims.is_empty() || dims.len() > nkic_ir::MAX_VIEW_DIMS {
        return Err(view_error(
            ctx,
            format!("the result would have {} dims", dims.len()),
            ds,
            "bad rank",
        ));
    }
    let mut v = t.view.clone();
    v.dims = dims;
    Ok(with_view(&t, v))
}

fn vector_select(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    if req_int(ctx, b, "dim")? != 0 {
        return Err(ctx.error(
            codes::AXIS,
            "`vector_select` gathers along dim 0",
            b.span_of("dim"),
            "not 0",
        ));
    }
    if t.buffer.is_on_chip() {
        return Err(check::tensor_error(
            ctx,
            codes::BUFFER,
            "`vector_select` gathers rows of HBM tensors, found",
            &t,
            b.span,
            "not HBM",
        ));
    }
    not_indirect(ctx, &t, b.span)?;
    let idx = b.tensor(ctx, "vector_offset")?;
    let si = b.span_of("vector_offset");
    check::row_index(ctx, &idx, si, "`vector_offset`")?;
    let mut v = t.view.clone();
    v.dims[0] = ViewDim::new(v.dims[0].stride, check::partitions(&idx));
    v.indirect = Some(Indirection::Rows {
        index: Box::new(idx.view.clone()),
    });
    Ok(with_view(&t, v))
}

fn indirect(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let t = this(ctx, b)?;
    check::on_chip(ctx, &t, b.span, "the indirect tensor")?;
    not_indirect(ctx, &t, b.span)?;
    if !is_contiguous(&t.view.dims[1..]) {
        return Err(view_error(
            ctx,
            format!(
                "the free dims of this {} view are not contiguous",
                shape_text(&t.shape)
            ),
            b.span,
            "not contiguous",
        ));
    }
    let idx = b.tensor(ctx, "index")?;
    let si = b.span_of("index");
    if idx.buffer != Buffer::Sbuf
        || !idx.dtype().is_int()
        || check::partitions(&idx) != check::partitions(&t)
    {
        return Err(ctx.error(
            codes::ARG_TYPE,
            format!(
                "`index` must be an SBUF int tensor with {} partitions, found {}",
                check::partitions(&t),
                check::describe(&idx)
            ),
            si,
            "bad index tensor",
        ));
    }
    let size: u64 = idx.shape.iter().product();
    let n = match b.int(ctx, "num_elem")? {
        None => size,
        Some(n) if n >= 1 && (n as u64) <= size => n as u64,
        Some(n) => {
            return Err(ctx.error(
                codes::VALUE,
                format!("`num_elem` is 1 to {size} (the size of `index`), found {n}"),
                b.span_of("num_elem"),
                "out of range",
            ));
        }
    };
    let mut v = t.view.clone();
    v.dims = vec![v.dims[0], ViewDim::new(1, n)];
    v.indirect = Some(Indirection::Columns {
        index: Box::new(idx.view.clone()),
    });
    Ok(with_view(&t, v))
}
