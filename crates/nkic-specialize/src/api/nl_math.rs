//! `nki.language` element-wise math, comparisons, reductions, softmax,
//! rms_norm, where and broadcast_to (owned by helper `spec-api-2`), lowered as
//! language.md §9.2–§9.6 suggests; the functions without an ISA
//! instruction of their own, composed from existing ops (language.md §9.2,
//! §9.4, §9.6): `sin`, `cos`, `tan`, `floor`, `ceil`, `trunc`, `fmod` and
//! `mod`; and the legacy `loop_reduce`.
//!
//! Every function here but `loop_reduce` returns a new SBUF tile. Binary functions lower
//! through [`lower::elementwise`], so `nl.add(a, b)` and `a + b` give
//! the same IR: tile ⊕ number and tile ⊕ `(P, 1)` tile → `tensor_scalar`,
//! tile ⊕ tile of equal size → `tensor_tensor`. The function entries are
//! also the operator constants (`op=nl.add`, `op=nl.exp`): the ALU and
//! activation conversions go by name.
//!
//! Choices where the spec is silent:
//! * the result dtype is `dtype=` if given, else the legacy promotion of
//!   two tiles (language.md §7.1), else the tile's dtype (a fractional
//!   number with an integer tile gives float32), as for Python operators;
//! * `divide` by a number multiplies by its reciprocal; a tile divisor is
//!   inverted first with a VectorE `reciprocal` (the ALU has no divide);
//! * `sin` is a plain ScalarE `activation(sin)`: its input must already
//!   lie in [−π, π] (the range reduction is left to the kernel);
//! * `rsqrt` runs on GpSimd (`tensor_scalar(op0=rsqrt)`, the precise
//!   form) unless its input is in PSUM, which GpSimd cannot read; then
//!   it is a ScalarE `activation(rsqrt)`;
//! * `reciprocal` runs on VectorE (`tensor_scalar(op0=reciprocal)`);
//! * reductions accumulate in the result dtype, except `mean`, which sums
//!   into a float32 intermediate before scaling by 1/n;
//! * `softmax` and `rms_norm` reduce over all free dims of the tile (the
//!   ScalarE accumulator sums whole rows), so `axis` must name them all;
//!   their intermediates are float32; `rms_norm`'s `w` has `x`'s shape or
//!   is a `(P, 1)` tile;
//! * `where` copies `y` into the result and then copies `x` over it where
//!   `cond` is non-zero (`tensor_copy_predicated`); a condition that is not
//!   an unsigned integer tile (a float 1.0/0.0 mask from `nl.greater`) is
//!   first turned into a uint8 tile with `tensor_scalar(not_equal, 0)`;
//! * `broadcast_to` always materializes a new SBUF tile (unless nothing
//!   changes); the partition dim is spread with a TensorE matmul against a
//!   ones row (language.md §9.6) for float SBUF rows of at most 512
//!   elements, else bit for bit with quadrant shuffles.
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
//! * legacy `loop_reduce(x, op, loop_indices)` reduces `x` into the tile its
//!   result is assigned to (`b = nl.loop_reduce(...)` with `b` a tile,
//!   `t[i] = nl.loop_reduce(...)`), which is also `op`'s other operand:
//!   `dst = dst op x`, one VectorE `tensor_tensor` per call. Over the
//!   iterations of the named loops this reduces `x` across them, from the
//!   value the kernel gave `dst` before the loop. Until it is assigned, the
//!   call is a [`PendingLoopReduce`]; any other use is an error.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, Op, OpKind, Scalar};
use nkic_isa::{ActFunc, AluOp, DType, Engine, ReduceCmd};

use super::check::{self, shape_text};
use super::codes;
use super::consts;
use super::emit;
use super::isa::tensor_engine;
use super::lower::{self, Operand};
use super::rules;
use super::table::{AXIS, ApiDef, Bound, KEEPDIMS, Kind, OP, OUT_DTYPE, Param, SHAPE, X, opt, req};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const VEC_POOL: &[Engine] = &[Engine::Vector, Engine::GpSimd];
const VECTOR: &[Engine] = &[Engine::Vector];
const SCALAR: &[Engine] = &[Engine::Scalar];
const GPSIMD_SCALAR: &[Engine] = &[Engine::GpSimd, Engine::Scalar];
const VECTOR_SCALAR: &[Engine] = &[Engine::Vector, Engine::Scalar];

/// `x` and `y`: the tile-or-number operands of a binary function.
const X_OPERAND: Param = req("x", Kind::Operand);
const Y_OPERAND: Param = req("y", Kind::Operand);

pub(super) const BINARY_PARAMS: &[Param] = &[X_OPERAND, Y_OPERAND, OUT_DTYPE];

pub(super) const UNARY_PARAMS: &[Param] = &[X, OUT_DTYPE];

const REDUCE_PARAMS: &[Param] = &[X, AXIS, OUT_DTYPE, KEEPDIMS];

const BINARY_RULES: &[&str] = &[
    "At least one operand is an SBUF/PSUM tile; the other is a number, a `(P, 1)` tile or a tile of equal partition count and free size.",
    "Two tile operands are not both in PSUM.",
];

const BITWISE_RULES: &[&str] = &[
    "At least one operand is an SBUF/PSUM tile; the other is a number, a `(P, 1)` tile or a tile of equal partition count and free size.",
    "Operands and result have integer dtypes.",
];

macro_rules! binary {
    ($name:literal, $engines:expr, $summary:literal, $rules:expr) => {
        ApiDef::new($name, BINARY_PARAMS, $engines, $summary, $rules, binary)
    };
}

macro_rules! act {
    ($name:literal, $summary:literal) => {
        ApiDef::new(
            $name,
            UNARY_PARAMS,
            SCALAR,
            $summary,
            &[
                "`x` is an SBUF/PSUM tile with at most 128 partitions.",
                "The input ranges of isa.md §2.4 apply.",
            ],
            unary,
        )
    };
}

macro_rules! reduce {
    ($name:literal, $summary:literal) => {
        ApiDef::new(
            $name,
            REDUCE_PARAMS,
            VECTOR,
            $summary,
            &[
                "`x` is an SBUF/PSUM tile.",
                "`axis` names the trailing free dims ending at the last dim (never dim 0): `1`, `(1, 2)`, `(1, 2, 3)` …",
            ],
            reduce,
        )
    };
}

/// The element-wise, reduction and normalization functions, registered in
/// `table::REGISTRY` (the composed ones and `loop_reduce` follow below).
pub const DEFS: &[ApiDef] = &[
    binary!("nl.add", VEC_POOL, "`x + y` element-wise.", BINARY_RULES),
    binary!(
        "nl.subtract",
        VEC_POOL,
        "`x - y` element-wise.",
        BINARY_RULES
    ),
    binary!(
        "nl.multiply",
        VEC_POOL,
        "`x * y` element-wise.",
        BINARY_RULES
    ),
    binary!(
        "nl.divide",
        VEC_POOL,
        "`x / y` element-wise: multiplication by `1/y` (a VectorE `reciprocal` first when `y` is a tile).",
        BINARY_RULES
    ),
    binary!(
        "nl.maximum",
        VEC_POOL,
        "The larger of `x` and `y` element-wise.",
        BINARY_RULES
    ),
    binary!(
        "nl.minimum",
        VEC_POOL,
        "The smaller of `x` and `y` element-wise.",
        BINARY_RULES
    ),
    binary!(
        "nl.power",
        VEC_POOL,
        "`x ** y` element-wise (GpSimd for two tiles).",
        &[
            "At least one operand is an SBUF/PSUM tile; the other is a number, a `(P, 1)` tile or a tile of equal partition count and free size.",
            "Two tile operands run on GpSimd, which cannot access PSUM.",
        ]
    ),
    binary!(
        "nl.abs_max",
        VEC_POOL,
        "The operand of larger magnitude, signed (`y` on ties).",
        BINARY_RULES
    ),
    binary!(
        "nl.abs_min",
        VEC_POOL,
        "The operand of smaller magnitude, signed (`y` on ties).",
        BINARY_RULES
    ),
    binary!(
        "nl.equal",
        VEC_POOL,
        "1 where `x == y`, else 0.",
        BINARY_RULES
    ),
    binary!(
        "nl.not_equal",
        VEC_POOL,
        "1 where `x != y`, else 0.",
        BINARY_RULES
    ),
    binary!(
        "nl.greater",
        VEC_POOL,
        "1 where `x > y`, else 0.",
        BINARY_RULES
    ),
    binary!(
        "nl.greater_equal",
        VEC_POOL,
        "1 where `x >= y`, else 0.",
        BINARY_RULES
    ),
    binary!(
        "nl.less",
        VEC_POOL,
        "1 where `x < y`, else 0.",
        BINARY_RULES
    ),
    binary!(
        "nl.less_equal",
        VEC_POOL,
        "1 where `x <= y`, else 0.",
        BINARY_RULES
    ),
    binary!(
        "nl.logical_and",
        VEC_POOL,
        "`x and y` for 0/1 inputs.",
        BINARY_RULES
    ),
    binary!(
        "nl.logical_or",
        VEC_POOL,
        "`x or y` for 0/1 inputs.",
        BINARY_RULES
    ),
    binary!(
        "nl.logical_xor",
        VEC_POOL,
        "`x xor y` for 0/1 inputs.",
        BINARY_RULES
    ),
    binary!(
        "nl.bitwise_and",
        VECTOR,
        "`x & y` on integers.",
        BITWISE_RULES
    ),
    binary!(
        "nl.bitwise_or",
        VECTOR,
        "`x | y` on integers.",
        BITWISE_RULES
    ),
    binary!(
        "nl.bitwise_xor",
        VECTOR,
        "`x ^ y` on integers.",
        BITWISE_RULES
    ),
    binary!(
        "nl.left_shift",
        VECTOR,
        "`x << y` on integers.",
        BITWISE_RULES
    ),
    binary!(
        "nl.right_shift",
        VECTOR,
        "`x >> y` (logical) on integers.",
        BITWISE_RULES
    ),
    act!("nl.exp", "`e ** x` (ScalarE `activation(exp)`)."),
    act!("nl.log", "The natural logarithm (ScalarE)."),
    act!("nl.tanh", "The hyperbolic tangent (ScalarE)."),
    act!("nl.sigmoid", "`1 / (1 + e ** -x)` (ScalarE)."),
    act!("nl.relu", "`max(x, 0)` (ScalarE)."),
    act!("nl.gelu", "GELU (ScalarE)."),
    act!("nl.gelu_dx", "The derivative of GELU (ScalarE)."),
    act!("nl.gelu_apprx_tanh", "GELU, tanh approximation (ScalarE)."),
    act!(
        "nl.gelu_apprx_sigmoid",
        "GELU, sigmoid approximation (ScalarE)."
    ),
    act!(
        "nl.gelu_apprx_sigmoid_dx",
        "The derivative of the sigmoid-approximated GELU (ScalarE)."
    ),
    act!("nl.silu", "`x · sigmoid(x)` (ScalarE)."),
    act!("nl.silu_dx", "The derivative of SiLU (ScalarE)."),
    act!("nl.softplus", "`log(1 + e ** x)` (ScalarE)."),
    act!("nl.mish", "`x · tanh(softplus(x))` (ScalarE)."),
    act!("nl.erf", "The error function (ScalarE)."),
    act!("nl.erf_dx", "The derivative of erf (ScalarE)."),
    act!("nl.sqrt", "The square root (ScalarE)."),
    act!("nl.arctan", "The arc tangent (ScalarE)."),
    act!("nl.sign", "−1, 0 or 1 by the sign of `x` (ScalarE)."),
    act!("nl.square", "`x * x` (ScalarE)."),
    act!("nl.abs", "`|x|` (ScalarE)."),
    ApiDef::new(
        "nl.rsqrt",
        UNARY_PARAMS,
        GPSIMD_SCALAR,
        "`1 / sqrt(x)`: GpSimd `tensor_scalar(op0=nl.rsqrt)`, or ScalarE `activation(rsqrt)` for a PSUM input.",
        &["`x` is an SBUF/PSUM tile with at most 128 partitions."],
        unary,
    ),
    ApiDef::new(
        "nl.reciprocal",
        UNARY_PARAMS,
        VECTOR,
        "`1 / x` on VectorE (`tensor_scalar(op0=nl.reciprocal)`).",
        &["`x` is an SBUF/PSUM tile with at most 128 partitions."],
        unary,
    ),
    ApiDef::new(
        "nl.negative",
        UNARY_PARAMS,
        VECTOR,
        "`-x` (`tensor_scalar(multiply, -1.0)`).",
        &["`x` is an SBUF/PSUM tile with at most 128 partitions."],
        unary,
    ),
    ApiDef::new(
        "nl.logical_not",
        UNARY_PARAMS,
        VECTOR,
        "`not x` for 0/1 inputs (`tensor_scalar(logical_xor, 1)`); other inputs give unspecified values — use `nl.equal(x, 0)`.",
        &["`x` is an SBUF/PSUM tile with at most 128 partitions."],
        unary,
    ),
    ApiDef::new(
        "nl.invert",
        UNARY_PARAMS,
        VECTOR,
        "`~x` on integers (`tensor_scalar(op0=nl.invert)`).",
        &[
            "`x` is an SBUF/PSUM tile with at most 128 partitions.",
            "`x` has an integer dtype.",
        ],
        unary,
    ),
    reduce!("nl.sum", "The sum over `axis` (`tensor_reduce(add)`)."),
    reduce!("nl.max", "The maximum over `axis` (`tensor_reduce(max)`)."),
    reduce!("nl.min", "The minimum over `axis` (`tensor_reduce(min)`)."),
    reduce!(
        "nl.prod",
        "The product over `axis` (`tensor_reduce(multiply)`)."
    ),
    reduce!(
        "nl.mean",
        "The mean over `axis`: a float32 sum, then multiplication by 1/n."
    ),
    reduce!(
        "nl.all",
        "1 where every element over `axis` is non-zero (`tensor_reduce(logical_and)`)."
    ),
    ApiDef::new(
        "nl.softmax",
        &[X, opt("axis", Kind::Ints, "-1"), OUT_DTYPE],
        &[Engine::Vector, Engine::Scalar],
        "`exp(x - max) / Σ exp(x - max)` over the free dims: `tensor_reduce(max)`, `activation(exp, bias=-max)` summing each row, `reciprocal`, `tensor_scalar(multiply)`.",
        &[
            "`x` is an SBUF/PSUM tile with at most 128 partitions.",
            "`axis` names all free dims (`-1` for a 2-D tile).",
        ],
        softmax,
    ),
    ApiDef::new(
        "nl.rms_norm",
        &[
            X,
            req("w", Kind::Tensor),
            AXIS,
            req("n", Kind::Int),
            opt("epsilon", Kind::Float, "1e-06"),
            OUT_DTYPE,
            opt("compute_dtype", Kind::DType, "None"),
        ],
        &[Engine::Vector, Engine::Scalar],
        "`x / sqrt(Σx² / n + epsilon) * w`: `activation(square)` summing each row, `tensor_scalar(×1/n, +eps)`, `activation(rsqrt)`, `tensor_scalar(multiply)`, `tensor_tensor(multiply, w)`.",
        &[
            "`x` is an SBUF/PSUM tile with at most 128 partitions; `axis` names all its free dims.",
            "`n` is a positive int; `w` has `x`'s shape or is a `(P, 1)` tile.",
        ],
        rms_norm,
    ),
    ApiDef::new(
        "nl.where",
        &[
            req("condition", Kind::Tensor),
            X_OPERAND,
            Y_OPERAND,
            OUT_DTYPE,
        ],
        VECTOR,
        "`x` where `condition` is non-zero, else `y`: a copy of `y` (a memset for a number), then `tensor_copy_predicated` of `x`.",
        &[
            "`condition` is an SBUF/PSUM tile; tile operands have its partition count and free size.",
            "At least one of `x` and `y` is a tile, or `dtype` is given.",
        ],
        where_,
    ),
    ApiDef::new(
        "nl.broadcast_to",
        &[X, SHAPE, OUT_DTYPE],
        &[Engine::Vector, Engine::Tensor],
        "NumPy broadcast of `x` to `shape` (same rank): size-1 free dims become stride-0 views copied with `tensor_copy`; a single partition is spread over P partitions (a TensorE ones-matmul per 512 elements for float `[1, F]` rows, else one `nc_stream_shuffle` per 32 partitions). Returns `x` itself when nothing changes.",
        &[
            "`x` is an SBUF/PSUM tile of the same rank as `shape`; each dim of `x` equals the target size or is 1.",
            "Broadcasting the partition dim needs a 1-partition `x` starting on a quadrant boundary.",
        ],
        broadcast_to,
    ),
    ApiDef::new(
        "nl.var",
        &[X, AXIS, OUT_DTYPE, opt("keepdims", Kind::Bool, "True")],
        VECTOR,
        "The population variance over the free dims: `bn_stats` per chunk of at most `bn_stats_fmax` elements, `bn_aggr`, then the variance column. `keepdims` is ignored (the result keeps its dims).",
        &[
            "`x` is an SBUF/PSUM tile; `axis` names all its free dims.",
            "Rows longer than `nl.tile_size.bn_stats_fmax` need a 2-D `x`.",
        ],
        var,
    ),
];

// ------------------------------------------------------------------ helpers

pub(super) fn operand(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<Operand, Diagnostic> {
    let a = b.get(name).ok_or_else(|| {
        ctx.error(
            codes::ARG_TYPE,
            format!("`{}` needs a tile or a number for `{name}`", b.def.name),
            b.span,
            "missing operand",
        )
    })?;
    match &a.value {
        Value::Tensor(t) => Ok(Operand::Tile(t.clone())),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
            Ok(Operand::Num(a.value.as_float().unwrap_or(0.0)))
        }
        other => Err(ctx.error(
            codes::ARG_TYPE,
            format!(
                "`{name}` of `{}` must be a tile or a number, found a {}",
                b.def.name,
                other.type_name()
            ),
            a.span,
            "not a tile or number",
        )),
    }
}

fn op_of(b: &Bound) -> Result<AluOp, &'static str> {
    consts::alu_op_by_name(b.def.name).ok_or(b.def.name)
}

/// The shape and default dtype of `x op y`.
fn result_of(x: &Operand, y: &Operand) -> Option<(Vec<u64>, DType)> {
    match (x, y) {
        (Operand::Tile(a), Operand::Tile(c)) => {
            let dt = lower::promote(a.dtype(), c.dtype());
            // Equal ranks broadcast NumPy-style (each dim the larger).
            if a.shape.len() == c.shape.len() {
                let shape = a
                    .shape
                    .iter()
                    .zip(&c.shape)
                    .map(|(&x, &y)| x.max(y))
                    .collect();
                return Some((shape, dt));
            }
            let t = if check::free_size(a) >= check::free_size(c) {
                a
            } else {
                c
            };
            Some((t.shape.clone(), dt))
        }
        (Operand::Tile(t), Operand::Num(n)) | (Operand::Num(n), Operand::Tile(t)) => {
            let dt = if t.dtype().is_int() && n.fract() != 0.0 {
                DType::F32
            } else {
                t.dtype()
            };
            Some((t.shape.clone(), dt))
        }
        (Operand::Num(_), Operand::Num(_)) => None,
    }
}

fn no_tile(ctx: &Ctx<'_>, b: &Bound) -> Diagnostic {
    ctx.error(
        codes::OPERATOR,
        format!("`{}` needs at least one tile operand", b.def.name),
        b.span,
        "no tile",
    )
    .with_help("compute the value with Python arithmetic instead")
}

pub(super) fn result(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    shape: &[u64],
    dtype: DType,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let prefix = format!("{}_", b.def.name.trim_start_matches("nl."));
    emit::new_result(ctx, b, &prefix, shape, dtype, Buffer::Sbuf, span)
}

/// The call's result of `shape`: the element-wise product of two tiles
/// in `dtype`.
pub(super) fn product(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    shape: &[u64],
    (x, y): (Rc<Tensor>, Rc<Tensor>),
    dtype: DType,
    span: Span,
) -> Result<Value, Diagnostic> {
    let dst = result(ctx, b, shape, dtype, span)?;
    let (x, y) = (Operand::Tile(x), Operand::Tile(y));
    lower::elementwise(
        ctx,
        AluOp::Multiply,
        &x,
        &y,
        Some(dst.clone()),
        Some(dtype),
        span,
    )?;
    Ok(done(b, &dst))
}

pub(super) fn done(b: &Bound, t: &Rc<Tensor>) -> Value {
    Value::Tensor(emit::masked_result(b, t))
}

pub(super) fn push(
    ctx: &mut Ctx<'_>,
    kind: OpKind,
    engine: Option<Engine>,
    span: Span,
) -> Result<(), Diagnostic> {
    let mut op = Op::new(kind);
    op.engine = engine;
    ctx.push_op(op, span).map(|_| ())
}

pub(super) fn temp(
    ctx: &mut Ctx<'_>,
    shape: &[u64],
    dtype: DType,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    lower::new_tile(ctx, shape, dtype, span)
}

pub(super) fn activation_kind(
    dst: &Tensor,
    src: &Tensor,
    func: ActFunc,
    bias: Option<Scalar>,
    reduce_res: Option<&Tensor>,
) -> OpKind {
    OpKind::Activation {
        dst: dst.view.clone(),
        src: src.view.clone(),
        func,
        scale: Scalar::imm(1.0),
        bias,
        reduce_op: reduce_res.map(|_| AluOp::Add),
        reduce_cmd: if reduce_res.is_some() {
            ReduceCmd::ResetReduce
        } else {
            ReduceCmd::Idle
        },
        reduce_res: reduce_res.map(|t| t.view.clone()),
    }
}

// ------------------------------------------------------------------ binary

fn binary(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = operand(ctx, b, "x")?;
    let y = operand(ctx, b, "y")?;
    let dtype = b.dtype(ctx, "dtype")?;
    let Some((shape, default_dt)) = result_of(&x, &y) else {
        return Err(no_tile(ctx, b));
    };
    let out_dt = dtype.unwrap_or(default_dt);
    if b.def.name == "nl.divide" {
        return divide(ctx, b, &x, &y, &shape, out_dt, span);
    }
    let op = op_of(b).map_err(|n| {
        ctx.error(
            codes::ARG_TYPE,
            format!("`{n}` has no ALU operator"),
            span,
            "here",
        )
    })?;
    let dst = result(ctx, b, &shape, out_dt, span)?;
    let t = lower::elementwise(ctx, op, &x, &y, Some(dst), Some(out_dt), span)?;
    Ok(done(b, &t))
}

fn divide(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    x: &Operand,
    y: &Operand,
    shape: &[u64],
    out_dt: DType,
    span: Span,
) -> Result<Value, Diagnostic> {
    let divisor = match y {
        Operand::Num(n) => {
            if *n == 0.0 {
                return Err(ctx.error(
                    codes::VALUE,
                    "division of a tile by zero",
                    b.span_of("y"),
                    "zero divisor",
                ));
            }
            Operand::Num(1.0 / n)
        }
        Operand::Tile(t) => {
            check::operand(ctx, t, b.span_of("y"), "`y`")?;
            let r = temp(ctx, &t.shape, DType::F32, span)?;
            let inv = lower::tile_op(
                ctx,
                AluOp::Reciprocal,
                t,
                0.0,
                Some(r),
                Some(DType::F32),
                span,
            )?;
            Operand::Tile(inv)
        }
    };
    let dst = result(ctx, b, shape, out_dt, span)?;
    let t = lower::elementwise(
        ctx,
        AluOp::Multiply,
        x,
        &divisor,
        Some(dst),
        Some(out_dt),
        span,
    )?;
    Ok(done(b, &t))
}

// ------------------------------------------------------------------ unary

/// The unary `nl.*` functions that are one ALU operator with a number.
const UNARY_ALU: &[(&str, AluOp, f64)] = &[
    ("nl.negative", AluOp::Multiply, -1.0),
    ("nl.logical_not", AluOp::LogicalXor, 1.0),
    ("nl.invert", AluOp::Invert, 0.0),
    ("nl.reciprocal", AluOp::Reciprocal, 0.0),
];

fn unary(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = rules::input_tile(ctx, b, "x")?;
    let out_dt = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let dst = result(ctx, b, &x.shape, out_dt, span)?;
    if let Some(&(_, op, n)) = UNARY_ALU.iter().find(|(name, ..)| *name == b.def.name) {
        lower::tile_op(ctx, op, &x, n, Some(dst.clone()), Some(out_dt), span)?;
        return Ok(done(b, &dst));
    }
    match b.def.name {
        "nl.rsqrt" if x.buffer != Buffer::Psum && dst.buffer != Buffer::Psum => {
            let kind = lower::tensor_scalar1(&dst.view, &x.view, AluOp::Rsqrt, None, false);
            push(ctx, kind, Some(Engine::GpSimd), span)?;
        }
        name => {
            let Some(func) = consts::act_func_by_name(name) else {
                return Err(ctx.error(
                    codes::ARG_TYPE,
                    format!("`{name}` has no activation function"),
                    span,
                    "here",
                ));
            };
            push(ctx, activation_kind(&dst, &x, func, None, None), None, span)?;
        }
    }
    Ok(done(b, &dst))
}

// ------------------------------------------------------------------ reductions

fn reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = rules::input_tile(ctx, b, "x")?;
    let axes = b.ints(ctx, "axis")?.unwrap_or_default();
    let keepdims = b.bool_or(ctx, "keepdims", false)?;
    // Free axes that are not the trailing ones (`axis=[2, 4]` of a 5-D
    // tile) are moved last by a permuted view, which costs nothing.
    let (x, axes, keep_shape) = match move_axes_last(&x, &axes) {
        Some((moved, k, kept_shape)) => {
            let n = moved.shape.len() as i64;
            let trailing: Vec<i64> = ((n - k as i64)..n).collect();
            (Rc::new(moved), trailing, Some(kept_shape))
        }
        None => (x, axes, None),
    };
    let k = lower::trailing_axes(ctx, &axes, &x.shape, b.span_of("axis"))?;
    let kept = x.shape.len() - k;
    let mut shape: Vec<u64> = match &keep_shape {
        Some(ks) if keepdims => ks.clone(),
        _ => x.shape[..kept].to_vec(),
    };
    if keepdims && keep_shape.is_none() {
        shape.extend(std::iter::repeat_n(1, k));
    }
    if shape.len() < 2 {
        shape.push(1);
    }
    let out_dt = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let (op, mean) = match b.def.name {
        "nl.sum" => (AluOp::Add, false),
        "nl.max" => (AluOp::Maximum, false),
        "nl.min" => (AluOp::Minimum, false),
        "nl.prod" => (AluOp::Multiply, false),
        "nl.all" => (AluOp::LogicalAnd, false),
        _ => (AluOp::Add, true),
    };
    let dst = result(ctx, b, &shape, out_dt, span)?;
    let reduced = if mean {
        temp(ctx, &shape, DType::F32, span)?
    } else {
        dst.clone()
    };
    let kind = OpKind::TensorReduce {
        dst: reduced.view.clone(),
        src: x.view.clone(),
        op,
        last_dims: k as u8,
        negate: false,
    };
    push(ctx, kind, None, span)?;
    if mean {
        let n: u64 = x.shape[kept..].iter().product();
        lower::tile_op(
            ctx,
            AluOp::Multiply,
            &reduced,
            1.0 / n as f64,
            Some(dst.clone()),
            Some(out_dt),
            span,
        )?;
    }
    Ok(done(b, &dst))
}

/// Checks that `axis` names every free dim of `x` (the row reductions of
/// softmax and rms_norm).
fn all_free_axes(ctx: &Ctx<'_>, b: &Bound, x: &Tensor) -> Result<(), Diagnostic> {
    let axes = b.ints(ctx, "axis")?.unwrap_or_else(|| vec![-1]);
    let k = lower::trailing_axes(ctx, &axes, &x.shape, b.span_of("axis"))?;
    if k + 1 != x.shape.len() {
        return Err(ctx
            .error(
                codes::AXIS,
                format!(
                    "`{}` reduces over every free dim of {}, but `axis` is {axes:?}",
                    b.def.name,
                    shape_text(&x.shape)
                ),
                b.span_of("axis"),
                "not all free dims",
            )
            .with_help("reshape the tile to 2-D, or name all free dims"));
    }
    Ok(())
}

fn softmax(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = rules::input_tile(ctx, b, "x")?;
    all_free_axes(ctx, b, &x)?;
    let out_dt = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let p = check::partitions(&x);
    let col = [p, 1];
    let k = x.shape.len() - 1;
    // m = max(x) per row, then -m as the activation bias.
    let m = temp(ctx, &col, DType::F32, span)?;
    let kind = OpKind::TensorReduce {
        dst: m.view.clone(),
        src: x.view.clone(),
        op: AluOp::Maximum,
        last_dims: k as u8,
        negate: true,
    };
    push(ctx, kind, None, span)?;
    // e = exp(x - m), s = Σ e.
    let e = temp(ctx, &x.shape, DType::F32, span)?;
    let s = temp(ctx, &col, DType::F32, span)?;
    let bias = Some(Scalar::Vector(m.view.clone()));
    push(
        ctx,
        activation_kind(&e, &x, ActFunc::Exp, bias, Some(&s)),
        None,
        span,
    )?;
    // r = 1 / s; out = e · r.
    let r = temp(ctx, &col, DType::F32, span)?;
    lower::tile_op(
        ctx,
        AluOp::Reciprocal,
        &s,
        0.0,
        Some(r.clone()),
        Some(DType::F32),
        span,
    )?;
    product(ctx, b, &x.shape, (e, r), out_dt, span)
}

fn rms_norm(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let w = b.tensor(ctx, "w")?;
    let sx = b.span_of("x");
    check::operand(ctx, &x, sx, "`x`")?;
    check::operand(ctx, &w, b.span_of("w"), "`w`")?;
    check::engine_free_size(ctx, &x, sx, "`x`")?;
    all_free_axes(ctx, b, &x)?;
    let n = b.int(ctx, "n")?.unwrap_or(0);
    if n <= 0 {
        return Err(ctx.error(
            codes::VALUE,
            format!("`n` of `nl.rms_norm` must be a positive element count, found {n}"),
            b.span_of("n"),
            "not positive",
        ));
    }
    let eps = b.float(ctx, "epsilon")?.unwrap_or(1e-6);
    let out_dt = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let cdt = b.dtype(ctx, "compute_dtype")?.unwrap_or(DType::F32);
    let p = check::partitions(&x);
    let col = [p, 1];
    // ss = Σ x² per row (the squares themselves are scratch).
    let sq = temp(ctx, &x.shape, cdt, span)?;
    let ss = temp(ctx, &col, DType::F32, span)?;
    push(
        ctx,
        activation_kind(&sq, &x, ActFunc::Square, None, Some(&ss)),
        None,
        span,
    )?;
    // v = ss / n + eps; r = rsqrt(v).
    let v = temp(ctx, &col, DType::F32, span)?;
    let kind = lower::tensor_scalar2(
        &v.view,
        &ss.view,
        (AluOp::Multiply, (1.0 / n as f64) as f32),
        (AluOp::Add, eps as f32),
    );
    push(ctx, kind, None, span)?;
    let r = temp(ctx, &col, DType::F32, span)?;
    push(
        ctx,
        activation_kind(&r, &v, ActFunc::Rsqrt, None, None),
        None,
        span,
    )?;
    // y = x · r; out = y · w.
    let y = temp(ctx, &x.shape, cdt, span)?;
    lower::elementwise(
        ctx,
        AluOp::Multiply,
        &Operand::Tile(x.clone()),
        &Operand::Tile(r),
        Some(y.clone()),
        Some(cdt),
        span,
    )?;
    product(ctx, b, &x.shape, (y, w), out_dt, span)
}

// ------------------------------------------------------------------ where

/// The number `n` as a fill value of `dtype`.
fn fill(ctx: &Ctx<'_>, dtype: DType, n: f64, span: Span) -> Result<nkic_isa::Imm, Diagnostic> {
    let v = if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::Int(n as i64)
    } else {
        Value::Float(n)
    };
    super::fill::fill_imm(ctx, dtype, &v, span, true)
}

fn where_(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let cond = b.tensor(ctx, "condition")?;
    let sc = b.span_of("condition");
    check::operand(ctx, &cond, sc, "`condition`")?;
    let x = operand(ctx, b, "x")?;
    let y = operand(ctx, b, "y")?;
    let default_dt = match (&x, &y) {
        (Operand::Tile(a), Operand::Tile(c)) => Some(lower::promote(a.dtype(), c.dtype())),
        (Operand::Tile(t), _) | (_, Operand::Tile(t)) => Some(t.dtype()),
        _ => None,
    };
    let Some(out_dt) = b.dtype(ctx, "dtype")?.or(default_dt) else {
        return Err(no_tile(ctx, b).with_note("or give `dtype=`"));
    };
    for (name, o) in [("x", &x), ("y", &y)] {
        if let Operand::Tile(t) = o {
            let s = b.span_of(name);
            check::operand(ctx, t, s, &format!("`{name}`"))?;
            check::same_pf(ctx, (&cond, "condition"), (t, name, s))?;
        }
    }
    let dst = result(ctx, b, &cond.shape, out_dt, span)?;
    // dst = y.
    match &y {
        Operand::Tile(t) => push(
            ctx,
            OpKind::TensorCopy {
                dst: dst.view.clone(),
                src: t.view.clone(),
            },
            None,
            span,
        )?,
        Operand::Num(n) => {
            let v = fill(ctx, out_dt, *n, b.span_of("y"))?;
            push(
                ctx,
                OpKind::Memset {
                    dst: dst.view.clone(),
                    value: v,
                },
                None,
                span,
            )?;
        }
    }
    // dst[cond != 0] = x.
    let src = match &x {
        Operand::Tile(t) => t.clone(),
        Operand::Num(n) => {
            let t = temp(ctx, &cond.shape, out_dt, span)?;
            let v = fill(ctx, out_dt, *n, b.span_of("x"))?;
            push(
                ctx,
                OpKind::Memset {
                    dst: t.view.clone(),
                    value: v,
                },
                None,
                span,
            )?;
            t
        }
    };
    // The predicate of `tensor_copy_predicated` is an unsigned integer or
    // bool tile; a float (or signed) condition, as `nl.greater` returns by
    // default, is turned into a uint8 0/1 tile first.
    let predicate = if matches!(
        cond.dtype(),
        DType::U8 | DType::U16 | DType::U32 | DType::Bool
    ) {
        cond.clone()
    } else {
        let p = temp(ctx, &cond.shape, DType::U8, span)?;
        push(
            ctx,
            lower::tensor_scalar1(
                &p.view,
                &cond.view,
                AluOp::NotEqual,
                Some(Scalar::imm(0.0)),
                false,
            ),
            None,
            span,
        )?;
        p
    };
    let kind = OpKind::TensorCopyPredicated {
        dst: dst.view.clone(),
        src: src.view.clone(),
        predicate: predicate.view.clone(),
        reverse_pred: false,
    };
    push(ctx, kind, None, span)?;
    Ok(done(b, &dst))
}

// ------------------------------------------------------------------ broadcast_to

/// For reduction axes that are free dims but not the trailing ones: `x`
/// viewed with the kept dims first and the reduced dims last (each group
/// in its original order), the number of reduced dims, and the
/// `keepdims` result shape (size 1 at the reduced positions). `None` when
/// the axes are already trailing or not all valid free dims (the usual
/// checks then report them).
fn move_axes_last(x: &Tensor, axes: &[i64]) -> Option<(Tensor, usize, Vec<u64>)> {
    let n = x.shape.len();
    let mut reduced: Vec<usize> = axes
        .iter()
        .map(|&a| if a < 0 { a + n as i64 } else { a })
        .map(|a| usize::try_from(a).ok().filter(|&a| a >= 1 && a < n))
        .collect::<Option<_>>()?;
    reduced.sort_unstable();
    reduced.dedup();
    if reduced.is_empty()
        || reduced
            .iter()
            .enumerate()
            .all(|(i, &a)| a == n - reduced.len() + i)
    {
        return None;
    }
    let mut perm: Vec<usize> = (0..n).filter(|d| !reduced.contains(d)).collect();
    perm.extend(&reduced);
    let view = x.view.permute(&perm)?;
    let shape = perm.iter().map(|&d| x.shape[d]).collect();
    let keep_shape = (0..n)
        .map(|d| if reduced.contains(&d) { 1 } else { x.shape[d] })
        .collect();
    Some((
        Tensor {
            view,
            shape,
            buffer: x.buffer,
        },
        reduced.len(),
        keep_shape,
    ))
}

pub(super) fn broadcast_to(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let sx = b.span_of("x");
    check::operand(ctx, &x, sx, "`x`")?;
    let shape = b.shape(ctx, "shape")?;
    let dtype = b.dtype(ctx, "dtype")?;
    let bad = |why: String| {
        ctx.error(
            codes::SHAPE,
            format!(
                "cannot broadcast {} to {}: {why}",
                shape_text(&x.shape),
                shape_text(&shape)
            ),
            b.span_of("shape"),
            "incompatible shape",
        )
    };
    if shape.len() != x.shape.len() {
        return Err(bad("the ranks differ".to_owned()));
    }
    if let Some(i) = (0..shape.len()).find(|&i| x.shape[i] != shape[i] && x.shape[i] != 1) {
        return Err(bad(format!(
            "dim {i} has size {} (only size-1 dims stretch)",
            x.shape[i]
        )));
    }
    let out_dt = dtype.unwrap_or(x.dtype());
    if shape == x.shape && out_dt == x.dtype() {
        return Ok(Value::Tensor(x));
    }
    let stretched = lower::stretch_free(&x, &shape);
    let source = if shape[0] != x.shape[0] {
        spread_partitions(ctx, &stretched, shape[0], b.span_of("x"), span)?
    } else {
        stretched
    };
    let dst = result(ctx, b, &shape, out_dt, span)?;
    let kind = OpKind::TensorCopy {
        dst: dst.view.clone(),
        src: source.view.clone(),
    };
    push(ctx, kind, None, span)?;
    Ok(done(b, &dst))
}

/// Spreads a 1-partition tile over `p` partitions. A float SBUF tile of
/// at most 512 elements uses one TensorE matmul against a `[1, p]` ones
/// stationary (`out[m, n] = x[0, n]`, a `[p, F]` fp32 PSUM tile); a
/// longer float SBUF row `[1, F]` uses one such matmul per 512 columns,
/// each copied out of its PSUM bank into a `[p, F]` SBUF tile (TensorE
/// work and one PSUM read per element, where the quadrant shuffles below
/// cost four passes over the row on VectorE or GpSimd: issue #16); any
/// other tile is copied bit for bit with one `nc_stream_shuffle` of
/// partition 0 per 32-partition quadrant (a mask of 32 zeros).
pub(super) fn spread_partitions(
    ctx: &mut Ctx<'_>,
    x: &Rc<Tensor>,
    p: u64,
    sx: Span,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let long_row = x.buffer == Buffer::Sbuf && !x.dtype().is_int() && x.shape.len() == 2;
    if long_row && check::free_size(x) > 512 {
        return spread_row_by_matmuls(ctx, x, p, sx, span);
    }
    if x.buffer != Buffer::Sbuf || check::free_size(x) > 512 || x.dtype().is_int() {
        check::partition_start(ctx, x, sx, "the broadcast row")?;
        check::engine_free_size(ctx, x, sx, "the broadcast row")?;
        let mut shape = x.shape.clone();
        shape[0] = p;
        let out = temp(ctx, &shape, x.dtype(), span)?;
        for q in 0..p.div_ceil(32) {
            let hi = (32 * q + 32).min(p);
            let Some(dst) = out.view.slice(0, 32 * q, hi, 1) else {
                continue;
            };
            push(
                ctx,
                OpKind::StreamShuffle {
                    dst,
                    src: x.view.clone(),
                    mask: vec![0; 32],
                },
                None,
                span,
            )?;
        }
        return Ok(out);
    }
    let ones = ones_row(ctx, p, x.dtype(), span)?;
    // The PSUM result is [p, F]; the caller copies it out by P and F.
    ones_matmul(&ones, x.clone(), sx, span).record(ctx, None, Some(false))
}

/// A `[1, p]` tile of ones: the stationary that spreads a row over `p`
/// partitions.
fn ones_row(ctx: &mut Ctx<'_>, p: u64, dtype: DType, span: Span) -> Result<Rc<Tensor>, Diagnostic> {
    let ones = temp(ctx, &[1, p], dtype, span)?;
    push(
        ctx,
        OpKind::Memset {
            dst: ones.view.clone(),
            value: fill(ctx, dtype, 1.0, span)?,
        },
        None,
        span,
    )?;
    Ok(ones)
}

/// `out[m, n] = row[0, n]` for the partitions `m` of `ones` (a fresh fp32
/// PSUM tile when recorded).
fn ones_matmul(
    ones: &Rc<Tensor>,
    row: Rc<Tensor>,
    sx: Span,
    span: Span,
) -> tensor_engine::PendingMatmul {
    tensor_engine::PendingMatmul {
        stationary: ones.clone(),
        moving: row,
        flags: tensor_engine::MatmulFlags {
            stationary_onezero: true,
            moving_onezero: false,
            transpose: false,
            perf_mode: nkic_isa::MatmulPerfMode::None,
            tile_position: None,
            tile_size: None,
        },
        dtype: DType::F32,
        span,
        stationary_span: span,
        moving_span: sx,
    }
}

/// `spread_partitions` of a float SBUF row `[1, F]` longer than one PSUM
/// bank: one ones-matmul per 512 columns, each copied into the result.
fn spread_row_by_matmuls(
    ctx: &mut Ctx<'_>,
    x: &Rc<Tensor>,
    p: u64,
    sx: Span,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    const BANK: u64 = 512;
    let f = x.shape[1];
    let out = temp(ctx, &[p, f], x.dtype(), span)?;
    let ones = ones_row(ctx, p, x.dtype(), span)?;
    for lo in (0..f).step_by(BANK as usize) {
        let hi = (lo + BANK).min(f);
        let (Some(src), Some(dst)) = (x.view.slice(1, lo, hi, 1), out.view.slice(1, lo, hi, 1))
        else {
            continue;
        };
        let chunk = Rc::new(Tensor {
            view: src,
            shape: vec![1, hi - lo],
            buffer: x.buffer,
        });
        let pending = ones_matmul(&ones, chunk, sx, span);
        let bank = pending.record(ctx, None, Some(false))?;
        push(
            ctx,
            OpKind::TensorCopy {
                dst,
                src: bank.view.clone(),
            },
            None,
            span,
        )?;
    }
    Ok(out)
}

// ------------------------------------------------------------------ var

fn var(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let sx = b.span_of("x");
    check::operand(ctx, &x, sx, "`x`")?;
    all_free_axes(ctx, b, &x)?;
    let out_dt = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let p = check::partitions(&x);
    let f = check::free_size(&x);
    let fmax = u64::from(ctx.target().figures().bn_stats_fmax);
    let chunks = f.div_ceil(fmax).max(1);
    if chunks > 1 && (x.shape.len() != 2 || x.view.dims.len() != 2) {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!(
                "`nl.var` of rows longer than {fmax} elements needs a 2-D tile, found {}",
                shape_text(&x.shape)
            ),
            sx,
            "reshape to 2-D",
        ));
    }
    let stats = temp(ctx, &[p, 6 * chunks], DType::F32, span)?;
    for c in 0..chunks {
        let start = c * fmax;
        let n = fmax.min(f - start);
        let src = if chunks == 1 {
            x.view.clone()
        } else {
            let mut v = x.view.clone();
            let stride = v.dims[1].stride;
            v.offset += stride * start as i64;
            v.dims[1].count = n;
            v
        };
        let mut dst = stats.view.clone();
        dst.offset += dst.dims[1].stride * (6 * c) as i64;
        dst.dims[1].count = 6;
        push(ctx, OpKind::BnStats { dst, src }, None, span)?;
    }
    let aggr = temp(ctx, &[p, 2], DType::F32, span)?;
    push(
        ctx,
        OpKind::BnAggr {
            dst: aggr.view.clone(),
            src: stats.view.clone(),
        },
        None,
        span,
    )?;
    let mut variance = aggr.view.clone();
    variance.offset += variance.dims[1].stride;
    variance.dims[1].count = 1;
    let mut shape = vec![p];
    shape.extend(std::iter::repeat_n(
        1,
        x.shape.len().saturating_sub(1).max(1),
    ));
    let dst = result(ctx, b, &shape, out_dt, span)?;
    push(
        ctx,
        OpKind::TensorCopy {
            dst: dst.view.clone(),
            src: variance,
        },
        None,
        span,
    )?;
    Ok(done(b, &dst))
}

// ------------------------------------------------------------------ composed functions

/// The functions composed from other ops (module doc), registered in
/// `table::REGISTRY` after the reshaping view methods.
pub const COMPOSED_DEFS: &[ApiDef] = &[
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
];

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
        lower::tensor_scalar2(
            &q.view,
            &x.view,
            (AluOp::Add, phase),
            (AluOp::Multiply, (1.0 / period) as f32),
        ),
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
        lower::tensor_scalar2(
            &clamped.view,
            &r.view,
            (AluOp::Maximum, -limit - phase),
            (AluOp::Minimum, limit - phase),
        ),
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
    let a = activation_of(ctx, x, ActFunc::Abs, span)?;
    let sg = activation_of(ctx, x, ActFunc::Sign, span)?;
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

/// `func(t)` as a float32 temporary (a ScalarE `activation`): `|t|` with
/// `abs`, −1, 0 or 1 with `sign`.
fn activation_of(
    ctx: &mut Ctx<'_>,
    t: &Rc<Tensor>,
    func: ActFunc,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let a = temp(ctx, &t.shape, DType::F32, span)?;
    push(ctx, activation_kind(&a, t, func, None, None), None, span)?;
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
        Operand::Tile(t) => Operand::Tile(activation_of(ctx, t, ActFunc::Abs, span)?),
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
            Operand::Tile(t) => Operand::Tile(activation_of(ctx, t, ActFunc::Sign, span)?),
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
    let abs_r = activation_of(ctx, &r1, ActFunc::Abs, span)?;
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

// ------------------------------------------------------------------ legacy loop_reduce

/// `nl.loop_reduce`, registered in `table::REGISTRY` after
/// `nl.expand_dims`.
pub const LOOP_REDUCE_DEFS: &[ApiDef] = &[ApiDef::new(
    "nl.loop_reduce",
    &[
        X,
        OP,
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
)];

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
