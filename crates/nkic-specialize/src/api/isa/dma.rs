//! The `nki.isa` data movement (isa.md §6.1) and the LNC=2 exchange and
//! barrier: `nisa.dma_copy`, `nisa.dma_transpose`, `nisa.dma_compute`,
//! `nisa.tensor_copy`, `nisa.memset` and `nisa.iota`, and the DMA and copy
//! rules the `nki.language` data movement in `api/memory.rs` shares with
//! them (`dma_side`, `plain_dma`, `copy_checks`, …);
//! `nisa.sendrecv` and `nisa.core_barrier` lower to the IR's `sendrecv`
//! and `core_barrier` (LNC=2 launches only; a `sendrecv` is issued on the
//! Sync queue, or on GpSimd with `dma_engine.gpsimd_dma`).
//!
//! Choices where the spec is silent: DMA never writes PSUM (isa.md §8.13);
//! `memset` accepts an int value for a float dtype (it is exact) but not a
//! float for an int dtype (MIG 0.3).

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, View};
use nkic_isa::insn;
use nkic_isa::{AluOp, DgeMode, Dim, Engine, OobMode, Target};

use crate::api::check::{self, shape_text};
use crate::api::fill::fill_imm;
use crate::api::rules::{OpIn, reduces_with_only};
use crate::api::table::{
    ApiDef, Bound, DATA, DST, ENGINE, ENGINE_GPSIMD, ISA_ENGINES, Kind, NAME, OFFSET, OUT_DTYPE,
    PATTERN, Param, REDUCE_OP, SRC, instruction, instruction_pattern, opt, req,
};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::{IndexExpr, Tensor, Value};

/// The launch rule of the cross-core operations (`lnc2_rank`).
const TWO_CORES: &str = "The kernel is launched on two cores: a launch grid of 2, or a grid of exactly 2 instances with `--lnc 2` (E0525).";

/// `nl.load`, `nl.store` and `nisa.dma_compute` are `dma_copy`s.
pub(crate) const DMA: &[Engine] = insn::DmaCopy::ENGINES;
/// The engines whose queues may issue a DMA (`engine=` of `nisa.dma_copy`).
pub(crate) const DMA_TRIGGER: &[Engine] = &[Engine::Dma, Engine::Sync, Engine::Scalar];

/// `reduce_op` of `dma_compute`: `nl.add`.
const DMA_COMPUTE_OP: OpIn = reduces_with_only!("dma_compute", Add, "nl.add");
/// The legacy `dst_rmw_op=` of `dma_copy`: `nl.add`.
const DST_RMW_OP: OpIn = OpIn {
    name: "dst_rmw_op",
    allowed: &[AluOp::Add],
    message: "`dst_rmw_op` must be `nl.add`",
    label: "DMA accumulates with add only",
};
/// `priority=` of a DMA (trn3).
const PRIORITY: Param = opt("priority", Kind::Int, "None");
/// `oob_mode=` of a DMA.
const OOB_MODE: Param = opt("oob_mode", Kind::Enum("oob_mode"), "nisa.oob_mode.error");
/// `dge_mode=` of a DMA.
const DGE_MODE: Param = opt("dge_mode", Kind::Enum("dge_mode"), "nisa.dge_mode.unknown");

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
    ApiDef::new(
        "nisa.dma_copy",
        &[
            DST,
            SRC,
            PRIORITY,
            OOB_MODE,
            DGE_MODE,
            ENGINE,
            NAME,
            opt("dst_rmw_op", Kind::AluOp, "None"),
        ],
        DMA_TRIGGER,
        "Copies `src` to `dst` element by element in row-major order, casting through fp32 when the dtypes differ.",
        &[
            "`dst` and `src` have the same number of elements.",
            "Neither side is in PSUM (DMA reads and writes HBM and SBUF only).",
            "SBUF sides have at most 128 partitions.",
            "`dge_mode=hwdge` moves raw bytes: the dtypes must be equal.",
            "Packed x4 dtypes are never cast.",
            "`engine=` (sync or scalar) selects the HWDGE trigger and needs `dge_mode=hwdge`.",
            "A `vector_offset` gather/scatter needs `dge_mode` unknown or swdge.",
            "`priority` is 0–3 and needs trn3.",
            "The legacy `dst_rmw_op=nl.add` accumulates into `dst` (as `dma_compute` does); no other operator is accepted.",
        ],
        dma_copy,
    ),
    instruction!(
        "nisa.dma_transpose",
        [
            SRC,
            opt("axes", Kind::Ints, "None"),
            PRIORITY,
            DGE_MODE,
            OOB_MODE,
        ],
        "Transposes `src` into `dst` during the DMA (`dst.shape[i] == src.shape[axes[i]]`).",
        &[
            "`axes` is (1, 0) for 2-D, (2, 1, 0) for 3-D or (3, 1, 2, 0) for 4-D (the default for the rank).",
            "`dst` is SBUF with exactly the transposed shape and rank.",
            "`src` is HBM or SBUF; the dtypes are equal and 2 or 4 bytes wide.",
            "`oob_mode=skip` needs an indirect `src`.",
            "With `dge_mode=hwdge` (isa.md 5.3): a 2-D `src` has exactly 16 rows; a 3-D or 4-D `src` has 1, 2, 4, 8 or 16 in its first dimension and a multiple of 16 in the product of its first and second-to-last; the last dimension is at most 128; elements are 2 bytes wide. The default mode lets nkic build the descriptors ahead of time, which lifts these rules.",
        ],
        dma_transpose,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.tensor_copy",
        &[DST, SRC, ENGINE, NAME, OUT_DTYPE],
        ISA_ENGINES,
        "Copies `src` to `dst` on a compute engine, converting the dtype if they differ.",
        &[
            "Both are SBUF/PSUM with at most 128 partitions and a legal start partition.",
            "Equal partition counts and equal free sizes.",
            "GpSimd cannot access PSUM.",
            "The free size is within the engine limit (64K elements in SBUF, 4K in PSUM).",
            "`dtype` is the result dtype of the value form; with `dst` it is ignored (the copy converts to `dst`'s dtype).",
        ],
        tensor_copy,
    )
    .with_value_form(),
    instruction!(
        "nisa.memset",
        [req("value", Kind::Float), ENGINE],
        "Fills `dst` with a compile-time constant.",
        &[
            "`dst` is SBUF/PSUM with at most 128 partitions and a legal start partition (GpSimd: SBUF only).",
            "Integer dtypes need an integral value (`0` or `0.0`, not `2.5`); packed x4 dtypes only take 0.",
            "The value is representable in the dtype's range.",
        ],
        memset,
    )
    .with_value_form(),
    instruction!(
        "nisa.iota",
        [
            PATTERN,
            OFFSET,
            opt("channel_multiplier", Kind::Int, "0"),
        ],
        "Writes `offset + p·channel_multiplier + Σ i_k·step_k` (int32, then cast) to every element; the legacy form takes an index expression and a dtype.",
        &[
            "`dst` is SBUF with at most 128 partitions.",
            "`pattern` has 1 to 4 `[step, num]` pairs and `Π num` equals the free size of `dst`.",
        ],
        iota,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.dma_compute",
        &[
            DST,
            req("srcs", Kind::Any),
            REDUCE_OP,
            opt("scales", Kind::Any, "None"),
            opt("unique_indices", Kind::Bool, "True"),
            OOB_MODE,
            NAME,
        ],
        DMA,
        "`dst = srcs[0] + srcs[1] + …` element-wise inside the DMA engines (read-modify-write when `dst` is one of the sources).",
        &[
            "`reduce_op` is `nl.add` and every scale is 1.0.",
            "1 to 16 sources, each with `dst`'s element count, in HBM or SBUF (never PSUM).",
            "Lowered to one copy of the first source that is not `dst`, then accumulating DMA copies of the others (each add rounds to `dst`'s dtype).",
        ],
        dma_compute,
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

// ------------------------------------------------------------------ single-core DMA helpers

/// The member given for the enum parameter `param`, `None` when absent
/// or when the function has no such parameter.
fn enum_opt(ctx: &Ctx<'_>, b: &Bound, param: Param) -> Result<Option<&'static str>, Diagnostic> {
    let Kind::Enum(enum_name) = param.kind else {
        unreachable!("`{}` is an enum parameter", param.name)
    };
    if b.def.params.iter().any(|p| p.name == param.name) {
        b.enum_member(ctx, param.name, enum_name)
    } else {
        Ok(None)
    }
}

/// `dge_mode=` of a DMA (`None`: unknown, the compiler chooses).
fn dge_mode(ctx: &Ctx<'_>, b: &Bound) -> Result<Option<DgeMode>, Diagnostic> {
    Ok(enum_opt(ctx, b, DGE_MODE)?.and_then(DgeMode::from_name))
}

/// `oob_mode=` of a DMA.
fn oob_mode(ctx: &Ctx<'_>, b: &Bound) -> Result<OobMode, Diagnostic> {
    Ok(enum_opt(ctx, b, OOB_MODE)?
        .and_then(OobMode::from_name)
        .unwrap_or(OobMode::Error))
}

/// `priority=` of a DMA, which needs trn3.
fn priority(ctx: &Ctx<'_>, b: &Bound) -> Result<Option<i64>, Diagnostic> {
    let p = b.int(ctx, PRIORITY.name)?;
    if p.is_some() && ctx.target() < Target::Trn3 {
        return Err(ctx.error(
            codes::TARGET,
            format!("`priority` needs trn3, the target is {}", ctx.target()),
            b.span_of(PRIORITY.name),
            "not on this target",
        ));
    }
    Ok(p)
}

/// The DMA `dst = src` (`dst += src` when `accumulate`) with the given
/// descriptor mode, out-of-bounds mode and priority.
fn dma_kind(
    dst: &View,
    src: &View,
    accumulate: bool,
    dge: Option<DgeMode>,
    oob: OobMode,
    priority: Option<u8>,
) -> OpKind {
    OpKind::DmaCopy {
        dst: dst.clone(),
        src: src.clone(),
        accumulate,
        dge,
        oob,
        priority,
    }
}

/// The DMA `dst = src` (`dst += src` when `accumulate`) with the default
/// modes: the compiler chooses the descriptors, an out-of-bounds access is
/// an error, no priority.
pub(crate) fn plain_dma(dst: &View, src: &View, accumulate: bool) -> OpKind {
    dma_kind(dst, src, accumulate, None, OobMode::Error, None)
}

/// Checks the DMA side rules of one tensor.
pub(crate) fn dma_side(
    ctx: &Ctx<'_>,
    t: &Tensor,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    if t.buffer == Buffer::Psum {
        return Err(ctx
            .error(
                codes::BUFFER,
                format!("DMA cannot access PSUM: {what} is {}", check::describe(t)),
                span,
                "in psum",
            )
            .with_help("copy the PSUM tile to SBUF first (`nisa.tensor_copy`)"));
    }
    if t.buffer.is_on_chip() {
        check::partition_count(ctx, t, span, what)?;
    }
    Ok(())
}

pub(crate) fn elements(t: &Tensor) -> u64 {
    t.shape.iter().product()
}

/// `dst` and `src`, the two ends of a DMA, hold as many elements; else a
/// shape error at `span` whose text `message` makes from the shapes of
/// `dst` and `src`.
pub(crate) fn same_elements(
    ctx: &Ctx<'_>,
    dst: &Tensor,
    src: &Tensor,
    span: Span,
    message: impl FnOnce(String, String) -> String,
) -> Result<(), Diagnostic> {
    if elements(dst) == elements(src) {
        return Ok(());
    }
    Err(ctx.error(
        codes::SHAPE,
        message(shape_text(&dst.shape), shape_text(&src.shape)),
        span,
        "element count differs",
    ))
}

/// A DMA transpose (`who`) moves 2- or 4-byte elements of `src`.
pub(crate) fn transposed_elements(
    ctx: &Ctx<'_>,
    b: &Bound,
    src: &Tensor,
    who: &str,
) -> Result<(), Diagnostic> {
    if matches!(src.dtype().size(), 2 | 4) && !src.dtype().is_packed_x4() {
        return Ok(());
    }
    Err(ctx.error(
        codes::DTYPE,
        format!("{who} moves 2- or 4-byte elements, found {}", src.dtype()),
        b.span_of("src"),
        "element size",
    ))
}

// ------------------------------------------------------------------ functions

fn dma_copy(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    let src = b.tensor(ctx, "src")?;
    dma_side(ctx, &dst, b.span_of("dst"), "`dst`")?;
    dma_side(ctx, &src, b.span_of("src"), "`src`")?;
    if elements(&dst) != elements(&src) {
        return Err(ctx
            .error(
                codes::SHAPE,
                format!(
                    "`dst` has shape {} ({} elements) but `src` has shape {} ({} elements)",
                    shape_text(&dst.shape),
                    elements(&dst),
                    shape_text(&src.shape),
                    elements(&src)
                ),
                b.span_of("src"),
                "element count differs",
            )
            .with_secondary(ctx.file(), b.span_of("dst"), "the destination"));
    }
    let dge = dge_mode(ctx, b)?;
    let oob = oob_mode(ctx, b)?;
    if dst.dtype() != src.dtype() && (dst.dtype().is_packed_x4() || src.dtype().is_packed_x4()) {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "DMA cannot cast packed types: {} to {}",
                src.dtype(),
                dst.dtype()
            ),
            b.span_of("src"),
            "packed dtype cast",
        ));
    }
    if dge == Some(DgeMode::Hwdge) && dst.dtype() != src.dtype() {
        return Err(ctx
            .error(
                codes::DMA_MODE,
                format!(
                    "`dge_mode=hwdge` copies raw bytes, but `src` is {} and `dst` is {}",
                    src.dtype(),
                    dst.dtype()
                ),
                b.span_of("dge_mode"),
                "hwdge with a cast",
            )
            .with_help("use `.view(dtype)` to reinterpret, or let the compiler choose the mode"));
    }
    let indirect = dst.view.indirect.is_some() || src.view.indirect.is_some();
    if indirect && matches!(dge, Some(DgeMode::Hwdge | DgeMode::None)) {
        return Err(ctx.error(
            codes::DMA_MODE,
            "a `vector_offset` gather or scatter needs `dge_mode` unknown or swdge",
            b.span_of("dge_mode"),
            "descriptors must be generated at run time",
        ));
    }
    let engine = emit::engine(ctx, b)?;
    if let Some(e) = engine
        && e != Engine::Dma
        && dge != Some(DgeMode::Hwdge)
    {
        return Err(ctx.error(
            codes::ENGINE,
            format!("`engine=nisa.engine.{}` picks the HWDGE trigger and needs `dge_mode=nisa.dge_mode.hwdge`", e.name()),
            b.span_of("engine"),
            "no hwdge",
        ));
    }
    let priority = match priority(ctx, b)? {
        None => None,
        Some(p) => {
            if !(0..=3).contains(&p) {
                return Err(check::out_of_range(
                    ctx,
                    b,
                    "priority",
                    "`priority` is 0 to 3",
                    p,
                ));
            }
            Some(p as u8)
        }
    };
    // Legacy read-modify-write DMA: `dst_rmw_op=nl.add` is `dst += src`.
    let accumulate = DST_RMW_OP.opt(ctx, b)?.is_some();
    let kind = dma_kind(&dst.view, &src.view, accumulate, dge, oob, priority);
    // The trigger engine is a scheduling hint the IR does not record; the
    // op's engine stays open (DMA ops only run on the DMA queues).
    emit::finish(ctx, b, kind, None, None, span)
}

/// The permutation `axes` of `dma_transpose` for rank `n`.
fn transpose_axes(n: usize) -> Option<Vec<usize>> {
    match n {
        2 => Some(vec![1, 0]),
        3 => Some(vec![2, 1, 0]),
        4 => Some(vec![3, 1, 2, 0]),
        _ => None,
    }
}

fn dma_transpose(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src")?;
    let Some(default_axes) = transpose_axes(src.shape.len()) else {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dma_transpose` takes a 2-D to 4-D `src`, found shape {}",
                shape_text(&src.shape)
            ),
            b.span_of("src"),
            "bad rank",
        ));
    };
    if let Some(axes) = b.ints(ctx, "axes")? {
        let axes: Vec<usize> = axes.iter().map(|&a| a as usize).collect();
        if axes != default_axes {
            return Err(ctx.error(
                codes::AXIS,
                format!(
                    "`dma_transpose` of a {}-D tensor supports axes {:?}, found {:?}",
                    src.shape.len(),
                    default_axes,
                    axes
                ),
                b.span_of("axes"),
                "unsupported permutation",
            ));
        }
    }
    dma_side(ctx, &src, b.span_of("src"), "`src`")?;
    let tshape: Vec<u64> = default_axes.iter().map(|&a| src.shape[a]).collect();
    let dst = emit::dst_or_new(ctx, b, &tshape, src.dtype(), Buffer::Sbuf, span)?;
    if dst.buffer != Buffer::Sbuf {
        return Err(check::tensor_error(
            ctx,
            codes::BUFFER,
            "`dma_transpose` writes SBUF, found `dst`",
            &dst,
            b.span_of("dst"),
            "not sbuf",
        ));
    }
    check::partition_count(ctx, &dst, b.span_of("dst"), "`dst`")?;
    if dst.shape != tshape {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must have the transposed shape {} of `src` {}, found {}",
                shape_text(&tshape),
                shape_text(&src.shape),
                shape_text(&dst.shape)
            ),
            b.span_of("dst"),
            "not the transposed shape",
        ));
    }
    check::same_dtype(
        ctx,
        &src,
        &dst,
        b.span_of("dst"),
        "dtype differs",
        |s, d| format!("`dma_transpose` does not cast: `src` is {s} but `dst` is {d}"),
    )?;
    transposed_elements(ctx, b, &src, "`dma_transpose`")?;
    let skip = oob_mode(ctx, b)? == OobMode::Skip;
    if skip && src.view.indirect.is_none() {
        return Err(ctx.error(
            codes::DMA_MODE,
            "`oob_mode=skip` needs an indirect `src` (`.ap(vector_offset=...)`)",
            b.span_of("oob_mode"),
            "nothing to skip",
        ));
    }
    let dge = dge_mode(ctx, b)?;
    if dge == Some(DgeMode::Hwdge) {
        hwdge_transpose_shape(ctx, &src, b.span_of("src"))?;
    }
    priority(ctx, b)?;
    let kind = OpKind::DmaTranspose {
        dst: dst.view.clone(),
        src: src.view.clone(),
        dge,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

/// The shape rules of a transpose on the hardware descriptor generator
/// (`dge_mode=hwdge`, isa.md 5.3): a 2-D `src` has exactly 16 rows; a 3-D or
/// 4-D `src` has 1, 2, 4, 8 or 16 in its first dimension and a multiple of
/// 16 in the product of its first and second-to-last; the last dimension is
/// at most 128; elements are 2 bytes wide. With the default `unknown` mode
/// nkic may build the descriptors ahead of time (`none`), which lifts them.
fn hwdge_transpose_shape(ctx: &Ctx<'_>, src: &Tensor, span: Span) -> Result<(), Diagnostic> {
    let shape = &src.shape;
    let (first, last) = (shape[0], shape[shape.len() - 1]);
    let problem = if shape.len() == 2 && first != 16 {
        Some(format!(
            "a 2-D `src` must have exactly 16 rows, found {first}"
        ))
    } else if shape.len() > 2 && ![1, 2, 4, 8, 16].contains(&first) {
        Some(format!(
            "the first dimension of `src` must be 1, 2, 4, 8 or 16, found {first}"
        ))
    } else if shape.len() > 2 && !(first * shape[shape.len() - 2]).is_multiple_of(16) {
        Some(format!(
            "the first times the second-to-last dimension of `src` must be a multiple of 16, found {first} × {}",
            shape[shape.len() - 2]
        ))
    } else if last > 128 {
        Some(format!(
            "the last dimension of `src` must be at most 128, found {last}"
        ))
    } else if src.dtype().size() != 2 {
        Some(format!(
            "elements must be 2 bytes wide, found {}",
            src.dtype()
        ))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(ctx.error(
            codes::DMA_MODE,
            format!(
                "`dma_transpose` with `dge_mode=hwdge` cannot move `src` of shape {}: {problem}",
                shape_text(shape)
            ),
            span,
            "not a hardware-DGE transpose",
        )
        .with_help("leave `dge_mode` at its default to let nkic build the descriptors ahead of time")),
        None => Ok(()),
    }
}

/// The compute-engine copy rules shared by `tensor_copy`, `nl.copy`,
/// assignment and `nl.store` of PSUM.
pub(crate) fn copy_checks(
    ctx: &Ctx<'_>,
    dst: (&Tensor, Span),
    src: (&Tensor, Span),
    engine: Option<Engine>,
) -> Result<(), Diagnostic> {
    check::operand(ctx, src.0, src.1, "`src`")?;
    check::operand(ctx, dst.0, dst.1, "`dst`")?;
    check::same_pf(ctx, (src.0, "src"), (dst.0, "dst", dst.1))?;
    check::engine_free_size(ctx, src.0, src.1, "`src`")?;
    if engine == Some(Engine::GpSimd) {
        check::not_psum_on(ctx, src.0, Engine::GpSimd, src.1, "`src`")?;
        check::not_psum_on(ctx, dst.0, Engine::GpSimd, dst.1, "`dst`")?;
    }
    Ok(())
}

fn tensor_copy(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src")?;
    let engine = emit::engine(ctx, b)?;
    let dtype = b.dtype(ctx, "dtype")?;
    let dst = emit::dst_or_new(
        ctx,
        b,
        &src.shape,
        dtype.unwrap_or(src.dtype()),
        Buffer::Sbuf,
        span,
    )?;
    // With `dst` given, `dst`'s dtype is the result and `dtype` is ignored.
    copy_checks(
        ctx,
        (&dst, b.span_of("dst")),
        (&src, b.span_of("src")),
        engine,
    )?;
    let kind = OpKind::TensorCopy {
        dst: dst.view.clone(),
        src: src.view.clone(),
    };
    emit::finish(ctx, b, kind, engine, Some(&dst), span)
}

fn memset(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let engine = emit::engine(ctx, b)?;
    let dst = if b.is_value_form() {
        // Legacy: memset(shape, value, dtype, engine=...).
        let Some(shape_arg) = b.legacy("shape") else {
            return Err(b.legacy_missing(ctx, "shape"));
        };
        let shape = crate::api::table::shape_of(ctx, shape_arg)?;
        let dt = b.legacy_dtype_required(ctx)?;
        emit::dst_or_new(ctx, b, &shape, dt, Buffer::Sbuf, span)?
    } else {
        b.tensor(ctx, "dst")?
    };
    check::operand(ctx, &dst, b.span_of("dst"), "`dst`")?;
    if engine == Some(Engine::GpSimd) {
        check::not_psum_on(ctx, &dst, Engine::GpSimd, b.span_of("dst"), "`dst`")?;
    }
    // An integral float fills an integer tile (`value=0.0` on uint8
    // scales, as nki-library writes); 2.5 does not.
    let imm = fill_imm(
        ctx,
        dst.dtype(),
        &b.value("value"),
        b.span_of("value"),
        true,
    )?;
    let kind = OpKind::Memset {
        dst: dst.view.clone(),
        value: imm,
    };
    emit::finish(ctx, b, kind, engine, Some(&dst), span)
}

fn iota(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let missing = if b.is_value_form() {
        "`nisa.iota` needs an index expression"
    } else {
        "`nisa.iota` needs a pattern"
    };
    let a = b.needed(ctx, "pattern", missing)?;
    let (pattern, offset, multiplier, dst) = if b.is_value_form() {
        // Legacy: iota(expr, dtype): the expression's grid is the tile.
        let Value::Index(e) = &a.value else {
            return Err(ctx.error(codes::ARG_TYPE, format!("the value form of `nisa.iota` takes an index expression such as `nl.arange(128)[:, None]`, found a {}", a.value.type_name()), a.span, "not an index expression"));
        };
        let (pattern, offset, mult, shape) = legacy_iota(ctx, e, a.span)?;
        let dt = b.legacy_dtype_required(ctx)?;
        let dst = emit::dst_or_new(ctx, b, &shape, dt, Buffer::Sbuf, span)?;
        (pattern, offset, mult, dst)
    } else {
        let pattern = iota_pattern(ctx, &a)?;
        let offset = b.int_or(ctx, "offset", 0)?;
        let mult = b.int_or(ctx, "channel_multiplier", 0)?;
        (pattern, offset, mult, b.tensor(ctx, "dst")?)
    };
    check::buffer_in(
        ctx,
        &dst,
        &[Buffer::Sbuf],
        b.span_of("dst"),
        "`iota`'s `dst`",
    )?;
    check::operand(ctx, &dst, b.span_of("dst"), "`dst`")?;
    let n: u64 = pattern.iter().map(|d| u64::from(d.count)).product();
    if n != check::free_size(&dst) {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "the pattern covers {n} elements per partition but `dst` {} has {}",
                shape_text(&dst.shape),
                check::free_size(&dst)
            ),
            b.span_of("pattern"),
            "element count differs",
        ));
    }
    let to_i32 = |v: i64, what: &str, sp: Span| {
        i32::try_from(v).map_err(|_| {
            ctx.error(
                codes::VALUE,
                format!("`{what}` {v} does not fit in 32 bits"),
                sp,
                "too large",
            )
        })
    };
    let kind = OpKind::Iota {
        dst: dst.view.clone(),
        pattern,
        offset: to_i32(offset, "offset", b.span_of("offset"))?,
        channel_multiplier: to_i32(
            multiplier,
            "channel_multiplier",
            b.span_of("channel_multiplier"),
        )?,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn iota_pattern(ctx: &Ctx<'_>, a: &crate::args::Arg) -> Result<Vec<Dim>, Diagnostic> {
    let bad = |why: &str| {
        ctx.error(
            codes::VALUE,
            format!(
                "bad iota pattern {}: {why}",
                crate::format::short_repr(&a.value)
            ),
            a.span,
            why.to_owned(),
        )
    };
    instruction_pattern(&a.value).map_err(|e| bad(e.why()))
}

/// The pattern of a legacy iota expression: grid axis 0 is the partition
/// axis (its coefficient is the channel multiplier).
fn legacy_iota(
    ctx: &Ctx<'_>,
    e: &IndexExpr,
    span: Span,
) -> Result<(Vec<Dim>, i64, i64, Vec<u64>), Diagnostic> {
    let g = e.ndim.max(2);
    let e = e.aligned(g);
    let shape = e.shape();
    let mut coef = vec![0i64; usize::from(g)];
    for t in &e.terms {
        coef[usize::from(t.axis)] += t.coef;
    }
    if shape[0] > 128 {
        return Err(ctx.error(
            codes::PARTITION_SIZE,
            format!(
                "the index expression spans {} partitions, above 128",
                shape[0]
            ),
            span,
            "too many partitions",
        ));
    }
    let pattern: Vec<Dim> = shape[1..]
        .iter()
        .zip(&coef[1..])
        .map(|(&n, &c)| Dim::new(c, n as u32))
        .collect();
    if pattern.len() > 4 {
        return Err(ctx.error(
            codes::VALUE,
            "an iota grid has at most 4 free axes",
            span,
            "too many axes",
        ));
    }
    Ok((pattern, e.constant, coef[0], shape))
}

fn dma_compute(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    dma_side(ctx, &dst, b.span_of("dst"), "`dst`")?;
    let srcs_span = b.span_of("srcs");
    let items: Vec<Value> = match b.value("srcs") {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        v @ Value::Tensor(_) => vec![v],
        v => {
            return Err(ctx.error(
                codes::ARG_TYPE,
                format!("`srcs` is a list of tensors, found a {}", v.type_name()),
                srcs_span,
                "not a list of tensors",
            ));
        }
    };
    if items.is_empty() || items.len() > 16 {
        return Err(ctx.error(
            codes::VALUE,
            format!("`dma_compute` takes 1 to 16 sources, found {}", items.len()),
            srcs_span,
            "bad source count",
        ));
    }
    DMA_COMPUTE_OP.or(ctx, b, AluOp::Add)?;
    match b.value("scales") {
        Value::None => {}
        Value::List(_) | Value::Tuple(_) => {
            let scales: Vec<Value> = match b.value("scales") {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                _ => Vec::new(),
            };
            if scales.len() != items.len() || scales.iter().any(|v| v.as_float() != Some(1.0)) {
                return Err(ctx.error(
                    codes::VALUE,
                    "`dma_compute` supports only scales of 1.0, one per source",
                    b.span_of("scales"),
                    "unsupported scales",
                ));
            }
        }
        v => {
            return Err(ctx.error(
                codes::ARG_TYPE,
                format!("`scales` is a list of numbers, found a {}", v.type_name()),
                b.span_of("scales"),
                "not a list",
            ));
        }
    }
    let oob = oob_mode(ctx, b)?;
    let mut srcs = Vec::with_capacity(items.len());
    for v in &items {
        let Value::Tensor(t) = v else {
            return Err(ctx.error(
                codes::ARG_TYPE,
                format!("`srcs` holds tensors, found a {}", v.type_name()),
                srcs_span,
                "not a tensor",
            ));
        };
        dma_side(ctx, t, srcs_span, "a source")?;
        same_elements(ctx, &dst, t, srcs_span, |d, s| {
            format!("a source has shape {s} but `dst` has shape {d}")
        })?;
        srcs.push(t.clone());
    }
    // `dst` among the sources means read-modify-write: no initial copy.
    let rmw = srcs.iter().any(|t| t.view == dst.view);
    let mut first = !rmw;
    let mut last = None;
    for t in srcs.iter().filter(|t| t.view != dst.view) {
        let kind = dma_kind(&dst.view, &t.view, !first, None, oob, None);
        first = false;
        last = Some(emit::push(ctx, b, kind, None, span)?);
    }
    Ok(match last {
        Some(op) => Value::Ext(Rc::new(emit::Instruction::new(op))),
        None => Value::None,
    })
}
