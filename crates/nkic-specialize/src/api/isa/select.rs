//! The selects (isa.md §6.4, §6.6): `select_reduce`, `range_select` and
//! GpSimd's `affine_select`, with the legacy predicate form
//! `affine_select(iy < ix, …)`.
//!
//! Choice where the spec is silent: `select_reduce` with `reduce_res` but
//! no `reduce_cmd` uses `reset_reduce`, as `activation` does.

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::{AluOp, DType, Dim, Fp32, ReduceCmd};

use crate::api::check::{self, shape_text};
use crate::api::lower::{operand_or, scalar_operand};
use crate::api::rules::{
    NotBothPsum, OpIn, REDUCE_RESULT, Tiles, not_both_psum, reduces_with_only, tiles,
};
use crate::api::table::{
    ApiDef, Bound, Kind, OFFSET, PATTERN, PREDICATE, Param, REDUCE_IDLE, REDUCE_RES, REDUCE_RESET,
    REVERSE_PRED, instruction, instruction_pattern, opt, req,
};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const SELECT_TILES: Tiles = tiles!("on_true", "predicate", "dst");

const SELECT_PSUM: NotBothPsum = not_both_psum!("on_true", "predicate");

const RANGE_TILES: Tiles = tiles!("on_true_tile", "dst");

/// `reduce_op` of `select_reduce` and `range_select`: `nl.maximum`.
const SELECT_REDUCE_OP: OpIn = reduces_with_only!("select_reduce", Maximum, "nl.maximum");
const RANGE_SELECT_OP: OpIn = reduces_with_only!("range_select", Maximum, "nl.maximum");
/// The comparisons of `range_select`.
macro_rules! comparison {
    ($name:literal) => {
        OpIn {
            name: $name,
            allowed: &[
                AluOp::Equal,
                AluOp::Less,
                AluOp::LessEqual,
                AluOp::Greater,
                AluOp::GreaterEqual,
            ],
            message: concat!(
                "`",
                $name,
                "` must be `nl.equal`, `nl.less`, `nl.less_equal`, `nl.greater` or `nl.greater_equal`"
            ),
            label: "not a comparison",
        }
    };
}
const COMP_OPS: [OpIn; 2] = [comparison!("comp_op0"), comparison!("comp_op1")];

/// `on_true_tile` of `range_select` and `affine_select`: the tile whose
/// selected elements are kept.
pub(in crate::api) const ON_TRUE_TILE: Param = req("on_true_tile", Kind::Tensor);
/// `on_false_value` of `affine_select`: what the other elements become.
pub(in crate::api) const ON_FALSE_VALUE: Param = req("on_false_value", Kind::Float);
/// `reduce_op=` of the selects, which reduce with `nl.maximum` only.
const MAX_REDUCE_OP: Param = opt("reduce_op", Kind::AluOp, "nl.maximum");

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    instruction!(
        "nisa.range_select",
        [
            ON_TRUE_TILE,
            req("comp_op0", Kind::AluOp),
            req("comp_op1", Kind::AluOp),
            req("bound0", Kind::Tensor),
            req("bound1", Kind::Tensor),
            REDUCE_RESET,
            REDUCE_RES,
            MAX_REDUCE_OP,
            opt("range_start", Kind::Int, "0"),
            opt("on_false_value", Kind::Float, "-3.4028235e38"),
        ],
        "Keeps `on_true_tile[p, i]` where `comp_op0(range_start + i, bound0[p])` and `comp_op1(range_start + i, bound1[p])`, else `on_false_value`; the row maximum goes to the Vector accumulators.",
        &[
            RANGE_TILES.text,
            "`on_true_tile` has a float dtype.",
            "`comp_op0`/`comp_op1` are `nl.equal`, `nl.less`, `nl.less_equal`, `nl.greater` or `nl.greater_equal`; `bound0`/`bound1` are `(P, 1)` tensors.",
            "`on_false_value` is FP32_MIN (−3.4028235e38); `reduce_op` is `nl.maximum`.",
            REDUCE_RESULT.text,
        ],
        range_select,
    )
    .with_value_form(),
    instruction!(
        "nisa.select_reduce",
        [
            PREDICATE,
            req("on_true", Kind::Tensor),
            req("on_false", Kind::Scalar),
            REDUCE_RES,
            REDUCE_IDLE,
            MAX_REDUCE_OP,
            REVERSE_PRED,
        ],
        "`dst = predicate ? on_true : on_false`, optionally taking the per-row maximum into the Vector accumulators.",
        &[
            SELECT_TILES.text,
            SELECT_PSUM.text,
            "`predicate` is int8, uint8, int16, uint16 or bool_; `on_true` is not tfloat32, int32 or uint32.",
            "`on_false` is a number or a `(P, 1)` tensor; `reduce_op` is `nl.maximum`.",
            REDUCE_RESULT.text,
        ],
        select_reduce,
    )
    .with_value_form(),
    instruction!(
        "nisa.affine_select",
        [
            PATTERN,
            req("channel_multiplier", Kind::Int),
            ON_TRUE_TILE,
            ON_FALSE_VALUE,
            opt("cmp_op", Kind::AluOp, "nl.equal"),
            OFFSET,
        ],
        "`dst = cmp_op(offset + p·channel_multiplier + Σ i_k·step_k, 0) ? on_true_tile : on_false_value` on GpSimd (e.g. causal masks).",
        &[
            "`on_true_tile` and `dst` are SBUF with equal partition counts (≤ 128); `dst`'s free size is the product of the pattern's counts, as is `on_true_tile`'s.",
            "`pattern` has 1 to 4 `[step, num]` pairs; `cmp_op` is a comparison operator; `on_false_value` is a number.",
        ],
        affine_select,
    )
    .with_value_form(),
];

fn select_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [on_true, pred, dst] = SELECT_TILES.bind(ctx, b, span)?;
    let st = b.span_of("on_true");
    if matches!(on_true.dtype(), DType::TF32 | DType::I32 | DType::U32) {
        return Err(check::tensor_error(
            ctx,
            codes::DTYPE,
            "`on_true` cannot be tfloat32, int32 or uint32, found",
            &on_true,
            st,
            "dtype not allowed",
        ));
    }
    let sp = b.span_of("predicate");
    SELECT_PSUM.check(ctx, b, &on_true, &pred)?;
    check::dtype_in(
        ctx,
        &pred,
        &[DType::I8, DType::U8, DType::I16, DType::U16, DType::Bool],
        "`predicate`",
        sp,
    )?;
    let on_false = operand_or(ctx, b, "on_false", &on_true, 0.0)?;
    SELECT_REDUCE_OP.opt(ctx, b)?;
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&on_true))?;
    let cmd = b.reduce_cmd_without_load(ctx, res.is_some())?;
    let kind = OpKind::SelectReduce {
        dst: dst.view.clone(),
        predicate: pred.view.clone(),
        on_true: on_true.view.clone(),
        on_false,
        reverse_pred: b.bool_or(ctx, "reverse_pred", false)?,
        reduce_cmd: cmd,
        reduce_res: res.map(|t| t.view.clone()),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn range_select(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [src, dst] = RANGE_TILES.bind(ctx, b, span)?;
    check::float_dtype(ctx, &src, b.span_of("on_true_tile"), "`on_true_tile`")?;
    let mut cmps = [AluOp::Equal; 2];
    for (cmp, rule) in cmps.iter_mut().zip(&COMP_OPS) {
        *cmp = rule.or(ctx, b, AluOp::Equal)?;
    }
    let mut bounds = Vec::with_capacity(2);
    for name in ["bound0", "bound1"] {
        let a = b.get(name).map(|a| (a.value.clone(), a.span));
        let (v, sp) = a.unwrap_or((Value::None, b.span));
        if !matches!(v, Value::Tensor(_)) {
            return Err(ctx.error(
                codes::SCALAR_OPERAND,
                format!("`{name}` must be a ({}, 1) tensor", check::partitions(&src)),
                sp,
                "not a (P, 1) tensor",
            ));
        }
        bounds.push(scalar_operand(ctx, &v, &src, sp, &format!("`{name}`"))?);
    }
    let on_false = b.float(ctx, "on_false_value")?.unwrap_or(-3.402_823_5e38) as f32;
    if on_false != f32::MIN {
        return Err(ctx.error(
            codes::VALUE,
            format!("`on_false_value` must be FP32_MIN (-3.4028235e38), found {on_false}"),
            b.span_of("on_false_value"),
            "not FP32_MIN",
        ));
    }
    RANGE_SELECT_OP.opt(ctx, b)?;
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&src))?;
    let cmd = b.reduce_cmd(ctx)?.unwrap_or(ReduceCmd::ResetReduce);
    if cmd == ReduceCmd::LoadReduce {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "`range_select` has no `load_reduce` (it has no initial value)",
            b.span_of("reduce_cmd"),
            "not available",
        ));
    }
    let range_start = small_int(ctx, b, "range_start")?;
    let bound1 = bounds.pop().unwrap_or(Scalar::imm(0.0));
    let bound0 = bounds.pop().unwrap_or(Scalar::imm(0.0));
    let kind = OpKind::RangeSelect {
        dst: dst.view.clone(),
        src: src.view.clone(),
        cmp0: cmps[0],
        bound0,
        cmp1: cmps[1],
        bound1,
        range_start,
        on_false: Fp32::new(on_false),
        reduce_cmd: cmd,
        reduce_res: res.map(|t| t.view.clone()),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

/// An access pattern `[[step, num], …]` (1 to 4 pairs).
fn pattern(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<Vec<Dim>, Diagnostic> {
    let v = b.value(name);
    let sp = b.span_of(name);
    let bad = |why: &str| {
        ctx.error(
            codes::VALUE,
            format!("bad `{name}` {}: {why}", crate::format::short_repr(&v)),
            sp,
            why.to_owned(),
        )
    };
    instruction_pattern(&v).map_err(|e| bad(e.why()))
}

/// The int argument `name` (0 when absent), which fits in 32 bits.
fn small_int(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<i32, Diagnostic> {
    let v = b.int(ctx, name)?.unwrap_or(0);
    i32::try_from(v).map_err(|_| {
        ctx.error(
            codes::VALUE,
            format!("`{name}` {v} does not fit in 32 bits"),
            b.span_of(name),
            "too large",
        )
    })
}

/// One `affine_select` condition: `cmp(offset + p·cm + Σ i·step, 0)`.
struct AffineCond {
    dims: Vec<Dim>,
    offset: i32,
    channel_multiplier: i32,
    cmp: AluOp,
}

/// The conditions of a legacy predicate over `tile`'s index grid (axis 0
/// the partitions): one per `&`-joined clause.
fn legacy_conditions(
    ctx: &Ctx<'_>,
    pred: &crate::value::IndexPred,
    tile: &Tensor,
    span: Span,
) -> Result<Vec<AffineCond>, Diagnostic> {
    use crate::value::PredOp;
    let rank = tile.shape.len();
    let mut out = Vec::new();
    for (e, op) in &pred.clauses {
        if usize::from(e.ndim) > rank {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "the predicate spans {} grid axes but `on_true_tile` has shape {}",
                    e.ndim,
                    shape_text(&tile.shape)
                ),
                span,
                "grid and tile differ",
            ));
        }
        let e = e.aligned(rank as u8);
        let mut coef = vec![0i64; rank];
        for t in &e.terms {
            let axis = usize::from(t.axis);
            if t.size > 1 && t.size != tile.shape[axis] {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!(
                        "the predicate's grid has size {} on axis {axis} but `on_true_tile` has shape {}",
                        t.size,
                        shape_text(&tile.shape)
                    ),
                    span,
                    "grid and tile differ",
                ));
            }
            coef[axis] += t.coef;
        }
        let fit = |v: i64, what: &str| {
            i32::try_from(v).map_err(|_| {
                ctx.error(
                    codes::VALUE,
                    format!("the predicate's {what} {v} does not fit in int32"),
                    span,
                    "too large",
                )
            })
        };
        let dims = tile.shape[1..]
            .iter()
            .zip(&coef[1..])
            .map(|(&n, &c)| -> Result<Dim, Diagnostic> {
                Ok(Dim {
                    stride: i64::from(fit(c, "step")?),
                    count: n as u32,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        out.push(AffineCond {
            dims,
            offset: fit(e.constant, "offset")?,
            channel_multiplier: fit(coef[0], "partition coefficient")?,
            cmp: match op {
                PredOp::Lt => AluOp::Less,
                PredOp::Le => AluOp::LessEqual,
                PredOp::Gt => AluOp::Greater,
                PredOp::Ge => AluOp::GreaterEqual,
                PredOp::Eq => AluOp::Equal,
                PredOp::Ne => AluOp::NotEqual,
            },
        });
    }
    Ok(out)
}

fn affine_select(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    if let Some(a) = b.get("pred") {
        let Value::IndexPred(pred) = &a.value else {
            return Err(ctx.error(
                codes::ARG_TYPE,
                format!(
                    "`pred` is a predicate over index grids such as `iy < ix`, found a {}",
                    a.value.type_name()
                ),
                a.span,
                "not a predicate",
            ));
        };
        let pred = pred.clone();
        let src = b.tensor(ctx, "on_true_tile")?;
        let ss = b.span_of("on_true_tile");
        let conds = legacy_conditions(ctx, &pred, &src, a.span)?;
        let dst = emit::dst_or_new(ctx, b, &src.shape, src.dtype(), Buffer::Sbuf, span)?;
        check::operand(ctx, &src, ss, "`on_true_tile`")?;
        check::buffer_in(ctx, &src, &[Buffer::Sbuf], ss, "`on_true_tile`")?;
        let on_false = Fp32::new(b.float(ctx, "on_false_value")?.unwrap_or(0.0) as f32);
        // A conjunction selects in turn, each step reading the last result.
        let mut from = src.view.clone();
        let mut last = Value::None;
        for c in conds {
            let kind = OpKind::AffineSelect {
                dst: dst.view.clone(),
                src: from,
                pattern: c.dims,
                offset: c.offset,
                channel_multiplier: c.channel_multiplier,
                cmp: c.cmp,
                on_false,
            };
            last = emit::finish(ctx, b, kind, None, Some(&dst), span)?;
            from = dst.view.clone();
        }
        return Ok(last);
    }
    let dims = pattern(ctx, b, "pattern")?;
    let src = b.tensor(ctx, "on_true_tile")?;
    let ss = b.span_of("on_true_tile");
    let n: u64 = dims.iter().map(|d| u64::from(d.count)).product();
    let dst = emit::dst_or_new(ctx, b, &src.shape, src.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    check::operand(ctx, &src, ss, "`on_true_tile`")?;
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::buffer_in(ctx, &src, &[Buffer::Sbuf], ss, "`on_true_tile`")?;
    check::buffer_in(ctx, &dst, &[Buffer::Sbuf], ds, "`dst`")?;
    check::same_pf(ctx, (&src, "on_true_tile"), (&dst, "dst", ds))?;
    if check::free_size(&dst) != n {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "the pattern covers {n} elements per partition, but `dst` has {} ({})",
                check::free_size(&dst),
                shape_text(&dst.shape)
            ),
            b.span_of("pattern"),
            "pattern size differs",
        ));
    }
    let cmp = b.alu_op(ctx, "cmp_op")?.unwrap_or(AluOp::Equal);
    if !matches!(
        cmp,
        AluOp::Equal
            | AluOp::NotEqual
            | AluOp::Less
            | AluOp::LessEqual
            | AluOp::Greater
            | AluOp::GreaterEqual
    ) {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!("`cmp_op` must be a comparison, found `nl.{}`", cmp.name()),
            b.span_of("cmp_op"),
            "not a comparison",
        ));
    }
    let on_false = b.float(ctx, "on_false_value")?.unwrap_or(0.0);
    let kind = OpKind::AffineSelect {
        dst: dst.view.clone(),
        src: src.view.clone(),
        pattern: dims,
        offset: small_int(ctx, b, "offset")?,
        channel_multiplier: small_int(ctx, b, "channel_multiplier")?,
        cmp,
        on_false: Fp32::new(on_false as f32),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}
