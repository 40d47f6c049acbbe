//! `nki.collectives`: `ReplicaGroup`, `all_gather` and `all_reduce`
//! (docs/language.md, "Collectives").
//!
//! nkic simulates one launch. A replica group of two ranks in an LNC=2
//! launch (a grid of 2) is the launch's two cores, rank `r` being
//! instance `r`: the collective exchanges the cores' data (a `sendrecv`
//! of the other core's source) and computes the real result. Any other
//! group's other ranks are not simulated; they are taken to run this
//! kernel on the same inputs (replicas), so `all_gather` concatenates
//! `n` copies of the source and `all_reduce` with `nl.add` gives `n`
//! times it (`nl.maximum`/`nl.minimum` give it unchanged). The data moves
//! by DMA.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind};
use nkic_isa::{AluOp, Engine, OobMode, Target};

use super::table::{ApiDef, Bound, Kind, opt, req};
use super::{check, codes, emit};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const DMA: &[Engine] = &[Engine::Dma];

pub const DEFS: &[ApiDef] = &[
    ApiDef {
        name: "collectives.ReplicaGroup",
        params: &[req("replica_groups", Kind::Any)],
        engines: &[],
        since: Target::Trn2,
        value_form: false,
        summary: "The groups of ranks a collective runs over, a list of lists of ranks; evaluates to that list as a tuple of tuples.",
        constraints: &["Every group is a non-empty list of distinct ranks (ints)."],
        run: replica_group,
    },
    ApiDef {
        name: "collectives.all_gather",
        params: &[
            req("dsts", Kind::Any),
            req("srcs", Kind::Any),
            req("replica_group", Kind::Any),
            opt("collective_dim", Kind::Int, "0"),
        ],
        engines: DMA,
        since: Target::Trn2,
        value_form: false,
        summary: "Every rank of the group receives the concatenation of the ranks' `srcs[i]` along `collective_dim` in `dsts[i]`, rank order. In an LNC=2 launch a group of two ranks is the two cores (real exchange); other ranks are simulated as replicas of this launch.",
        constraints: &[
            "`dsts` and `srcs` are lists of tensors of equal length.",
            "`dsts[i]` has the dtype of `srcs[i]` and its shape with `collective_dim` multiplied by the group size.",
            "The LNC=2 exchange moves SBUF tensors.",
        ],
        run: all_gather,
    },
    ApiDef {
        name: "collectives.all_reduce",
        params: &[
            req("dsts", Kind::Any),
            req("srcs", Kind::Any),
            req("op", Kind::AluOp),
            req("replica_group", Kind::Any),
        ],
        engines: DMA,
        since: Target::Trn2,
        value_form: false,
        summary: "Every rank of the group receives `op` over the ranks' `srcs[i]` in `dsts[i]`. In an LNC=2 launch a group of two ranks is the two cores (real exchange); other ranks are simulated as replicas of this launch.",
        constraints: &[
            "`dsts` and `srcs` are lists of tensors of equal length; `dsts[i]` has the dtype and shape of `srcs[i]`.",
            "`op` is `nl.add`, `nl.maximum` or `nl.minimum`.",
            "The LNC=2 exchange moves SBUF tensors.",
        ],
        run: all_reduce,
    },
];

/// The ints of a list or tuple value.
fn items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(l) => Some(l.borrow().clone()),
        Value::Tuple(t) => Some(t.to_vec()),
        _ => None,
    }
}

/// The groups of a replica group value (`ReplicaGroup([[0, 1]])` or the
/// plain list).
fn groups(ctx: &Ctx<'_>, b: &Bound, field: &str) -> Result<Vec<Vec<i64>>, Diagnostic> {
    let bad = |what: &str| {
        ctx.error(
            codes::ARG_TYPE,
            format!("`{field}` must be a list of lists of ranks, found {what}"),
            b.span_of(field),
            "not a replica group",
        )
    };
    let v = b.get(field).map(|a| a.value.clone()).unwrap_or(Value::None);
    let outer = items(&v).ok_or_else(|| bad(&v.type_name()))?;
    let mut out = Vec::new();
    for g in outer {
        let ranks = items(&g).ok_or_else(|| bad(&g.type_name()))?;
        let mut group = Vec::new();
        for r in ranks {
            match r {
                Value::Int(i) if !group.contains(&i) => group.push(i),
                Value::Int(_) => return Err(bad("a group naming a rank twice")),
                other => return Err(bad(&other.type_name())),
            }
        }
        if group.is_empty() {
            return Err(bad("an empty group"));
        }
        out.push(group);
    }
    if out.is_empty() {
        return Err(bad("no group"));
    }
    Ok(out)
}

/// `ReplicaGroup(replica_groups)`.
fn replica_group(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let gs = groups(ctx, b, "replica_groups")?;
    Ok(Value::Tuple(Rc::from(
        gs.into_iter()
            .map(|g| Value::Tuple(Rc::from(g.into_iter().map(Value::Int).collect::<Vec<_>>())))
            .collect::<Vec<_>>(),
    )))
}

/// The tensors of a list argument.
fn tensors(ctx: &Ctx<'_>, b: &Bound, field: &str) -> Result<Vec<Rc<Tensor>>, Diagnostic> {
    let v = b.get(field).map(|a| a.value.clone()).unwrap_or(Value::None);
    let list = items(&v).unwrap_or_else(|| vec![v.clone()]);
    list.into_iter()
        .map(|t| match t {
            Value::Tensor(t) => Ok(t),
            other => Err(ctx.error(
                codes::ARG_TYPE,
                format!(
                    "`{field}` must be a list of tensors, found a {}",
                    other.type_name()
                ),
                b.span_of(field),
                "not tensors",
            )),
        })
        .collect()
}

/// The group size and, for the LNC=2 group of this launch, this core's
/// rank in it.
fn group_of(ctx: &Ctx<'_>, b: &Bound) -> Result<(u64, Option<u32>), Diagnostic> {
    let gs = groups(ctx, b, "replica_group")?;
    let n = gs[0].len();
    if gs.iter().any(|g| g.len() != n) {
        return Err(ctx.error(
            codes::VALUE,
            "the groups of a replica group must have one size",
            b.span_of("replica_group"),
            "groups of different sizes",
        ));
    }
    let instances: u64 = (0..ctx.program_ndim())
        .map(|axis| u64::from(ctx.num_programs(axis).unwrap_or(1)))
        .product();
    let lnc2 = ctx.program_ndim() > 0 && instances == 2 && n == 2 && ctx.config.lnc != Some(1);
    let rank = lnc2.then(|| {
        (0..ctx.program_ndim())
            .map(|axis| ctx.program_id(axis).unwrap_or(0))
            .sum()
    });
    Ok((n as u64, rank))
}

fn dma(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    dst: &nkic_ir::View,
    src: &nkic_ir::View,
    accumulate: bool,
    span: Span,
) -> Result<(), Diagnostic> {
    let kind = OpKind::DmaCopy {
        dst: dst.clone(),
        src: src.clone(),
        accumulate,
        dge: None,
        oob: OobMode::Error,
        priority: None,
    };
    emit::push(ctx, b, kind, None, span)?;
    Ok(())
}

/// A scratch SBUF tile receiving the other core's `src`.
fn from_other_core(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    src: &Tensor,
    field: &str,
    span: Span,
) -> Result<Tensor, Diagnostic> {
    if src.buffer != Buffer::Sbuf {
        return Err(ctx.error(
            codes::BUFFER,
            format!(
                "nkic exchanges the data of a collective between the two cores of an LNC=2 launch in SBUF, found {}",
                check::describe(src)
            ),
            b.span_of(field),
            "not in SBUF",
        ));
    }
    let tmp = super::tensor::alloc(ctx, &src.shape, src.dtype(), Buffer::Sbuf, "", span, span)?;
    let kind = OpKind::SendRecv {
        dst: tmp.view.clone(),
        src: src.view.clone(),
        pipe: 0,
    };
    emit::push(ctx, b, kind, Some(Engine::Sync), span)?;
    Ok(tmp)
}

/// A destination and its source.
type Pair = (Rc<Tensor>, Rc<Tensor>);

fn pairs(ctx: &Ctx<'_>, b: &Bound, api: &str) -> Result<Vec<Pair>, Diagnostic> {
    let dsts = tensors(ctx, b, "dsts")?;
    let srcs = tensors(ctx, b, "srcs")?;
    if dsts.len() != srcs.len() {
        return Err(ctx.error(
            codes::VALUE,
            format!(
                "`{api}` takes as many `dsts` as `srcs`, found {} and {}",
                dsts.len(),
                srcs.len()
            ),
            b.span,
            "unequal lists",
        ));
    }
    for (d, s) in dsts.iter().zip(&srcs) {
        if d.dtype() != s.dtype() {
            return Err(ctx.error(
                codes::DTYPE,
                format!(
                    "`dsts` of `{api}` must have the dtypes of `srcs`: {} and {}",
                    d.dtype(),
                    s.dtype()
                ),
                b.span_of("dsts"),
                "dtype differs",
            ));
        }
    }
    Ok(dsts.into_iter().zip(srcs).collect())
}

/// `all_gather(dsts, srcs, replica_group, collective_dim)`.
fn all_gather(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    const API: &str = "nki.collectives.all_gather";
    let (n, rank) = group_of(ctx, b)?;
    let dim = b.int(ctx, "collective_dim")?.unwrap_or(0);
    for (dst, src) in pairs(ctx, b, API)? {
        let d = usize::try_from(dim).ok().filter(|&d| d < src.shape.len());
        let mut want = src.shape.clone();
        if let Some(d) = d {
            want[d] *= n;
        }
        let Some(d) = d.filter(|_| dst.shape == want && dst.view.dims.len() == dst.shape.len())
        else {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "`dsts` of `{API}` must have the shape of `srcs` with dim {dim} times the group size {n}: {:?}, found {:?}",
                    want, dst.shape
                ),
                b.span_of("dsts"),
                "shape mismatch",
            ));
        };
        let w = src.shape[d];
        let part = |r: u64| dst.view.slice(d, r * w, (r + 1) * w, 1);
        match rank {
            Some(me) => {
                let other = from_other_core(ctx, b, &src, "srcs", span)?;
                for (r, from) in [
                    (u64::from(me), &src.view),
                    (u64::from(1 - me.min(1)), &other.view),
                ] {
                    if let Some(v) = part(r) {
                        dma(ctx, b, &v, from, false, span)?;
                    }
                }
            }
            None => {
                for r in 0..n {
                    if let Some(v) = part(r) {
                        dma(ctx, b, &v, &src.view, false, span)?;
                    }
                }
            }
        }
    }
    Ok(Value::None)
}

/// `all_reduce(dsts, srcs, op, replica_group)`.
fn all_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    const API: &str = "nki.collectives.all_reduce";
    let (n, rank) = group_of(ctx, b)?;
    let op = b.alu_op(ctx, "op")?.unwrap_or(AluOp::Add);
    if !matches!(op, AluOp::Add | AluOp::Maximum | AluOp::Minimum) {
        return Err(ctx.error(
            codes::VALUE,
            format!(
                "`op` of `{API}` must be nl.add, nl.maximum or nl.minimum, found {}",
                op.name()
            ),
            b.span_of("op"),
            "not a reduction nkic implements",
        ));
    }
    for (dst, src) in pairs(ctx, b, API)? {
        if dst.shape != src.shape {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "`dsts` of `{API}` must have the shapes of `srcs`: {:?} and {:?}",
                    dst.shape, src.shape
                ),
                b.span_of("dsts"),
                "shape mismatch",
            ));
        }
        match rank {
            Some(_) => {
                let other = from_other_core(ctx, b, &src, "srcs", span)?;
                if op == AluOp::Add {
                    dma(ctx, b, &dst.view, &src.view, false, span)?;
                    dma(ctx, b, &dst.view, &other.view, true, span)?;
                } else {
                    check::buffer_in(
                        ctx,
                        &dst,
                        &[Buffer::Sbuf],
                        b.span_of("dsts"),
                        "`dsts` of an LNC=2 maximum or minimum",
                    )?;
                    let kind = OpKind::TensorTensor {
                        dst: dst.view.clone(),
                        src0: src.view.clone(),
                        src1: other.view.clone(),
                        op,
                    };
                    emit::push(ctx, b, kind, None, span)?;
                }
            }
            None => {
                dma(ctx, b, &dst.view, &src.view, false, span)?;
                if op == AluOp::Add {
                    for _ in 1..n {
                        dma(ctx, b, &dst.view, &src.view, true, span)?;
                    }
                }
            }
        }
    }
    Ok(Value::None)
}
