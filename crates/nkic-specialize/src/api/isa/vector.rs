//! VectorE and the element-wise instructions (isa.md §6.4):
//! `tensor_tensor`, `tensor_scalar`, the scans and reductions, the top-8
//! searches, `bn_stats`/`bn_aggr`, `quantize_mx` and `nc_stream_shuffle`.
//!
//! Choices where the spec is silent: a value-form result has the input's
//! dtype unless `dtype=` is given (uint32 for `nc_find_index8`); `max8`
//! and `nc_find_index8` results are `(P, 8)`, `bn_stats` `(P, 6)` and
//! `bn_aggr` `(P, 2)`.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::{AluOp, DType, Engine, Fp32, ReduceCmd, Target};

use crate::api::check::{self, shape_text};
use crate::api::isa::tensor_engine::mx_scale_rows;
use crate::api::lower::{
    bitvec_dtypes, operand_opt, operand_or, promote, scalar_operand, trailing_axes,
};
use crate::api::rules::{
    BinaryArith, DATA_DST, NotBothPsum, OpIn, REDUCE_RESULT, SRC_DST, Tiles, binary_arith,
    not_both_psum, operand_tile, tiles,
};
use crate::api::table::{
    AXIS, ApiDef, Bound, DATA, ENGINE, IMM1, KEEPDIMS, Kind, OP, OP0, OP1, OPERAND0, PREDICATE,
    Param, REDUCE_IDLE, REDUCE_OP, REDUCE_RES, REDUCE_RESET, REVERSE_PRED, REVERSE0, REVERSE1, SRC,
    instruction, opt, req,
};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const TT_TILES: Tiles = tiles!("data1", "data2", "dst");

const TT_PSUM: NotBothPsum = not_both_psum!("data1", "data2");

/// A [`TwoStage`] instruction with the inputs `$a` and `$b` (and `dst`),
/// the scalar operand `$scalar` and the op `$kind` builds.
macro_rules! two_stage {
    ($a:literal, $b:literal, $scalar:literal, $kind:expr) => {
        TwoStage {
            tiles: tiles!($a, $b, "dst"),
            psum: not_both_psum!($a, $b),
            scalar: $scalar,
            kind: $kind,
        }
    };
}

/// `scalar_tensor_tensor`: `(data op0 operand0) op1 operand1`.
const STT: TwoStage = two_stage!("data", "operand1", "operand0", |a| {
    let [data, operand1, dst] = &a.tiles;
    OpKind::ScalarTensorTensor {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op0: a.ops[0],
        operand0: a.scalar.clone(),
        reverse0: a.reverses[0],
        op1: a.ops[1],
        src1: operand1.view.clone(),
        reverse1: a.reverses[1],
    }
});

/// `tensor_tensor_scan`: `op1(op0(data0[i], r[i-1]), data1[i])` from
/// `initial`.
const SCAN: TwoStage = two_stage!("data0", "data1", "initial", |a| {
    let [data0, data1, dst] = &a.tiles;
    OpKind::TensorTensorScan {
        dst: dst.view.clone(),
        src0: data0.view.clone(),
        src1: data1.view.clone(),
        initial: a.scalar.clone(),
        op0: a.ops[0],
        op1: a.ops[1],
        reverse0: a.reverses[0],
        reverse1: a.reverses[1],
    }
});

const PRED_TILES: Tiles = tiles!("src", "predicate", "dst");

const PRED_PSUM: NotBothPsum = not_both_psum!("src", "predicate");

const OPS_ARITH: BinaryArith = binary_arith!("op0", "op1");

const OP0_ARITH: BinaryArith = binary_arith!("op0");

/// The reductions of `tensor_scalar_reduce`.
const SCALAR_REDUCE_OP: OpIn = OpIn {
    name: "reduce_op",
    allowed: &[AluOp::Add, AluOp::Multiply, AluOp::Maximum, AluOp::Minimum],
    message: "`reduce_op` must be `nl.add`, `nl.multiply`, `nl.maximum` or `nl.minimum`",
    label: "unsupported reduction",
};
/// The scan operators of `tensor_scalar_cumulative`.
const SCAN_OP: OpIn = OpIn {
    name: "op1",
    allowed: &[
        AluOp::Add,
        AluOp::Subtract,
        AluOp::Multiply,
        AluOp::Maximum,
        AluOp::Minimum,
    ],
    message: "`op1` must be `nl.add`, `nl.subtract`, `nl.multiply`, `nl.maximum` or `nl.minimum`",
    label: "unsupported scan operator",
};
/// `data1`: a tile input of the two-tile instructions (`tensor_tensor`,
/// `tensor_tensor_scan`).
const DATA1: Param = req("data1", Kind::Tensor);

/// `vals` of the top-8 searches: 8 values per partition.
const VALS: Param = req("vals", Kind::Tensor);

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    instruction!(
        "nisa.tensor_tensor",
        [
            DATA1,
            req("data2", Kind::Tensor),
            OP,
            ENGINE,
        ],
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
    instruction!(
        "nisa.tensor_scalar",
        [
            DATA,
            OP0,
            OPERAND0,
            REVERSE0,
            opt("op1", Kind::AluOp, "None"),
            opt("operand1", Kind::Scalar, "None"),
            REVERSE1,
            ENGINE,
        ],
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
    instruction!(
        "nisa.scalar_tensor_tensor",
        [
            DATA,
            OP0,
            OPERAND0,
            OP1,
            req("operand1", Kind::Tensor),
            REVERSE0,
            REVERSE1,
        ],
        "`dst = (data op0 operand0) op1 operand1` with a scalar or `(P, 1)` `operand0` and a full-tile `operand1`.",
        &[STT.tiles.text, STT.psum.text, OPS_ARITH.text],
        scalar_tensor_tensor,
    )
    .with_value_form(),
    instruction!(
        "nisa.tensor_scalar_reduce",
        [
            DATA,
            OP0,
            OPERAND0,
            REDUCE_OP,
            REDUCE_RES,
            REVERSE0,
            REDUCE_RESET,
            opt("reduce_init", Kind::Scalar, "None"),
            opt("reduce_res_negate", Kind::Bool, "False"),
        ],
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
    instruction!(
        "nisa.tensor_scalar_cumulative",
        [
            SRC,
            OP0,
            OP1,
            req("imm0", Kind::Scalar),
            IMM1,
            REDUCE_RESET,
        ],
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
    instruction!(
        "nisa.tensor_reduce",
        [
            OP,
            DATA,
            AXIS,
            opt("negate", Kind::Bool, "False"),
            KEEPDIMS,
        ],
        "Reduces `data` over the trailing free axes `axis` with `op`.",
        &[
            "`axis` names trailing free dims ending at the last dim (never dim 0), e.g. (3,), (2, 3), (1, 2, 3).",
            "`op` is a reduction operator; `negate` only with arithmetic operators.",
            "`dst` has `data`'s partition count and the product of the kept free dims as free size.",
        ],
        tensor_reduce,
    )
    .with_value_form(),
    instruction!(
        "nisa.tensor_tensor_scan",
        [
            req("data0", Kind::Tensor),
            DATA1,
            req("initial", Kind::Scalar),
            OP0,
            OP1,
            REVERSE0,
            REVERSE1,
        ],
        "Per partition, `r[i] = op1(op0(data0[i], r[i-1]), data1[i])` from `r[-1] = initial`; `dst = r`.",
        &[
            SCAN.tiles.text,
            SCAN.psum.text,
            "`initial` is a number or a `(P, 1)` tensor.",
            OPS_ARITH.text,
        ],
        tensor_tensor_scan,
    )
    .with_value_form(),
    instruction!(
        "nisa.tensor_copy_predicated",
        [
            SRC,
            PREDICATE,
            REVERSE_PRED,
        ],
        "`dst[i] = src[i]` where `predicate[i] != 0` (inverted by `reverse_pred`); other elements of `dst` are unchanged.",
        &[
            PRED_TILES.text,
            "`predicate` is uint8, uint16, uint32 or bool_; `src` and `dst` have the same dtype.",
            PRED_PSUM.text,
        ],
        tensor_copy_predicated,
    ),
    instruction!(
        "nisa.reciprocal",
        [DATA],
        "`dst = 1 / data` in fp32 on VectorE (more precise than `activation(nl.reciprocal)`).",
        &[DATA_DST.text],
        reciprocal,
    )
    .with_value_form(),
    instruction!(
        "nisa.exponential",
        [
            SRC,
            opt("max_value", Kind::Scalar, "0.0"),
            REDUCE_RES,
            REDUCE_IDLE,
            opt("reduce_init", Kind::Scalar, "0.0"),
        ],
        "`dst = exp(src - max_value)` on VectorE, optionally summing every element into the Vector accumulators.",
        &[
            "trn3 only.",
            SRC_DST.text,
            "`max_value` and `reduce_init` are numbers or `(P, 1)` tensors.",
            REDUCE_RESULT.text,
        ],
        exponential,
    )
    .with_value_form(),
    instruction!(
        "nisa.max8",
        [SRC],
        "The 8 largest values of each partition, in descending order.",
        &[
            "`src` is SBUF/PSUM, up to 3-D, with 8 to 16384 free elements.",
            "`dst` is `(P, 8)` with `src`'s partition count.",
        ],
        max8,
    )
    .with_value_form(),
    instruction!(
        "nisa.nc_find_index8",
        [DATA, VALS],
        "For each of the 8 `vals` of a partition, the flat index of its first occurrence in `data` (all ones when absent).",
        &[
            "`data` is SBUF/PSUM, up to 3-D, with 8 to 16384 free elements.",
            "`vals` has exactly 8 elements per partition; `dst` is `(P, 8)` uint32 or uint16.",
        ],
        find_index8,
    )
    .with_value_form(),
    instruction!(
        "nisa.nc_match_replace8",
        [
            DATA,
            VALS,
            req("imm", Kind::Float),
            opt("dst_idx", Kind::Tensor, "None"),
        ],
        "A copy of `data` where, for each of the 8 `vals` of a partition (last to first), the first not yet replaced match becomes `imm`; `dst_idx` receives the positions.",
        &[
            DATA_DST.text,
            "`data` is up to 3-D with 8 to 16384 free elements.",
            "`vals` and `dst_idx` have 8 elements per partition.",
        ],
        match_replace8,
    )
    .with_value_form(),
    instruction!(
        "nisa.bn_stats",
        [DATA],
        "Per partition `[n, mean, M2]` of the even and of the odd free positions (6 values).",
        &[
            "`data` is SBUF/PSUM with at most 512 free elements (`nl.tile_size.bn_stats_fmax`).",
            "`dst` has `data`'s partition count and 6 free elements.",
        ],
        bn_stats,
    )
    .with_value_form(),
    instruction!(
        "nisa.bn_aggr",
        [DATA],
        "Combines the `(count, mean, M2)` triples of each partition into mean and variance (2 values).",
        &[
            "`data` is SBUF/PSUM with a multiple of 3 free elements.",
            "`dst` has `data`'s partition count and 2 free elements.",
        ],
        bn_aggr,
    )
    .with_value_form(),
    instruction!(
        "nisa.quantize_mx",
        [SRC, req("dst_scale", Kind::Tensor)],
        "Quantizes fp16/bf16 `src` into packed MXFP8 `dst` with one e8m0 scale per 8 partitions × 4 elements in `dst_scale`.",
        &[
            "trn3 only; all three tensors are in SBUF.",
            "`src` is float16 or bfloat16 with a multiple of 32 partitions (≤ 128) and a free size that is a multiple of 4.",
            "`dst` is float8_e5m2_x4 or float8_e4m3fn_x4 with `src`'s partition count and a quarter of its free size; `dst_scale` is float8_e8m0fnu or uint8 with that free size too, and only its first 32·(P/32 − 1) + 4 rows (4 per quadrant) are written.",
        ],
        quantize_mx,
    ),
    instruction!(
        "nisa.nc_stream_shuffle",
        [
            SRC,
            req("shuffle_mask", Kind::Ints),
        ],
        "Permutes partitions inside each 32-partition quadrant: output partition `i` receives source partition `shuffle_mask[i]` (255 leaves it unchanged).",
        &[
            "`shuffle_mask` has 32 entries, each 0–31 or 255.",
            "`src` and `dst` are SBUF/PSUM with the same dtype and free size, at most 128 partitions each.",
            "Start partitions: with A = the larger partition count rounded up to 32, A ≥ 96 starts both at 0, A = 64 at 0 or 64, A = 32 at 0, 32, 64 or 96.",
        ],
        stream_shuffle,
    ),
];

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
    let dst = emit::dst_or_new(
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

fn tensor_scalar(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let op0 = b.alu_op(ctx, "op0")?.unwrap_or(AluOp::Bypass);
    let op1 = b.alu_op(ctx, "op1")?;
    let engine = emit::engine(ctx, b)?;
    let sd = b.span_of("data");
    let dst = emit::dst_or_new(ctx, b, &data.shape, data.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    DATA_DST.check(ctx, b, &[&data, &dst])?;
    let operand = |name: &str, op: AluOp| -> Result<Option<Scalar>, Diagnostic> {
        // A unary operator ignores its operand (0 or None by convention).
        if op.is_unary() {
            return Ok(None);
        }
        let Some(v) = operand_opt(ctx, b, name, &data)? else {
            return Err(ctx.error(
                codes::SCALAR_OPERAND,
                format!("the binary operator `nl.{}` needs `{name}`", op.name()),
                b.span,
                format!("`{name}` is not given"),
            ));
        };
        Ok(Some(v))
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
        Some(Engine::Scalar) if ctx.target() < Target::Trn3 => {
            let ok = matches!(
                (op0, op1),
                (AluOp::Multiply, Some(AluOp::Add)) | (AluOp::Multiply, None) | (AluOp::Add, None)
            );
            if !ok {
                return Err(ctx.error(
                    codes::ENGINE,
                    format!("ScalarE `tensor_scalar` on {} runs only (multiply, add), (multiply) and (add)", ctx.target()),
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
    let [reverse0, reverse1] = b.reverses(ctx)?;
    let kind = OpKind::TensorScalar {
        dst: dst.view.clone(),
        src: data.view.clone(),
        op0,
        operand0,
        reverse0,
        op1,
        operand1,
        reverse1,
    };
    emit::finish(ctx, b, kind, engine, Some(&dst), span)
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
    let dst = emit::dst_or_new(ctx, b, &shape, data.dtype(), Buffer::Sbuf, span)?;
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

fn fixed_width_dst(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    src: &Tensor,
    width: u64,
    dtype: DType,
    span: Span,
) -> Result<Rc<Tensor>, Diagnostic> {
    let p = check::partitions(src);
    let dst = emit::dst_or_new(ctx, b, &[p, width], dtype, Buffer::Sbuf, span)?;
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

fn reciprocal(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [data, dst] = DATA_DST.bind(ctx, b, span)?;
    emit::src_to_dst(ctx, b, &dst, &data, span, |dst, src| OpKind::Reciprocal {
        dst,
        src,
    })
}

fn exponential(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let [src, dst] = SRC_DST.bind(ctx, b, span)?;
    let max_value = operand_or(ctx, b, "max_value", &src, 0.0)?;
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&src))?;
    let cmd = b.reduce_cmd(ctx)?.unwrap_or(ReduceCmd::Idle);
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

/// A two-input instruction with a two-stage operator pipeline and a
/// scalar operand: its tile rule, its PSUM rule and the scalar's name.
struct TwoStage {
    tiles: Tiles,
    psum: NotBothPsum,
    scalar: &'static str,
    /// The op of the bound arguments.
    kind: fn(&TwoStageArgs) -> OpKind,
}

/// The arguments of a [`TwoStage`] instruction, bound and checked.
struct TwoStageArgs {
    /// The two inputs, then `dst`.
    tiles: [Rc<Tensor>; 3],
    /// `op0` and `op1`, binary arithmetic operators.
    ops: [AluOp; 2],
    /// The scalar operand (0 when absent).
    scalar: Scalar,
    /// `reverse0` and `reverse1`.
    reverses: [bool; 2],
}

impl TwoStage {
    /// Binds and checks, in this order: the tiles, the PSUM rule, the
    /// operators, the scalar (a number or a `(P, 1)` tile of the first
    /// input's P) and the reverses.
    fn bind(&self, ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<TwoStageArgs, Diagnostic> {
        let tiles: [Rc<Tensor>; 3] = self.tiles.bind(ctx, b, span)?;
        self.psum.check(ctx, b, &tiles[0], &tiles[1])?;
        let ops = OPS_ARITH.ops(ctx, b)?;
        let scalar = operand_or(ctx, b, self.scalar, &tiles[0], 0.0)?;
        let reverses = b.reverses(ctx)?;
        Ok(TwoStageArgs {
            tiles,
            ops,
            scalar,
            reverses,
        })
    }

    /// Binds, checks and records the instruction.
    fn run(&self, ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
        let args = self.bind(ctx, b, span)?;
        let kind = (self.kind)(&args);
        emit::finish(ctx, b, kind, None, Some(&args.tiles[2]), span)
    }
}

fn scalar_tensor_tensor(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    STT.run(ctx, b, span)
}

fn tensor_tensor_scan(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    SCAN.run(ctx, b, span)
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
    emit::src_to_dst(ctx, b, &dst, &src, span, |dst, src| OpKind::Max8 {
        dst,
        src,
    })
}

fn find_index8(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    top8_source(ctx, &data, b.span_of("data"), "`data`")?;
    let vals = b.tensor(ctx, "vals")?;
    let p = check::partitions(&data);
    eight_per_partition(ctx, &vals, p, b.span_of("vals"), "`vals`")?;
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
    let (data, sd) = operand_tile(ctx, b, "data")?;
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
    emit::src_to_dst(ctx, b, &dst, &data, span, |dst, src| OpKind::BnStats {
        dst,
        src,
    })
}

fn bn_aggr(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (data, sd) = operand_tile(ctx, b, "data")?;
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
    emit::src_to_dst(ctx, b, &dst, &data, span, |dst, src| OpKind::BnAggr {
        dst,
        src,
    })
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
    let reduce_op = SCALAR_REDUCE_OP.or(ctx, b, AluOp::Add)?;
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&data))?;
    let cmd = b.reduce_cmd(ctx)?.unwrap_or(ReduceCmd::ResetReduce);
    if cmd != ReduceCmd::LoadReduce
        && let Some(a) = b.get("reduce_init")
    {
        return Err(ctx.error(
            codes::SCALAR_OPERAND,
            "`reduce_init` is only used with `reduce_cmd=nisa.reduce_cmd.load_reduce`",
            a.span,
            "unused",
        ));
    }
    let reduce_init = loaded_start(
        ctx,
        b,
        cmd,
        "reduce_init",
        &data,
        "`load_reduce` needs `reduce_init`",
    )?;
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
    let op1 = SCAN_OP.or(ctx, b, AluOp::Add)?;
    let imm0 = operand_or(ctx, b, "imm0", &src, 0.0)?;
    let cmd = b.reduce_cmd(ctx)?.unwrap_or(ReduceCmd::ResetReduce);
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
    // The hardware reads `imm1` only to load the accumulators; kernels
    // that chain calls pass the same `imm1` to every call.
    let imm1 = loaded_start(
        ctx,
        b,
        cmd,
        "imm1",
        &src,
        "`load_reduce` needs `imm1`, the value the scan starts from",
    )?;
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

/// The value argument `name` loads into the accumulators when `cmd` is
/// `load_reduce` (a number or `(P, 1)` operand of `data`), else `None`;
/// `missing` is the error when `load_reduce` comes without it.
fn loaded_start(
    ctx: &Ctx<'_>,
    b: &Bound,
    cmd: ReduceCmd,
    name: &str,
    data: &Tensor,
    missing: &str,
) -> Result<Option<Scalar>, Diagnostic> {
    if cmd != ReduceCmd::LoadReduce {
        return Ok(None);
    }
    let Some(a) = b.get(name) else {
        return Err(ctx.error(
            codes::SCALAR_OPERAND,
            missing,
            b.span_of("reduce_cmd"),
            format!("no `{name}`"),
        ));
    };
    scalar_operand(ctx, &a.value, data, a.span, &format!("`{name}`")).map(Some)
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

fn stream_shuffle(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src")?;
    let dst = b.tensor(ctx, "dst")?;
    let (ss, ds) = (b.span_of("src"), b.span_of("dst"));
    check::on_chip(ctx, &src, ss, "`src`")?;
    check::on_chip(ctx, &dst, ds, "`dst`")?;
    check::partition_count(ctx, &src, ss, "`src`")?;
    check::partition_count(ctx, &dst, ds, "`dst`")?;
    if src.dtype() != dst.dtype() || check::free_size(&src) != check::free_size(&dst) {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`src` and `dst` need the same dtype and free size, found {} and {}",
                check::describe(&src),
                check::describe(&dst)
            ),
            ds,
            "differs from `src`",
        ));
    }
    let ms = b.span_of("shuffle_mask");
    let mask = b.ints(ctx, "shuffle_mask")?.unwrap_or_default();
    if mask.len() != 32 || mask.iter().any(|&m| !(0..32).contains(&m) && m != 255) {
        return Err(ctx.error(
            codes::VALUE,
            format!(
                "`shuffle_mask` must have 32 entries, each 0–31 or 255, found {} entries",
                mask.len()
            ),
            ms,
            "bad shuffle mask",
        ));
    }
    let a = check::partitions(&src)
        .max(check::partitions(&dst))
        .div_ceil(32)
        * 32;
    let (s0, d0) = (
        check::start_partition(ctx, &src),
        check::start_partition(ctx, &dst),
    );
    let (ok, allowed) = match a {
        65.. => (s0 == 0 && d0 == 0, "0"),
        33..=64 => (s0 % 64 == 0 && d0 % 64 == 0, "0 or 64"),
        _ => (s0 % 32 == 0 && d0 % 32 == 0, "0, 32, 64 or 96"),
    };
    if !ok {
        return Err(ctx.error(
            codes::PARTITION_START,
            format!(
                "a shuffle over {a} partitions must start `src` and `dst` at {allowed}, found {s0} and {d0}"
            ),
            ds,
            "bad start partition",
        ));
    }
    let kind = OpKind::StreamShuffle {
        dst: dst.view.clone(),
        src: src.view.clone(),
        mask: mask.iter().map(|&m| m as u8).collect(),
    };
    emit::finish(ctx, b, kind, None, None, span)
}
