//! Fill values and `memset` recording, shared by `nisa.memset`, the
//! `nl.zeros`/`nl.full` family, tile assignment of a number and tensor
//! fills: [`fill_imm`] turns a compile-time number into the immediate of
//! a tile's dtype (E0515 when it does not fit or is not a number),
//! [`push_memset`] records the op.

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{OpKind, View};
use nkic_isa::{DType, Engine, Fp32, Imm};

use super::codes;
use crate::ctx::Ctx;
use crate::value::Value;

/// The compile-time value of a fill for `dtype` (memset, zeros, full).
pub fn fill_imm(
    ctx: &Ctx<'_>,
    dtype: DType,
    value: &Value,
    span: Span,
    lenient: bool,
) -> Result<Imm, Diagnostic> {
    let int_range = |dt: DType| -> (i64, i64) {
        match dt {
            DType::I8 => (-128, 127),
            DType::I16 => (-32768, 32767),
            DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
            DType::U8 | DType::Bool => (0, 255),
            DType::U16 => (0, 65535),
            _ => (0, i64::from(u32::MAX)),
        }
    };
    if dtype.is_packed_x4() {
        return match value.as_float() {
            Some(0.0) => Ok(Imm::Int(0)),
            _ => Err(ctx.error(
                codes::FILL_VALUE,
                format!(
                    "a packed {dtype} tensor can only be filled with 0, found {}",
                    crate::format::short_repr(value)
                ),
                span,
                "not 0",
            )),
        };
    }
    match value {
        Value::Int(_) | Value::Bool(_) => {
            let i = value.as_int().unwrap_or(0);
            if dtype.is_int() || dtype == DType::Bool {
                let (lo, hi) = int_range(dtype);
                if i < lo || i > hi {
                    return Err(ctx.error(
                        codes::FILL_VALUE,
                        format!("{i} does not fit in {dtype} ({lo}..={hi})"),
                        span,
                        "out of range",
                    ));
                }
                Ok(Imm::Int(i))
            } else {
                Ok(Imm::Float(Fp32::new(i as f32)))
            }
        }
        Value::Float(f) => {
            if dtype.is_int() || dtype == DType::Bool {
                if lenient && f.fract() == 0.0 {
                    return fill_imm(ctx, dtype, &Value::Int(*f as i64), span, false);
                }
                return Err(ctx
                    .error(
                        codes::FILL_VALUE,
                        format!("a tensor of {dtype} needs an int fill value, found {f:?}"),
                        span,
                        "a float",
                    )
                    .with_help(format!("write {}", f.trunc() as i64)));
            }
            Ok(Imm::Float(Fp32::new(*f as f32)))
        }
        v => Err(ctx.error(
            codes::FILL_VALUE,
            format!(
                "a fill value is a compile-time number, found a {}",
                v.type_name()
            ),
            span,
            "not a number",
        )),
    }
}

/// Records a `memset`.
pub fn push_memset(
    ctx: &mut Ctx<'_>,
    dst: &View,
    value: Imm,
    engine: Option<Engine>,
    name: Option<String>,
    span: Span,
) -> Result<(), Diagnostic> {
    let mut op = nkic_ir::Op::new(OpKind::Memset {
        dst: dst.clone(),
        value,
    });
    op.engine = engine;
    op.name = name;
    ctx.push_op(op, span)?;
    Ok(())
}
