//! `nl.matmul` and `nl.transpose`: high-level TensorE operations that lower
//! to the same IR ops as `nisa.nc_matmul` and `nisa.nc_transpose`.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::Buffer;
use nkic_isa::Engine;
use nkic_isa::insn;

use super::check;
use super::isa::tensor_engine::{self, MatmulFlags, PendingMatmul};
use super::lower;
use super::table::{ApiDef, Bound, Kind, OUT_DTYPE, X, opt, req};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// `nl.matmul` is an `nc_matmul`, `nl.transpose` an `nc_transpose`.
const TENSOR: &[Engine] = insn::NcMatmul::ENGINES;
const TRANSPOSE: &[Engine] = insn::NcTranspose::ENGINES;

/// `nl.matmul` and `nl.transpose`.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nl.matmul",
        &[
            X,
            req("y", Kind::Tensor),
            opt("transpose_x", Kind::Bool, "False"),
        ],
        TENSOR,
        "`x @ y` (or `x.T @ y` with `transpose_x`) into a new fp32 PSUM tile: `nc_matmul(stationary=xᵀ, moving=y)`, with an `nc_transpose` of `x` first when `transpose_x` is false; `acc += nl.matmul(x, y, ...)` on a PSUM tile accumulates into `acc` instead, as `acc += nisa.nc_matmul(...)` does.",
        &[
            "`x` and `y` are SBUF tiles (PSUM tiles are copied to SBUF first); the contraction sizes agree and are at most 128.",
            "`x` has at most 128 rows (stationary free size), `y` at most 512 columns (trn2; 4096 on trn3).",
            "The `nisa.nc_matmul` rules apply.",
        ],
        matmul,
    ),
    ApiDef::new(
        "nl.transpose",
        &[X, OUT_DTYPE],
        TRANSPOSE,
        "The 2-D transpose of a tile into a new PSUM tile (`nc_transpose`; TensorE above 32×32).",
        &[
            "`x` is SBUF (or PSUM for VectorE, up to 32×32).",
            "The `nisa.nc_transpose` rules apply.",
        ],
        transpose,
    ),
];

/// Transposes `x` into a fresh PSUM tile (TensorE) or SBUF tile (VectorE
/// when `x` is in PSUM).
fn transpose_tile(ctx: &mut Ctx<'_>, x: &Rc<Tensor>, span: Span) -> Result<Rc<Tensor>, Diagnostic> {
    check::on_chip(ctx, x, span, "the transposed tile")?;
    let shape = [check::free_size(x), check::partitions(x)];
    let buffer = if x.buffer == Buffer::Psum {
        Buffer::Sbuf
    } else {
        Buffer::Psum
    };
    let name = ctx.fresh_name("transpose_");
    let dst = Rc::new(super::tensor::alloc(
        ctx,
        &shape,
        x.dtype(),
        buffer,
        &name,
        span,
        span,
    )?);
    let (kind, engine) = tensor_engine::transpose_into(ctx, (&dst, span), (x, span), None)?;
    let mut op = nkic_ir::Op::new(kind);
    op.engine = engine;
    ctx.push_op(op, span)?;
    Ok(dst)
}

/// `t` itself when it is in SBUF, else a copy of it in a new SBUF tile
/// (TensorE reads SBUF only; `nl.matmul` of a PSUM result, as legacy
/// kernels write, evicts it first).
fn in_sbuf(ctx: &mut Ctx<'_>, t: Rc<Tensor>, span: Span) -> Result<Rc<Tensor>, Diagnostic> {
    if t.buffer != Buffer::Psum {
        return Ok(t);
    }
    let name = ctx.fresh_name("mm_in_");
    let s = Rc::new(super::tensor::alloc(
        ctx,
        &t.shape,
        t.dtype(),
        Buffer::Sbuf,
        &name,
        span,
        span,
    )?);
    let kind = nkic_ir::OpKind::TensorCopy {
        dst: s.view.clone(),
        src: t.view.clone(),
    };
    ctx.push_op(nkic_ir::Op::new(kind), span)?;
    Ok(s)
}

fn matmul(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let y = b.tensor(ctx, "y")?;
    let y = in_sbuf(ctx, y, b.span_of("y"))?;
    let stationary = if b.bool_or(ctx, "transpose_x", false)? {
        in_sbuf(ctx, x, b.span_of("x"))?
    } else {
        // x is [M, K]: TensorE needs xᵀ = [K, M] in SBUF.
        let t = transpose_tile(ctx, &x, b.span_of("x"))?;
        in_sbuf(ctx, t, span)?
    };
    let pending = PendingMatmul {
        stationary,
        moving: y,
        flags: MatmulFlags {
            stationary_onezero: false,
            moving_onezero: false,
            transpose: false,
            perf_mode: nkic_isa::MatmulPerfMode::None,
            tile_position: None,
            tile_size: None,
        },
        dtype: nkic_isa::DType::F32,
        span,
        stationary_span: b.span_of("x"),
        moving_span: b.span_of("y"),
    };
    // The whole right-hand side of `acc += nl.matmul(x, y, ...)` (the SDK
    // 2.20 form) accumulates straight into `acc`, like `acc +=
    // nisa.nc_matmul(x, y)`; anywhere else the result is a fresh PSUM tile.
    if ctx.accumulate_call == Some(span) {
        return Ok(Value::Ext(Rc::new(pending)));
    }
    let r = pending.record(ctx, None, Some(false))?;
    Ok(Value::Tensor(r))
}

fn transpose(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let t = transpose_tile(ctx, &x, b.span_of("x"))?;
    match b.dtype(ctx, "dtype")? {
        Some(dt) if dt != t.dtype() => {
            let c = lower::new_tile(ctx, &t.shape, dt, span)?;
            let kind = nkic_ir::OpKind::TensorCopy {
                dst: c.view.clone(),
                src: t.view.clone(),
            };
            ctx.push_op(nkic_ir::Op::new(kind), span)?;
            Ok(Value::Tensor(c))
        }
        _ => Ok(Value::Tensor(t)),
    }
}
