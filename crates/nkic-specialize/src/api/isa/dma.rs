//! The LNC=2 exchange and barrier: `nisa.sendrecv` and
//! `nisa.core_barrier` lower to the IR's `sendrecv` and `core_barrier`
//! (LNC=2 launches only; a `sendrecv` is issued on the Sync queue, or on
//! GpSimd with `dma_engine.gpsimd_dma`). The single-core DMAs
//! (`dma_copy`, `dma_compute`, …) are in `api/memory.rs`.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind};
use nkic_isa::Engine;

use crate::api::check;
use crate::api::table::{
    ApiDef, Bound, DATA, DST, ENGINE_GPSIMD, ISA_ENGINES, Kind, NAME, SRC, opt, req,
};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::Value;

/// The launch rule of the cross-core operations (`lnc2_rank`).
const TWO_CORES: &str = "The kernel is launched on two cores: a launch grid of 2, or a grid of exactly 2 instances with `--lnc 2` (E0525).";

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nisa.core_barrier",
        &[DATA, req("cores", Kind::Ints), ENGINE_GPSIMD, NAME],
        ISA_ENGINES,
        "A barrier between the two physical cores of an LNC=2 logical core: only the chosen engine's stream waits until the other core's barrier has issued; accesses of `data` before the barrier are ordered before accesses after it.",
        &[
            TWO_CORES,
            "`cores` is `(0, 1)` (E0525).",
            "Both instances issue the same barriers on the same engines in the same order (E0525 at the first barrier without a partner).",
            "`data` is the HBM tensor (shared between the cores) the barrier orders accesses of; an on-chip tile, which the cores do not share, makes it a barrier that orders no accesses (the engine still waits for the other core; nki-library synchronises a loop counter in SBUF so).",
        ],
        core_barrier,
    ),
    ApiDef::new(
        "nisa.sendrecv",
        &[
            SRC,
            DST,
            req("send_to_rank", Kind::Int),
            req("recv_from_rank", Kind::Int),
            req("pipe_id", Kind::Int),
            opt(
                "dma_engine",
                Kind::Enum("dma_engine"),
                "nisa.dma_engine.dma",
            ),
            NAME,
        ],
        SENDRECV_ENGINES,
        "Exchanges SBUF tiles between the two cores of an LNC=2 logical core: this core's `src` arrives in the other core's `dst` and the other core's `src` in this `dst`. With `dma_engine.dma` (default) it is issued on the Sync engine's queue, with `dma_engine.gpsimd_dma` on GpSimd's.",
        &[
            TWO_CORES,
            "`send_to_rank` and `recv_from_rank` are the other core's rank, `1 - nl.program_id(0)` (E0525).",
            "Both instances issue the same exchanges and barriers on the same engines in the same order (E0525 at the first one without a partner).",
            "`src` and `dst` are SBUF tiles of the same dtype and shape.",
            "`pipe_id` is 0 to 255.",
            "With `dma_engine.gpsimd_dma`, at most 1024 bytes per partition for 32-bit dtypes, 512 for 16-bit and 256 for 8-bit (256 elements).",
        ],
        sendrecv,
    ),
];

/// The engines a `sendrecv` is issued from: Sync for `dma_engine.dma`,
/// GpSimd for `dma_engine.gpsimd_dma`.
const SENDRECV_ENGINES: &[Engine] = &[Engine::Sync, Engine::GpSimd];

/// This instance's rank (0 or 1) in an LNC=2 launch (as the backend
/// launches it: `Ctx::two_core_rank`), or E0525 at `span` when the kernel
/// does not run on two cores; `does` completes "`api` …" ("synchronises
/// the two cores of an LNC=2 launch").
fn lnc2_rank(ctx: &Ctx<'_>, span: Span, api: &str, does: &str) -> Result<u32, Diagnostic> {
    if let Some(rank) = ctx.two_core_rank() {
        return Ok(rank);
    }
    let grid: Vec<String> = ctx.grid().iter().map(u32::to_string).collect();
    let instances: u64 = ctx.grid().iter().map(|&n| u64::from(n)).product();
    if ctx.config.lnc == Some(1) && instances == 2 {
        return Err(ctx
            .error(
                codes::CORES,
                format!("`{api}` {does}, but `--lnc 1` runs both instances on one core"),
                span,
                "no second core",
            )
            .with_help("drop `--lnc 1`: a grid of 2 runs on two cores by default"));
    }
    let found = if grid.is_empty() {
        "no launch grid".to_owned()
    } else if instances == 2 {
        format!(
            "the grid ({}), which runs on one core without `--lnc 2`",
            grid.join(", ")
        )
    } else if instances == 1 {
        "a grid of 1 instance".to_owned()
    } else {
        format!("a grid of {instances} instances")
    };
    Err(ctx
        .error(
            codes::CORES,
            format!("`{api}` {does}, but this kernel has {found}"),
            span,
            "not an LNC=2 launch",
        )
        .with_help(
            "launch the kernel on a grid of 2 (`--grid 2` or `# nkic: grid 2`) on trn2 or trn3",
        ))
}

/// `nisa.sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id,
/// dma_engine)`.
fn sendrecv(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    const API: &str = "nisa.sendrecv";
    let src = b.tensor(ctx, "src")?;
    let dst = b.tensor(ctx, "dst")?;
    for (t, field) in [(&src, "src"), (&dst, "dst")] {
        let what = format!("`{field}` of `{API}`");
        check::buffer_in(ctx, t, &[Buffer::Sbuf], b.span_of(field), &what)?;
        check::operand(ctx, t, b.span_of(field), &what)?;
    }
    let not_src = format!("not {}", src.dtype());
    check::same_dtype(ctx, &src, &dst, b.span_of("dst"), not_src, |s, d| {
        format!("`dst` of `{API}` must have the dtype of `src` ({s}), found {d}")
    })?;
    check::same_pf(ctx, (&src, "src"), (&dst, "dst", b.span_of("dst")))?;
    let rank = lnc2_rank(
        ctx,
        span,
        API,
        "exchanges tiles between the two cores of an LNC=2 launch",
    )?;
    let other = i64::from(1 - rank.min(1));
    for field in ["send_to_rank", "recv_from_rank"] {
        let r = b.int(ctx, field)?.unwrap_or(-1);
        if r != other {
            return Err(ctx
                .error(
                    codes::CORES,
                    format!(
                        "`{field}` of `{API}` must be the other core's rank: {other} on instance {rank}, found {r}"
                    ),
                    b.span_of(field),
                    format!("not {other}"),
                )
                .with_note("an LNC=2 launch has two cores, ranks 0 and 1, and each exchanges with the other")
                .with_help("write `1 - nl.program_id(0)`"));
        }
    }
    let pipe = b.int(ctx, "pipe_id")?.unwrap_or(0);
    let Ok(pipe) = u8::try_from(pipe) else {
        return Err(check::out_of_range(
            ctx,
            b,
            "pipe_id",
            format_args!("`pipe_id` of `{API}` must be 0 to 255"),
            pipe,
        ));
    };
    let engine = match b.enum_member(ctx, "dma_engine", "dma_engine")? {
        Some("gpsimd_dma") => Engine::GpSimd,
        _ => Engine::Sync,
    };
    let free = check::free_size(&src);
    if engine == Engine::GpSimd && free > 256 {
        let bytes = free * u64::from(src.dtype().size());
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!(
                "`{API}` on GpSimd's internal DMA moves at most 256 elements per partition ({} bytes of {}), but `src` has {free} ({bytes} bytes)",
                256 * u64::from(src.dtype().size()),
                src.dtype()
            ),
            b.span_of("src"),
            format!("{free} elements per partition"),
        )
        .with_help("use `dma_engine=nisa.dma_engine.dma`, or exchange the tile in pieces"));
    }
    let kind = OpKind::SendRecv {
        dst: dst.view.clone(),
        src: src.view.clone(),
        pipe,
    };
    let ins = emit::push(ctx, b, kind, Some(engine), span)?;
    Ok(Value::Ext(Rc::new(emit::Instruction::new(ins))))
}

/// `nisa.core_barrier(data, cores, engine)`.
fn core_barrier(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let cores = b.ints(ctx, "cores")?.unwrap_or_default();
    if cores != [0, 1] {
        return Err(ctx.error(
            codes::CORES,
            format!(
                "`cores` of `nisa.core_barrier` must be (0, 1), found {}",
                shape_text_i64(&cores)
            ),
            b.span_of("cores"),
            "not (0, 1)",
        ));
    }
    lnc2_rank(
        ctx,
        span,
        "nisa.core_barrier",
        "synchronises the two cores of an LNC=2 launch",
    )?;
    let engine = emit::engine(ctx, b)?.unwrap_or(Engine::GpSimd);
    // An on-chip tile is each core's own: the barrier names no shared
    // data then.
    let kind = OpKind::CoreBarrier {
        data: data.buffer.is_hbm().then(|| data.view.clone()),
    };
    let ins = emit::push(ctx, b, kind, Some(engine), span)?;
    Ok(Value::Ext(Rc::new(emit::Instruction::new(ins))))
}

/// `(0, 1)`-style text of a list of ints.
fn shape_text_i64(v: &[i64]) -> String {
    match v {
        [x] => format!("({x},)"),
        _ => format!(
            "({})",
            v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}
