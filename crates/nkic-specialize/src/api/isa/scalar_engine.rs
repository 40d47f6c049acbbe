//! ScalarE (isa.md §6.3): `activation`, `activation_reduce` and
//! `activate2`.
//!
//! Choice where the spec is silent: `activation` with `reduce_res` but no
//! `reduce_cmd` uses `reset_reduce` (what `activation_reduce` did).

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{OpKind, Scalar};
use nkic_isa::{ActFunc, AluOp, DType, ReduceCmd};

use crate::api::check;
use crate::api::lower::{operand_opt, operand_or, scalar_operand};
use crate::api::rules::{DATA_DST, OpIn, REDUCE_RESULT, reduces_with_only};
use crate::api::table::{
    ApiDef, Bound, DATA, IMM1, Kind, Param, REDUCE_IDLE, REDUCE_OP, REDUCE_RES, REVERSE0, REVERSE1,
    instruction, opt, req,
};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// `op`: the activation function of a ScalarE instruction.
const ACT_OP: Param = req("op", Kind::ActFunc);
/// `bias=` of ScalarE's input stage.
const BIAS: Param = opt("bias", Kind::Scalar, "None");
/// `scale=` of ScalarE's input stage.
const SCALE: Param = opt("scale", Kind::Scalar, "1.0");
/// `reduce_op=` of an instruction that reduces only when asked.
const OPT_REDUCE_OP: Param = opt("reduce_op", Kind::AluOp, "None");

/// ScalarE's input stage `data · scale + bias`.
const AFFINE_INPUT: AffineInput = AffineInput {
    text: "`scale` and `bias` are numbers or `(P, 1)` tensors; `bias` is not tfloat32.",
};

/// `reduce_op` of `activation` and `activation_reduce`: `nl.add`.
const ACTIVATION_REDUCE: OpIn = reduces_with_only!("activation", Add, "nl.add");
const ACTIVATION_REDUCE_ADD: OpIn = reduces_with_only!("activation_reduce", Add, "nl.add");
/// The reductions of `activate2`.
const ACTIVATE2_REDUCE: OpIn = OpIn {
    name: "reduce_op",
    allowed: &[
        AluOp::Add,
        AluOp::Maximum,
        AluOp::Minimum,
        AluOp::AbsMax,
        AluOp::AbsMin,
    ],
    message: "`reduce_op` must be `nl.add`, `nl.maximum`, `nl.minimum`, `nl.abs_max` or `nl.abs_min`",
    label: "unsupported reduction",
};
/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    instruction!(
        "nisa.activation",
        [
            ACT_OP,
            DATA,
            BIAS,
            SCALE,
            OPT_REDUCE_OP,
            REDUCE_RES,
            REDUCE_IDLE,
        ],
        "`dst = op(data · scale + bias)` on ScalarE, optionally summing each row into the ScalarE accumulators.",
        &[
            DATA_DST.text,
            AFFINE_INPUT.text,
            "`reduce_op` is `nl.add`; `load_reduce` is not available.",
            REDUCE_RESULT.text,
        ],
        activation,
    )
    .with_value_form(),
    instruction!(
        "nisa.activation_reduce",
        [
            ACT_OP,
            DATA,
            REDUCE_OP,
            req("reduce_res", Kind::Tensor),
            BIAS,
            SCALE,
        ],
        "`activation(..., reduce_cmd=reset_reduce, reduce_res=reduce_res)`: the activation and the per-row sum of its result.",
        &[
            DATA_DST.text,
            "`reduce_op` is `nl.add`.",
            REDUCE_RESULT.text,
            AFFINE_INPUT.text,
        ],
        activation_reduce,
    )
    .with_value_form(),
    instruction!(
        "nisa.activate2",
        [
            ACT_OP,
            DATA,
            opt("imm0", Kind::Scalar, "None"),
            IMM1,
            opt("op0", Kind::AluOp, "nl.bypass"),
            opt("op1", Kind::AluOp, "nl.bypass"),
            opt("relu_param", Kind::Scalar, "0.0"),
            REVERSE0,
            REVERSE1,
            OPT_REDUCE_OP,
            REDUCE_RES,
            REDUCE_IDLE,
        ],
        "ScalarE three-stage pipeline: `v = op1(op0(data, imm0), imm1)`, `dst = op(v)`, optionally reducing `dst` into the Scalar accumulators.",
        &[
            "trn3 only.",
            DATA_DST.text,
            "`(op0, op1)` is (multiply, add), (multiply, subtract), (multiply, bypass), (add, bypass), (subtract, bypass) or (bypass, bypass); a non-bypass op needs its immediate, `reverseN` needs `opN`.",
            "`reduce_op` is `nl.add`, `nl.maximum`, `nl.minimum`, `nl.abs_max` or `nl.abs_min`.",
            REDUCE_RESULT.text,
        ],
        activate2,
    )
    .with_value_form(),
];

/// The activation function `op` (`nl.copy` when absent) and the `data`
/// and `dst` tiles, checked.
fn activation_tiles(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    span: Span,
) -> Result<(ActFunc, [Rc<Tensor>; 2]), Diagnostic> {
    let func = b.act_func(ctx, ACT_OP.name)?.unwrap_or(ActFunc::Copy);
    Ok((func, DATA_DST.bind(ctx, b, span)?))
}

/// The `reduce_res` tile and the accumulator command of an instruction
/// over `data` that reduces when given `reduce_res` or `reduce_op` (the
/// checked `reduce_op=` argument).
fn optional_reduction(
    ctx: &Ctx<'_>,
    b: &Bound,
    data: &Tensor,
    reduce_op: Option<AluOp>,
) -> Result<(Option<Rc<Tensor>>, ReduceCmd), Diagnostic> {
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(data))?;
    let cmd = b.reduce_cmd_without_load(ctx, res.is_some() || reduce_op.is_some())?;
    Ok((res, cmd))
}

fn activation(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (func, [data, dst]) = activation_tiles(ctx, b, span)?;
    let (scale, bias) = AFFINE_INPUT.operands(ctx, b, &data)?;
    let reduce_op = ACTIVATION_REDUCE.opt(ctx, b)?;
    let (res, cmd) = optional_reduction(ctx, b, &data, reduce_op)?;
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

fn activation_reduce(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (func, [data, dst]) = activation_tiles(ctx, b, span)?;
    let reduce_op = ACTIVATION_REDUCE_ADD.or(ctx, b, AluOp::Add)?;
    let Some(res) = REDUCE_RESULT.check(ctx, b, check::partitions(&data))? else {
        return Err(ctx.error(
            codes::ARG_TYPE,
            "`activation_reduce` needs a `reduce_res` tensor",
            span,
            "no `reduce_res`",
        ));
    };
    let (scale, bias) = AFFINE_INPUT.operands(ctx, b, &data)?;
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

fn activate2(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let (func, [data, dst]) = activation_tiles(ctx, b, span)?;
    let op0 = b.alu_op(ctx, "op0")?.unwrap_or(AluOp::Bypass);
    let op1 = b.alu_op(ctx, "op1")?.unwrap_or(AluOp::Bypass);
    use AluOp as A;
    let pair_ok = matches!(
        (op0, op1),
        (A::Multiply, A::Add | A::Subtract | A::Bypass)
            | (A::Add | A::Subtract | A::Bypass, A::Bypass)
    );
    if !pair_ok {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`activate2` takes (op0, op1) = (multiply, add), (multiply, subtract), (multiply, bypass), (add, bypass), (subtract, bypass) or (bypass, bypass), found (nl.{}, nl.{})",
                op0.name(),
                op1.name()
            ),
            b.span_of(if op1 == A::Bypass { "op0" } else { "op1" }),
            "unsupported operator pair",
        ));
    }
    let imm = |name: &str, op: AluOp, rev: &str| -> Result<(Option<Scalar>, bool), Diagnostic> {
        let reverse = b.bool_or(ctx, rev, false)?;
        if op == A::Bypass {
            if reverse {
                return Err(ctx.error(
                    codes::VALUE,
                    format!("`{rev}` needs an operator"),
                    b.span_of(rev),
                    "nothing to reverse",
                ));
            }
            return Ok((None, false));
        }
        let Some(imm) = operand_opt(ctx, b, name, &data)? else {
            return Err(ctx.error(
                codes::SCALAR_OPERAND,
                format!("`nl.{}` needs `{name}`", op.name()),
                span,
                format!("no `{name}`"),
            ));
        };
        Ok((Some(imm), reverse))
    };
    let (imm0, reverse0) = imm("imm0", op0, "reverse0")?;
    let (imm1, reverse1) = imm("imm1", op1, "reverse1")?;
    let relu_param = operand_opt(ctx, b, "relu_param", &data)?;
    let reduce_op = ACTIVATE2_REDUCE.opt(ctx, b)?;
    let (res, cmd) = optional_reduction(ctx, b, &data, reduce_op)?;
    if cmd.contributes() && reduce_op.is_none() {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "reducing needs `reduce_op`",
            b.span_of("reduce_cmd"),
            "no `reduce_op`",
        ));
    }
    let kind = OpKind::Activate2 {
        dst: dst.view.clone(),
        src: data.view.clone(),
        func,
        op0,
        imm0,
        reverse0,
        op1,
        imm1,
        reverse1,
        relu_param,
        reduce_op,
        reduce_cmd: cmd,
        reduce_res: res.map(|t| t.view.clone()),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

/// The rule of ScalarE's input stage (scale and bias operands).
struct AffineInput {
    text: &'static str,
}

impl AffineInput {
    /// `scale` (1.0 when absent) and `bias` for `data`, checked.
    fn operands(
        &self,
        ctx: &Ctx<'_>,
        b: &Bound,
        data: &Tensor,
    ) -> Result<(Scalar, Option<Scalar>), Diagnostic> {
        let scale = operand_or(ctx, b, SCALE.name, data, 1.0)?;
        let Some(a) = b.get(BIAS.name) else {
            return Ok((scale, None));
        };
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
        let bias = scalar_operand(ctx, &a.value, data, a.span, "`bias`")?;
        Ok((scale, Some(bias)))
    }
}
