//! `nki.collectives`: `ReplicaGroup`, `all_gather`, `all_reduce`,
//! `reduce_scatter`, `all_to_all`, the ring permute
//! `collective_permute_implicit` with its
//! `collective_permute_implicit_current_processing_rank_id`, and `rank_id`
//! (docs/language.md, "Collectives").
//!
//! nkic simulates one launch. A replica group of two ranks in an LNC=2
//! launch (a grid of 2) is the launch's two cores, rank `r` being
//! instance `r`: a collective over SBUF tensors exchanges the cores' data
//! (a `sendrecv` of the other core's source) and computes the real
//! result. Any other group's other ranks (and the other rank of a
//! collective over HBM tensors) are not simulated; they are taken to run
//! this kernel on the same inputs (replicas), so `all_gather`
//! concatenates `n` copies of the source, `all_reduce` with `nl.add`
//! gives `n` times it (`nl.maximum`/`nl.minimum` give it unchanged),
//! `reduce_scatter` this rank's chunk of that, `all_to_all` `n` copies of
//! this rank's chunk, and the ring permute receives what it sends. The
//! launch is rank 0 of such a group (`rank_id` is 0) and its cores are
//! one rank, as NKI's logical cores are. The data moves by DMA.
//!
//! A collective into a shared HBM tensor whose other ranks are replicas
//! (and any reduction into one) in a launch whose two instances run on
//! two cores is written once, by core 0, and then both cores pass a
//! `core_barrier` on it: a collective has completed on every rank when
//! either goes on, and two cores running the copy-then-accumulate steps
//! (or storing copies of different sources) on the same bytes would race.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind};
use nkic_isa::{AluOp, Engine};

use crate::api::table::{ApiDef, Bound, Kind, OP, Param, opt, req};
use crate::api::{check, codes, emit};
use crate::ctx::Ctx;
use crate::value::{RegValue, Tensor, Value};

const DMA: &[Engine] = &[Engine::Dma];

/// The parameters the collectives share.
const DSTS: Param = req("dsts", Kind::Any);
const SRCS: Param = req("srcs", Kind::Any);
const REPLICA_GROUP: Param = req("replica_group", Kind::Any);
const COLLECTIVE_DIM: Param = opt("collective_dim", Kind::Int, "0");
/// `name=` of a collective, which takes any value.
const NAME_ANY: Param = opt("name", Kind::Any, "None");

/// How a collective's group is simulated, the end of its summary.
macro_rules! replicas {
    () => {
        "In an LNC=2 launch a group of two ranks is the two cores (real exchange); other ranks are simulated as replicas of this launch."
    };
    (sbuf) => {
        "In an LNC=2 launch a group of two ranks over SBUF tensors is the two cores (real exchange); other ranks are simulated as replicas of this launch, which is rank 0."
    };
}

/// The constraint sentences the collectives share.
const EQUAL_LISTS: &str = "`dsts` and `srcs` are lists of tensors of equal length.";
const EQUAL_LISTS_SAME_SHAPE: &str = "`dsts` and `srcs` are lists of tensors of equal length; `dsts[i]` has the dtype and shape of `srcs[i]`.";
const REDUCE_OPS: &str = "`op` is `nl.add`, `nl.maximum` or `nl.minimum`.";
const SBUF_EXCHANGE: &str = "The LNC=2 exchange moves SBUF tensors.";

pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "collectives.ReplicaGroup",
        &[req("replica_groups", Kind::Any)],
        &[],
        "The groups of ranks a collective runs over, a list of lists of ranks; evaluates to that list as a tuple of tuples.",
        &["Every group is a non-empty list of distinct ranks (ints)."],
        replica_group,
    ),
    ApiDef::new(
        "collectives.all_gather",
        &[DSTS, SRCS, REPLICA_GROUP, COLLECTIVE_DIM],
        DMA,
        concat!(
            "Every rank of the group receives the concatenation of the ranks' `srcs[i]` along `collective_dim` in `dsts[i]`, rank order. ",
            replicas!()
        ),
        &[
            EQUAL_LISTS,
            "`dsts[i]` has the dtype of `srcs[i]` and its shape with `collective_dim` multiplied by the group size.",
            SBUF_EXCHANGE,
        ],
        all_gather,
    ),
    ApiDef::new(
        "collectives.all_reduce",
        &[DSTS, SRCS, OP, REPLICA_GROUP],
        DMA,
        concat!(
            "Every rank of the group receives `op` over the ranks' `srcs[i]` in `dsts[i]`. ",
            replicas!()
        ),
        &[EQUAL_LISTS_SAME_SHAPE, REDUCE_OPS, SBUF_EXCHANGE],
        all_reduce,
    ),
    ApiDef::new(
        "collectives.reduce_scatter",
        &[DSTS, SRCS, OP, REPLICA_GROUP, COLLECTIVE_DIM, NAME_ANY],
        DMA,
        concat!(
            "Every rank `r` of the group receives chunk `r` (of the group size, along `collective_dim`) of `op` over the ranks' `srcs[i]` in `dsts[i]`. ",
            replicas!(sbuf)
        ),
        &[
            EQUAL_LISTS,
            "`dsts[i]` has the dtype of `srcs[i]` and its shape with `collective_dim` divided by the group size.",
            REDUCE_OPS,
        ],
        reduce_scatter,
    ),
    ApiDef::new(
        "collectives.all_to_all",
        &[DSTS, SRCS, REPLICA_GROUP, COLLECTIVE_DIM, NAME_ANY],
        DMA,
        concat!(
            "Chunk `j` (of the group size, along `collective_dim`) of every rank's `srcs[i]` goes to rank `j`, which places it at chunk `r` of `dsts[i]` for the sending rank `r`. ",
            replicas!(sbuf)
        ),
        &[
            EQUAL_LISTS_SAME_SHAPE,
            "`collective_dim` of the sources divides by the group size.",
        ],
        all_to_all,
    ),
    ApiDef::new(
        "collectives.collective_permute_implicit",
        &[
            req("srcs_by_channel", Kind::Any),
            req("dsts_by_channel", Kind::Any),
            REPLICA_GROUP,
            opt("channel_ids", Kind::Any, "[0]"),
            NAME_ANY,
        ],
        DMA,
        "A ring shift: every rank sends each channel's `srcs` to its successor in the group and receives its predecessor's in the channel's `dsts`. In an LNC=2 launch a group of two ranks over SBUF tensors is the two cores (real exchange); other ranks are simulated as replicas of this launch, so a rank receives what it sends.",
        &[
            "`srcs_by_channel` and `dsts_by_channel` are lists (one per channel in `channel_ids`) of equally long lists of tensors.",
            "Each destination has the dtype and shape of its source.",
        ],
        permute_implicit,
    ),
    ApiDef::new(
        "collectives.collective_permute_implicit_current_processing_rank_id",
        &[
            req("iteration_id", Kind::Int),
            REPLICA_GROUP,
            opt("channel_id", Kind::Int, "0"),
            NAME_ANY,
        ],
        &[],
        "A register holding the rank whose data this rank holds after `iteration_id` ring shifts of `collective_permute_implicit`: `(rank - iteration_id) mod n` for a group of `n` ranks.",
        &["`iteration_id` is a non-negative int."],
        processing_rank,
    ),
    ApiDef::new(
        "collectives.rank_id",
        &[NAME_ANY],
        &[],
        "A register holding this rank's id: 0, since nkic simulates rank 0 of every group (the cores of an LNC=2 launch are one rank).",
        &[],
        rank_id,
    ),
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
    let v = b.value(field);
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

/// The tensors of `v`, a list (or a single tensor) given in argument
/// `field`; `what` is what the argument must hold, for the error.
fn tensors(
    ctx: &Ctx<'_>,
    b: &Bound,
    v: &Value,
    field: &str,
    what: &str,
) -> Result<Vec<Rc<Tensor>>, Diagnostic> {
    let list = items(v).unwrap_or_else(|| vec![v.clone()]);
    list.into_iter()
        .map(|t| match t {
            Value::Tensor(t) => Ok(t),
            other => Err(ctx.error(
                codes::ARG_TYPE,
                format!("`{field}` must {what}, found a {}", other.type_name()),
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
    let rank = if n == 2 { ctx.two_core_rank() } else { None };
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
    emit::push(
        ctx,
        b,
        crate::api::isa::dma::plain_dma(dst, src, accumulate),
        None,
        span,
    )?;
    Ok(())
}

/// A scratch SBUF tile receiving the other core's `src` (an SBUF tensor:
/// see [`exchange_rank`]).
fn from_other_core(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    src: &Tensor,
    span: Span,
) -> Result<Tensor, Diagnostic> {
    let tmp =
        crate::api::tensor::alloc(ctx, &src.shape, src.dtype(), Buffer::Sbuf, "", span, span)?;
    send_recv(ctx, b, &tmp.view, &src.view, span)?;
    Ok(tmp)
}

/// `dst` receives the other core's `src`.
fn send_recv(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    dst: &nkic_ir::View,
    src: &nkic_ir::View,
    span: Span,
) -> Result<(), Diagnostic> {
    let kind = OpKind::SendRecv {
        dst: dst.clone(),
        src: src.clone(),
        pipe: 0,
    };
    emit::push(ctx, b, kind, Some(Engine::Sync), span)?;
    Ok(())
}

/// This core's rank when the collective really exchanges data between
/// the two cores of an LNC=2 launch: a group of two ranks (`rank` from
/// [`group_of`]) over SBUF tensors. `None`: the other ranks are replicas.
fn exchange_rank(rank: Option<u32>, tensors: &[&Tensor]) -> Option<u32> {
    rank.filter(|_| tensors.iter().all(|t| t.buffer == Buffer::Sbuf))
}

/// `dim` as an axis of `t`, and the length of one of `n` chunks along
/// it.
fn chunked(
    ctx: &Ctx<'_>,
    b: &Bound,
    api: &str,
    t: &Tensor,
    dim: i64,
    n: u64,
) -> Result<(usize, u64), Diagnostic> {
    usize::try_from(dim)
        .ok()
        .filter(|&d| d < t.shape.len() && t.shape[d].is_multiple_of(n) && t.view.dims.len() == t.shape.len())
        .map(|d| (d, t.shape[d] / n))
        .ok_or_else(|| {
            ctx.error(
                codes::SHAPE,
                format!(
                    "`{api}` splits dim {dim} of `srcs` into the group size {n} chunks, found shape {:?}",
                    t.shape
                ),
                b.span_of("collective_dim"),
                "not divisible",
            )
        })
}

/// Chunk `r` (of length `w`) of `t` along `d`. The callers have checked
/// that `t`'s view has a dim per shape dim and that dim `d` holds at
/// least `r + 1` chunks of `w > 0` (see [`chunked`]), so the slice is
/// inside the view.
fn chunk(t: &Tensor, d: usize, w: u64, r: u64) -> nkic_ir::View {
    t.view
        .slice(d, r * w, (r + 1) * w, 1)
        .expect("a chunk of a dim checked to hold the group's chunks is inside the view")
}

/// `dsts` and `srcs`, counts of destinations and sources, are equal; else
/// a value error at `span` whose text `message` makes from the two counts.
fn same_len(
    ctx: &Ctx<'_>,
    dsts: usize,
    srcs: usize,
    span: Span,
    message: impl FnOnce(usize, usize) -> String,
) -> Result<(), Diagnostic> {
    if dsts == srcs {
        return Ok(());
    }
    Err(ctx.error(codes::VALUE, message(dsts, srcs), span, "unequal lists"))
}

/// A destination and its source.
type Pair = (Rc<Tensor>, Rc<Tensor>);

fn pairs(ctx: &Ctx<'_>, b: &Bound, api: &str) -> Result<Vec<Pair>, Diagnostic> {
    let list = |field| tensors(ctx, b, &b.value(field), field, "be a list of tensors");
    let (dsts, srcs) = (list("dsts")?, list("srcs")?);
    same_len(ctx, dsts.len(), srcs.len(), b.span, |d, s| {
        format!("`{api}` takes as many `dsts` as `srcs`, found {d} and {s}")
    })?;
    for (d, s) in dsts.iter().zip(&srcs) {
        check::same_dtype(ctx, s, d, b.span_of("dsts"), "dtype differs", |s, d| {
            format!("`dsts` of `{api}` must have the dtypes of `srcs`: {d} and {s}")
        })?;
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
        match exchange_rank(rank, &[&src]) {
            Some(me) => {
                let other = from_other_core(ctx, b, &src, span)?;
                for (r, from) in [
                    (u64::from(me), &src.view),
                    (u64::from(1 - me.min(1)), &other.view),
                ] {
                    dma(ctx, b, &chunk(&dst, d, w, r), from, false, span)?;
                }
            }
            None => once_per_launch(ctx, b, &dst, &dst.view, span, |ctx| {
                for r in 0..n {
                    dma(ctx, b, &chunk(&dst, d, w, r), &src.view, false, span)?;
                }
                Ok(())
            })?,
        }
    }
    Ok(Value::None)
}

/// The `op` of a reducing collective: add, maximum or minimum.
fn reduce_op(ctx: &Ctx<'_>, b: &Bound, api: &str) -> Result<AluOp, Diagnostic> {
    let op = b.alu_op(ctx, "op")?.unwrap_or(AluOp::Add);
    if !matches!(op, AluOp::Add | AluOp::Maximum | AluOp::Minimum) {
        return Err(ctx.error(
            codes::VALUE,
            format!(
                "`op` of `{api}` must be nl.add, nl.maximum or nl.minimum, found {}",
                op.name()
            ),
            b.span_of("op"),
            "not a reduction nkic implements",
        ));
    }
    Ok(op)
}

/// `dst_view` (of `dst`) ← `op` over the ranks of this rank's `mine`:
/// with the other core's `other` (an exchange), or over `n` replicas.
/// A shared HBM `dst` of a two-core launch is written by core 0 only,
/// then both cores pass a core barrier on it ([`once_per_launch`]).
#[allow(clippy::too_many_arguments)]
fn reduce_into(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    dst: &Tensor,
    dst_view: &nkic_ir::View,
    mine: &nkic_ir::View,
    other: Option<&nkic_ir::View>,
    (n, op): (u64, AluOp),
    span: Span,
) -> Result<(), Diagnostic> {
    once_per_launch(ctx, b, dst, dst_view, span, |ctx| {
        match other {
            Some(other) if op != AluOp::Add => {
                check::buffer_in(
                    ctx,
                    dst,
                    &[Buffer::Sbuf],
                    b.span_of("dsts"),
                    "`dsts` of an LNC=2 maximum or minimum",
                )?;
                let kind = OpKind::TensorTensor {
                    dst: dst_view.clone(),
                    src0: mine.clone(),
                    src1: other.clone(),
                    op,
                };
                emit::push(ctx, b, kind, None, span)?;
            }
            Some(other) => {
                dma(ctx, b, dst_view, mine, false, span)?;
                dma(ctx, b, dst_view, other, true, span)?;
            }
            None => {
                dma(ctx, b, dst_view, mine, false, span)?;
                if op == AluOp::Add {
                    for _ in 1..n {
                        dma(ctx, b, dst_view, mine, true, span)?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// Emits `write` (the steps that write `dst`, exchanges excluded) once
/// per launch when `dst` (`view` of it) is a shared HBM tensor and the
/// launch's two instances run on two cores: on core 0, after which both
/// cores pass a core barrier on `dst` (module doc). Otherwise emits it.
fn once_per_launch(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    dst: &Tensor,
    view: &nkic_ir::View,
    span: Span,
    write: impl FnOnce(&mut Ctx<'_>) -> Result<(), Diagnostic>,
) -> Result<(), Diagnostic> {
    let core = if dst.buffer == Buffer::SharedHbm {
        ctx.two_core_rank()
    } else {
        None
    };
    if core != Some(1) {
        write(ctx)?;
    }
    if core.is_some() {
        let kind = OpKind::CoreBarrier {
            data: Some(view.clone()),
        };
        emit::push(ctx, b, kind, Some(Engine::GpSimd), span)?;
    }
    Ok(())
}

/// `all_reduce(dsts, srcs, op, replica_group)`.
fn all_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    const API: &str = "nki.collectives.all_reduce";
    let (n, rank) = group_of(ctx, b)?;
    let op = reduce_op(ctx, b, API)?;
    for (dst, src) in pairs(ctx, b, API)? {
        same_shape(ctx, b, API, &dst, &src)?;
        let other = exchange_rank(rank, &[&src])
            .map(|_| from_other_core(ctx, b, &src, span))
            .transpose()?;
        let other = other.as_ref().map(|t| &t.view);
        reduce_into(ctx, b, &dst, &dst.view, &src.view, other, (n, op), span)?;
    }
    Ok(Value::None)
}

/// A shape error unless `dst` has the shape of `src`.
fn same_shape(
    ctx: &Ctx<'_>,
    b: &Bound,
    api: &str,
    dst: &Tensor,
    src: &Tensor,
) -> Result<(), Diagnostic> {
    if dst.shape == src.shape {
        return Ok(());
    }
    Err(ctx.error(
        codes::SHAPE,
        format!(
            "`dsts` of `{api}` must have the shapes of `srcs`: {:?} and {:?}",
            dst.shape, src.shape
        ),
        b.span_of("dsts"),
        "shape mismatch",
    ))
}

/// `reduce_scatter(dsts, srcs, op, replica_group, collective_dim)`.
fn reduce_scatter(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    const API: &str = "nki.collectives.reduce_scatter";
    let (n, rank) = group_of(ctx, b)?;
    let op = reduce_op(ctx, b, API)?;
    let dim = b.int(ctx, "collective_dim")?.unwrap_or(0);
    for (dst, src) in pairs(ctx, b, API)? {
        let (d, w) = chunked(ctx, b, API, &src, dim, n)?;
        let mut want = src.shape.clone();
        want[d] = w;
        if dst.shape != want {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "`dsts` of `{API}` must have the shape of `srcs` with dim {dim} divided by the group size {n}: {want:?}, found {:?}",
                    dst.shape
                ),
                b.span_of("dsts"),
                "shape mismatch",
            ));
        }
        let me = exchange_rank(rank, &[&src]);
        let other = me
            .map(|_| from_other_core(ctx, b, &src, span))
            .transpose()?;
        let r = u64::from(me.unwrap_or(0));
        let mine = chunk(&src, d, w, r);
        let theirs = other.as_ref().map(|t| chunk(t, d, w, r));
        reduce_into(
            ctx,
            b,
            &dst,
            &dst.view,
            &mine,
            theirs.as_ref(),
            (n, op),
            span,
        )?;
    }
    Ok(Value::None)
}

/// `all_to_all(dsts, srcs, replica_group, collective_dim)`.
fn all_to_all(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    const API: &str = "nki.collectives.all_to_all";
    let (n, rank) = group_of(ctx, b)?;
    let dim = b.int(ctx, "collective_dim")?.unwrap_or(0);
    for (dst, src) in pairs(ctx, b, API)? {
        same_shape(ctx, b, API, &dst, &src)?;
        let (d, w) = chunked(ctx, b, API, &src, dim, n)?;
        // `dst` has `src`'s shape; this also holds its view to it, as
        // [`chunk`] needs.
        chunked(ctx, b, API, &dst, dim, n)?;
        match exchange_rank(rank, &[&src]) {
            Some(me) => {
                // Chunk `me` of each core's source lands at the sender's
                // chunk of this core's destination.
                let other = from_other_core(ctx, b, &src, span)?;
                let (me, them) = (u64::from(me), u64::from(1 - me.min(1)));
                for (at, from) in [(me, &*src), (them, &other)] {
                    let (to, from) = (chunk(&dst, d, w, at), chunk(from, d, w, me));
                    dma(ctx, b, &to, &from, false, span)?;
                }
            }
            None => once_per_launch(ctx, b, &dst, &dst.view, span, |ctx| {
                let mine = chunk(&src, d, w, 0);
                for r in 0..n {
                    dma(ctx, b, &chunk(&dst, d, w, r), &mine, false, span)?;
                }
                Ok(())
            })?,
        }
    }
    Ok(Value::None)
}

/// The lists of a list-of-lists argument.
fn channels(ctx: &Ctx<'_>, b: &Bound, field: &str) -> Result<Vec<Value>, Diagnostic> {
    let v = b.value(field);
    items(&v).ok_or_else(|| {
        ctx.error(
            codes::ARG_TYPE,
            format!(
                "`{field}` must be a list of lists of tensors (one per channel), found a {}",
                v.type_name()
            ),
            b.span_of(field),
            "not a list per channel",
        )
    })
}

/// `collective_permute_implicit(srcs_by_channel, dsts_by_channel,
/// replica_group, channel_ids)`.
fn permute_implicit(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    const API: &str = "nki.collectives.collective_permute_implicit";
    let (_, rank) = group_of(ctx, b)?;
    let srcs = channels(ctx, b, "srcs_by_channel")?;
    let dsts = channels(ctx, b, "dsts_by_channel")?;
    same_len(ctx, dsts.len(), srcs.len(), b.span, |d, s| {
        format!(
            "`{API}` takes as many channels in `dsts_by_channel` as in `srcs_by_channel`, found {d} and {s}"
        )
    })?;
    for (s, d) in srcs.iter().zip(&dsts) {
        let list = |v, field| tensors(ctx, b, v, field, "hold lists of tensors");
        let (s, d) = (list(s, "srcs_by_channel")?, list(d, "dsts_by_channel")?);
        same_len(
            ctx,
            d.len(),
            s.len(),
            b.span_of("dsts_by_channel"),
            |d, s| {
                format!(
                    "every channel of `{API}` has as many destinations as sources, found {d} and {s}"
                )
            },
        )?;
        for (src, dst) in s.iter().zip(&d) {
            if dst.dtype() != src.dtype() || dst.shape != src.shape {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!(
                        "each destination of `{API}` has the dtype and shape of its source: {} {:?} and {} {:?}",
                        dst.dtype(),
                        dst.shape,
                        src.dtype(),
                        src.shape
                    ),
                    b.span_of("dsts_by_channel"),
                    "differs from its source",
                ));
            }
            match exchange_rank(rank, &[src, dst]) {
                // The predecessor in a ring of the two cores is the other
                // core.
                Some(_) => send_recv(ctx, b, &dst.view, &src.view, span)?,
                None => dma(ctx, b, &dst.view, &src.view, false, span)?,
            }
        }
    }
    Ok(Value::None)
}

/// A register holding `value`.
fn register_of(ctx: &mut Ctx<'_>, value: i64, span: Span) -> Result<Value, Diagnostic> {
    ctx.check_budget(span)?;
    let name = ctx.fresh_name("rank");
    let loc = ctx.loc(span);
    let init = i32::try_from(value).unwrap_or(i32::MAX);
    let reg = ctx.builder().alloc_register(&name, Some(init), loc);
    Ok(Value::Register(RegValue::plain(reg)))
}

/// `collective_permute_implicit_current_processing_rank_id(iteration_id,
/// replica_group, channel_id)`: `(rank - iteration_id) mod n`.
fn processing_rank(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (n, rank) = group_of(ctx, b)?;
    let i = b.int(ctx, "iteration_id")?.unwrap_or(0);
    if i < 0 {
        return Err(ctx.error(
            codes::VALUE,
            format!("`iteration_id` must be a non-negative int, found {i}"),
            b.span_of("iteration_id"),
            "negative",
        ));
    }
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    let value = (i64::from(rank.unwrap_or(0)) - i).rem_euclid(n);
    register_of(ctx, value, span)
}

/// `rank_id()`: 0 (module doc).
fn rank_id(ctx: &mut Ctx<'_>, _b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    register_of(ctx, 0, span)
}
