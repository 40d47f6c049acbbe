//! `nki.language` functions without an ISA instruction of their own,
//! composed from existing ops (language.md §9.2, §9.4, §9.6): `sin`,
//! `cos`, `tan`, `floor`, `ceil`, `trunc`, `fmod`, `mod` and `expand_dims`.
//!
//! Lowerings and their domains (the spec leaves these open, §13 q10):
//! * `sin(x)`, `cos(x)` and `tan(x)` reduce the argument first, as isa.md
//!   §2.4 asks of `nl.sin` (ScalarE `sin` has no range reduction):
//!   `k = round((x + phase) / 2π)` through an int32 cast, then
//!   `r = ((x − k·C1) − k·C2) − k·C3` (Cody–Waite with 2π split into two
//!   8-bit parts and a float32 rest, so the products are exact for
//!   |k| < 2¹⁶); where the rounded quotient crossed a half-integer `r` is
//!   moved back by one period, then clamped to [−π, π] − phase, and ScalarE
//!   `activation(sin, bias=phase)` with phase 0 for `sin` and π/2 for `cos`;
//!   `tan` reduces by π into [−π/2, π/2] and computes
//!   `sin(r) · (1 / sin(r + π/2))`;
//! * `floor`, `ceil` round to the nearest integer through an int32 tile
//!   (engine casts round to nearest even, docs/numerics.md) and correct by
//!   one where that went the wrong way: `floor = r − (r > x)`,
//!   `ceil = r + (r < x)`; `trunc(x) = sign(x) · floor(|x|)`. Exact for
//!   |x| < 2³¹ (larger floats are integers already, but the int32 round
//!   trip saturates);
//! * `fmod(x, y) = x − y · trunc(x / y)` (sign of the dividend, C `fmod`)
//!   and `mod(x, y) = x − y · floor(x / y)` (sign of the divisor, Python
//!   `%`), with `x / y` as `x · (1 / y)`. The rounded quotient can make
//!   the integer part one too large or too small (exact multiples land
//!   just beside the integer), so the remainder is then corrected once:
//!   one on the wrong side of zero gets `y` back, one as large as `|y|`
//!   loses `y` (for `fmod`, `|y|` towards the sign of `x`). Exact
//!   multiples of `y` give 0, as NumPy does; other results can differ
//!   from exact arithmetic in the last place;
//! * `expand_dims(x, axis)` is a view with a size-1 dim inserted (no op);
//! * legacy `loop_reduce(x, op, loop_indices)` reduces `x` into the tile its
//!   result is assigned to (`b = nl.loop_reduce(...)` with `b` a tile,
//!   `t[i] = nl.loop_reduce(...)`), which is also `op`'s other operand:
//!   `dst = dst op x`, one VectorE `tensor_tensor` per call. Over the
//!   iterations of the named loops this reduces `x` across them, from the
//!   value the kernel gave `dst` before the loop. Until it is assigned, the
//!   call is a [`PendingLoopReduce`]; any other use is an error.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::{ActFunc, AluOp, DType, Engine};

use super::check;
use super::codes;
use super::lower::{self, Operand};
use super::nl_math::{
    BINARY_PARAMS, UNARY_PARAMS, activation_kind, done, operand, product, push, result, temp,
};
use super::rules;
use super::table::{ApiDef, Bound, Kind, NO_ENGINE, OUT_DTYPE, SHAPE, X, opt, req};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const VECTOR_SCALAR: &[Engine] = &[Engine::Vector, Engine::Scalar];
const VECTOR: &[Engine] = &[Engine::Vector];

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nl.sin",
        UNARY_PARAMS,
        VECTOR_SCALAR,
        "The sine: the argument is reduced to [−π, π] on VectorE (Cody–Waite, three-part 2π), then ScalarE `activation(sin)`.",
        &[
            "`x` is an SBUF/PSUM tile with at most 128 partitions.",
            "Accurate to about 3e-7 absolute for |x| < 2¹⁶·2π ≈ 4·10⁵, where the reduction is exact; larger |x| lose accuracy gradually (|x| ≥ 2³¹·2π saturates the int32 quotient).",
        ],
        sin,
    ),
    ApiDef::new(
        "nl.cos",
        UNARY_PARAMS,
        VECTOR_SCALAR,
        "`cos(x) = sin(x + π/2)`, with `x + π/2` reduced to [−π, π] as for `nl.sin` (the π/2 is added by the activation's bias after the reduction).",
        &[
            "`x` is an SBUF/PSUM tile with at most 128 partitions.",
            "Accurate as `nl.sin`.",
        ],
        cos,
    ),
    ApiDef::new(
        "nl.tan",
        UNARY_PARAMS,
        VECTOR_SCALAR,
        "`tan(x) = sin(r) / cos(r)` with `r = x − kπ` in [−π/2, π/2] (reduced as for `nl.sin`, with π), two ScalarE activations, a VectorE reciprocal and a multiply.",
        &[
            "`x` is an SBUF/PSUM tile with at most 128 partitions.",
            "About 3e-7 absolute error in each of sin and cos of the reduced argument (so about 2e-5 relative where |cos x| ≥ 0.01), for |x| < 2¹⁶·π ≈ 2·10⁵.",
        ],
        tan,
    ),
    ApiDef::new(
        "nl.floor",
        UNARY_PARAMS,
        VECTOR,
        "The largest integer ≤ `x`: round through int32, minus one where that rounded up.",
        &["Exact for |x| < 2³¹."],
        rounding,
    ),
    ApiDef::new(
        "nl.ceil",
        UNARY_PARAMS,
        VECTOR,
        "The smallest integer ≥ `x`: round through int32, plus one where that rounded down.",
        &["Exact for |x| < 2³¹."],
        rounding,
    ),
    ApiDef::new(
        "nl.trunc",
        UNARY_PARAMS,
        VECTOR,
        "`x` rounded toward zero: `sign(x) · floor(|x|)`.",
        &["Exact for |x| < 2³¹."],
        rounding,
    ),
    ApiDef::new(
        "nl.fmod",
        BINARY_PARAMS,
        VECTOR,
        "The remainder with the sign of the dividend (C `fmod`): `x − y · trunc(x / y)`.",
        &[
            "At least one operand is a tile; tiles agree in shape as for `nl.add`.",
            "|x / y| < 2³¹.",
        ],
        remainder,
    ),
    ApiDef::new(
        "nl.mod",
        BINARY_PARAMS,
        VECTOR,
        "The remainder with the sign of the divisor (Python `%`): `x − y · floor(x / y)`.",
        &[
            "At least one operand is a tile; tiles agree in shape as for `nl.add`.",
            "|x / y| < 2³¹.",
        ],
        remainder,
    ),
    ApiDef::new(
        "tensor.broadcast_to",
        &[X, SHAPE, OUT_DTYPE],
        &[Engine::Vector, Engine::Tensor],
        "`t.broadcast_to(shape)` is `nl.broadcast_to(t, shape)`.",
        &["The `nl.broadcast_to` rules apply."],
        super::nl_math::broadcast_to,
    ),
    ApiDef::new(
        "nl.expand_dims",
        &[X, req("axis", Kind::Int)],
        NO_ENGINE,
        "A view of `x` with a size-1 dim inserted at `axis` (no data moves).",
        &["On-chip tiles keep their partition dim first: `axis ≥ 1`."],
        expand_dims,
    ),
    ApiDef::new(
        "nl.loop_reduce",
        &[
            X,
            req("op", Kind::AluOp),
            req("loop_indices", Kind::Any),
            OUT_DTYPE,
            super::table::opt("mask", Kind::Any, "None"),
        ],
        VECTOR,
        "Legacy: `dst = dst op x` into the tile the result is assigned to, so that over the iterations of `loop_indices` it reduces `x` (one VectorE `tensor_tensor`).",
        &[
            "The result is assigned to a tile (`b = …` where `b` is a tile, or `t[...] = …`) of `x`'s shape; any other use is an error.",
            "`loop_indices` is not checked: the loop structure is the kernel's.",
            "`dtype=` is accepted; the result has the dtype of the tile it is assigned to.",
            "`mask=` is not supported.",
        ],
        loop_reduce,
    ),
    ApiDef::new(
        "ncc.sbuf.alloc",
        &[req("func", Kind::Any)],
        NO_ENGINE,
        "Legacy direct allocation (`buffer=ncc.sbuf.alloc(func)`): nkic allocates the tensor itself, so this is `nl.sbuf` (see the module doc).",
        &[],
        legacy_sbuf,
    ),
    ApiDef::new(
        "ncc.sbuf.mod_alloc",
        &[
            req("base_addr", Kind::Int),
            opt("base_partition", Kind::Int, "0"),
            opt("num_par_tiles", Kind::Ints, "()"),
            opt("num_free_tiles", Kind::Ints, "()"),
        ],
        NO_ENGINE,
        "Legacy modulo allocation in SBUF: nkic allocates the tensor itself, so this is `nl.sbuf`.",
        &[],
        legacy_sbuf,
    ),
    ApiDef::new(
        "ncc.sbuf.auto_alloc",
        &[],
        NO_ENGINE,
        "Legacy automatic SBUF allocation: `nl.sbuf`.",
        &[],
        legacy_sbuf,
    ),
    ApiDef::new(
        "ncc.psum.alloc",
        &[req("func", Kind::Any)],
        NO_ENGINE,
        "Legacy direct allocation in PSUM: nkic allocates the tensor itself, so this is `nl.psum`.",
        &[],
        legacy_psum,
    ),
    ApiDef::new(
        "ncc.psum.mod_alloc",
        &[
            req("base_bank", Kind::Int),
            opt("base_addr", Kind::Int, "0"),
            opt("base_partition", Kind::Int, "0"),
            opt("num_bank_tiles", Kind::Ints, "()"),
            opt("num_par_tiles", Kind::Ints, "()"),
            opt("num_free_tiles", Kind::Ints, "()"),
        ],
        NO_ENGINE,
        "Legacy modulo allocation in PSUM: nkic allocates the tensor itself, so this is `nl.psum`.",
        &[],
        legacy_psum,
    ),
    ApiDef::new(
        "ncc.psum.auto_alloc",
        &[],
        NO_ENGINE,
        "Legacy automatic PSUM allocation: `nl.psum`.",
        &[],
        legacy_psum,
    ),
    ApiDef::new(
        "ncc.skip_middle_end_transformations",
        &[req("func", Kind::Any)],
        NO_ENGINE,
        "A legacy compiler-pass decorator; nkic has no such passes, so it returns the function unchanged.",
        &[],
        identity_decorator,
    ),
    ApiDef::new(
        "nl.device_print",
        &[req("prefix", Kind::Str), req("tensor", Kind::Tensor)],
        NO_ENGINE,
        "Prints a tensor at run time. nkic has no run-time print yet: the call is checked, reported with a warning (E0524) and records nothing.",
        &["`prefix` is a compile-time string; `tensor` is an SBUF or HBM tensor."],
        device_print,
    ),
];

/// A legacy `nl.loop_reduce` call not yet assigned (module doc).
#[derive(Debug)]
pub struct PendingLoopReduce {
    x: Rc<Tensor>,
    op: AluOp,
    /// The call.
    pub span: Span,
}

crate::value::api_object!(PendingLoopReduce, "loop_reduce result");

impl PendingLoopReduce {
    /// The pending call in `v`, if it is one.
    pub fn of(v: &Value) -> Option<&Self> {
        match v {
            Value::Ext(e) => e.as_any().downcast_ref::<Self>(),
            _ => None,
        }
    }

    /// Records `dst = dst op x` for the assignment at `span`.
    pub fn record(
        &self,
        ctx: &mut Ctx<'_>,
        dst: &Rc<Tensor>,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if !dst.buffer.is_on_chip() {
            return Err(check::tensor_error(
                ctx,
                codes::BUFFER,
                "`nl.loop_reduce` reduces into an SBUF or PSUM tile, found",
                dst,
                span,
                "not on chip",
            ));
        }
        if dst.shape != self.x.shape {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "`nl.loop_reduce` of a {} tile is assigned to {}",
                    check::shape_text(&self.x.shape),
                    check::describe(dst)
                ),
                span,
                "shapes differ",
            ));
        }
        lower::elementwise(
            ctx,
            self.op,
            &Operand::Tile(dst.clone()),
            &Operand::Tile(self.x.clone()),
            Some(dst.clone()),
            None,
            self.span,
        )?;
        Ok(())
    }

    /// The error for a use other than an assignment to a tile.
    pub fn unassigned(&self, ctx: &Ctx<'_>) -> Diagnostic {
        ctx.error(
            codes::LEGACY,
            "the result of `nl.loop_reduce` must be assigned to the tile it reduces into",
            self.span,
            "not assigned to a tile",
        )
        .with_help("write `acc = nl.loop_reduce(x, op, loop_indices=[i])` with `acc` a tile made before the loop, or `acc[...] = nl.loop_reduce(...)`")
    }
}

fn loop_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    check::operand(ctx, &x, b.span_of("x"), "`x`")?;
    let op = b.alu_op(ctx, "op")?.expect("required");
    if !matches!(b.value("mask"), Value::None) {
        return Err(ctx.error(
            codes::LEGACY,
            "`mask=` of `nl.loop_reduce` is not supported",
            b.span_of("mask"),
            "mask",
        ));
    }
    Ok(Value::Ext(Rc::new(PendingLoopReduce { x, op, span })))
}

fn unary_input(ctx: &Ctx<'_>, b: &Bound) -> Result<(Rc<Tensor>, DType), Diagnostic> {
    let x = rules::input_tile(ctx, b, "x")?;
    let dt = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    Ok((x, dt))
}

/// The period 2π split for Cody–Waite reduction: `C1` and `C2` have 8
/// significant bits, so `k · C1` and `k · C2` are exact for |k| < 2¹⁶, and
/// `C3` is the rest (2π − C1 − C2 to float32). `C1 + C2 + C3` matches 2π to
/// about 2⁻⁴⁰ relative.
const TWO_PI_1: f32 = 6.28125;
const TWO_PI_2: f32 = 253.0 / 131072.0;
const TWO_PI_3: f32 = (std::f64::consts::TAU - 6.28125 - 253.0 / 131072.0) as f32;
/// The largest float32 below π: reduced arguments are clamped to
/// [−PI_DOWN, PI_DOWN] so that rounding never leaves ScalarE `sin`'s domain.
const PI_DOWN: f32 = f32::from_bits(std::f32::consts::PI.to_bits() - 1);

/// Reduces `x + phase` by whole periods (2π, or π when `half`) into a new
/// float32 tile `r` with `r + phase` in [−π, π] (or [−π/2, π/2] when
/// `half`): `k = round((x + phase) / period)` through an int32 cast
/// (engine casts round to nearest), then `r = ((x − k·C1) − k·C2) − k·C3`
/// with one `scalar_tensor_tensor` per part, one period back where `k`
/// was rounded the wrong way, and a final clamp.
fn reduce_angle(
    ctx: &mut Ctx<'_>,
    x: &Rc<Tensor>,
    phase: f32,
    half: bool,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let f = if half { 0.5 } else { 1.0 };
    let period = std::f64::consts::TAU * f64::from(f);
    let shape = x.shape.clone();
    let q = temp(ctx, &shape, DType::F32, span)?;
    push(
        ctx,
        OpKind::TensorScalar {
            dst: q.view.clone(),
            src: x.view.clone(),
            op0: AluOp::Add,
            operand0: Some(Scalar::imm(phase)),
            reverse0: false,
            op1: Some(AluOp::Multiply),
            operand1: Some(Scalar::imm((1.0 / period) as f32)),
            reverse1: false,
        },
        None,
        span,
    )?;
    let k_int = temp(ctx, &shape, DType::I32, span)?;
    push(
        ctx,
        OpKind::TensorCopy {
            dst: k_int.view.clone(),
            src: q.view.clone(),
        },
        None,
        span,
    )?;
    let k = temp(ctx, &shape, DType::F32, span)?;
    push(
        ctx,
        OpKind::TensorCopy {
            dst: k.view.clone(),
            src: k_int.view.clone(),
        },
        None,
        span,
    )?;
    // r = r − k·C, as `src1 − (k · C)` (reverse1).
    let mut r = x.clone();
    for c in [TWO_PI_1, TWO_PI_2, TWO_PI_3] {
        let next = temp(ctx, &shape, DType::F32, span)?;
        push(
            ctx,
            OpKind::ScalarTensorTensor {
                dst: next.view.clone(),
                src: k.view.clone(),
                op0: AluOp::Multiply,
                operand0: Scalar::imm(c * f),
                reverse0: false,
                op1: AluOp::Subtract,
                src1: r.view.clone(),
                reverse1: true,
            },
            None,
            span,
        )?;
        r = next;
    }
    // `k` is off by one where `(x + phase) / period` rounded across a
    // half-integer: move such an `r` back by one period,
    // `r += period · ((r < lo) − (r > hi))`.
    let (lo, hi) = (
        -std::f32::consts::PI * f - phase,
        std::f32::consts::PI * f - phase,
    );
    let above = temp(ctx, &shape, DType::F32, span)?;
    push(
        ctx,
        lower::tensor_scalar1(
            &above.view,
            &r.view,
            AluOp::Greater,
            Some(Scalar::imm(hi)),
            false,
        ),
        None,
        span,
    )?;
    let wrap = temp(ctx, &shape, DType::F32, span)?;
    push(
        ctx,
        OpKind::ScalarTensorTensor {
            dst: wrap.view.clone(),
            src: r.view.clone(),
            op0: AluOp::Less,
            operand0: Scalar::imm(lo),
            reverse0: false,
            op1: AluOp::Subtract,
            src1: above.view.clone(),
            reverse1: false,
        },
        None,
        span,
    )?;
    let wrapped = temp(ctx, &shape, DType::F32, span)?;
    push(
        ctx,
        OpKind::ScalarTensorTensor {
            dst: wrapped.view.clone(),
            src: wrap.view.clone(),
            op0: AluOp::Multiply,
            operand0: Scalar::imm(period as f32),
            reverse0: false,
            op1: AluOp::Add,
            src1: r.view.clone(),
            reverse1: false,
        },
        None,
        span,
    )?;
    let r = wrapped;
    let limit = PI_DOWN * f;
    let clamped = temp(ctx, &shape, DType::F32, span)?;
    push(
        ctx,
        OpKind::TensorScalar {
            dst: clamped.view.clone(),
            src: r.view.clone(),
            op0: AluOp::Maximum,
            operand0: Some(Scalar::imm(-limit - phase)),
            reverse0: false,
            op1: Some(AluOp::Minimum),
            operand1: Some(Scalar::imm(limit - phase)),
            reverse1: false,
        },
        None,
        span,
    )?;
    Ok(clamped)
}

/// `sin(r + phase)` into `dst` (ScalarE; `r + phase` is in its domain).
fn sin_into(
    ctx: &mut Ctx<'_>,
    dst: &Tensor,
    r: &Tensor,
    phase: f32,
    span: Span,
) -> Result<(), Diagnostic> {
    let bias = (phase != 0.0).then(|| Scalar::imm(phase));
    push(
        ctx,
        activation_kind(dst, r, ActFunc::Sin, bias, None),
        None,
        span,
    )
}

fn sin(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (x, dt) = unary_input(ctx, b)?;
    let r = reduce_angle(ctx, &x, 0.0, false, span)?;
    let dst = result(ctx, b, &x.shape, dt, span)?;
    sin_into(ctx, &dst, &r, 0.0, span)?;
    Ok(done(b, &dst))
}

fn cos(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (x, dt) = unary_input(ctx, b)?;
    let phase = std::f32::consts::FRAC_PI_2;
    let r = reduce_angle(ctx, &x, phase, false, span)?;
    let dst = result(ctx, b, &x.shape, dt, span)?;
    sin_into(ctx, &dst, &r, phase, span)?;
    Ok(done(b, &dst))
}

fn tan(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (x, dt) = unary_input(ctx, b)?;
    let r = reduce_angle(ctx, &x, 0.0, true, span)?;
    let s = temp(ctx, &x.shape, DType::F32, span)?;
    let c = temp(ctx, &x.shape, DType::F32, span)?;
    sin_into(ctx, &s, &r, 0.0, span)?;
    sin_into(ctx, &c, &r, std::f32::consts::FRAC_PI_2, span)?;
    push(
        ctx,
        OpKind::Reciprocal {
            dst: c.view.clone(),
            src: c.view.clone(),
        },
        None,
        span,
    )?;
    product(ctx, b, &x.shape, (s, c), dt, span)
}

/// `floor` (`up = false`) or `ceil` (`up = true`) of `x` into a new
/// float32 tile.
fn floor_or_ceil(
    ctx: &mut Ctx<'_>,
    x: &Rc<Tensor>,
    up: bool,
    dst: Option<Rc<Tensor>>,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let shape = x.shape.clone();
    let r_int = temp(ctx, &shape, DType::I32, span)?;
    push(
        ctx,
        OpKind::TensorCopy {
            dst: r_int.view.clone(),
            src: x.view.clone(),
        },
        None,
        span,
    )?;
    let r = temp(ctx, &shape, DType::F32, span)?;
    push(
        ctx,
        OpKind::TensorCopy {
            dst: r.view.clone(),
            src: r_int.view.clone(),
        },
        None,
        span,
    )?;
    // `fix` is 1.0 where rounding went the wrong way.
    let cmp = if up { AluOp::Less } else { AluOp::Greater };
    let fix = lower::elementwise(
        ctx,
        cmp,
        &Operand::Tile(r.clone()),
        &Operand::Tile(x.clone()),
        None,
        Some(DType::F32),
        span,
    )?;
    let op = if up { AluOp::Add } else { AluOp::Subtract };
    let out_dt = dst.as_ref().map_or(DType::F32, |d| d.dtype());
    lower::elementwise(
        ctx,
        op,
        &Operand::Tile(r),
        &Operand::Tile(fix),
        dst,
        Some(out_dt),
        span,
    )
}

/// `trunc(x) = sign(x) · floor(|x|)`.
fn trunc_of(
    ctx: &mut Ctx<'_>,
    x: &Rc<Tensor>,
    dst: Option<Rc<Tensor>>,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let a = temp(ctx, &x.shape, DType::F32, span)?;
    push(
        ctx,
        activation_kind(&a, x, ActFunc::Abs, None, None),
        None,
        span,
    )?;
    let sg = temp(ctx, &x.shape, DType::F32, span)?;
    push(
        ctx,
        activation_kind(&sg, x, ActFunc::Sign, None, None),
        None,
        span,
    )?;
    let fl = floor_or_ceil(ctx, &a, false, None, span)?;
    let out_dt = dst.as_ref().map_or(DType::F32, |d| d.dtype());
    lower::elementwise(
        ctx,
        AluOp::Multiply,
        &Operand::Tile(fl),
        &Operand::Tile(sg),
        dst,
        Some(out_dt),
        span,
    )
}

fn rounding(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (x, dt) = unary_input(ctx, b)?;
    let dst = result(ctx, b, &x.shape, dt, span)?;
    match b.def.name {
        "nl.floor" => floor_or_ceil(ctx, &x, false, Some(dst.clone()), span)?,
        "nl.ceil" => floor_or_ceil(ctx, &x, true, Some(dst.clone()), span)?,
        _ => trunc_of(ctx, &x, Some(dst.clone()), span)?,
    };
    Ok(done(b, &dst))
}

fn remainder(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = operand(ctx, b, "x")?;
    let y = operand(ctx, b, "y")?;
    let (shape, in_dt) = match (&x, &y) {
        (Operand::Tile(a), Operand::Tile(c)) => (
            if check::free_size(a) >= check::free_size(c) {
                a.shape.clone()
            } else {
                c.shape.clone()
            },
            lower::promote(a.dtype(), c.dtype()),
        ),
        (Operand::Tile(t), Operand::Num(_)) | (Operand::Num(_), Operand::Tile(t)) => {
            (t.shape.clone(), t.dtype())
        }
        (Operand::Num(_), Operand::Num(_)) => {
            return Err(ctx.error(
                codes::OPERATOR,
                format!("`{}` needs at least one tile operand", b.def.name),
                b.span,
                "no tile",
            ));
        }
    };
    let dt = b.dtype(ctx, "dtype")?.unwrap_or(in_dt);
    // q = x / y as x · (1 / y).
    let inv_y = match &y {
        Operand::Num(n) => {
            if *n == 0.0 {
                return Err(ctx.error(
                    codes::VALUE,
                    format!("`{}` by zero", b.def.name),
                    b.span_of("y"),
                    "zero divisor",
                ));
            }
            Operand::Num(1.0 / n)
        }
        Operand::Tile(t) => {
            let r = temp(ctx, &t.shape, DType::F32, span)?;
            push(
                ctx,
                OpKind::Reciprocal {
                    dst: r.view.clone(),
                    src: t.view.clone(),
                },
                None,
                span,
            )?;
            Operand::Tile(r)
        }
    };
    let q = lower::elementwise(
        ctx,
        AluOp::Multiply,
        &x,
        &inv_y,
        None,
        Some(DType::F32),
        span,
    )?;
    let whole = if b.def.name == "nl.fmod" {
        trunc_of(ctx, &q, None, span)?
    } else {
        floor_or_ceil(ctx, &q, false, None, span)?
    };
    let prod = lower::elementwise(
        ctx,
        AluOp::Multiply,
        &Operand::Tile(whole),
        &y,
        None,
        Some(DType::F32),
        span,
    )?;
    let r0 = ew(ctx, AluOp::Subtract, &x, &Operand::Tile(prod), span)?;
    let dst = result(ctx, b, &shape, dt, span)?;
    correct_remainder(ctx, b.def.name == "nl.fmod", &x, &y, r0, &dst, span)?;
    Ok(done(b, &dst))
}

/// One float32 element-wise op into a fresh temporary.
fn ew(
    ctx: &mut Ctx<'_>,
    op: AluOp,
    a: &Operand,
    c: &Operand,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    lower::elementwise(ctx, op, a, c, None, Some(DType::F32), span)
}

/// `|t|` as a float32 temporary (ScalarE `abs`).
fn abs_of(ctx: &mut Ctx<'_>, t: &Rc<Tensor>, span: Span) -> Result<Rc<Tensor>, Diagnostic> {
    let a = temp(ctx, &t.shape, DType::F32, span)?;
    push(
        ctx,
        activation_kind(&a, t, ActFunc::Abs, None, None),
        None,
        span,
    )?;
    Ok(a)
}

/// Corrects `r0 = x − y·k` into `dst` when the rounded quotient made `k`
/// one too large or too small (as it does for exact multiples, where
/// `x · (1 / y)` lands just beside the integer): a remainder on the wrong
/// side of zero gets one `y` back, and one as large as `|y|` loses one.
/// `mod` keeps the sign of `y`, `fmod` the sign of `x`.
fn correct_remainder(
    ctx: &mut Ctx<'_>,
    fmod: bool,
    x: &Operand,
    y: &Operand,
    r0: Rc<Tensor>,
    dst: &Rc<Tensor>,
    span: Span,
) -> Result<(), Diagnostic> {
    // `step` is the multiple of `y` that moves the remainder towards the
    // sign it must have: `y` for `mod`, `|y| · sign(x)` for `fmod`.
    let abs_y = match y {
        Operand::Num(n) => Operand::Num(n.abs()),
        Operand::Tile(t) => Operand::Tile(abs_of(ctx, t, span)?),
    };
    let (step, sign_ref) = if fmod {
        let sign_x = match x {
            Operand::Num(n) => Operand::Num(if *n > 0.0 {
                1.0
            } else if *n < 0.0 {
                -1.0
            } else {
                0.0
            }),
            Operand::Tile(t) => {
                let sg = temp(ctx, &t.shape, DType::F32, span)?;
                push(
                    ctx,
                    activation_kind(&sg, t, ActFunc::Sign, None, None),
                    None,
                    span,
                )?;
                Operand::Tile(sg)
            }
        };
        let step = match (&abs_y, &sign_x) {
            (Operand::Num(a), Operand::Num(s)) => Operand::Num(a * s),
            _ => Operand::Tile(ew(ctx, AluOp::Multiply, &abs_y, &sign_x, span)?),
        };
        (step, x.clone())
    } else {
        (y.clone(), y.clone())
    };
    let r0 = Operand::Tile(r0);
    let prod = ew(ctx, AluOp::Multiply, &r0, &sign_ref, span)?;
    let wrong_side = ew(
        ctx,
        AluOp::Less,
        &Operand::Tile(prod),
        &Operand::Num(0.0),
        span,
    )?;
    let back = ew(
        ctx,
        AluOp::Multiply,
        &Operand::Tile(wrong_side),
        &step,
        span,
    )?;
    let r1 = ew(ctx, AluOp::Add, &r0, &Operand::Tile(back), span)?;
    let abs_r = abs_of(ctx, &r1, span)?;
    let r1 = Operand::Tile(r1);
    let too_big = ew(
        ctx,
        AluOp::GreaterEqual,
        &Operand::Tile(abs_r),
        &abs_y,
        span,
    )?;
    let over = ew(ctx, AluOp::Multiply, &Operand::Tile(too_big), &step, span)?;
    lower::elementwise(
        ctx,
        AluOp::Subtract,
        &r1,
        &Operand::Tile(over),
        Some(dst.clone()),
        Some(dst.dtype()),
        span,
    )?;
    Ok(())
}

fn expand_dims(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let n = x.shape.len() as i64;
    let a = b.int(ctx, "axis")?.unwrap_or(0);
    let axis = if a < 0 { a + n + 1 } else { a };
    if axis < 0 || axis > n || x.shape.len() >= nkic_ir::MAX_VIEW_DIMS {
        return Err(ctx.error(
            codes::AXIS,
            format!(
                "cannot insert axis {a} into shape {}",
                check::shape_text(&x.shape)
            ),
            b.span_of("axis"),
            "bad axis",
        ));
    }
    if x.buffer.is_on_chip() && axis == 0 {
        return Err(check::tensor_error(
            ctx,
            codes::PARTITION_VIEW,
            "`expand_dims` at axis 0 would move the partition dim of",
            &x,
            b.span_of("axis"),
            "partition dim first",
        ));
    }
    let Some(view) = x.view.insert_dim(axis as usize) else {
        return Err(ctx.error(
            codes::AXIS,
            "cannot insert the axis",
            b.span_of("axis"),
            "bad axis",
        ));
    };
    let shape = view.dims.iter().map(|d| d.count).collect();
    Ok(Value::tensor(Tensor {
        view,
        shape,
        buffer: x.buffer,
    }))
}

fn legacy_sbuf(_ctx: &mut Ctx<'_>, _b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(Value::Buffer(Buffer::Sbuf))
}

fn legacy_psum(_ctx: &mut Ctx<'_>, _b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(Value::Buffer(Buffer::Psum))
}

fn identity_decorator(_ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(b.value("func"))
}

fn device_print(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let prefix = b.string(ctx, "prefix")?.unwrap_or_default();
    let t = b.tensor(ctx, "tensor")?;
    if t.buffer == Buffer::Psum {
        return Err(check::tensor_error(
            ctx,
            codes::BUFFER,
            "`nl.device_print` prints SBUF or HBM tensors, found",
            &t,
            b.span_of("tensor"),
            "in psum",
        ));
    }
    let d = Diagnostic::warning(
        codes::UNSUPPORTED,
        format!(
            "`nl.device_print(\"{prefix}\", …)` is not supported by nkic yet and prints nothing"
        ),
    )
    .with_primary(ctx.file(), span, "ignored")
    .with_note("nkic has no run-time print; the kernel's results are unaffected");
    ctx.warnings.push(d);
    Ok(Value::None)
}
