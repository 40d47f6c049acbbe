//! The `nki.language` data movement: `nl.load`, `nl.store`,
//! `nl.load_transpose2d`, `nl.copy`, `tile[key] = value` assignment, and
//! `nl.device_print` (checked and reported with a warning: nkic has no
//! run-time print yet). The `nki.isa` data movement (`nisa.dma_copy`,
//! `nisa.dma_transpose`, `nisa.dma_compute`, `nisa.memset`, `nisa.iota`,
//! `nisa.tensor_copy`) and the DMA and copy rules these functions share
//! with it are in `api/isa/dma.rs`.
//!
//! Choices where the spec is silent: `nl.store` of a PSUM tile first
//! copies it to a fresh SBUF tile, as the legacy docs describe.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind};
use nkic_isa::Engine;
use nkic_isa::insn;

use super::check;
use super::codes;
use super::emit;
use super::fill::{fill_imm, push_memset};
use super::isa::dma::{
    DMA, copy_checks, dma_side, elements, plain_dma, same_elements, transposed_elements,
};
use super::table::{ApiDef, Bound, DST, Kind, MASK, NO_ENGINE, OUT_DTYPE, SRC, X, opt, req};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// `nl.copy` is a `tensor_copy`.
const COPY_ENGINES: &[Engine] = insn::TensorCopy::ENGINES;

/// The data-movement functions.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nl.load",
        &[SRC, OUT_DTYPE, MASK],
        DMA,
        "Loads an HBM view into a new SBUF tile of the same shape (`ndarray` + `dma_copy`).",
        &[
            "`src` is in HBM and has at least 2 dims, the first at most 128.",
            "An SBUF `src` (legacy kernels load `nl.shared_identity_matrix`, which older NKI kept in HBM) is copied by the same DMA; a PSUM `src` is an error.",
            "The tile fits in one SBUF partition row.",
        ],
        load,
    ),
    ApiDef::new(
        "nl.store",
        &[DST, req("value", Kind::Tensor), MASK],
        DMA,
        "Stores an SBUF or PSUM tile into an HBM view (a PSUM tile is first copied to SBUF).",
        &[
            "`dst` is in HBM; `value` is in SBUF or PSUM.",
            "`dst` and `value` have the same number of elements.",
        ],
        store,
    ),
    ApiDef::new(
        "nl.load_transpose2d",
        &[SRC, OUT_DTYPE],
        DMA,
        "Loads the 2-D transpose of an HBM view into a new SBUF tile (`dma_transpose`).",
        &[
            "`src` is a 2-D HBM view whose second dim is at most 128.",
            "The dtype is 2 or 4 bytes wide and is not changed.",
        ],
        load_transpose2d,
    ),
    ApiDef::new(
        "nl.copy",
        &[X, OUT_DTYPE],
        COPY_ENGINES,
        "Copies a tile into a new SBUF tile (`tensor_copy`); as an `op=` value it is the identity activation.",
        &["As `nisa.tensor_copy`."],
        nl_copy,
    ),
    ApiDef::new(
        "instruction.depends_on",
        &[req("self", Kind::Any), opt("*producers", Kind::Any, "()")],
        NO_ENGINE,
        "Adds scheduling edges: this instruction runs after each producer; returns itself.",
        &["Producers are instruction handles recorded earlier."],
        depends_on_unbound,
    ),
];

// ------------------------------------------------------------------ functions

fn load(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    // An SBUF source is copied by the same DMA: legacy kernels
    // `nl.load(nl.shared_identity_matrix(...))`, which older NKI kept in
    // HBM and nkic (like current NKI) builds in SBUF.
    let src = b.tensor_off_psum(
        ctx,
        "src",
        "`nl.load` reads HBM (or SBUF), found `src`",
        "in PSUM",
        Some("use `nl.copy` or `nisa.tensor_copy` for PSUM tiles"),
    )?;
    let shape = if src.shape.len() == 1 {
        vec![src.shape[0], 1]
    } else {
        src.shape.clone()
    };
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(src.dtype());
    let tile = emit::new_result(ctx, b, "load_", &shape, dtype, Buffer::Sbuf, span)?;
    let kind = plain_dma(&tile.view, &src.view, false);
    emit::push(ctx, b, kind, None, span)?;
    Ok(Value::Tensor(emit::masked_result(b, &tile)))
}

fn store(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    if let Some(a) = b.get("value")
        && matches!(a.value, Value::Int(_) | Value::Float(_) | Value::Bool(_))
    {
        return store_scalar(ctx, b, &dst, &a.value, a.span, span);
    }
    let value = b.tensor(ctx, "value")?;
    stores_to_hbm(ctx, b, &dst)?;
    check::on_chip(ctx, &value, b.span_of("value"), "`value`")?;
    same_elements(ctx, &dst, &value, b.span_of("value"), |d, v| {
        format!("`dst` has shape {d} but `value` has shape {v}")
    })?;
    let src = if value.buffer == Buffer::Psum {
        let tmp = sbuf_like(ctx, "evict_", &value, b.span_of("value"), span)?;
        copy_checks(ctx, (&tmp, span), (&value, b.span_of("value")), None)?;
        emit::push(
            ctx,
            b,
            OpKind::TensorCopy {
                dst: tmp.view.clone(),
                src: value.view.clone(),
            },
            None,
            span,
        )?;
        tmp.view
    } else {
        value.view.clone()
    };
    emit::push(ctx, b, plain_dma(&dst.view, &src, false), None, span)?;
    Ok(Value::None)
}

/// `nl.store` writes HBM.
fn stores_to_hbm(ctx: &Ctx<'_>, b: &Bound, dst: &Tensor) -> Result<(), Diagnostic> {
    if dst.buffer.is_hbm() {
        return Ok(());
    }
    let message = "`nl.store` writes HBM, found `dst`";
    Err(check::tensor_error(
        ctx,
        codes::BUFFER,
        message,
        dst,
        b.span_of("dst"),
        "not in HBM",
    ))
}

/// `nl.store(dst, 3.0)`: fills an SBUF tile of `dst`'s element count
/// (laid out over the largest partition count ≤ 128 that divides it) and
/// copies it to `dst`, as legacy NKI's scalar store did.
fn store_scalar(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    dst: &Tensor,
    value: &Value,
    value_span: Span,
    span: Span,
) -> Result<Value, Diagnostic> {
    stores_to_hbm(ctx, b, dst)?;
    let n = elements(dst);
    let p = (1..=128u64.min(n))
        .rev()
        .find(|p| n.is_multiple_of(*p))
        .unwrap_or(1);
    let imm = fill_imm(ctx, dst.dtype(), value, value_span, true)?;
    let name = ctx.fresh_name("fill_");
    let tile = super::tensor::alloc(
        ctx,
        &[p, n / p],
        dst.dtype(),
        Buffer::Sbuf,
        &name,
        value_span,
        span,
    )?;
    emit::push(
        ctx,
        b,
        OpKind::Memset {
            dst: tile.view.clone(),
            value: imm,
        },
        None,
        span,
    )?;
    emit::push(ctx, b, plain_dma(&dst.view, &tile.view, false), None, span)?;
    Ok(Value::None)
}

fn load_transpose2d(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src")?;
    if !src.buffer.is_hbm() || src.shape.len() != 2 {
        return Err(check::tensor_error(
            ctx,
            codes::SHAPE,
            "`nl.load_transpose2d` takes a 2-D HBM view, found",
            &src,
            b.span_of("src"),
            "not a 2-D HBM view",
        ));
    }
    if let Some(dt) = b.dtype(ctx, "dtype")?
        && dt != src.dtype()
    {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "a DMA transpose does not cast: `src` is {} but `dtype` is {dt}",
                src.dtype()
            ),
            b.span_of("dtype"),
            "cast",
        ));
    }
    transposed_elements(ctx, b, &src, "a DMA transpose")?;
    let shape = vec![src.shape[1], src.shape[0]];
    let name = ctx.fresh_name("load_t_");
    let tile = super::tensor::alloc(
        ctx,
        &shape,
        src.dtype(),
        Buffer::Sbuf,
        &name,
        b.span_of("src"),
        span,
    )?;
    let kind = OpKind::DmaTranspose {
        dst: tile.view.clone(),
        src: src.view.clone(),
        dge: None,
    };
    emit::push(ctx, b, kind, None, span)?;
    Ok(Value::tensor(tile))
}

fn nl_copy(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let name = ctx.fresh_name("copy_");
    let tile = super::tensor::alloc(
        ctx,
        &x.shape,
        dtype,
        Buffer::Sbuf,
        &name,
        b.span_of("x"),
        span,
    )?;
    copy_checks(ctx, (&tile, span), (&x, b.span_of("x")), None)?;
    emit::push(
        ctx,
        b,
        OpKind::TensorCopy {
            dst: tile.view.clone(),
            src: x.view.clone(),
        },
        None,
        span,
    )?;
    Ok(Value::tensor(tile))
}

/// A new SBUF tile with `like`'s shape and dtype, named `{prefix}{n}`: the
/// staging tile of a copy to or from `like` ([`super::tensor::alloc`]).
fn sbuf_like(
    ctx: &mut Ctx<'_>,
    prefix: &str,
    like: &Tensor,
    shape_span: Span,
    span: Span,
) -> Result<Tensor, Diagnostic> {
    let name = ctx.fresh_name(prefix);
    super::tensor::alloc(
        ctx,
        &like.shape,
        like.dtype(),
        Buffer::Sbuf,
        &name,
        shape_span,
        span,
    )
}

fn depends_on_unbound(ctx: &mut Ctx<'_>, _b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    // `call` handles `depends_on` before binding (it is variadic).
    Err(ctx.error(
        codes::ARG_TYPE,
        "`depends_on` is called on an instruction handle",
        span,
        "here",
    ))
}

/// `target[key] = value`: a copy into the view (DMA when either side is
/// in HBM, else `tensor_copy`), or a `memset` for a number.
pub fn assign(
    ctx: &mut Ctx<'_>,
    dst: &Rc<Tensor>,
    value: &Value,
    span: Span,
) -> Result<(), Diagnostic> {
    match value {
        Value::Tensor(src) => {
            if dst.buffer.is_hbm() || src.buffer.is_hbm() {
                dma_side(ctx, dst, span, "the assigned view")?;
                dma_side(ctx, src, span, "the assigned value")?;
                same_elements(ctx, dst, src, span, |d, s| {
                    format!("cannot assign a {s} tile to a {d} view")
                })?;
                let op = plain_dma(&dst.view, &src.view, false);
                ctx.push_op(nkic_ir::Op::new(op), span)?;
            } else {
                copy_checks(ctx, (dst, span), (src, span), None)?;
                ctx.push_op(
                    nkic_ir::Op::new(OpKind::TensorCopy {
                        dst: dst.view.clone(),
                        src: src.view.clone(),
                    }),
                    span,
                )?;
            }
            Ok(())
        }
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
            check::on_chip(ctx, dst, span, "the assigned view")?;
            check::partition_count(ctx, dst, span, "the assigned view")?;
            let imm = fill_imm(ctx, dst.dtype(), value, span, true)?;
            if check::partition_start(ctx, dst, span, "the assigned view").is_ok() {
                return push_memset(ctx, &dst.view, imm, None, None, span);
            }
            // Engines cannot start at this partition (legacy `t[i, j] = v`
            // on one row); DMA can: fill a tile at partition 0 and copy it.
            if dst.buffer == Buffer::Psum {
                return check::partition_start(ctx, dst, span, "the assigned view");
            }
            let tmp = sbuf_like(ctx, "fill_", dst, span, span)?;
            push_memset(ctx, &tmp.view, imm, None, None, span)?;
            let op = plain_dma(&dst.view, &tmp.view, false);
            ctx.push_op(nkic_ir::Op::new(op), span)?;
            Ok(())
        }
        v => Err(ctx.error(
            codes::ARG_TYPE,
            format!("cannot assign a {} to a tensor view", v.type_name()),
            span,
            "not a tensor or number",
        )),
    }
}

// ------------------------------------------------------------------ device_print

/// `nl.device_print`, registered in `table::REGISTRY` after the legacy
/// `ncc.*` functions.
pub const DEVICE_PRINT_DEFS: &[ApiDef] = &[ApiDef::new(
    "nl.device_print",
    &[req("prefix", Kind::Str), req("tensor", Kind::Tensor)],
    NO_ENGINE,
    "Prints a tensor at run time. nkic has no run-time print yet: the call is checked, reported with a warning (E0524) and records nothing.",
    &["`prefix` is a compile-time string; `tensor` is an SBUF or HBM tensor."],
    device_print,
)];

fn device_print(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let prefix = b.string(ctx, "prefix")?.unwrap_or_default();
    b.tensor_off_psum(
        ctx,
        "tensor",
        "`nl.device_print` prints SBUF or HBM tensors, found",
        "in psum",
        None,
    )?;
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
