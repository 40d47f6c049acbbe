//! The core `nki.isa` compute instructions: `nc_matmul`, `nc_transpose`,
//! `tensor_tensor`, `tensor_scalar`, `activation` and `tensor_reduce`,
//! with every rule of isa.md §2 and §4 for them checked at compile time.
//!
//! The shared lowering helpers ([`elementwise`], [`Operand`]) are also what
//! Python operators on tiles and the `nl.*` element-wise functions use, so
//! that `a + b`, `nl.add(a, b)` and `nisa.tensor_tensor(op=nl.add)` give
//! the same IR.
//!
//! Choices where the spec is silent:
//! * legacy value-form `nc_matmul(a, b)` is recorded when its result is
//!   first used (`psum[...] += ...` writes straight into `psum` with the
//!   compiler-chosen accumulate flag; any other use materializes a fresh
//!   PSUM tile), because the IR cannot retarget a recorded op;
//! * `activation` with `reduce_res` but no `reduce_cmd` uses
//!   `reset_reduce` (what `activation_reduce` did);
//! * value-form results of two inputs take the legacy promoted dtype
//!   (language.md §7.1) unless `dtype=` is given.

use std::any::Any;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::{ActFunc, AluOp, DType, Engine, MatmulPerfMode, ReduceCmd, Target};

use super::check::{self, shape_text};
use super::codes;
use super::emit;
use super::rules::{DATA_DST, NotBothPsum, REDUCE_RESULT, Tiles, both_psum, not_both_psum, tiles};
use super::table::{
    ApiDef, Bound, DATA, DST, ENGINE, Kind, NAME, OP0, OPERAND0, REDUCE_IDLE, REDUCE_RES, REVERSE0,
    REVERSE1, opt, req,
};
use crate::ctx::Ctx;
use crate::value::{ApiObject, Tensor, Value};

const TENSOR: &[Engine] = &[Engine::Tensor];
const TRANSPOSE: &[Engine] = &[Engine::Tensor, Engine::Vector];
const TT: &[Engine] = &[Engine::Vector, Engine::GpSimd];
const TS: &[Engine] = &[Engine::Vector, Engine::Scalar, Engine::GpSimd];
const SCALAR: &[Engine] = &[Engine::Scalar];
const VECTOR: &[Engine] = &[Engine::Vector];

const TT_TILES: Tiles = tiles!("data1", "data2", "dst");
const TT_PSUM: NotBothPsum = not_both_psum!("data1", "data2");

/// The core compute instructions.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nisa.nc_matmul",
        &[
            DST,
            req("stationary", Kind::Tensor),
            req("moving", Kind::Tensor),
            opt("is_stationary_onezero", Kind::Bool, "False"),
            opt("is_moving_onezero", Kind::Bool, "False"),
            opt("is_transpose", Kind::Bool, "False"),
            opt("accumulate", Kind::Bool, "None"),
            opt("tile_position", Kind::Ints, "()"),
            opt("tile_size", Kind::Ints, "()"),
            opt(
                "perf_mode",
                Kind::Enum("matmul_perf_mode"),
                "nisa.matmul_perf_mode.none",
            ),
            NAME,
        ],
        TENSOR,
        "`dst[m, n] (=|+=) Σ_k stationary[k, m] · moving[k, n]` on TensorE; the legacy form returns a PSUM tile (`psum[...] += nisa.nc_matmul(a, b)` accumulates).",
        &[
            "`stationary` and `moving` are SBUF, `dst` is PSUM.",
            "The contraction (partition) sizes are equal and at most 128; both inputs start on the same partition.",
            "`stationary` has at most 128 free elements (`gemm_stationary_fmax`).",
            "`moving` has at most 512 free elements on trn2, 4096 (fp32 `dst`) or 8192 (bf16 `dst`) on trn3.",
            "`dst` is `[M, N]`: M = stationary's free size, N = moving's free size; it stays inside one 2 KiB PSUM bank on trn2.",
            "Inputs are fp8 (e4m3, e5m2; e4m3fn on trn3), bf16, fp16, tf32 or fp32; fp32/tf32 only with each other; e4m3 and e4m3fn are not mixed.",
            "`dst` is fp32 (or bf16 on trn3); with `is_transpose` it may have `stationary`'s dtype.",
            "`perf_mode=double_row` takes fp8 inputs shaped `[P, 2, M]` / `[P, 2, N]`, not with `is_transpose` or PE tiles.",
            "`tile_position` and `tile_size` go together: sizes 32, 64 or 128, starts multiples of the size below 128, K ≤ rows and M ≤ columns; manually placed inputs start on partition `row` and `dst` on partition `col` (otherwise the backend places them so).",
        ],
        nc_matmul,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.nc_transpose",
        &[DST, DATA, ENGINE, NAME],
        TRANSPOSE,
        "`dst[f, p] = data[p, f]` (free dims flattened), on TensorE (SBUF to PSUM, up to 128×128) or VectorE (up to 32×32).",
        &[
            "`dst` has shape `[F, P]` of `data`'s `[P, F]` and the same dtype.",
            "TensorE: `data` in SBUF, `dst` in PSUM, both sides at most 128.",
            "VectorE: SBUF or PSUM, both sides at most 32.",
        ],
        nc_transpose,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_tensor",
        &[
            DST,
            req("data1", Kind::Tensor),
            req("data2", Kind::Tensor),
            req("op", Kind::AluOp),
            ENGINE,
            NAME,
        ],
        TT,
        "`dst = data1 op data2` element-wise.",
        &[
            TT_TILES.text,
            TT_PSUM.text,
            "`op` is a binary ALU operator; bitwise operators need integer dtypes.",
            "`nl.power` runs on GpSimd; GpSimd cannot access PSUM.",
        ],
        tensor_tensor,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_scalar",
        &[
            DST,
            DATA,
            OP0,
            OPERAND0,
            REVERSE0,
            opt("op1", Kind::AluOp, "None"),
            opt("operand1", Kind::Scalar, "None"),
            REVERSE1,
            ENGINE,
            NAME,
        ],
        TS,
        "`dst = (data op0 operand0) op1 operand1` with scalar or `(P, 1)` operands.",
        &[
            DATA_DST.text,
            "Operands are compile-time numbers or `(P, 1)` SBUF/PSUM tensors with `data`'s P; a unary `op0` needs none.",
            "`op1` and `operand1` are given together; both operators are bitwise or both arithmetic; bitwise ones need integer dtypes and VectorE.",
            "ScalarE on trn2 runs only (multiply, add), (multiply) and (add); GpSimd runs only `nl.rsqrt` without `op1` and cannot access PSUM.",
        ],
        tensor_scalar,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.activation",
        &[
            DST,
            req("op", Kind::ActFunc),
            DATA,
            opt("bias", Kind::Scalar, "None"),
            opt("scale", Kind::Scalar, "1.0"),
            opt("reduce_op", Kind::AluOp, "None"),
            REDUCE_RES,
            REDUCE_IDLE,
            NAME,
        ],
        SCALAR,
        "`dst = op(data · scale + bias)` on ScalarE, optionally summing each row into the ScalarE accumulators.",
        &[
            DATA_DST.text,
            "`scale` and `bias` are numbers or `(P, 1)` tensors; `bias` is not tfloat32.",
            "`reduce_op` is `nl.add`; `load_reduce` is not available.",
            REDUCE_RESULT.text,
        ],
        activation,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_reduce",
        &[
            DST,
            req("op", Kind::AluOp),
            DATA,
            req("axis", Kind::Ints),
            opt("negate", Kind::Bool, "False"),
            opt("keepdims", Kind::Bool, "False"),
            NAME,
        ],
        VECTOR,
        "Reduces `data` over the trailing free axes `axis` with `op`.",
        &[
            "`axis` names trailing free dims ending at the last dim (never dim 0), e.g. (3,), (2, 3), (1, 2, 3).",
            "`op` is a reduction operator; `negate` only with arithmetic operators.",
            "`dst` has `data`'s partition count and the product of the kept free dims as free size.",
        ],
        tensor_reduce,
    )
    .with_value_form(),
];

// ------------------------------------------------------------------ operands

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

fn bitvec_dtypes(ctx: &Ctx<'_>, op: AluOp, ts: &[(&Tensor, Span)]) -> Result<(), Diagnostic> {
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
    let kind = OpKind::TensorScalar {
        dst: dst.view.clone(),
        src: tile.view.clone(),
        op0: op,
        operand0: (!op.is_unary()).then_some(operand),
        reverse0: reversed,
        op1: None,
        operand1: None,
        reverse1: false,
    };
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
        let mut view = t.view.clone();
        for (i, (&from, &to)) in t.shape.iter().zip(&target).enumerate().skip(1) {
            if from != to {
                view = view.broadcast(i, to).unwrap_or(view);
            }
        }
        let mut shape = target.clone();
        shape[0] = t.shape[0];
        Ok(Rc::new(Tensor {
            view,
            shape,
            buffer: t.buffer,
        }))
    };
    let a2 = stretch(ctx, a)?;
    let b2 = stretch(ctx, b)?;
    Ok(Some((a2, b2)))
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

// ------------------------------------------------------------------ nc_matmul

/// A legacy value-form `nc_matmul` not yet recorded (module doc).
#[derive(Debug, Clone)]
pub struct PendingMatmul {
    pub stationary: Rc<Tensor>,
    pub moving: Rc<Tensor>,
    pub flags: MatmulFlags,
    pub dtype: DType,
    pub span: Span,
    pub stationary_span: Span,
    pub moving_span: Span,
}

/// The attributes of a matmul call.
#[derive(Debug, Clone, Copy)]
pub struct MatmulFlags {
    pub stationary_onezero: bool,
    pub moving_onezero: bool,
    pub transpose: bool,
    pub perf_mode: MatmulPerfMode,
    pub tile_position: Option<[u32; 2]>,
    pub tile_size: Option<[u32; 2]>,
}

impl ApiObject for PendingMatmul {
    fn type_name(&self) -> &'static str {
        "matmul result"
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PendingMatmul {
    /// The result shape `[M, N]`.
    pub fn shape(&self) -> Vec<u64> {
        let m = if self.flags.perf_mode == MatmulPerfMode::DoubleRow {
            self.stationary.shape.last().copied().unwrap_or(1)
        } else {
            check::free_size(&self.stationary)
        };
        let n = if self.flags.perf_mode == MatmulPerfMode::DoubleRow {
            self.moving.shape.last().copied().unwrap_or(1)
        } else {
            check::free_size(&self.moving)
        };
        vec![m, n]
    }

    /// Records the matmul into `dst` (a fresh PSUM tile when `None`).
    pub fn record(
        &self,
        ctx: &mut Ctx<'_>,
        dst: Option<(Rc<Tensor>, Span)>,
        accumulate: Option<bool>,
    ) -> Result<Rc<Tensor>, Diagnostic> {
        let (dst, dst_span) = match dst {
            Some(d) => d,
            None => {
                stationary_width(ctx, &self.stationary, self.stationary_span, self.shape()[0])?;
                let name = ctx.fresh_name("matmul_");
                let t = super::tensor::alloc(
                    ctx,
                    &self.shape(),
                    self.dtype,
                    Buffer::Psum,
                    &name,
                    self.span,
                    self.span,
                )?;
                (Rc::new(t), self.span)
            }
        };
        matmul_checks(
            ctx,
            &dst,
            dst_span,
            (&self.stationary, self.stationary_span),
            (&self.moving, self.moving_span),
            &self.flags,
        )?;
        let kind = OpKind::NcMatmul {
            dst: dst.view.clone(),
            stationary: self.stationary.view.clone(),
            moving: self.moving.view.clone(),
            accumulate,
            transpose: self.flags.transpose,
            perf_mode: self.flags.perf_mode,
            stationary_onezero: self.flags.stationary_onezero,
            moving_onezero: self.flags.moving_onezero,
            tile_position: self.flags.tile_position,
            tile_size: self.flags.tile_size,
        };
        ctx.push_op(nkic_ir::Op::new(kind), self.span)?;
        Ok(dst)
    }
}

fn pair(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<Option<[u32; 2]>, Diagnostic> {
    match b.ints(ctx, name)? {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v[..] {
            [x, y] if (0..=128).contains(&x) && (0..=128).contains(&y) => {
                Ok(Some([x as u32, y as u32]))
            }
            _ => Err(ctx.error(
                codes::MATMUL_TILE,
                format!("`{name}` is a pair of ints in 0..=128, found {v:?}"),
                b.span_of(name),
                "bad pair",
            )),
        },
    }
}

fn matmul_flags(ctx: &Ctx<'_>, b: &Bound) -> Result<MatmulFlags, Diagnostic> {
    // Legacy kernels name the mode with a string; `double_row_gen3` was
    // the legacy spelling of the trn2 double-row mode.
    let legacy = match b.get("perf_mode").map(|a| &a.value) {
        Some(Value::Str(s)) => match &**s {
            "double_row" | "double_row_gen3" => Some(MatmulPerfMode::DoubleRow),
            "none" | "" => Some(MatmulPerfMode::None),
            _ => None,
        },
        _ => None,
    };
    let perf_mode = match legacy {
        Some(m) => m,
        None => match b.enum_member(ctx, "perf_mode", "matmul_perf_mode")? {
            Some("double_row") => MatmulPerfMode::DoubleRow,
            _ => MatmulPerfMode::None,
        },
    };
    Ok(MatmulFlags {
        stationary_onezero: b.bool_or(ctx, "is_stationary_onezero", false)?,
        moving_onezero: b.bool_or(ctx, "is_moving_onezero", false)?,
        transpose: b.bool_or(ctx, "is_transpose", false)?,
        perf_mode,
        tile_position: pair(ctx, b, "tile_position")?,
        tile_size: pair(ctx, b, "tile_size")?,
    })
}

/// The stationary free size `mm` is within `gemm_stationary_fmax`.
fn stationary_width(ctx: &Ctx<'_>, s: &Tensor, ss: Span, mm: u64) -> Result<(), Diagnostic> {
    let max = u64::from(ctx.target().figures().matmul_stationary_fmax);
    if mm <= max {
        return Ok(());
    }
    Err(ctx
        .error(
            codes::MATMUL_TILE,
            format!(
                "`stationary` {} has {mm} free elements, above the TensorE limit of {max} (`gemm_stationary_fmax`)",
                shape_text(&s.shape)
            ),
            ss,
            "stationary too wide",
        )
        .with_help("tile the stationary operand's free dim by 128"))
}

const MATMUL_INPUTS: &[DType] = &[
    DType::F8E4M3,
    DType::F8E5M2,
    DType::F8E4M3FN,
    DType::BF16,
    DType::F16,
    DType::TF32,
    DType::F32,
];

/// Every `nc_matmul` rule of isa.md §4.1.
fn matmul_checks(
    ctx: &Ctx<'_>,
    dst: &Tensor,
    dst_span: Span,
    stationary: (&Tensor, Span),
    moving: (&Tensor, Span),
    f: &MatmulFlags,
) -> Result<(), Diagnostic> {
    let target = ctx.target();
    let (s, ss) = stationary;
    let (m, ms) = moving;
    for (t, sp, what) in [(s, ss, "`stationary`"), (m, ms, "`moving`")] {
        check::buffer_in(ctx, t, &[Buffer::Sbuf], sp, what)?;
        check::partition_count(ctx, t, sp, what)?;
        check::partition_start(ctx, t, sp, what)?;
        if !MATMUL_INPUTS.contains(&t.dtype()) {
            return Err(ctx.error(
                codes::DTYPE,
                format!(
                    "{what} is {}, but TensorE inputs are fp8, bf16, fp16, tf32 or fp32",
                    t.dtype()
                ),
                sp,
                "unsupported matmul dtype",
            ));
        }
        check::dtype_on_target(ctx, t.dtype(), sp)?;
    }
    check::buffer_in(ctx, dst, &[Buffer::Psum], dst_span, "`dst`")?;
    check::partition_count(ctx, dst, dst_span, "`dst`")?;
    let wide = |d: DType| matches!(d, DType::F32 | DType::TF32);
    if wide(s.dtype()) != wide(m.dtype()) {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "fp32/tf32 inputs go only with fp32/tf32: `stationary` is {} and `moving` is {}",
                s.dtype(),
                m.dtype()
            ),
            ms,
            "mixed precision",
        ));
    }
    let pair_e4m3 = |a: DType, b: DType| a == DType::F8E4M3 && b == DType::F8E4M3FN;
    if pair_e4m3(s.dtype(), m.dtype()) || pair_e4m3(m.dtype(), s.dtype()) {
        return Err(ctx.error(
            codes::DTYPE,
            "float8_e4m3 and float8_e4m3fn cannot be mixed in one matmul",
            ms,
            "mixed fp8 formats",
        ));
    }
    // A transpose passes the data through: its PSUM result has the input's
    // dtype on every target.
    let ok_dst = (f.transpose && dst.dtype() == s.dtype())
        || match dst.dtype() {
            DType::F32 => true,
            DType::BF16 => target >= Target::Trn3,
            _ => false,
        };
    if !ok_dst {
        let allowed = if target >= Target::Trn3 {
            "float32 or bfloat16"
        } else {
            "float32"
        };
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`dst` is {}, but a matmul writes {allowed} PSUM on {target}",
                dst.dtype()
            ),
            dst_span,
            "unsupported PSUM dtype",
        ));
    }
    let (k_s, k_m) = (check::partitions(s), check::partitions(m));
    if k_s != k_m {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "the contraction sizes differ: `stationary` {} has {k_s} partitions, `moving` {} has {k_m}",
                shape_text(&s.shape),
                shape_text(&m.shape)
            ),
            ms,
            "partition counts differ",
        ));
    }
    if check::start_partition(ctx, s) != check::start_partition(ctx, m) {
        return Err(ctx.error(
            codes::PARTITION_START,
            format!(
                "`stationary` starts at partition {} but `moving` at {}; matmul inputs share the PE rows",
                check::start_partition(ctx, s),
                check::start_partition(ctx, m)
            ),
            ms,
            "different start partition",
        ));
    }
    let (mm, nn) = if f.perf_mode == MatmulPerfMode::DoubleRow {
        if f.transpose || f.tile_position.is_some() || f.tile_size.is_some() {
            return Err(ctx.error(
                codes::MATMUL_TILE,
                "`perf_mode=double_row` cannot be combined with `is_transpose` or PE tiles",
                ms,
                "double_row",
            ));
        }
        for (t, sp, what) in [(s, ss, "`stationary`"), (m, ms, "`moving`")] {
            if t.shape.len() != 3 || t.shape[1] != 2 {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!(
                        "with `double_row`, {what} is shaped [P, 2, X], found {}",
                        shape_text(&t.shape)
                    ),
                    sp,
                    "not [P, 2, X]",
                ));
            }
            if !t.dtype().is_fp8() {
                return Err(ctx.error(
                    codes::DTYPE,
                    format!("`double_row` takes fp8 inputs, found {what} {}", t.dtype()),
                    sp,
                    "not fp8",
                ));
            }
        }
        (s.shape[2], m.shape[2])
    } else {
        (check::free_size(s), check::free_size(m))
    };
    let fig = target.figures();
    stationary_width(ctx, s, ss, mm)?;
    let moving_max: u64 = match target {
        Target::Trn2 => 512,
        Target::Trn3 => {
            if dst.dtype() == DType::BF16 {
                8192
            } else {
                4096
            }
        }
    };
    if nn > moving_max {
        return Err(ctx.error(
            codes::MATMUL_TILE,
            format!(
                "`moving` {} has {nn} free elements, above the limit of {moving_max} on {target}",
                shape_text(&m.shape)
            ),
            ms,
            "moving too wide",
        ));
    }
    if check::partitions(dst) != mm || check::free_size(dst) != nn {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must be [{mm}, {nn}] (stationary free size × moving free size), found {}",
                shape_text(&dst.shape)
            ),
            dst_span,
            "wrong result shape",
        ));
    }
    // PSUM banks: one bank on trn2, all banks on trn3.
    let size = u64::from(dst.dtype().size());
    let pstride = check::partition_stride(ctx, dst).max(1);
    let st = ctx.storage(dst.storage());
    let base = st.address.map_or(0, |a| a.byte);
    let start = base + (dst.view.offset.rem_euclid(pstride) as u64) * size;
    let last = dst
        .view
        .dims
        .iter()
        .skip(1)
        .map(|d| d.stride.max(0) as u64 * d.count.saturating_sub(1))
        .sum::<u64>();
    let end = start + (last + 1) * size;
    let bank = u64::from(fig.psum_bank_bytes);
    // Any bank of the partition may hold a result (isa.md: one bank per
    // accumulation group, 8 of them); on trn2 it may not cross a bank.
    let limit = u64::from(fig.psum_bytes_per_partition);
    if fig.matmul_psum_banks == 1 && start / bank != (end - 1) / bank {
        return Err(ctx.error(
            codes::PSUM_BANK,
            format!(
                "the matmul result covers PSUM bytes {start}..{end} of each partition, crossing a {bank}-byte bank boundary",
            ),
            dst_span,
            "crosses a PSUM bank",
        )
        .with_help("keep each matmul result inside one 2 KiB bank (at most 512 fp32 elements)"));
    }
    if end > limit {
        return Err(ctx.error(
            codes::PSUM_BANK,
            format!("the matmul result ends at PSUM byte {end}, beyond {limit}"),
            dst_span,
            "beyond PSUM",
        ));
    }
    match (f.tile_position, f.tile_size) {
        (None, None) => {}
        (Some([row, col]), Some([rows, cols])) => {
            let sizes_ok = [rows, cols].iter().all(|s| matches!(s, 32 | 64 | 128));
            let starts_ok = rows > 0 && cols > 0 && row % rows == 0 && col % cols == 0;
            if !sizes_ok || !starts_ok || row >= 128 || col >= 128 {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!(
                        "PE tile at {:?} of size {:?}: sizes are 32, 64 or 128 and starts are multiples of the size below 128",
                        [row, col],
                        [rows, cols]
                    ),
                    ss,
                    "bad PE tile",
                ));
            }
            if k_s > u64::from(rows) || mm > u64::from(cols) {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!(
                        "the stationary tile ({k_s} rows × {mm} columns) does not fit the {rows}×{cols} PE tile"
                    ),
                    ss,
                    "does not fit the PE tile",
                ));
            }
            // Only a manual placement fixes the partitions here; otherwise
            // the backend places the tiles on the PE tile's rows and columns.
            let manual = |t: &Tensor| ctx.storage(t.storage()).address.is_some();
            let placed = manual(s) || manual(dst);
            if placed
                && (check::start_partition(ctx, s) != u64::from(row)
                    || check::start_partition(ctx, dst) != u64::from(col))
            {
                return Err(ctx.error(
                    codes::PARTITION_START,
                    format!(
                        "with a PE tile at row {row}, column {col} the inputs start on partition {row} and `dst` on partition {col}; found {} and {}",
                        check::start_partition(ctx, s),
                        check::start_partition(ctx, dst)
                    ),
                    ss,
                    "partitions do not match the PE tile",
                ));
            }
        }
        _ => {
            return Err(ctx.error(
                codes::MATMUL_TILE,
                "`tile_position` and `tile_size` are given together",
                ss,
                "only one given",
            ));
        }
    }
    if f.transpose && target < Target::Trn2 {
        return Err(ctx.error(codes::TARGET, "transpose mode needs trn2", ss, "target"));
    }
    Ok(())
}

fn nc_matmul(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let stationary = b.tensor(ctx, "stationary")?;
    let moving = b.tensor(ctx, "moving")?;
    let flags = matmul_flags(ctx, b)?;
    let pending = PendingMatmul {
        stationary,
        moving,
        flags,
        dtype: b.legacy_dtype(ctx)?.unwrap_or(DType::F32),
        span,
        stationary_span: b.span_of("stationary"),
        moving_span: b.span_of("moving"),
    };
    if b.is_value_form() {
        // Recorded where the result is first used (module doc).
        return Ok(Value::Ext(Rc::new(pending)));
    }
    let dst = b.tensor(ctx, "dst")?;
    let accumulate = match b.get("accumulate") {
        None => None,
        Some(_) => Some(b.bool_or(ctx, "accumulate", false)?),
    };
    matmul_checks(
        ctx,
        &dst,
        b.span_of("dst"),
        (&pending.stationary, pending.stationary_span),
        (&pending.moving, pending.moving_span),
        &flags,
    )?;
    let kind = OpKind::NcMatmul {
        dst: dst.view.clone(),
        stationary: pending.stationary.view.clone(),
        moving: pending.moving.view.clone(),
        accumulate,
        transpose: flags.transpose,
        perf_mode: flags.perf_mode,
        stationary_onezero: flags.stationary_onezero,
        moving_onezero: flags.moving_onezero,
        tile_position: flags.tile_position,
        tile_size: flags.tile_size,
    };
    emit::finish(ctx, b, kind, None, None, span)
}

// ------------------------------------------------------------------ nc_transpose

/// Records `dst = transpose(data)`, choosing the engine when `engine` is
/// `None` and the shapes or buffers decide it.
pub fn transpose_into(
    ctx: &Ctx<'_>,
    dst: (&Tensor, Span),
    data: (&Tensor, Span),
    engine: Option<Engine>,
) -> Result<(OpKind, Option<Engine>), Diagnostic> {
    let (d, ds) = dst;
    let (x, xs) = data;
    check::operand(ctx, x, xs, "`data`")?;
    check::operand(ctx, d, ds, "`dst`")?;
    let (p, f) = (check::partitions(x), check::free_size(x));
    if check::partitions(d) != f || check::free_size(d) != p {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must be [{f}, {p}] (the transpose of `data` {}), found {}",
                shape_text(&x.shape),
                shape_text(&d.shape)
            ),
            ds,
            "not the transposed shape",
        ));
    }
    if d.dtype() != x.dtype() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`nc_transpose` keeps the dtype: `data` is {} but `dst` is {}",
                x.dtype(),
                d.dtype()
            ),
            ds,
            "dtype differs",
        ));
    }
    let small = p <= 32 && f <= 32;
    let vector_only = x.buffer == Buffer::Psum || d.buffer == Buffer::Sbuf;
    let engine = match engine {
        Some(e) => Some(e),
        None if vector_only => Some(Engine::Vector),
        None if !small => Some(Engine::Tensor),
        None => None,
    };
    match engine {
        Some(Engine::Tensor) => {
            check::buffer_in(ctx, x, &[Buffer::Sbuf], xs, "TensorE transpose `data`")?;
            check::buffer_in(ctx, d, &[Buffer::Psum], ds, "TensorE transpose `dst`")?;
        }
        Some(_) if !small => {
            return Err(ctx.error(
                codes::FREE_SIZE,
                format!(
                    "a VectorE transpose handles up to 32×32, found {p}×{f} (data in {}, dst in {})",
                    x.buffer.name(),
                    d.buffer.name()
                ),
                xs,
                "too large for VectorE",
            )
            .with_help("use TensorE: `data` in SBUF, `dst` in PSUM"));
        }
        _ => {}
    }
    Ok((
        OpKind::NcTranspose {
            dst: d.view.clone(),
            src: x.view.clone(),
        },
        engine,
    ))
}

fn nc_transpose(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let engine = emit::engine(ctx, b)?;
    let shape = [check::free_size(&data), check::partitions(&data)];
    let buffer = if engine == Some(Engine::Vector) {
        Buffer::Sbuf
    } else {
        Buffer::Psum
    };
    let (dst, _) = emit::dst_or_new(ctx, b, &shape, data.dtype(), buffer, span)?;
    let (kind, engine) = transpose_into(
        ctx,
        (&dst, b.span_of("dst")),
        (&data, b.span_of("data")),
        engine,
    )?;
    emit::finish(ctx, b, kind, engine, Some(&dst), span)
}

// ------------------------------------------------------------------ tensor_tensor

fn tensor_tensor(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let a = b.tensor(ctx, "data1")?;
    let c = b.tensor(ctx, "data2")?;
    let op = b.alu_op(ctx, "op")?.unwrap_or(AluOp::Add);
    let mut engine = emit::engine(ctx, b)?;
    if op.is_unary() || op == AluOp::Average {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`tensor_tensor` needs a binary operator, found `nl.{}`",
                op.name()
            ),
            b.span_of("op"),
            "not a binary operator",
        ));
    }
    let (sa, sc) = (b.span_of("data1"), b.span_of("data2"));
    let (dst, _) = emit::dst_or_new(
        ctx,
        b,
        &a.shape,
        promote(a.dtype(), c.dtype()),
        Buffer::Sbuf,
        span,
    )?;
    let ds = b.span_of("dst");
    TT_TILES.check(ctx, b, &[&a, &c, &dst])?;
    TT_PSUM.check(ctx, b, &a, &c)?;
    bitvec_dtypes(ctx, op, &[(&a, sa), (&c, sc), (&dst, ds)])?;
    if op == AluOp::Power {
        if engine == Some(Engine::Vector) {
            return Err(ctx.error(
                codes::ENGINE,
                "`nl.power` in `tensor_tensor` runs on GpSimd, not VectorE",
                b.span_of("engine"),
                "vector",
            ));
        }
        engine = Some(Engine::GpSimd);
    }
    if engine == Some(Engine::GpSimd) {
        check::not_psum_on(ctx, &a, Engine::GpSimd, sa, "`data1`")?;
        check::not_psum_on(ctx, &c, Engine::GpSimd, sc, "`data2`")?;
        check::not_psum_on(ctx, &dst, Engine::GpSimd, ds, "`dst`")?;
    }
    let kind = OpKind::TensorTensor {
        dst: dst.view.clone(),
        src0: a.view.clone(),
        src1: c.view.clone(),
        op,
    };
    emit::finish(ctx, b, kind, engine, Some(&dst), span)
}

// ------------------------------------------------------------------ tensor_scalar

fn tensor_scalar(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let op0 = b.alu_op(ctx, "op0")?.unwrap_or(AluOp::Bypass);
    let op1 = b.alu_op(ctx, "op1")?;
    let engine = emit::engine(ctx, b)?;
    let sd = b.span_of("data");
    let (dst, _) = emit::dst_or_new(ctx, b, &data.shape, data.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    DATA_DST.check(ctx, b, &[&data, &dst])?;
    let operand = |name: &str, op: AluOp| -> Result<Option<Scalar>, Diagnostic> {
        match b.get(name) {
            None => {
                if op.is_unary() {
                    Ok(None)
                } else {
                    Err(ctx.error(
                        codes::SCALAR_OPERAND,
                        format!("the binary operator `nl.{}` needs `{name}`", op.name()),
                        b.span,
                        format!("`{name}` is not given"),
                    ))
                }
            }
            Some(a) if op.is_unary() => {
                // A unary operator ignores its operand (0 or None by convention).
                let _ = a;
                Ok(None)
            }
            Some(a) => scalar_operand(ctx, &a.value, &data, a.span, &format!("`{name}`")).map(Some),
        }
    };
    let operand0 = operand("operand0", op0)?;
    let operand1 = match op1 {
        Some(op) => operand("operand1", op)?,
        None => {
            if let Some(a) = b.get("operand1") {
                return Err(ctx.error(
                    codes::SCALAR_OPERAND,
                    "`operand1` is given without `op1`",
                    a.span,
                    "no `op1`",
                ));
            }
            None
        }
    };
    if let Some(o1) = op1
        && o1.is_bitvec() != op0.is_bitvec()
    {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`op0` (`nl.{}`) and `op1` (`nl.{}`) must both be bitwise or both arithmetic",
                op0.name(),
                o1.name()
            ),
            b.span_of("op1"),
            "mixed operator classes",
        ));
    }
    if op0 == AluOp::Average || op1 == Some(AluOp::Average) {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "`nl.average` is only valid in `tensor_partition_reduce`",
            b.span_of("op0"),
            "not here",
        ));
    }
    if op0.is_bitvec() {
        bitvec_dtypes(ctx, op0, &[(&data, sd), (&dst, ds)])?;
        if matches!(engine, Some(Engine::Scalar | Engine::GpSimd)) {
            return Err(ctx.error(
                codes::ENGINE,
                "bitwise `tensor_scalar` runs on VectorE only",
                b.span_of("engine"),
                "not vector",
            ));
        }
    }
    match engine {
        Some(Engine::Scalar) if ctx.target() == Target::Trn2 => {
            let ok = matches!(
                (op0, op1),
                (AluOp::Multiply, Some(AluOp::Add)) | (AluOp::Multiply, None) | (AluOp::Add, None)
            );
            if !ok {
                return Err(ctx.error(
                    codes::ENGINE,
                    "ScalarE `tensor_scalar` on trn2 runs only (multiply, add), (multiply) and (add)",
                    b.span_of("engine"),
                    "unsupported operator pair",
                ));
            }
        }
        Some(Engine::GpSimd) => {
            if op0 != AluOp::Rsqrt || op1.is_some() {
                return Err(ctx.error(
                    codes::ENGINE,
                    "GpSimd `tensor_scalar` runs only `op0=nl.rsqrt` without `op1`",
                    b.span_of("engine"),
                    "unsupported on gpsimd",
                ));
            }
            check::not_psum_on(ctx, &data, Engine::GpSimd, sd, "`data`")?;
            check::not_psum_on(ctx, &dst, Engine::GpSimd, ds, "`dst`")?;
        }
        _ => {}
    }
    let kind = OpKind::TensorScalar {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op0,
        operand0,
        reverse0: b.bool_or(ctx, "reverse0", false)?,
        op1,
        operand1,
        reverse1: b.bool_or(ctx, "reverse1", false)?,
    };
    emit::finish(ctx, b, kind, engine, Some(&dst), span)
}

// ------------------------------------------------------------------ activation

/// The `reduce_cmd` argument.
pub fn reduce_cmd(ctx: &Ctx<'_>, b: &Bound) -> Result<Option<ReduceCmd>, Diagnostic> {
    Ok(b.enum_member(ctx, "reduce_cmd", "reduce_cmd")?
        .and_then(ReduceCmd::from_name))
}

fn activation(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let func = b.act_func(ctx, "op")?.unwrap_or(ActFunc::Copy);
    let (dst, _) = emit::dst_or_new(ctx, b, &data.shape, data.dtype(), Buffer::Sbuf, span)?;
    DATA_DST.check(ctx, b, &[&data, &dst])?;
    let scale = match b.get("scale") {
        None => Scalar::imm(1.0),
        Some(a) => scalar_operand(ctx, &a.value, &data, a.span, "`scale`")?,
    };
    let bias = match b.get("bias") {
        None => None,
        Some(a) => {
            if let Value::Tensor(t) = &a.value
                && t.dtype() == DType::TF32
            {
                return Err(ctx.error(
                    codes::DTYPE,
                    "`bias` cannot be tfloat32",
                    a.span,
                    "tfloat32 bias",
                ));
            }
            Some(scalar_operand(ctx, &a.value, &data, a.span, "`bias`")?)
        }
    };
    let reduce_op = b.alu_op(ctx, "reduce_op")?;
    if let Some(op) = reduce_op
        && op != AluOp::Add
    {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`activation` reduces with `nl.add` only, found `nl.{}`",
                op.name()
            ),
            b.span_of("reduce_op"),
            "not nl.add",
        ));
    }
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&data))?;
    let cmd = match reduce_cmd(ctx, b)? {
        Some(c) => c,
        None if res.is_some() || reduce_op.is_some() => ReduceCmd::ResetReduce,
        None => ReduceCmd::Idle,
    };
    if cmd == ReduceCmd::LoadReduce {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "`activation` has no `load_reduce` (it has no initial value)",
            b.span_of("reduce_cmd"),
            "not available",
        ));
    }
    let kind = OpKind::Activation {
        dst: dst.view.clone(),
        src: data.view.clone(),
        func,
        scale,
        bias,
        reduce_op: if cmd.contributes() || cmd == ReduceCmd::Reset {
            Some(AluOp::Add)
        } else {
            reduce_op
        },
        reduce_cmd: cmd,
        reduce_res: res.map(|t| t.view.clone()),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

// ------------------------------------------------------------------ tensor_reduce

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

fn tensor_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let op = b.alu_op(ctx, "op")?.unwrap_or(AluOp::Add);
    let sd = b.span_of("data");
    let axes = b.ints(ctx, "axis")?.unwrap_or_default();
    let k = trailing_axes(ctx, &axes, &data.shape, b.span_of("axis"))?;
    let keepdims = b.bool_or(ctx, "keepdims", false)?;
    let negate = b.bool_or(ctx, "negate", false)?;
    let kept = data.shape.len() - k;
    let mut shape: Vec<u64> = data.shape[..kept].to_vec();
    if keepdims {
        shape.extend(std::iter::repeat_n(1, k));
    }
    if shape.len() < 2 {
        shape.push(1);
    }
    let (dst, _) = emit::dst_or_new(ctx, b, &shape, data.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    check::operand(ctx, &data, sd, "`data`")?;
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::engine_free_size(ctx, &data, sd, "`data`")?;
    if !op.is_reduction() {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!("`nl.{}` is not a reduction operator", op.name()),
            b.span_of("op"),
            "not a reduction",
        ));
    }
    if negate && op.is_bitvec() {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "`negate` works with arithmetic operators only",
            b.span_of("negate"),
            "bitwise operator",
        ));
    }
    bitvec_dtypes(ctx, op, &[(&data, sd), (&dst, ds)])?;
    let kept_f: u64 = data.shape[1..kept].iter().product();
    if check::partitions(&dst) != check::partitions(&data) || check::free_size(&dst) != kept_f {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "reducing {} over {axes:?} leaves {} partitions × {kept_f} elements, but `dst` is {}",
                shape_text(&data.shape),
                check::partitions(&data),
                shape_text(&dst.shape)
            ),
            ds,
            "wrong result size",
        ));
    }
    let kind = OpKind::TensorReduce {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op,
        last_dims: k as u8,
        negate,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}
