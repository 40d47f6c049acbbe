//! Python operators on tiles (legacy style, language.md §13.4): `a + b`,
//! `t * 2.0`, `-t`, `t > 0`, `a & b`, and `+=` accumulation, including
//! `psum[...] += nisa.nc_matmul(a, b)`.
//!
//! Choices: binary operators lower like the `nl.*` functions (equal shapes
//! → `tensor_tensor`; a number or a `(P, 1)` tile → `tensor_scalar`) into a
//! fresh SBUF tile; `x op= y` on a tile writes the result into `x` itself
//! (tiles are buffers); `/` multiplies by the reciprocal of the divisor
//! (a number's at compile time, a tile's with a `reciprocal` in
//! fp32, as `nl.divide` does: the ALU has no divide, isa.md §8.19);
//! comparisons give 1.0/0.0 in the operand's dtype.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_isa::AluOp;
use nkic_syntax::ast::{BinOp, CmpOp};

use super::codes;
use super::isa::tensor_engine::PendingMatmul;
use super::lower::{self, Operand};
use super::{Operator, check};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// The ALU operator of a Python binary operator.
fn alu_of(op: BinOp) -> Option<AluOp> {
    Some(match op {
        BinOp::Add => AluOp::Add,
        BinOp::Sub => AluOp::Subtract,
        BinOp::Mult => AluOp::Multiply,
        BinOp::Pow => AluOp::Power,
        BinOp::LShift => AluOp::LeftShift,
        BinOp::RShift => AluOp::RightShift,
        BinOp::BitOr => AluOp::BitwiseOr,
        BinOp::BitXor => AluOp::BitwiseXor,
        BinOp::BitAnd => AluOp::BitwiseAnd,
        _ => return None,
    })
}

fn cmp_of(op: CmpOp) -> Option<AluOp> {
    Some(match op {
        CmpOp::Eq => AluOp::Equal,
        CmpOp::NotEq => AluOp::NotEqual,
        CmpOp::Lt => AluOp::Less,
        CmpOp::LtE => AluOp::LessEqual,
        CmpOp::Gt => AluOp::Greater,
        CmpOp::GtE => AluOp::GreaterEqual,
        _ => return None,
    })
}

fn operand(ctx: &Ctx<'_>, v: &Value, op: Operator, span: Span) -> Result<Operand, Diagnostic> {
    match v {
        Value::Tensor(t) => Ok(Operand::Tile(t.clone())),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
            Ok(Operand::Num(v.as_float().unwrap_or(0.0)))
        }
        other => Err(ctx.error(
            codes::OPERATOR,
            format!(
                "`{}` is not defined between a tile and a {}",
                op.as_str(),
                other.type_name()
            ),
            span,
            "not a tile or number",
        )),
    }
}

/// A Python operator on tensors or other API values: the contract's
/// `operator`, under which name `api` exports it.
pub fn apply(
    ctx: &mut Ctx<'_>,
    op: Operator,
    operands: &[Value],
    inplace: bool,
    span: Span,
) -> Result<Value, Diagnostic> {
    // `acc += nisa.nc_matmul(a, b)` on a PSUM tile accumulates in place.
    if let (Operator::Binary(BinOp::Add), true, [Value::Tensor(acc), Value::Ext(e)]) =
        (op, inplace, operands)
        && let Some(mm) = e.as_any().downcast_ref::<PendingMatmul>()
    {
        accumulate(ctx, acc, mm, span)?;
        return Ok(Value::Tensor(acc.clone()));
    }
    if operands.iter().any(|v| super::host::as_array(v).is_some()) {
        return Err(super::host::no_operators(ctx, op.as_str(), span));
    }
    let operands: Vec<Value> = operands
        .iter()
        .map(|v| super::materialize(ctx, v))
        .collect::<Result<_, _>>()?;
    let unsupported = |ctx: &Ctx<'_>| {
        let types: Vec<String> = operands.iter().map(Value::type_name).collect();
        ctx.error(
            codes::OPERATOR,
            format!(
                "`{}` is not defined for {}",
                op.as_str(),
                types.join(" and ")
            ),
            span,
            "not defined on tiles",
        )
    };
    match (op, &operands[..]) {
        (Operator::Pos, [Value::Tensor(t)]) => Ok(Value::Tensor(t.clone())),
        (Operator::Neg, [Value::Tensor(t)]) => {
            let r = lower::tile_op(ctx, AluOp::Multiply, t, -1.0, None, None, span)?;
            Ok(Value::Tensor(r))
        }
        (Operator::Invert, [Value::Tensor(t)]) => {
            let r = lower::tile_op(ctx, AluOp::Invert, t, 0.0, None, None, span)?;
            Ok(Value::Tensor(r))
        }
        (Operator::Binary(b), [x, y]) => {
            let (x, y) = (operand(ctx, x, op, span)?, operand(ctx, y, op, span)?);
            let dst = match (&x, inplace) {
                (Operand::Tile(t), true) => Some(t.clone()),
                _ => None,
            };
            let (alu, x, y) = match (b, &y) {
                (BinOp::Div, Operand::Num(n)) => {
                    if *n == 0.0 {
                        return Err(ctx.error(
                            crate::codes::DIV_BY_ZERO,
                            "division of a tile by zero",
                            span,
                            "divides by 0",
                        ));
                    }
                    (AluOp::Multiply, x, Operand::Num(1.0 / n))
                }
                (BinOp::Div, Operand::Tile(t)) => {
                    // The ALU has no divide: multiply by the divisor's
                    // reciprocal (in fp32), as `nl.divide` does.
                    check::operand(ctx, t, span, "the divisor")?;
                    let inv = lower::tile_op(
                        ctx,
                        AluOp::Reciprocal,
                        t,
                        0.0,
                        None,
                        Some(nkic_isa::DType::F32),
                        span,
                    )?;
                    (AluOp::Multiply, x, Operand::Tile(inv))
                }
                _ => match alu_of(b) {
                    Some(a) => (a, x, y),
                    None => return Err(unsupported(ctx)),
                },
            };
            let r = lower::elementwise(ctx, alu, &x, &y, dst, None, span)?;
            Ok(Value::Tensor(r))
        }
        (Operator::Compare(c), [x, y]) => {
            let Some(alu) = cmp_of(c) else {
                return Err(unsupported(ctx));
            };
            let (x, y) = (operand(ctx, x, op, span)?, operand(ctx, y, op, span)?);
            let r = lower::elementwise(ctx, alu, &x, &y, None, None, span)?;
            Ok(Value::Tensor(r))
        }
        _ => Err(unsupported(ctx)),
    }
}

/// Records a pending matmul into `acc` with the compiler-chosen
/// accumulate flag (first write overwrites, later ones add).
pub fn accumulate(
    ctx: &mut Ctx<'_>,
    acc: &Rc<Tensor>,
    mm: &PendingMatmul,
    span: Span,
) -> Result<(), Diagnostic> {
    if acc.buffer != nkic_ir::Buffer::Psum {
        return Err(check::tensor_error(
            ctx,
            codes::ACCUMULATE,
            "matmul results accumulate in PSUM, but the target is",
            acc,
            span,
            "not a PSUM tile",
        )
        .with_help("accumulate into an `nl.psum` tile and copy it out afterwards"));
    }
    mm.record(ctx, Some((acc.clone(), span)), None)?;
    Ok(())
}

/// `target[key] op= value` where `dst` is the subscripted view.
pub fn store_aug(
    ctx: &mut Ctx<'_>,
    dst: &Rc<Tensor>,
    op: BinOp,
    value: &Value,
    span: Span,
) -> Result<(), Diagnostic> {
    if let Value::Ext(e) = value
        && let Some(mm) = e.as_any().downcast_ref::<PendingMatmul>()
    {
        if op != BinOp::Add {
            return Err(ctx.error(
                codes::ACCUMULATE,
                format!(
                    "a matmul result accumulates with `+=`, not `{}=`",
                    op.as_str()
                ),
                span,
                "only += accumulates",
            ));
        }
        return accumulate(ctx, dst, mm, span);
    }
    apply(
        ctx,
        Operator::Binary(op),
        &[Value::Tensor(dst.clone()), value.clone()],
        true,
        span,
    )?;
    Ok(())
}
