//! Random numbers (isa.md §6.5): `rng`, `rand2`, `dropout`, the seeds and
//! generator states, and `nl.rand`, `nl.random_seed` and `nl.dropout`.
//!
//! Choices where the spec is silent: `nl.rand` lowers to `rand2(min=0,
//! max=1)` on trn3 and, on trn2, to `rng` into a uint16 tile scaled by
//! 2⁻¹⁶ (exactly `[0, 1)`); `nl.dropout` is `nisa.dropout` (survivors are
//! not rescaled, as isa.md §8 assumes).

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::insn;
use nkic_isa::{AluOp, DType, Engine, Target};

use crate::api::check;
use crate::api::isa::unsupported;
use crate::api::lower::scalar_operand;
use crate::api::rules::operand_tile;
use crate::api::table::{
    ApiDef, BUFFER, Bound, DATA, DST, ENGINE_GPSIMD, ISA_ENGINES, Kind, NAME, OUT_DTYPE, Param,
    SHAPE, TENSOR_NAME, X, engine, instruction, opt, req,
};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const VECTOR_GPSIMD: &[Engine] = &[Engine::Vector, Engine::GpSimd];

/// `src_seeds`: the tensor the generators are seeded from.
const SRC_SEEDS: Param = req("src_seeds", Kind::Tensor);

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    instruction!(
        "nisa.rng",
        [
            engine("nisa.engine.vector"),
        ],
        "Fills `dst` with random bits from the engine's per-lane generators (the low bits of 32-bit values).",
        &[
            "`dst` is int8, int16, int32, uint8, uint16 or uint32, in SBUF or PSUM (SBUF on GpSimd).",
        ],
        rng,
    ),
    instruction!(
        "nisa.rand2",
        [
            req("min", Kind::Scalar),
            req("max", Kind::Scalar),
        ],
        "Fills `dst` with uniform random fp32 values in `[min, max]` (XORWOW), cast to `dst`'s dtype.",
        &[
            "trn3 only.",
            "`dst` is SBUF/PSUM of a float or integer dtype (not packed x4 or e8m0).",
            "`min` and `max` are numbers (`min < max`) or `(P, 1)` tensors.",
        ],
        rand2,
    ),
    instruction!(
        "nisa.dropout",
        [
            DATA,
            req("prob", Kind::Scalar),
        ],
        "Replaces each element of `data` by 0 with probability `prob` (survivors are copied, not rescaled), using the Vector PRNG.",
        &[
            "`data` and `dst` are SBUF/PSUM with equal partition counts (≤ 128), free sizes and dtypes.",
            "`prob` is a number in [0, 1] or a `(P, 1)` tensor; a tensor `prob` is float32 when `data` is an integer tile.",
        ],
        dropout,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.set_rng_seed",
        &[
            SRC_SEEDS,
            NAME,
        ],
        ISA_ENGINES,
        "Seeds the Vector engine's generators from one 32-bit value; the state persists for the rest of the program.",
        &["`src_seeds` is a `[1, 1]` SBUF/PSUM tensor of a 32-bit dtype."],
        set_rng_seed,
    ),
    ApiDef::new(
        "nisa.rand_set_state",
        &[
            SRC_SEEDS,
            ENGINE_GPSIMD,
            NAME,
        ],
        VECTOR_GPSIMD,
        "Loads the per-lane XORWOW generator states. Not supported by nkic yet (E0524).",
        &[],
        unsupported,
    ),
    ApiDef::new(
        "nisa.rand_get_state",
        &[
            DST,
            ENGINE_GPSIMD,
            NAME,
        ],
        VECTOR_GPSIMD,
        "Stores the per-lane XORWOW generator states. Not supported by nkic yet (E0524).",
        &[],
        unsupported,
    ),
    ApiDef::new(
        "nl.rand",
        &[
            SHAPE,
            opt("dtype", Kind::DType, "nl.float32"),
            BUFFER,
            TENSOR_NAME,
        ],
        insn::Rand2::ENGINES,
        "A new tile of uniform random values in [0, 1): `rand2(min=0, max=1)` on trn3; on trn2 `rng` into uint16 scaled by 2⁻¹⁶.",
        &["The tile is SBUF with at most 128 partitions."],
        nl_rand,
    ),
    ApiDef::new(
        "nl.random_seed",
        &[req("seed", Kind::Tensor)],
        insn::SetRngSeed::ENGINES,
        "Seeds the random generators from a `[1, 1]` 32-bit SBUF/PSUM tensor (`nisa.set_rng_seed`).",
        &["`seed` is a `[1, 1]` SBUF/PSUM tensor of a 32-bit dtype."],
        nl_random_seed,
    ),
    ApiDef::new(
        "nl.dropout",
        &[
            X,
            req("rate", Kind::Scalar),
            OUT_DTYPE,
        ],
        insn::Dropout::ENGINES,
        "A new tile with each element of `x` zeroed with probability `rate` (`nisa.dropout`; survivors are not rescaled).",
        &["The `nisa.dropout` rules apply."],
        nl_dropout,
    ),
];

fn dropout_into(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    data: &Rc<Tensor>,
    dst: &Rc<Tensor>,
    prob: &Value,
    prob_span: Span,
    span: Span,
) -> Result<Value, Diagnostic> {
    let (sd, ds) = (b.span_of("data"), b.span_of("dst"));
    check::operand(ctx, data, sd, "`data`")?;
    check::operand(ctx, dst, ds, "`dst`")?;
    check::same_pf(ctx, (data, "data"), (dst, "dst", ds))?;
    check::dtype_of_data(ctx, dst, ds, data.dtype())?;
    if let Value::Int(_) | Value::Float(_) = prob {
        let p = prob.as_float().unwrap_or(0.0);
        if !(0.0..=1.0).contains(&p) {
            return Err(ctx.error(
                codes::VALUE,
                format!("`prob` is a probability in [0, 1], found {p}"),
                prob_span,
                "out of range",
            ));
        }
    }
    if let Value::Tensor(t) = prob
        && data.dtype().is_int()
        && t.dtype() != DType::F32
    {
        return Err(check::tensor_error(
            ctx,
            codes::DTYPE,
            "a tensor `prob` must be float32 when `data` is an integer tile, found",
            t,
            prob_span,
            "not float32",
        ));
    }
    let prob = scalar_operand(ctx, prob, data, prob_span, "`prob`")?;
    let kind = OpKind::Dropout {
        dst: dst.view.clone(),
        src: data.view.clone(),
        prob,
    };
    emit::finish(ctx, b, kind, None, Some(dst), span)
}

fn dropout(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let dst = emit::dst_or_new(ctx, b, &data.shape, data.dtype(), Buffer::Sbuf, span)?;
    let prob = b.value("prob");
    dropout_into(ctx, b, &data, &dst, &prob, b.span_of("prob"), span)
}

fn nl_dropout(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (x, _) = operand_tile(ctx, b, "x")?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let dst = emit::new_result(ctx, b, "dropout_", &x.shape, x.dtype(), Buffer::Sbuf, span)?;
    let rate = b.value("rate");
    dropout_into(ctx, b, &x, &dst, &rate, b.span_of("rate"), span)?;
    emit::cast_result(ctx, b, ("dropout_", &x.shape), &dst, dtype, span)
}

fn rng(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (dst, ds) = operand_tile(ctx, b, "dst")?;
    let ints: Vec<DType> = DType::ALL.into_iter().filter(|d| d.is_int()).collect();
    check::dtype_in(ctx, &dst, &ints, "`dst`", ds)?;
    let engine = emit::engine(ctx, b)?.or(Some(Engine::Vector));
    if engine == Some(Engine::GpSimd) {
        check::not_psum_on(ctx, &dst, Engine::GpSimd, ds, "`dst`")?;
    }
    let kind = OpKind::Rng {
        dst: dst.view.clone(),
    };
    emit::finish(ctx, b, kind, engine, None, span)
}

fn rand2(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (dst, ds) = operand_tile(ctx, b, "dst")?;
    if dst.dtype().is_packed_x4() || dst.dtype() == DType::F8E8M0 {
        return Err(ctx.error(
            codes::DTYPE,
            format!("`rand2` cannot write {}", check::describe(&dst)),
            ds,
            "dtype not allowed",
        ));
    }
    let lo = b.value("min");
    let hi = b.value("max");
    if let (Some(l), Some(h)) = (lo.as_float(), hi.as_float())
        && !matches!(lo, Value::Tensor(_))
        && !matches!(hi, Value::Tensor(_))
        && l >= h
    {
        return Err(ctx.error(
            codes::VALUE,
            format!("`min` must be below `max`, found {l} and {h}"),
            b.span_of("max"),
            "empty range",
        ));
    }
    let min = scalar_operand(ctx, &lo, &dst, b.span_of("min"), "`min`")?;
    let max = scalar_operand(ctx, &hi, &dst, b.span_of("max"), "`max`")?;
    let kind = OpKind::Rand2 {
        dst: dst.view.clone(),
        min,
        max,
    };
    emit::finish(ctx, b, kind, None, None, span)
}

/// The op that seeds the generators from the tensor argument `name`,
/// checked.
fn set_seed(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<OpKind, Diagnostic> {
    let src = b.tensor(ctx, name)?;
    seed_tensor(ctx, &src, b.span_of(name))?;
    Ok(OpKind::SetRngSeed {
        src: src.view.clone(),
    })
}

fn seed_tensor(ctx: &Ctx<'_>, t: &Tensor, span: Span) -> Result<(), Diagnostic> {
    check::on_chip(ctx, t, span, "the seed")?;
    if check::partitions(t) != 1 || check::free_size(t) != 1 || t.dtype().size() != 4 {
        return Err(check::tensor_error(
            ctx,
            codes::SHAPE,
            "the seed must be a [1, 1] tensor of a 32-bit dtype, found",
            t,
            span,
            "not a [1, 1] 32-bit tensor",
        ));
    }
    Ok(())
}

fn set_rng_seed(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let kind = set_seed(ctx, b, SRC_SEEDS.name)?;
    emit::finish(ctx, b, kind, None, None, span)
}

fn nl_random_seed(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let kind = set_seed(ctx, b, "seed")?;
    emit::push(ctx, b, kind, None, span)?;
    Ok(Value::None)
}

fn nl_rand(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let shape = b.shape(ctx, "shape")?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(DType::F32);
    let buffer = b.buffer(ctx, "buffer")?.unwrap_or(Buffer::Sbuf);
    if buffer != Buffer::Sbuf {
        return Err(ctx.error(
            codes::BUFFER,
            format!("`nl.rand` makes an SBUF tile, found `buffer={buffer}`"),
            b.span_of("buffer"),
            "not sbuf",
        ));
    }
    let prefix = b
        .string(ctx, "name")?
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "rand_".to_owned());
    let out = emit::new_result(ctx, b, &prefix, &shape, dtype, Buffer::Sbuf, span)?;
    check::operand(ctx, &out, b.span_of("shape"), "the random tile")?;
    if ctx.target() >= Target::Trn3 {
        let kind = OpKind::Rand2 {
            dst: out.view.clone(),
            min: Scalar::imm(0.0),
            max: Scalar::imm(1.0),
        };
        emit::push(ctx, b, kind, None, span)?;
    } else {
        let bits = emit::new_result(ctx, b, "rand_bits_", &shape, DType::U16, Buffer::Sbuf, span)?;
        emit::push(
            ctx,
            b,
            OpKind::Rng {
                dst: bits.view.clone(),
            },
            Some(Engine::Vector),
            span,
        )?;
        let kind = crate::api::lower::tensor_scalar1(
            &out.view,
            &bits.view,
            AluOp::Multiply,
            Some(Scalar::imm(1.0 / 65536.0)),
            false,
        );
        emit::push(ctx, b, kind, None, span)?;
    }
    Ok(Value::Tensor(emit::masked_result(b, &out)))
}
