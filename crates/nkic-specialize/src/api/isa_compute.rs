//! The remaining `nki.isa` compute instructions (owned by helper
//! `spec-api-2`): every `nisa` op not defined in `isa_core.rs`, with the
//! rules of isa.md §4.2–§4.3 checked at compile time.
//!
//! All but `tensor_copy_predicated` (which updates `dst` in place) accept
//! the legacy value form (no `dst`; the result is a new SBUF tile).
//! Choices where the spec is silent: a value-form result has the input's
//! dtype unless `dtype=` is given (uint32 for `nc_find_index8`); `max8`
//! and `nc_find_index8` results are `(P, 8)`, `bn_stats` `(P, 6)` and
//! `bn_aggr` `(P, 2)`; `select_reduce` with `reduce_res` but no
//! `reduce_cmd` uses `reset_reduce`, as `activation` does.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::{AluOp, DType, Dim, Engine, Fp32, ReduceCmd, Target};

use super::check::{self, shape_text};
use super::codes;
use super::emit;
use super::isa_core::{self, scalar_operand};
use super::rules::{
    BinaryArith, DATA_DST, NotBothPsum, REDUCE_RESULT, SRC_DST, Tiles, binary_arith, not_both_psum,
    tiles,
};
use super::table::{
    ApiDef, Bound, DATA, DST, Kind, NAME, OP0, OP1, OPERAND0, REDUCE_IDLE, REDUCE_OP, REDUCE_RES,
    REDUCE_RESET, REVERSE0, REVERSE1, SRC, opt, req,
};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const VECTOR: &[Engine] = &[Engine::Vector];
const SCALAR: &[Engine] = &[Engine::Scalar];
const GPSIMD: &[Engine] = &[Engine::GpSimd];
const TENSOR: &[Engine] = &[Engine::Tensor];

const STT_TILES: Tiles = tiles!("data", "operand1", "dst");
const STT_PSUM: NotBothPsum = not_both_psum!("data", "operand1");
const SCAN_TILES: Tiles = tiles!("data0", "data1", "dst");
const SCAN_PSUM: NotBothPsum = not_both_psum!("data0", "data1");
const PRED_TILES: Tiles = tiles!("src", "predicate", "dst");
const PRED_PSUM: NotBothPsum = not_both_psum!("src", "predicate");
const SELECT_TILES: Tiles = tiles!("on_true", "predicate", "dst");
const SELECT_PSUM: NotBothPsum = not_both_psum!("on_true", "predicate");
const RANGE_TILES: Tiles = tiles!("on_true_tile", "dst");
const OPS_ARITH: BinaryArith = binary_arith!("op0", "op1");
const OP0_ARITH: BinaryArith = binary_arith!("op0");

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nisa.reciprocal",
        &[DST, DATA, NAME],
        VECTOR,
        "`dst = 1 / data` in fp32 on VectorE (more precise than `activation(nl.reciprocal)`).",
        &[DATA_DST.text],
        reciprocal,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.exponential",
        &[
            DST,
            SRC,
            opt("max_value", Kind::Scalar, "0.0"),
            REDUCE_RES,
            REDUCE_IDLE,
            opt("reduce_init", Kind::Scalar, "0.0"),
            NAME,
        ],
        VECTOR,
        "`dst = exp(src - max_value)` on VectorE, optionally summing every element into the Vector accumulators.",
        &[
            "trn3 only.",
            SRC_DST.text,
            "`max_value` and `reduce_init` are numbers or `(P, 1)` tensors.",
            REDUCE_RESULT.text,
        ],
        exponential,
    )
    .new_in(Target::Trn3)
    .with_value_form(),
    ApiDef::new(
        "nisa.activation_reduce",
        &[
            DST,
            req("op", Kind::ActFunc),
            DATA,
            REDUCE_OP,
            req("reduce_res", Kind::Tensor),
            opt("bias", Kind::Scalar, "None"),
            opt("scale", Kind::Scalar, "1.0"),
            NAME,
        ],
        SCALAR,
        "`activation(..., reduce_cmd=reset_reduce, reduce_res=reduce_res)`: the activation and the per-row sum of its result.",
        &[
            DATA_DST.text,
            "`reduce_op` is `nl.add`.",
            REDUCE_RESULT.text,
            "`scale` and `bias` are numbers or `(P, 1)` tensors; `bias` is not tfloat32.",
        ],
        activation_reduce,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.scalar_tensor_tensor",
        &[
            DST,
            DATA,
            OP0,
            OPERAND0,
            OP1,
            req("operand1", Kind::Tensor),
            REVERSE0,
            REVERSE1,
            NAME,
        ],
        VECTOR,
        "`dst = (data op0 operand0) op1 operand1` with a scalar or `(P, 1)` `operand0` and a full-tile `operand1`.",
        &[STT_TILES.text, STT_PSUM.text, OPS_ARITH.text],
        scalar_tensor_tensor,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_tensor_scan",
        &[
            DST,
            req("data0", Kind::Tensor),
            req("data1", Kind::Tensor),
            req("initial", Kind::Scalar),
            OP0,
            OP1,
            REVERSE0,
            REVERSE1,
            NAME,
        ],
        VECTOR,
        "Per partition, `r[i] = op1(op0(data0[i], r[i-1]), data1[i])` from `r[-1] = initial`; `dst = r`.",
        &[
            SCAN_TILES.text,
            SCAN_PSUM.text,
            "`initial` is a number or a `(P, 1)` tensor.",
            OPS_ARITH.text,
        ],
        tensor_tensor_scan,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_copy_predicated",
        &[
            DST,
            SRC,
            req("predicate", Kind::Tensor),
            opt("reverse_pred", Kind::Bool, "False"),
            NAME,
        ],
        VECTOR,
        "`dst[i] = src[i]` where `predicate[i] != 0` (inverted by `reverse_pred`); other elements of `dst` are unchanged.",
        &[
            PRED_TILES.text,
            "`predicate` is uint8, uint16, uint32 or bool_; `src` and `dst` have the same dtype.",
            PRED_PSUM.text,
        ],
        tensor_copy_predicated,
    ),
    ApiDef::new(
        "nisa.max8",
        &[DST, SRC, NAME],
        VECTOR,
        "The 8 largest values of each partition, in descending order.",
        &[
            "`src` is SBUF/PSUM, up to 3-D, with 8 to 16384 free elements.",
            "`dst` is `(P, 8)` with `src`'s partition count.",
        ],
        max8,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.nc_find_index8",
        &[DST, DATA, req("vals", Kind::Tensor), NAME],
        VECTOR,
        "For each of the 8 `vals` of a partition, the flat index of its first occurrence in `data` (all ones when absent).",
        &[
            "`data` is SBUF/PSUM, up to 3-D, with 8 to 16384 free elements.",
            "`vals` has exactly 8 elements per partition; `dst` is `(P, 8)` uint32 or uint16.",
        ],
        find_index8,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.bn_stats",
        &[DST, DATA, NAME],
        VECTOR,
        "Per partition `[n, mean, M2]` of the even and of the odd free positions (6 values).",
        &[
            "`data` is SBUF/PSUM with at most 512 free elements (`nl.tile_size.bn_stats_fmax`).",
            "`dst` has `data`'s partition count and 6 free elements.",
        ],
        bn_stats,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.bn_aggr",
        &[DST, DATA, NAME],
        VECTOR,
        "Combines the `(count, mean, M2)` triples of each partition into mean and variance (2 values).",
        &[
            "`data` is SBUF/PSUM with a multiple of 3 free elements.",
            "`dst` has `data`'s partition count and 2 free elements.",
        ],
        bn_aggr,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.select_reduce",
        &[
            DST,
            req("predicate", Kind::Tensor),
            req("on_true", Kind::Tensor),
            req("on_false", Kind::Scalar),
            REDUCE_RES,
            REDUCE_IDLE,
            opt("reduce_op", Kind::AluOp, "nl.maximum"),
            opt("reverse_pred", Kind::Bool, "False"),
            NAME,
        ],
        VECTOR,
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
    ApiDef::new(
        "nisa.tensor_partition_reduce",
        &[DST, req("op", Kind::AluOp), DATA, NAME],
        GPSIMD,
        "Reduces across partitions on GpSimd: `dst[0, f] = op over p of data[p, f]`.",
        &[
            "`data` and `dst` are SBUF (GpSimd cannot access PSUM); `dst` has one partition and `data`'s free size.",
            "`op` is `nl.add`, `nl.average`, `nl.maximum`, `nl.bitwise_or` or `nl.bitwise_and`.",
        ],
        tensor_partition_reduce,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_scalar_reduce",
        &[
            DST,
            DATA,
            OP0,
            OPERAND0,
            REDUCE_OP,
            REDUCE_RES,
            REVERSE0,
            REDUCE_RESET,
            opt("reduce_init", Kind::Scalar, "None"),
            opt("reduce_res_negate", Kind::Bool, "False"),
            NAME,
        ],
        VECTOR,
        "`dst = data op0 operand0`, with each row of `dst` reduced by `reduce_op` into the Vector accumulators and read out to `reduce_res`.",
        &[
            DATA_DST.text,
            "`op0` is an arithmetic operator; `operand0` a number or `(P, 1)` tensor, ignored (None or 0) for a unary `op0` such as `nl.abs`; `reverse0` is not supported.",
            "`reduce_op` is `nl.add`, `nl.multiply`, `nl.maximum` or `nl.minimum`.",
            REDUCE_RESULT.text,
            "`reduce_init` is given exactly when `reduce_cmd` is `load_reduce`.",
        ],
        tensor_scalar_reduce,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_scalar_cumulative",
        &[
            DST,
            SRC,
            OP0,
            OP1,
            req("imm0", Kind::Scalar),
            opt("imm1", Kind::Scalar, "None"),
            REDUCE_RESET,
            NAME,
        ],
        VECTOR,
        "Running scan per partition over the flattened free elements: `reg = op1(op0(src[i], imm0), reg); dst[i] = reg`, starting from the identity of `op1`, the Vector accumulators (`reduce`) or `imm1` (`load_reduce`).",
        &[
            SRC_DST.text,
            "`src` and `dst` are bfloat16, float16, float32, fp8, uint8, uint16, int8 or int16 (no 32-bit integers).",
            OP0_ARITH.text,
            "`op1` is `nl.add`, `nl.subtract`, `nl.multiply`, `nl.maximum` or `nl.minimum`.",
            "`imm0` and `imm1` are numbers or `(P, 1)` tensors; `load_reduce` needs `imm1` (other commands ignore it).",
            "`reduce_cmd` is `reset_reduce`, `reduce` or `load_reduce`.",
        ],
        tensor_scalar_cumulative,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.nc_match_replace8",
        &[
            DST,
            DATA,
            req("vals", Kind::Tensor),
            req("imm", Kind::Float),
            opt("dst_idx", Kind::Tensor, "None"),
            NAME,
        ],
        VECTOR,
        "A copy of `data` where, for each of the 8 `vals` of a partition (last to first), the first not yet replaced match becomes `imm`; `dst_idx` receives the positions.",
        &[
            DATA_DST.text,
            "`data` is up to 3-D with 8 to 16384 free elements.",
            "`vals` and `dst_idx` have 8 elements per partition.",
        ],
        match_replace8,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.range_select",
        &[
            DST,
            req("on_true_tile", Kind::Tensor),
            req("comp_op0", Kind::AluOp),
            req("comp_op1", Kind::AluOp),
            req("bound0", Kind::Tensor),
            req("bound1", Kind::Tensor),
            REDUCE_RESET,
            REDUCE_RES,
            opt("reduce_op", Kind::AluOp, "nl.maximum"),
            opt("range_start", Kind::Int, "0"),
            opt("on_false_value", Kind::Float, "-3.4028235e38"),
            NAME,
        ],
        VECTOR,
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
    ApiDef::new(
        "nisa.affine_select",
        &[
            DST,
            req("pattern", Kind::Pattern),
            req("channel_multiplier", Kind::Int),
            req("on_true_tile", Kind::Tensor),
            req("on_false_value", Kind::Float),
            opt("cmp_op", Kind::AluOp, "nl.equal"),
            opt("offset", Kind::Int, "0"),
            NAME,
        ],
        GPSIMD,
        "`dst = cmp_op(offset + p·channel_multiplier + Σ i_k·step_k, 0) ? on_true_tile : on_false_value` on GpSimd (e.g. causal masks).",
        &[
            "`on_true_tile` and `dst` are SBUF with equal partition counts (≤ 128); `dst`'s free size is the product of the pattern's counts, as is `on_true_tile`'s.",
            "`pattern` has 1 to 4 `[step, num]` pairs; `cmp_op` is a comparison operator; `on_false_value` is a number.",
        ],
        affine_select,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.quantize_mx",
        &[DST, SRC, req("dst_scale", Kind::Tensor), NAME],
        VECTOR,
        "Quantizes fp16/bf16 `src` into packed MXFP8 `dst` with one e8m0 scale per 8 partitions × 4 elements in `dst_scale`.",
        &[
            "trn3 only; all three tensors are in SBUF.",
            "`src` is float16 or bfloat16 with a multiple of 32 partitions (≤ 128) and a free size that is a multiple of 4.",
            "`dst` is float8_e5m2_x4 or float8_e4m3fn_x4 with `src`'s partition count and a quarter of its free size; `dst_scale` is float8_e8m0fnu or uint8 with that free size too, and only its first 32·(P/32 − 1) + 4 rows (4 per quadrant) are written.",
        ],
        quantize_mx,
    )
    .new_in(Target::Trn3),
    ApiDef::new(
        "nisa.nc_matmul_mx",
        &[
            DST,
            req("stationary", Kind::Tensor),
            req("moving", Kind::Tensor),
            req("stationary_scale", Kind::Tensor),
            req("moving_scale", Kind::Tensor),
            opt("tile_position", Kind::Ints, "None"),
            opt("tile_size", Kind::Ints, "None"),
            opt("accumulate", Kind::Bool, "None"),
            NAME,
        ],
        TENSOR,
        "The microscaled (MXFP8/MXFP4) matmul `dst[m, n] (=|+=) Σ_k Σ_q S[k, m, q]·2^(s−127) · V[k, n, q]·2^(v−127)` of packed x4 operands with one e8m0 scale per 8 partitions × 4 values.",
        &[
            "trn3 only; `stationary`, `moving` and both scales are SBUF, `dst` is PSUM.",
            "`stationary` and `moving` are float8_e5m2_x4, float8_e4m3fn_x4 or float4_e2m1fn_x4; scales are float8_e8m0fnu or uint8; `dst` is float32 or bfloat16.",
            "Both operands have the same partition count, a multiple of 32 and at most 128; `stationary` has an even free size of at most 128; `moving` at most 4096 (fp32 `dst`) or 8192 (bf16 `dst`) free elements.",
            "`dst` is `[M, N]` with M = stationary's and N = moving's free size; each scale has its data's free size and its partitions (or P/8 for P ≤ 32); the instruction reads 4 rows per 32-partition quadrant, rows 0 to 32·(P/32 − 1) + 3 of the scale view, so a scale view of exactly those 32·(P/32 − 1) + 4 rows works too.",
            "PE tiling is by rows only: `tile_size` is (32, 128), (64, 128) or (128, 128) and `tile_position` is (row, 0) with `row` a multiple of the row size.",
        ],
        nc_matmul_mx,
    )
    .new_in(Target::Trn3),
];

// ------------------------------------------------------------------ helpers

fn operand_or(
    ctx: &Ctx<'_>,
    b: &Bound,
    name: &str,
    data: &Tensor,
    default: f32,
) -> Result<Scalar, Diagnostic> {
    match b.get(name) {
        None => Ok(Scalar::imm(default)),
        Some(a) => scalar_operand(ctx, &a.value, data, a.span, &format!("`{name}`")),
    }
}

fn fixed_width_dst(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    src: &Tensor,
    width: u64,
    dtype: DType,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let p = check::partitions(src);
    let (dst, _) = emit::dst_or_new(ctx, b, &[p, width], dtype, Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    check::operand(ctx, &dst, ds, "`dst`")?;
    if check::partitions(&dst) != p || check::free_size(&dst) != width {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` of `{}` must be ({p}, {width}), found {}",
                b.def.name,
                shape_text(&dst.shape)
            ),
            ds,
            format!("not ({p}, {width})"),
        ));
    }
    Ok(dst)
}

fn top8_source(ctx: &Ctx<'_>, t: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    check::operand(ctx, t, span, what)?;
    let f = check::free_size(t);
    if t.shape.len() > 3 || !(8..=16384).contains(&f) {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!(
                "{what} must be up to 3-D with 8 to 16384 free elements, found {}",
                shape_text(&t.shape)
            ),
            span,
            "bad size",
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------ runs

fn reciprocal(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [data, dst] = DATA_DST.bind(ctx, b, span)?;
    let kind = OpKind::Reciprocal {
        dst: dst.view.clone(),
        src: data.view.clone(),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn exponential(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [src, dst] = SRC_DST.bind(ctx, b, span)?;
    let max_value = operand_or(ctx, b, "max_value", &src, 0.0)?;
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&src))?;
    let cmd = isa_core::reduce_cmd(ctx, b)?.unwrap_or(ReduceCmd::Idle);
    let reduce_init = if cmd == ReduceCmd::LoadReduce {
        Some(operand_or(ctx, b, "reduce_init", &src, 0.0)?)
    } else {
        None
    };
    let kind = OpKind::Exponential {
        dst: dst.view.clone(),
        src: src.view.clone(),
        max_value,
        reduce_cmd: cmd,
        reduce_init,
        reduce_res: res.map(|t| t.view.clone()),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn activation_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let func = b.act_func(ctx, "op")?.unwrap_or(nkic_isa::ActFunc::Copy);
    let [data, dst] = DATA_DST.bind(ctx, b, span)?;
    let reduce_op = b.alu_op(ctx, "reduce_op")?.unwrap_or(AluOp::Add);
    if reduce_op != AluOp::Add {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`activation_reduce` reduces with `nl.add` only, found `nl.{}`",
                reduce_op.name()
            ),
            b.span_of("reduce_op"),
            "not nl.add",
        ));
    }
    let Some(res) = REDUCE_RESULT.check(ctx, b, check::partitions(&data))? else {
        return Err(ctx.error(
            codes::ARG_TYPE,
            "`activation_reduce` needs a `reduce_res` tensor",
            span,
            "no `reduce_res`",
        ));
    };
    let scale = operand_or(ctx, b, "scale", &data, 1.0)?;
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
    let kind = OpKind::ActivationReduce {
        dst: dst.view.clone(),
        src: data.view.clone(),
        func,
        scale,
        bias,
        reduce_op,
        reduce_res: res.view.clone(),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn scalar_tensor_tensor(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [data, operand1, dst] = STT_TILES.bind(ctx, b, span)?;
    STT_PSUM.check(ctx, b, &data, &operand1)?;
    let op0 = OPS_ARITH.op(ctx, b, 0)?;
    let op1 = OPS_ARITH.op(ctx, b, 1)?;
    let operand0 = operand_or(ctx, b, "operand0", &data, 0.0)?;
    let kind = OpKind::ScalarTensorTensor {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op0,
        operand0,
        reverse0: b.bool_or(ctx, "reverse0", false)?,
        op1,
        src1: operand1.view.clone(),
        reverse1: b.bool_or(ctx, "reverse1", false)?,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn tensor_tensor_scan(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [data0, data1, dst] = SCAN_TILES.bind(ctx, b, span)?;
    SCAN_PSUM.check(ctx, b, &data0, &data1)?;
    let op0 = OPS_ARITH.op(ctx, b, 0)?;
    let op1 = OPS_ARITH.op(ctx, b, 1)?;
    let initial = operand_or(ctx, b, "initial", &data0, 0.0)?;
    let kind = OpKind::TensorTensorScan {
        dst: dst.view.clone(),
        src0: data0.view.clone(),
        src1: data1.view.clone(),
        initial,
        op0,
        op1,
        reverse0: b.bool_or(ctx, "reverse0", false)?,
        reverse1: b.bool_or(ctx, "reverse1", false)?,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn tensor_copy_predicated(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [src, pred, dst] = PRED_TILES.bind(ctx, b, span)?;
    let sp = b.span_of("predicate");
    PRED_PSUM.check(ctx, b, &src, &pred)?;
    check::dtype_in(
        ctx,
        &pred,
        &[DType::U8, DType::U16, DType::U32, DType::Bool],
        "`predicate`",
        sp,
    )?;
    if src.dtype() != dst.dtype() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`src` and `dst` must have the same dtype, found {} and {}",
                src.dtype().name(),
                dst.dtype().name()
            ),
            b.span_of("dst"),
            "dtypes differ",
        ));
    }
    let kind = OpKind::TensorCopyPredicated {
        dst: dst.view.clone(),
        src: src.view.clone(),
        predicate: pred.view.clone(),
        reverse_pred: b.bool_or(ctx, "reverse_pred", false)?,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn max8(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src")?;
    top8_source(ctx, &src, b.span_of("src"), "`src`")?;
    let dst = fixed_width_dst(ctx, b, &src, 8, src.dtype(), span)?;
    let kind = OpKind::Max8 {
        dst: dst.view.clone(),
        src: src.view.clone(),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn find_index8(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    top8_source(ctx, &data, b.span_of("data"), "`data`")?;
    let vals = b.tensor(ctx, "vals")?;
    let sv = b.span_of("vals");
    check::operand(ctx, &vals, sv, "`vals`")?;
    if check::partitions(&vals) != check::partitions(&data) || check::free_size(&vals) != 8 {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`vals` must hold 8 values for each of the {} partitions, found {}",
                check::partitions(&data),
                shape_text(&vals.shape)
            ),
            sv,
            "not (P, 8)",
        ));
    }
    let dst = fixed_width_dst(ctx, b, &data, 8, DType::U32, span)?;
    check::dtype_in(
        ctx,
        &dst,
        &[DType::U32, DType::U16],
        "`dst`",
        b.span_of("dst"),
    )?;
    let kind = OpKind::FindIndex8 {
        dst: dst.view.clone(),
        src: data.view.clone(),
        vals: vals.view.clone(),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn bn_stats(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let sd = b.span_of("data");
    check::operand(ctx, &data, sd, "`data`")?;
    let fmax = u64::from(ctx.target().figures().bn_stats_fmax);
    if check::free_size(&data) > fmax {
        return Err(ctx
            .error(
                codes::FREE_SIZE,
                format!(
                    "`bn_stats` takes at most {fmax} free elements, found {}",
                    check::free_size(&data)
                ),
                sd,
                "too many elements",
            )
            .with_help("split the row into chunks and combine them with `bn_aggr`"));
    }
    let dst = fixed_width_dst(ctx, b, &data, 6, data.dtype(), span)?;
    let kind = OpKind::BnStats {
        dst: dst.view.clone(),
        src: data.view.clone(),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn bn_aggr(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let sd = b.span_of("data");
    check::operand(ctx, &data, sd, "`data`")?;
    let f = check::free_size(&data);
    if f == 0 || !f.is_multiple_of(3) {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!("`bn_aggr` reads (count, mean, M2) triples, but `data` has {f} free elements"),
            sd,
            "not a multiple of 3",
        ));
    }
    let dst = fixed_width_dst(ctx, b, &data, 2, data.dtype(), span)?;
    let kind = OpKind::BnAggr {
        dst: dst.view.clone(),
        src: data.view.clone(),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn select_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [on_true, pred, dst] = SELECT_TILES.bind(ctx, b, span)?;
    let st = b.span_of("on_true");
    if matches!(on_true.dtype(), DType::TF32 | DType::I32 | DType::U32) {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`on_true` cannot be tfloat32, int32 or uint32, found {}",
                check::describe(&on_true)
            ),
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
    if let Some(op) = b.alu_op(ctx, "reduce_op")?
        && op != AluOp::Maximum
    {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`select_reduce` reduces with `nl.maximum` only, found `nl.{}`",
                op.name()
            ),
            b.span_of("reduce_op"),
            "not nl.maximum",
        ));
    }
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&on_true))?;
    let cmd = match isa_core::reduce_cmd(ctx, b)? {
        Some(c) => c,
        None if res.is_some() => ReduceCmd::ResetReduce,
        None => ReduceCmd::Idle,
    };
    if cmd == ReduceCmd::LoadReduce {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "`select_reduce` has no `load_reduce` (it has no initial value)",
            b.span_of("reduce_cmd"),
            "not available",
        ));
    }
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

fn tensor_partition_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let sd = b.span_of("data");
    let op = b.alu_op(ctx, "op")?.unwrap_or(AluOp::Add);
    if !matches!(
        op,
        AluOp::Add | AluOp::Average | AluOp::Maximum | AluOp::BitwiseOr | AluOp::BitwiseAnd
    ) {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`tensor_partition_reduce` takes `nl.add`, `nl.average`, `nl.maximum`, `nl.bitwise_or` or `nl.bitwise_and`, found `nl.{}`",
                op.name()
            ),
            b.span_of("op"),
            "unsupported operator",
        ));
    }
    let mut shape = data.shape.clone();
    if let Some(p) = shape.first_mut() {
        *p = 1;
    }
    let (dst, _) = emit::dst_or_new(ctx, b, &shape, data.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    check::operand(ctx, &data, sd, "`data`")?;
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::not_psum_on(ctx, &data, Engine::GpSimd, sd, "`data`")?;
    check::not_psum_on(ctx, &dst, Engine::GpSimd, ds, "`dst`")?;
    if check::partitions(&dst) != 1 || check::free_size(&dst) != check::free_size(&data) {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must have 1 partition and {} free elements, found {}",
                check::free_size(&data),
                shape_text(&dst.shape)
            ),
            ds,
            "wrong result shape",
        ));
    }
    if op.is_bitvec() {
        for (t, sp) in [(&data, sd), (&dst, ds)] {
            if !t.dtype().is_int() {
                return Err(ctx.error(
                    codes::DTYPE,
                    format!(
                        "the bitwise operator `nl.{}` needs integer dtypes, found {}",
                        op.name(),
                        check::describe(t)
                    ),
                    sp,
                    "not an integer dtype",
                ));
            }
        }
    }
    let kind = OpKind::TensorPartitionReduce {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn tensor_scalar_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [data, dst] = DATA_DST.bind(ctx, b, span)?;
    // A unary arithmetic `op0` (`nl.abs`, `nl.square`, ...) is allowed,
    // with `operand0` None or 0 (isa.md §4.2): it ignores the operand.
    let unary = b
        .alu_op(ctx, "op0")?
        .filter(|op| op.is_unary() && !op.is_bitvec());
    let op0 = match unary {
        Some(op) => op,
        None => OP0_ARITH.op(ctx, b, 0)?,
    };
    if b.bool_or(ctx, "reverse0", false)? {
        return Err(ctx.error(
            codes::VALUE,
            "`reverse0` of `tensor_scalar_reduce` is not supported",
            b.span_of("reverse0"),
            "not supported",
        ));
    }
    let operand0 = match unary {
        Some(_) => Scalar::imm(0.0),
        None => operand_or(ctx, b, "operand0", &data, 0.0)?,
    };
    let reduce_op = b.alu_op(ctx, "reduce_op")?.unwrap_or(AluOp::Add);
    if !matches!(
        reduce_op,
        AluOp::Add | AluOp::Multiply | AluOp::Maximum | AluOp::Minimum
    ) {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`reduce_op` must be `nl.add`, `nl.multiply`, `nl.maximum` or `nl.minimum`, found `nl.{}`",
                reduce_op.name()
            ),
            b.span_of("reduce_op"),
            "unsupported reduction",
        ));
    }
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&data))?;
    let cmd = isa_core::reduce_cmd(ctx, b)?.unwrap_or(ReduceCmd::ResetReduce);
    let reduce_init = match (cmd, b.get("reduce_init")) {
        (ReduceCmd::LoadReduce, Some(a)) => Some(scalar_operand(
            ctx,
            &a.value,
            &data,
            a.span,
            "`reduce_init`",
        )?),
        (ReduceCmd::LoadReduce, None) => {
            return Err(ctx.error(
                codes::SCALAR_OPERAND,
                "`load_reduce` needs `reduce_init`",
                b.span_of("reduce_cmd"),
                "no `reduce_init`",
            ));
        }
        (_, Some(a)) => {
            return Err(ctx.error(
                codes::SCALAR_OPERAND,
                "`reduce_init` is only used with `reduce_cmd=nisa.reduce_cmd.load_reduce`",
                a.span,
                "unused",
            ));
        }
        (_, None) => None,
    };
    let kind = OpKind::TensorScalarReduce {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op0,
        operand0: Some(operand0),
        reduce_op,
        reduce_cmd: cmd,
        reduce_init,
        reduce_res: res.map(|t| t.view.clone()),
        reduce_res_negate: b.bool_or(ctx, "reduce_res_negate", false)?,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

/// The dtypes `tensor_scalar_cumulative` reads and writes (isa.md §4.2).
const CUMULATIVE_DTYPES: &[DType] = &[
    DType::BF16,
    DType::F16,
    DType::F32,
    DType::F8E4M3,
    DType::F8E4M3FN,
    DType::F8E5M2,
    DType::U8,
    DType::U16,
    DType::I8,
    DType::I16,
];

fn tensor_scalar_cumulative(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [src, dst] = SRC_DST.bind(ctx, b, span)?;
    check::dtype_in(ctx, &src, CUMULATIVE_DTYPES, "`src`", b.span_of("src"))?;
    check::dtype_in(ctx, &dst, CUMULATIVE_DTYPES, "`dst`", b.span_of("dst"))?;
    let op0 = OP0_ARITH.op(ctx, b, 0)?;
    let op1 = b.alu_op(ctx, "op1")?.unwrap_or(AluOp::Add);
    if !matches!(
        op1,
        AluOp::Add | AluOp::Subtract | AluOp::Multiply | AluOp::Maximum | AluOp::Minimum
    ) {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`op1` must be `nl.add`, `nl.subtract`, `nl.multiply`, `nl.maximum` or `nl.minimum`, found `nl.{}`",
                op1.name()
            ),
            b.span_of("op1"),
            "unsupported scan operator",
        ));
    }
    let imm0 = operand_or(ctx, b, "imm0", &src, 0.0)?;
    let cmd = isa_core::reduce_cmd(ctx, b)?.unwrap_or(ReduceCmd::ResetReduce);
    if !matches!(
        cmd,
        ReduceCmd::ResetReduce | ReduceCmd::Reduce | ReduceCmd::LoadReduce
    ) {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`reduce_cmd` of `tensor_scalar_cumulative` must be `reset_reduce`, `reduce` or `load_reduce`, found `{}`",
                cmd.name()
            ),
            b.span_of("reduce_cmd"),
            "not a scan start",
        ));
    }
    let imm1 = match (cmd, b.get("imm1")) {
        (ReduceCmd::LoadReduce, Some(a)) => {
            Some(scalar_operand(ctx, &a.value, &src, a.span, "`imm1`")?)
        }
        (ReduceCmd::LoadReduce, None) => {
            return Err(ctx.error(
                codes::SCALAR_OPERAND,
                "`load_reduce` needs `imm1`, the value the scan starts from",
                b.span_of("reduce_cmd"),
                "no `imm1`",
            ));
        }
        // The hardware reads `imm1` only to load the accumulators; kernels
        // that chain calls pass the same `imm1` to every call.
        (_, _) => None,
    };
    let kind = OpKind::TensorScalarCumulative {
        dst: dst.view.clone(),
        src: src.view.clone(),
        op0,
        imm0,
        op1,
        imm1,
        reduce_cmd: cmd,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn eight_per_partition(
    ctx: &Ctx<'_>,
    t: &Tensor,
    p: u64,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    check::operand(ctx, t, span, what)?;
    if check::partitions(t) != p || check::free_size(t) != 8 {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "{what} must hold 8 values for each of the {p} partitions, found {}",
                shape_text(&t.shape)
            ),
            span,
            "not (P, 8)",
        ));
    }
    Ok(())
}

fn match_replace8(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    top8_source(ctx, &data, b.span_of("data"), "`data`")?;
    let [_, dst] = DATA_DST.bind(ctx, b, span)?;
    let p = check::partitions(&data);
    let vals = b.tensor(ctx, "vals")?;
    eight_per_partition(ctx, &vals, p, b.span_of("vals"), "`vals`")?;
    let dst_idx = b.opt_tensor(ctx, "dst_idx")?;
    if let Some(t) = &dst_idx {
        eight_per_partition(ctx, t, p, b.span_of("dst_idx"), "`dst_idx`")?;
    }
    let imm = b.float(ctx, "imm")?.unwrap_or(0.0);
    let kind = OpKind::MatchReplace8 {
        dst: dst.view.clone(),
        src: data.view.clone(),
        vals: vals.view.clone(),
        imm: Fp32::new(imm as f32),
        dst_idx: dst_idx.map(|t| t.view.clone()),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn range_select(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [src, dst] = RANGE_TILES.bind(ctx, b, span)?;
    if !src.dtype().is_float() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`on_true_tile` must have a float dtype, found {}",
                check::describe(&src)
            ),
            b.span_of("on_true_tile"),
            "not a float dtype",
        ));
    }
    let mut cmps = [AluOp::Equal; 2];
    for (i, name) in ["comp_op0", "comp_op1"].into_iter().enumerate() {
        let op = b.alu_op(ctx, name)?.unwrap_or(AluOp::Equal);
        if !matches!(
            op,
            AluOp::Equal | AluOp::Less | AluOp::LessEqual | AluOp::Greater | AluOp::GreaterEqual
        ) {
            return Err(ctx.error(
                codes::BAD_ENUM,
                format!(
                    "`{name}` must be `nl.equal`, `nl.less`, `nl.less_equal`, `nl.greater` or `nl.greater_equal`, found `nl.{}`",
                    op.name()
                ),
                b.span_of(name),
                "not a comparison",
            ));
        }
        cmps[i] = op;
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
    if let Some(op) = b.alu_op(ctx, "reduce_op")?
        && op != AluOp::Maximum
    {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`range_select` reduces with `nl.maximum` only, found `nl.{}`",
                op.name()
            ),
            b.span_of("reduce_op"),
            "not nl.maximum",
        ));
    }
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&src))?;
    let cmd = isa_core::reduce_cmd(ctx, b)?.unwrap_or(ReduceCmd::ResetReduce);
    if cmd == ReduceCmd::LoadReduce {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "`range_select` has no `load_reduce` (it has no initial value)",
            b.span_of("reduce_cmd"),
            "not available",
        ));
    }
    let range_start = b.int(ctx, "range_start")?.unwrap_or(0);
    let Ok(range_start) = i32::try_from(range_start) else {
        return Err(ctx.error(
            codes::VALUE,
            format!("`range_start` {range_start} does not fit in 32 bits"),
            b.span_of("range_start"),
            "too large",
        ));
    };
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
    let items: Vec<Value> = match &v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        _ => return Err(bad("expected [[step, num], ...]")),
    };
    if items.is_empty() || items.len() > 4 {
        return Err(bad("1 to 4 [step, num] pairs"));
    }
    let mut dims = Vec::with_capacity(items.len());
    for item in &items {
        let pair: Vec<Value> = match item {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) => t.to_vec(),
            _ => return Err(bad("each entry is [step, num]")),
        };
        match (
            pair.first().and_then(Value::as_int),
            pair.get(1).and_then(Value::as_int),
            pair.len(),
        ) {
            (Some(step), Some(n), 2) if (1..=65535).contains(&n) => {
                dims.push(Dim::new(step, n as u32));
            }
            _ => return Err(bad("each entry is [step, num] with 1 <= num <= 65535")),
        }
    }
    Ok(dims)
}

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
        let (dst, _) = emit::dst_or_new(ctx, b, &src.shape, src.dtype(), Buffer::Sbuf, span)?;
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
    let (dst, _) = emit::dst_or_new(ctx, b, &src.shape, src.dtype(), Buffer::Sbuf, span)?;
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

fn quantize_mx(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src")?;
    let dst = b.tensor(ctx, "dst")?;
    let scale = b.tensor(ctx, "dst_scale")?;
    let (ss, ds, cs) = (b.span_of("src"), b.span_of("dst"), b.span_of("dst_scale"));
    for (t, sp, what) in [
        (&src, ss, "`src`"),
        (&dst, ds, "`dst`"),
        (&scale, cs, "`dst_scale`"),
    ] {
        check::operand(ctx, t, sp, what)?;
        check::buffer_in(ctx, t, &[Buffer::Sbuf], sp, what)?;
    }
    check::dtype_in(ctx, &src, &[DType::F16, DType::BF16], "`src`", ss)?;
    check::dtype_in(
        ctx,
        &dst,
        &[DType::F8E5M2x4, DType::F8E4M3FNx4],
        "`dst`",
        ds,
    )?;
    check::dtype_in(ctx, &scale, &[DType::F8E8M0, DType::U8], "`dst_scale`", cs)?;
    let (p, f) = (check::partitions(&src), check::free_size(&src));
    if !p.is_multiple_of(32) || !f.is_multiple_of(4) {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`src` needs a multiple of 32 partitions and a free size that is a multiple of 4, found {}",
                shape_text(&src.shape)
            ),
            ss,
            "not whole 8×4 groups",
        ));
    }
    if check::partitions(&dst) != p || check::free_size(&dst) != f / 4 {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must have {p} partitions and {} packed elements, found {}",
                f / 4,
                shape_text(&dst.shape)
            ),
            ds,
            "wrong packed shape",
        ));
    }
    if check::free_size(&scale) != f / 4 {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst_scale` must have {} free elements, found {}",
                f / 4,
                shape_text(&scale.shape)
            ),
            cs,
            "wrong scale size",
        ));
    }
    let scale = mx_scale_rows(ctx, &scale, p, cs, "`dst_scale`")?;
    let kind = OpKind::QuantizeMx {
        dst: dst.view.clone(),
        src: src.view.clone(),
        dst_scale: scale.view.clone(),
    };
    emit::finish(ctx, b, kind, None, None, span)
}

/// The rows of an MX scale tile the hardware reads (isa.md §4.1, scale
/// layout): 4 per 32-partition quadrant of `p`-partition data, so
/// `32·(p/32 − 1) + 4` partitions from the view's start (4 for p ≤ 32).
/// A scale tile allocated with the data's `p` partitions, as the spec
/// describes for p > 32, is narrowed to those rows; a tile with exactly
/// those rows is used as is.
fn mx_scale_rows(
    ctx: &Ctx<'_>,
    t: &Tensor,
    p: u64,
    span: Span,
    what: &str,
) -> Result<Tensor, Diagnostic> {
    let want = mx_scale_span(p);
    let tp = check::partitions(t);
    if tp <= want || p <= 32 {
        return Ok(t.clone());
    }
    let narrowed = t.view.slice(0, 0, want, 1).map(|view| {
        let mut shape = t.shape.clone();
        shape[0] = want;
        Tensor {
            view,
            shape,
            buffer: t.buffer,
        }
    });
    narrowed.ok_or_else(|| {
        ctx.error(
            codes::SHAPE,
            format!(
                "{what} must cover {want} partitions (4 per quadrant of the {p}-partition data), found {}",
                shape_text(&t.shape)
            ),
            span,
            "wrong scale shape",
        )
    })
}

/// How many partitions an MX scale view spans for `p`-partition data.
fn mx_scale_span(p: u64) -> u64 {
    32 * ((p / 32).max(1) - 1) + 4
}

fn mx_pair(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<Option<[u32; 2]>, Diagnostic> {
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

fn nc_matmul_mx(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    let st = b.tensor(ctx, "stationary")?;
    let mv = b.tensor(ctx, "moving")?;
    let ss = b.tensor(ctx, "stationary_scale")?;
    let ms = b.tensor(ctx, "moving_scale")?;
    let ds = b.span_of("dst");
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::buffer_in(ctx, &dst, &[Buffer::Psum], ds, "`dst`")?;
    check::dtype_in(ctx, &dst, &[DType::F32, DType::BF16], "`dst`", ds)?;
    let data_types = [DType::F8E5M2x4, DType::F8E4M3FNx4, DType::F4E2M1FNx4];
    for (t, name) in [(&st, "stationary"), (&mv, "moving")] {
        let sp = b.span_of(name);
        let what = format!("`{name}`");
        check::operand(ctx, t, sp, &what)?;
        check::buffer_in(ctx, t, &[Buffer::Sbuf], sp, &what)?;
        check::dtype_in(ctx, t, &data_types, &what, sp)?;
    }
    let p = check::partitions(&st);
    let sps = b.span_of("moving");
    if check::partitions(&mv) != p {
        return Err(ctx.error(
            codes::PARTITION_SIZE,
            format!(
                "the contraction sizes differ: `stationary` has {p} partitions, `moving` {}",
                check::partitions(&mv)
            ),
            sps,
            "partition counts differ",
        ));
    }
    if !p.is_multiple_of(32) {
        return Err(ctx.error(
            codes::PARTITION_SIZE,
            format!("`nc_matmul_mx` contracts over a multiple of 32 partitions, found {p}"),
            b.span_of("stationary"),
            "not a multiple of 32",
        ));
    }
    let (m, n) = (check::free_size(&st), check::free_size(&mv));
    if m > 128 || !m.is_multiple_of(2) {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!("`stationary` needs an even free size of at most 128, found {m}"),
            b.span_of("stationary"),
            "bad stationary width",
        ));
    }
    let nmax = if dst.dtype() == DType::BF16 {
        8192
    } else {
        4096
    };
    if n > nmax {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!(
                "`moving` has at most {nmax} free elements with a {} `dst`, found {n}",
                dst.dtype().name()
            ),
            sps,
            "too wide",
        ));
    }
    if check::partitions(&dst) != m || check::free_size(&dst) != n {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must be [{m}, {n}] (stationary × moving free sizes), found {}",
                shape_text(&dst.shape)
            ),
            ds,
            "wrong result shape",
        ));
    }
    for (t, data, name) in [(&ss, &st, "stationary_scale"), (&ms, &mv, "moving_scale")] {
        let sp = b.span_of(name);
        let what = format!("`{name}`");
        check::operand(ctx, t, sp, &what)?;
        check::buffer_in(ctx, t, &[Buffer::Sbuf], sp, &what)?;
        check::dtype_in(ctx, t, &[DType::F8E8M0, DType::U8], &what, sp)?;
        let tp = check::partitions(t);
        let parts_ok = tp == p || tp == mx_scale_span(p) || (p <= 32 && tp >= p / 8);
        if check::free_size(t) != check::free_size(data) || !parts_ok {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "{what} must have its data's free size ({}) and {p} partitions (or {} for 32 partitions), found {}",
                    check::free_size(data),
                    p / 8,
                    shape_text(&t.shape)
                ),
                sp,
                "wrong scale shape",
            ));
        }
    }
    let ss = mx_scale_rows(
        ctx,
        &ss,
        p,
        b.span_of("stationary_scale"),
        "`stationary_scale`",
    )?;
    let ms = mx_scale_rows(ctx, &ms, p, b.span_of("moving_scale"), "`moving_scale`")?;
    let tile_position = mx_pair(ctx, b, "tile_position")?;
    let tile_size = mx_pair(ctx, b, "tile_size")?;
    match (tile_position, tile_size) {
        (None, None) => {}
        (Some([row, col]), Some([rows, cols])) => {
            if cols != 128 || col != 0 || !matches!(rows, 32 | 64 | 128) || row % rows != 0 {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!(
                        "`nc_matmul_mx` tiles by rows only: `tile_size` is (32|64|128, 128) and `tile_position` (row, 0) with row a multiple of the row size; found position ({row}, {col}), size ({rows}, {cols})"
                    ),
                    b.span_of("tile_size"),
                    "unsupported tiling",
                ));
            }
            if u64::from(rows) < p {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!("the contraction of {p} partitions does not fit a {rows}-row tile"),
                    b.span_of("tile_size"),
                    "tile too small",
                ));
            }
        }
        _ => {
            return Err(ctx.error(
                codes::MATMUL_TILE,
                "`tile_position` and `tile_size` are given together",
                b.span,
                "only one given",
            ));
        }
    }
    let accumulate = match b.get("accumulate") {
        None => None,
        Some(_) => Some(b.bool_or(ctx, "accumulate", false)?),
    };
    let kind = OpKind::NcMatmulMx {
        dst: dst.view.clone(),
        stationary: st.view.clone(),
        moving: mv.view.clone(),
        stationary_scale: ss.view.clone(),
        moving_scale: ms.view.clone(),
        accumulate,
        tile_position,
        tile_size,
    };
    emit::finish(ctx, b, kind, None, None, span)
}
