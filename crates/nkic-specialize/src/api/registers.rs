//! Sequencer registers (isa.md §5.6): `nisa.register_alloc`,
//! `register_move`, `register_load` and `register_store`.
//!
//! A register value is `reg · scale + offset` (the evaluator folds
//! arithmetic on loop variables); only a plain register can be a
//! destination, and a scaled one cannot be copied without register
//! arithmetic, which NKI does not expose.

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{OpKind, RegOrImm};
use nkic_isa::Engine;

use super::check;
use super::codes;
use super::emit;
use super::table::{ApiDef, Bound, DST, Kind, Param, SRC, opt, req};
use crate::ctx::Ctx;
use crate::value::{RegValue, Tensor, Value};

const ANY: &[Engine] = &[
    Engine::Tensor,
    Engine::Vector,
    Engine::Scalar,
    Engine::GpSimd,
    Engine::Sync,
    Engine::Dma,
];

/// `dst`: the register written.
const REGISTER_DST: Param = req("dst", Kind::Any);
/// `src`: the register read.
const REGISTER_SRC: Param = req("src", Kind::Any);

/// The register functions.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nisa.register_alloc",
        &[opt("x", Kind::Int, "None")],
        ANY,
        "A new 32-bit sequencer register, uninitialized or set to the int `x`.",
        &["`x` fits in 32 bits."],
        register_alloc,
    ),
    ApiDef::new(
        "nisa.register_move",
        &[REGISTER_DST, REGISTER_SRC],
        ANY,
        "`dst = src` where `src` is a compile-time int or a register.",
        &[
            "`dst` is a plain register that is not a loop's induction variable.",
            "`src` is an int that fits in 32 bits or a plain register.",
        ],
        register_move,
    ),
    ApiDef::new(
        "nisa.register_load",
        &[REGISTER_DST, SRC],
        ANY,
        "`dst =` the single element (at most 32 bits) of an HBM or SBUF tensor.",
        &[
            "`src` has exactly one element of at most 4 bytes, in HBM or SBUF.",
            "`dst` is a plain register that is not a loop's induction variable.",
        ],
        register_load,
    ),
    ApiDef::new(
        "nisa.register_store",
        &[DST, REGISTER_SRC],
        ANY,
        "Writes register `src` into the single element of an HBM or SBUF tensor.",
        &[
            "`dst` has exactly one element of at most 4 bytes, in HBM or SBUF.",
            "`src` is a plain register.",
        ],
        register_store,
    ),
];

fn i32_of(ctx: &Ctx<'_>, v: i64, span: Span) -> Result<i32, Diagnostic> {
    i32::try_from(v)
        .or_else(|_| u32::try_from(v).map(|u| u as i32))
        .map_err(|_| {
            ctx.error(
                codes::VALUE,
                format!("{v} does not fit in a 32-bit register"),
                span,
                "too large",
            )
        })
}

fn plain_register(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<RegValue, Diagnostic> {
    match b.value(name) {
        Value::Register(r) if r.is_plain() => Ok(r),
        Value::Register(_) => Err(ctx.error(
            codes::ARG_TYPE,
            format!("`{name}` must be a plain register, not an expression of one"),
            b.span_of(name),
            "scaled or offset register",
        )),
        v => Err(ctx.error(
            codes::ARG_TYPE,
            format!("`{name}` must be a register, found a {}", v.type_name()),
            b.span_of(name),
            "not a register",
        )),
    }
}

fn one_element(ctx: &Ctx<'_>, t: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    let n: u64 = t.shape.iter().product();
    if n != 1 || t.dtype().size() > 4 || t.buffer == nkic_ir::Buffer::Psum {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "{what} must be one element of at most 4 bytes in HBM or SBUF, found {}",
                check::describe(t)
            ),
            span,
            "not a single element",
        ));
    }
    Ok(())
}

fn register_alloc(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let init = match b.int(ctx, "x")? {
        Some(x) => Some(i32_of(ctx, x, b.span_of("x"))?),
        None => None,
    };
    ctx.check_budget(span)?;
    let name = ctx.fresh_name("reg");
    let loc = ctx.loc(span);
    let reg = ctx.builder().alloc_register(&name, init, loc);
    Ok(Value::Register(RegValue::plain(reg)))
}

/// A register that may be written: plain and not a loop's induction
/// variable (those are frozen).
fn writable_register(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<RegValue, Diagnostic> {
    let r = plain_register(ctx, b, name)?;
    let frozen = ctx
        .builder_ref()
        .kernel()
        .dyn_loops
        .iter()
        .any(|(_, l)| l.induction == Some(r.reg));
    if frozen {
        return Err(ctx.error(
            codes::ARG_TYPE,
            "a dynamic loop's induction register is read-only",
            b.span_of(name),
            "frozen register",
        ));
    }
    Ok(r)
}

fn register_move(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = writable_register(ctx, b, "dst")?;
    let src = match b.value("src") {
        Value::Register(_) => RegOrImm::Reg(plain_register(ctx, b, "src")?.reg),
        v => match (v.as_int(), &v) {
            (_, Value::Bool(_)) | (None, _) => {
                return Err(ctx.error(
                    codes::ARG_TYPE,
                    format!(
                        "`src` must be an int or a register, found a {}",
                        v.type_name()
                    ),
                    b.span_of("src"),
                    "not an int or register",
                ));
            }
            (Some(i), _) => RegOrImm::Imm(i32_of(ctx, i, b.span_of("src"))?),
        },
    };
    emit::push(ctx, b, OpKind::RegMove { dst: dst.reg, src }, None, span)?;
    Ok(Value::None)
}

fn register_load(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = writable_register(ctx, b, "dst")?;
    let src = b.tensor(ctx, "src")?;
    one_element(ctx, &src, b.span_of("src"), "`src`")?;
    let kind = OpKind::RegLoad {
        dst: dst.reg,
        src: src.view.clone(),
    };
    emit::push(ctx, b, kind, None, span)?;
    Ok(Value::None)
}

fn register_store(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    let src = plain_register(ctx, b, "src")?;
    one_element(ctx, &dst, b.span_of("dst"), "`dst`")?;
    let kind = OpKind::RegStore {
        dst: dst.view.clone(),
        src: src.reg,
    };
    emit::push(ctx, b, kind, None, span)?;
    Ok(Value::None)
}
