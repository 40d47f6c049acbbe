//! The lowering shared by Python operators on tiles, the `nl.*`
//! element-wise functions and `nisa.tensor_tensor`/`tensor_scalar`, so
//! that `a + b`, `nl.add(a, b)` and `nisa.tensor_tensor(op=nl.add)` give
//! the same IR ([`elementwise`], [`Operand`]); scalar operands, the legacy
//! dtype promotion and reduction axes.
//!
//! Choice where the spec is silent: value-form results of two inputs take
//! the legacy promoted dtype (language.md §7.1) unless `dtype=` is given.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar, View};
use nkic_isa::{AluOp, DType, Engine};

use super::check::{self, shape_text};
use super::codes;
use super::rules::both_psum;
use super::table::Bound;
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// A scalar-or-tile operand of element-wise lowering.
#[derive(Clone, Debug)]
pub enum Operand {
    Tile(Rc<Tensor>),
    Num(f64),
}

/// Converts a `scale=`/`operand0=`-style argument for an op over `data`.
pub fn scalar_operand(
    ctx: &Ctx<'_>,
    v: &Value,
    data: &Tensor,
    span: Span,
    what: &str,
) -> Result<Scalar, Diagnostic> {
    match v {
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
            Ok(Scalar::imm(v.as_float().unwrap_or(0.0) as f32))
        }
        Value::Tensor(t) => {
            check::on_chip(ctx, t, span, what)?;
            if check::partitions(t) != check::partitions(data) || check::free_size(t) != 1 {
                return Err(ctx.error(
                    codes::SCALAR_OPERAND,
                    format!(
                        "{what} must be a ({}, 1) tensor (one value per partition of the data), found shape {}",
                        check::partitions(data),
                        shape_text(&t.shape)
                    ),
                    span,
                    "not a (P, 1) vector",
                ));
            }
            check::partition_start(ctx, t, span, what)?;
            Ok(Scalar::Vector(t.view.clone()))
        }
        other => Err(ctx.error(
            codes::SCALAR_OPERAND,
            format!(
                "{what} must be a number or a (P, 1) tensor, found a {}",
                other.type_name()
            ),
            span,
            "not a scalar operand",
        )),
    }
}

/// Legacy type promotion of two dtypes (language.md §7.1).
pub fn promote(a: DType, b: DType) -> DType {
    use DType as D;
    if a == b {
        return a;
    }
    match (a.is_float(), b.is_float()) {
        (true, false) => return a,
        (false, true) => return b,
        _ => {}
    }
    if a.is_float() {
        let pair = |x, y| (a == x && b == y) || (a == y && b == x);
        if pair(D::F16, D::BF16) || pair(D::F32, D::TF32) {
            return D::F32;
        }
        if a.is_fp8() && b.is_fp8() {
            return D::BF16;
        }
        return if a.size() >= b.size() { a } else { b };
    }
    if a.is_signed_int() == b.is_signed_int() {
        return if a.size() >= b.size() { a } else { b };
    }
    let (s, u) = if a.is_signed_int() { (a, b) } else { (b, a) };
    if s.size() > u.size() {
        s
    } else if u.size() < 4 {
        if u.size() == 1 { D::I16 } else { D::I32 }
    } else {
        D::F32
    }
}

pub(crate) fn bitvec_dtypes(
    ctx: &Ctx<'_>,
    op: AluOp,
    ts: &[(&Tensor, Span)],
) -> Result<(), Diagnostic> {
    if !op.is_bitvec() {
        return Ok(());
    }
    for (t, span) in ts {
        if !t.dtype().is_int() {
            return Err(ctx.error(
                codes::DTYPE,
                format!(
                    "the bitwise operator `nl.{}` needs integer dtypes, found {}",
                    op.name(),
                    check::describe(t)
                ),
                *span,
                "not an integer dtype",
            ));
        }
    }
    Ok(())
}

/// `op` of tile `t` and the number `n` ([`elementwise`]).
pub fn tile_op(
    ctx: &mut Ctx<'_>,
    op: AluOp,
    t: &Rc<Tensor>,
    n: f64,
    dst: Option<Rc<Tensor>>,
    dtype: Option<DType>,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    elementwise(
        ctx,
        op,
        &Operand::Tile(t.clone()),
        &Operand::Num(n),
        dst,
        dtype,
        span,
    )
}

/// Records `dst = x op y` for operands of equal shape (tensor_tensor) or a
/// tile and a number / `(P, 1)` tile (tensor_scalar). Used by operators
/// on tiles and by the `nl.*` element-wise functions.
pub fn elementwise(
    ctx: &mut Ctx<'_>,
    op: AluOp,
    x: &Operand,
    y: &Operand,
    dst: Option<Rc<Tensor>>,
    dtype: Option<DType>,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let (tile, other, reversed) = match (x, y) {
        (Operand::Tile(a), Operand::Tile(b)) => {
            if check::partitions(a) == check::partitions(b)
                && check::free_size(a) == check::free_size(b)
            {
                return tile_tile(ctx, op, a, b, dst, dtype, span);
            }
            if check::free_size(b) == 1 && check::partitions(b) == check::partitions(a) {
                (a.clone(), Operand::Tile(b.clone()), false)
            } else if check::free_size(a) == 1 && check::partitions(a) == check::partitions(b) {
                (b.clone(), Operand::Tile(a.clone()), true)
            } else if let Some((a2, b2)) = broadcast_pair(ctx, op, a, b, span)? {
                return elementwise(
                    ctx,
                    op,
                    &Operand::Tile(a2),
                    &Operand::Tile(b2),
                    dst,
                    dtype,
                    span,
                );
            } else {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!(
                        "shapes {} and {} do not agree: element-wise operands need equal shapes, or one (P, 1) operand",
                        shape_text(&a.shape),
                        shape_text(&b.shape)
                    ),
                    span,
                    "shapes differ",
                ));
            }
        }
        (Operand::Tile(a), n @ Operand::Num(_)) => (a.clone(), n.clone(), false),
        (n @ Operand::Num(_), Operand::Tile(b)) => (b.clone(), n.clone(), true),
        (Operand::Num(_), Operand::Num(_)) => {
            return Err(ctx.error(
                codes::OPERATOR,
                "an element-wise operation needs at least one tile",
                span,
                "no tile",
            ));
        }
    };
    check::operand(ctx, &tile, span, "the tile operand")?;
    let operand = match &other {
        Operand::Num(n) => Scalar::imm(*n as f32),
        Operand::Tile(t) => {
            check::operand(ctx, t, span, "the (P, 1) operand")?;
            Scalar::Vector(t.view.clone())
        }
    };
    let out_dtype = dtype.unwrap_or(match &other {
        Operand::Tile(t) => promote(tile.dtype(), t.dtype()),
        Operand::Num(n) if tile.dtype().is_int() && n.fract() != 0.0 => DType::F32,
        Operand::Num(_) => tile.dtype(),
    });
    let dst = match dst {
        Some(d) => d,
        None => new_tile(ctx, &tile.shape, out_dtype, span)?,
    };
    check::operand(ctx, &dst, span, "the result")?;
    check::same_pf(ctx, (&tile, "operand"), (&dst, "result", span))?;
    bitvec_dtypes(ctx, op, &[(&tile, span), (&dst, span)])?;
    let kind = tensor_scalar1(
        &dst.view,
        &tile.view,
        op,
        (!op.is_unary()).then_some(operand),
        reversed,
    );
    ctx.push_op(nkic_ir::Op::new(kind), span)?;
    Ok(dst)
}

/// Two operand tiles.
type TilePair = (Rc<Tensor>, Rc<Tensor>);

/// NumPy broadcasting of two tiles of equal rank (legacy `nl.add(a, b)`
/// with `(1, F)` or `(P, 1)` operands): a one-partition operand is spread
/// over the partitions (see `nl_math::spread_partitions`), then size-1
/// free dims of either operand become stride-0 views. A row spread into
/// PSUM (the ones-matmul) is copied to SBUF when `op` runs on GpSimd
/// (`nl.power`), which cannot read PSUM, or when the other operand is in
/// PSUM already (one instruction reads at most one PSUM operand): the
/// compiler's own broadcast must not make a valid call invalid. `None`
/// when the shapes do not broadcast.
fn broadcast_pair(
    ctx: &mut Ctx<'_>,
    op: AluOp,
    a: &Rc<Tensor>,
    b: &Rc<Tensor>,
    span: Span,
) -> Result<Option<TilePair>, Diagnostic> {
    let psum_free = op == AluOp::Power || a.buffer == Buffer::Psum || b.buffer == Buffer::Psum;
    if a.shape.len() != b.shape.len()
        || !a.buffer.is_on_chip()
        || !b.buffer.is_on_chip()
        || a.shape
            .iter()
            .zip(&b.shape)
            .any(|(&x, &y)| x != y && x != 1 && y != 1)
    {
        return Ok(None);
    }
    let target: Vec<u64> = a
        .shape
        .iter()
        .zip(&b.shape)
        .map(|(&x, &y)| x.max(y))
        .collect();
    let stretch = |ctx: &mut Ctx<'_>, t: &Rc<Tensor>| -> Result<Rc<Tensor>, Diagnostic> {
        let mut t = t.clone();
        if t.shape[0] == 1 && target[0] > 1 {
            t = super::nl_math::spread_partitions(ctx, &t, target[0], span, span)?;
            if psum_free && t.buffer == Buffer::Psum {
                let copy = new_tile(ctx, &t.shape, t.dtype(), span)?;
                ctx.push_op(
                    nkic_ir::Op::new(OpKind::TensorCopy {
                        dst: copy.view.clone(),
                        src: t.view.clone(),
                    }),
                    span,
                )?;
                t = copy;
            }
        }
        // Keep a `(P, 1)` operand as is: it is a tensor_scalar vector.
        if t.shape[1..].iter().all(|&d| d == 1) {
            return Ok(t);
        }
        Ok(stretch_free(&t, &target))
    };
    let a2 = stretch(ctx, a)?;
    let b2 = stretch(ctx, b)?;
    Ok(Some((a2, b2)))
}

/// `t` with its free dims stretched to `target`'s by stride-0 views (only
/// size-1 dims differ); the partition dim is kept.
pub(super) fn stretch_free(t: &Tensor, target: &[u64]) -> Rc<Tensor> {
    let mut view = t.view.clone();
    for (i, (&from, &to)) in t.shape.iter().zip(target).enumerate().skip(1) {
        if from != to {
            view = view.broadcast(i, to).unwrap_or(view);
        }
    }
    let mut shape = target.to_vec();
    shape[0] = t.shape[0];
    Rc::new(Tensor {
        view,
        shape,
        buffer: t.buffer,
    })
}

fn tile_tile(
    ctx: &mut Ctx<'_>,
    op: AluOp,
    a: &Rc<Tensor>,
    b: &Rc<Tensor>,
    dst: Option<Rc<Tensor>>,
    dtype: Option<DType>,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    check::operand(ctx, a, span, "the left operand")?;
    check::operand(ctx, b, span, "the right operand")?;
    if a.buffer == Buffer::Psum && b.buffer == Buffer::Psum {
        return Err(both_psum(ctx, span));
    }
    let dst = match dst {
        Some(d) => d,
        None => new_tile(
            ctx,
            &a.shape,
            dtype.unwrap_or(promote(a.dtype(), b.dtype())),
            span,
        )?,
    };
    check::operand(ctx, &dst, span, "the result")?;
    bitvec_dtypes(ctx, op, &[(a, span), (b, span), (&dst, span)])?;
    let engine = (op == AluOp::Power).then_some(Engine::GpSimd);
    if engine == Some(Engine::GpSimd) {
        for t in [a, b, &dst] {
            check::not_psum_on(ctx, t, Engine::GpSimd, span, "an operand of `nl.power`")?;
        }
    }
    let kind = OpKind::TensorTensor {
        dst: dst.view.clone(),
        src0: a.view.clone(),
        src1: b.view.clone(),
        op,
    };
    let mut op = nkic_ir::Op::new(kind);
    op.engine = engine;
    ctx.push_op(op, span)?;
    Ok(dst)
}

/// The one-stage `tensor_scalar` `dst = src op0 operand0` (`operand0 op0
/// src` when `reverse0`; no operand for a unary `op0`).
pub fn tensor_scalar1(
    dst: &View,
    src: &View,
    op0: AluOp,
    operand0: Option<Scalar>,
    reverse0: bool,
) -> OpKind {
    OpKind::TensorScalar {
        dst: dst.clone(),
        src: src.clone(),
        op0,
        operand0,
        reverse0,
        op1: None,
        operand1: None,
        reverse1: false,
    }
}

/// The two-stage `tensor_scalar` `dst = (src op0 imm0) op1 imm1` with
/// immediate operands.
pub fn tensor_scalar2(
    dst: &View,
    src: &View,
    (op0, imm0): (AluOp, f32),
    (op1, imm1): (AluOp, f32),
) -> OpKind {
    OpKind::TensorScalar {
        dst: dst.clone(),
        src: src.clone(),
        op0,
        operand0: Some(Scalar::imm(imm0)),
        reverse0: false,
        op1: Some(op1),
        operand1: Some(Scalar::imm(imm1)),
        reverse1: false,
    }
}

/// A fresh SBUF tile for a lowered result.
pub fn new_tile(
    ctx: &mut Ctx<'_>,
    shape: &[u64],
    dtype: DType,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let name = ctx.fresh_name("tmp_");
    super::tensor::alloc(ctx, shape, dtype, Buffer::Sbuf, &name, span, span).map(Rc::new)
}

/// Normalizes `axis` for a tensor of rank `ndim`: trailing free dims
/// ending at the last. Returns how many trailing dims are reduced.
pub fn trailing_axes(
    ctx: &Ctx<'_>,
    axes: &[i64],
    shape: &[u64],
    span: Span,
) -> Result<usize, Diagnostic> {
    let n = shape.len() as i64;
    let mut norm: Vec<i64> = axes
        .iter()
        .map(|&a| if a < 0 { a + n } else { a })
        .collect();
    norm.sort_unstable();
    norm.dedup();
    let k = norm.len() as i64;
    let expected: Vec<i64> = (n - k..n).collect();
    if norm.is_empty() || norm != expected || norm[0] < 1 {
        return Err(ctx
            .error(
                codes::AXIS,
                format!(
                    "cannot reduce axes {axes:?} of shape {}: the axes must be trailing free dims ending at the last dim (never dim 0)",
                    shape_text(shape)
                ),
                span,
                "bad axes",
            )
            .with_help(format!(
                "for {} dims use ({},), ({}, {}), …",
                n,
                n - 1,
                n - 2,
                n - 1
            )));
    }
    Ok(k as usize)
}

/// The scalar operand `name` over `data` ([`scalar_operand`]), `default`
/// when it is not given.
pub(crate) fn operand_or(
    ctx: &Ctx<'_>,
    b: &Bound,
    name: &str,
    data: &Tensor,
    default: f32,
) -> Result<Scalar, Diagnostic> {
    Ok(operand_opt(ctx, b, name, data)?.unwrap_or_else(|| Scalar::imm(default)))
}

/// The scalar operand `name` over `data` ([`scalar_operand`]), `None`
/// when it is not given.
pub(crate) fn operand_opt(
    ctx: &Ctx<'_>,
    b: &Bound,
    name: &str,
    data: &Tensor,
) -> Result<Option<Scalar>, Diagnostic> {
    b.get(name)
        .map(|a| scalar_operand(ctx, &a.value, data, a.span, &format!("`{name}`")))
        .transpose()
}
