//! The rest of `nki.isa`: random numbers, dropout, partition shuffles,
//! GpSimd gathers and scans, `activate2`, and the `nl.*` helpers built on
//! them (`nl.rand`, `nl.random_seed`, `nl.dropout`, `nl.gather_flattened`,
//! `nl.shared_identity_matrix`, `nl.device_print`, `nl.shared_constant`).
//!
//! `nisa.core_barrier` and `nisa.sendrecv` lower to the IR's
//! `core_barrier` and `sendrecv` (LNC=2 launches only; a `sendrecv` is
//! issued on the Sync queue, or on GpSimd with `dma_engine.gpsimd_dma`).
//! Operations the IR has no counterpart for (`topk`, `rand_set_state`, `rand_get_state`, and `nl.shared_constant`
//! of anything but `np.identity(n)`) are in the table, so hover and the reference show them, but calling one
//! is a "not supported by nkic yet" error (E0524) at the call.
//! `nl.device_print` only prints, so nkic accepts it with a warning
//! (E0524) and records nothing: results are unaffected.
//!
//! Legacy direct allocation (`ncc.sbuf.alloc(f)`, `ncc.sbuf.mod_alloc(…)`,
//! `ncc.psum.mod_alloc(…)`) evaluates to the plain buffer: nkic places
//! every tensor itself (the backend's allocator keeps live tensors
//! apart), so a kernel that does not rely on two tensors sharing memory
//! computes the same results. `ncc.skip_middle_end_transformations`
//! returns the function it decorates.
//!
//! Choices where the spec is silent: `nl.rand` lowers to `rand2(min=0,
//! max=1)` on trn3 and, on trn2, to `rng` into a uint16 tile scaled by
//! 2⁻¹⁶ (exactly `[0, 1)`); `nl.dropout` is `nisa.dropout` (survivors are
//! not rescaled, as isa.md §8 assumes); `nl.shared_identity_matrix` is an
//! `iota` of `f - p` compared with 0 into an SBUF tile.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind, Scalar};
use nkic_isa::{ActFunc, AluOp, DType, Dim, Engine, Fp32, ReduceCmd, Target};

use super::check::{self, shape_text};
use super::codes;
use super::emit;
use super::isa_core::{self, scalar_operand};
use super::rules::REDUCE_RESULT;
use super::table::{
    ApiDef, Bound, DATA, DST, Kind, NAME, OUT_DTYPE, REDUCE_IDLE, REDUCE_RES, REVERSE0, REVERSE1,
    SRC, opt, req,
};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

const VECTOR: &[Engine] = &[Engine::Vector];
const SCALAR: &[Engine] = &[Engine::Scalar];
const GPSIMD: &[Engine] = &[Engine::GpSimd];
const VECTOR_GPSIMD: &[Engine] = &[Engine::Vector, Engine::GpSimd];
const NONE: &[Engine] = &[];

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    ApiDef::new(
        "nisa.dropout",
        &[
            DST,
            DATA,
            req("prob", Kind::Scalar),
            NAME,
        ],
        VECTOR,
        "Replaces each element of `data` by 0 with probability `prob` (survivors are copied, not rescaled), using the Vector PRNG.",
        &[
            "`data` and `dst` are SBUF/PSUM with equal partition counts (≤ 128), free sizes and dtypes.",
            "`prob` is a number in [0, 1] or a `(P, 1)` tensor; a tensor `prob` is float32 when `data` is an integer tile.",
        ],
        dropout,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.nc_stream_shuffle",
        &[
            DST,
            SRC,
            req("shuffle_mask", Kind::Ints),
            NAME,
        ],
        VECTOR,
        "Permutes partitions inside each 32-partition quadrant: output partition `i` receives source partition `shuffle_mask[i]` (255 leaves it unchanged).",
        &[
            "`shuffle_mask` has 32 entries, each 0–31 or 255.",
            "`src` and `dst` are SBUF/PSUM with the same dtype and free size, at most 128 partitions each.",
            "Start partitions: with A = the larger partition count rounded up to 32, A ≥ 96 starts both at 0, A = 64 at 0 or 64, A = 32 at 0, 32, 64 or 96.",
        ],
        stream_shuffle,
    ),
    ApiDef::new(
        "nisa.rng",
        &[
            DST,
            opt("engine", Kind::Enum("engine"), "nisa.engine.vector"),
            NAME,
        ],
        VECTOR_GPSIMD,
        "Fills `dst` with random bits from the engine's per-lane generators (the low bits of 32-bit values).",
        &[
            "`dst` is int8, int16, int32, uint8, uint16 or uint32, in SBUF or PSUM (SBUF on GpSimd).",
        ],
        rng,
    ),
    ApiDef::new(
        "nisa.rand2",
        &[
            DST,
            req("min", Kind::Scalar),
            req("max", Kind::Scalar),
            NAME,
        ],
        VECTOR,
        "Fills `dst` with uniform random fp32 values in `[min, max]` (XORWOW), cast to `dst`'s dtype.",
        &[
            "trn3 only.",
            "`dst` is SBUF/PSUM of a float or integer dtype (not packed x4 or e8m0).",
            "`min` and `max` are numbers (`min < max`) or `(P, 1)` tensors.",
        ],
        rand2,
    )
    .new_in(Target::Trn3),
    ApiDef::new(
        "nisa.set_rng_seed",
        &[
            req("src_seeds", Kind::Tensor),
            NAME,
        ],
        VECTOR,
        "Seeds the Vector engine's generators from one 32-bit value; the state persists for the rest of the program.",
        &["`src_seeds` is a `[1, 1]` SBUF/PSUM tensor of a 32-bit dtype."],
        set_rng_seed,
    ),
    ApiDef::new(
        "nisa.rand_set_state",
        &[
            req("src_seeds", Kind::Tensor),
            opt("engine", Kind::Enum("engine"), "nisa.engine.gpsimd"),
            NAME,
        ],
        VECTOR_GPSIMD,
        "Loads the per-lane XORWOW generator states. Not supported by nkic yet (E0524).",
        &[],
        unsupported,
    ),
    ApiDef::new(
        "nisa.rand_get_state",
        &[
            DST,
            opt("engine", Kind::Enum("engine"), "nisa.engine.gpsimd"),
            NAME,
        ],
        VECTOR_GPSIMD,
        "Stores the per-lane XORWOW generator states. Not supported by nkic yet (E0524).",
        &[],
        unsupported,
    ),
    ApiDef::new(
        "nisa.local_gather",
        &[
            DST,
            req("src_buffer", Kind::Tensor),
            req("index", Kind::Tensor),
            opt("num_elem_per_idx", Kind::Int, "1"),
            opt("num_valid_indices", Kind::Int, "None"),
            NAME,
        ],
        GPSIMD,
        "Per GpSimd core (16 partitions): every partition gathers `num_elem_per_idx` elements of its own `src_buffer` row at each of the core's indices (read partition-first from `index`).",
        &[
            "`src_buffer`, `index` and `dst` are SBUF; `src_buffer` and `index` have the same partition count, a multiple of 16.",
            "`index` is uint16; `num_elem_per_idx` is 1, 2, 4, 8, 16 or 32; at most 4096 indices per core.",
            "`dst` has `src_buffer`'s dtype and partitions and `num_valid_indices × num_elem_per_idx` elements per partition.",
        ],
        local_gather,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.nc_n_gather",
        &[
            DST,
            DATA,
            req("indices", Kind::Tensor),
            NAME,
        ],
        GPSIMD,
        "Per partition, `dst[p, j] = data_flat[p, indices[p, j]]` over `data`'s flattened free dims.",
        &[
            "`data`, `indices` and `dst` are SBUF with equal partition counts (≤ 128).",
            "`indices` is uint32 or int32; `dst` has `indices`' free size and `data`'s dtype.",
        ],
        n_gather,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.sequence_bounds",
        &[
            DST,
            req("segment_ids", Kind::Tensor),
            NAME,
        ],
        GPSIMD,
        "For sorted segment ids `(1, n)` (0 = padding), the start index and one-past-end index of each element's segment, as `(1, 2, n)`.",
        &[
            "`segment_ids` is SBUF `(1, n)` float32 or int32.",
            "`dst` is SBUF with the same dtype, one partition and `2 × n` elements.",
        ],
        sequence_bounds,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.nonzero_with_count",
        &[
            DST,
            SRC,
            opt("index_offset", Kind::Int, "0"),
            opt("padding_val", Kind::Int, "-1"),
            NAME,
        ],
        GPSIMD,
        "On the first partition of each GpSimd core: the positions of nonzero elements (plus `index_offset`), padded with `padding_val`, then their count.",
        &[
            "`src` is SBUF float32 or int32; `dst` is SBUF int32 with the same partitions and one more element per partition.",
        ],
        nonzero_with_count,
    )
    .with_value_form(),
    ApiDef::new(
        "nisa.activate2",
        &[
            DST,
            req("op", Kind::ActFunc),
            DATA,
            opt("imm0", Kind::Scalar, "None"),
            opt("imm1", Kind::Scalar, "None"),
            opt("op0", Kind::AluOp, "nl.bypass"),
            opt("op1", Kind::AluOp, "nl.bypass"),
            opt("relu_param", Kind::Scalar, "0.0"),
            REVERSE0,
            REVERSE1,
            opt("reduce_op", Kind::AluOp, "None"),
            REDUCE_RES,
            REDUCE_IDLE,
            NAME,
        ],
        SCALAR,
        "ScalarE three-stage pipeline: `v = op1(op0(data, imm0), imm1)`, `dst = op(v)`, optionally reducing `dst` into the Scalar accumulators.",
        &[
            "trn3 only.",
            "`data` and `dst` are SBUF/PSUM with equal partition counts (≤ 128) and free sizes.",
            "`(op0, op1)` is (multiply, add), (multiply, subtract), (multiply, bypass), (add, bypass), (subtract, bypass) or (bypass, bypass); a non-bypass op needs its immediate, `reverseN` needs `opN`.",
            "`reduce_op` is `nl.add`, `nl.maximum`, `nl.minimum`, `nl.abs_max` or `nl.abs_min`.",
            REDUCE_RESULT.text,
        ],
        activate2,
    )
    .new_in(Target::Trn3)
    .with_value_form(),
    ApiDef::new(
        "nisa.topk",
        &[
            req("val_dst", Kind::Tensor),
            req("idx_dst", Kind::Tensor),
            SRC,
            req("n", Kind::Int),
            NAME,
        ],
        GPSIMD,
        "The K largest of `n` values per 16-partition group, with their indices. Not supported by nkic yet (E0524).",
        &[],
        unsupported,
    )
    .new_in(Target::Trn3),
    ApiDef::new(
        "nisa.core_barrier",
        &[
            DATA,
            req("cores", Kind::Ints),
            opt("engine", Kind::Enum("engine"), "nisa.engine.gpsimd"),
            NAME,
        ],
        BARRIER_ENGINES,
        "A barrier between the two physical cores of an LNC=2 logical core: only the chosen engine's stream waits until the other core's barrier has issued; accesses of `data` before the barrier are ordered before accesses after it.",
        &[
            "The kernel is launched on two cores: a launch grid of exactly 2 instances (E0525).",
            "`cores` is `(0, 1)` (E0525).",
            "Both instances issue the same barriers on the same engines in the same order (E0525 at the first barrier without a partner).",
            "`data` is an HBM tensor (shared between the cores).",
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
            "The kernel is launched on two cores: a launch grid of exactly 2 instances (E0525).",
            "`send_to_rank` and `recv_from_rank` are the other core's rank, `1 - nl.program_id(0)` (E0525).",
            "Both instances issue the same exchanges and barriers on the same engines in the same order (E0525 at the first one without a partner).",
            "`src` and `dst` are SBUF tiles of the same dtype and shape.",
            "`pipe_id` is 0 to 255.",
            "With `dma_engine.gpsimd_dma`, at most 1024 bytes per partition for 32-bit dtypes, 512 for 16-bit and 256 for 8-bit (256 elements).",
        ],
        sendrecv,
    ),
    ApiDef::new(
        "nl.rand",
        &[
            req("shape", Kind::Shape),
            opt("dtype", Kind::DType, "nl.float32"),
            opt("buffer", Kind::Buffer, "nl.sbuf"),
            opt("name", Kind::Str, "''"),
        ],
        VECTOR,
        "A new tile of uniform random values in [0, 1): `rand2(min=0, max=1)` on trn3; on trn2 `rng` into uint16 scaled by 2⁻¹⁶.",
        &["The tile is SBUF with at most 128 partitions."],
        nl_rand,
    ),
    ApiDef::new(
        "nl.random_seed",
        &[req("seed", Kind::Tensor)],
        VECTOR,
        "Seeds the random generators from a `[1, 1]` 32-bit SBUF/PSUM tensor (`nisa.set_rng_seed`).",
        &["`seed` is a `[1, 1]` SBUF/PSUM tensor of a 32-bit dtype."],
        nl_random_seed,
    ),
    ApiDef::new(
        "nl.dropout",
        &[
            req("x", Kind::Tensor),
            req("rate", Kind::Scalar),
            OUT_DTYPE,
        ],
        VECTOR,
        "A new tile with each element of `x` zeroed with probability `rate` (`nisa.dropout`; survivors are not rescaled).",
        &["The `nisa.dropout` rules apply."],
        nl_dropout,
    ),
    ApiDef::new(
        "nl.gather_flattened",
        &[
            DATA,
            req("indices", Kind::Tensor),
            opt("axis", Kind::Int, "0"),
            OUT_DTYPE,
        ],
        GPSIMD,
        "A new tile with `out[p, j] = data_flat[p, indices[p, j]]` over `data`'s flattened free dims (`nisa.nc_n_gather`).",
        &[
            "`axis` is 0 (the gather is per partition).",
            "The `nisa.nc_n_gather` rules apply.",
        ],
        nl_gather_flattened,
    ),
    ApiDef::new(
        "nl.shared_identity_matrix",
        &[
            req("n", Kind::Int),
            opt("dtype", Kind::DType, "nl.uint8"),
            opt("dst", Kind::Tensor, "None"),
        ],
        GPSIMD,
        "An `n × n` identity matrix in SBUF (in `dst` when given): an `iota` of `f - p` compared with 0.",
        &[
            "`n` is 1 to 128.",
            "`dst`, when given, is an SBUF `(n, n)` tile.",
        ],
        nl_identity,
    ),
    ApiDef::new(
        "nl.shared_constant",
        &[
            req("constant", Kind::Any),
            OUT_DTYPE,
        ],
        GPSIMD,
        "A shared-HBM tensor holding a NumPy array embedded in the kernel. nkic has no data section: only `np.identity(n)` is supported (written at run time by an `iota`, a compare and a DMA); any other array is E0524.",
        &["`constant` is `np.identity(n)` with n ≤ 128."],
        shared_constant,
    ),
    ApiDef::new(
        "np.identity",
        &[req("n", Kind::Int), opt("dtype", Kind::Any, "None")],
        NONE,
        "The host-side NumPy identity matrix, usable as the argument of `nl.shared_constant`.",
        &["`n` is 1 to 128."],
        np_identity,
    ),
    ApiDef::new(
        "ncc.sbuf.alloc",
        &[req("func", Kind::Any)],
        NONE,
        "Legacy direct allocation (`buffer=ncc.sbuf.alloc(func)`): nkic allocates the tensor itself, so this is `nl.sbuf` (see the module doc).",
        &[],
        legacy_sbuf,
    ),
    ApiDef::new(
        "ncc.sbuf.mod_alloc",
        &[
            req("base_addr", Kind::Int),
            opt("base_partition", Kind::Int, "0"),
            opt("num_par_tiles", Kind::Ints, "()"),
            opt("num_free_tiles", Kind::Ints, "()"),
        ],
        NONE,
        "Legacy modulo allocation in SBUF: nkic allocates the tensor itself, so this is `nl.sbuf`.",
        &[],
        legacy_sbuf,
    ),
    ApiDef::new(
        "ncc.sbuf.auto_alloc",
        &[],
        NONE,
        "Legacy automatic SBUF allocation: `nl.sbuf`.",
        &[],
        legacy_sbuf,
    ),
    ApiDef::new(
        "ncc.psum.alloc",
        &[req("func", Kind::Any)],
        NONE,
        "Legacy direct allocation in PSUM: nkic allocates the tensor itself, so this is `nl.psum`.",
        &[],
        legacy_psum,
    ),
    ApiDef::new(
        "ncc.psum.mod_alloc",
        &[
            req("base_bank", Kind::Int),
            opt("base_addr", Kind::Int, "0"),
            opt("base_partition", Kind::Int, "0"),
            opt("num_bank_tiles", Kind::Ints, "()"),
            opt("num_par_tiles", Kind::Ints, "()"),
            opt("num_free_tiles", Kind::Ints, "()"),
        ],
        NONE,
        "Legacy modulo allocation in PSUM: nkic allocates the tensor itself, so this is `nl.psum`.",
        &[],
        legacy_psum,
    ),
    ApiDef::new(
        "ncc.psum.auto_alloc",
        &[],
        NONE,
        "Legacy automatic PSUM allocation: `nl.psum`.",
        &[],
        legacy_psum,
    ),
    ApiDef::new(
        "ncc.skip_middle_end_transformations",
        &[req("func", Kind::Any)],
        NONE,
        "A legacy compiler-pass decorator; nkic has no such passes, so it returns the function unchanged.",
        &[],
        identity_decorator,
    ),
    ApiDef::new(
        "nl.device_print",
        &[req("prefix", Kind::Str), req("tensor", Kind::Tensor)],
        NONE,
        "Prints a tensor at run time. nkic has no run-time print yet: the call is checked, reported with a warning (E0524) and records nothing.",
        &["`prefix` is a compile-time string; `tensor` is an SBUF or HBM tensor."],
        device_print,
    ),
];

// ------------------------------------------------------------------ helpers

/// The engines whose instruction stream can wait at a core barrier.
const BARRIER_ENGINES: &[Engine] = &[
    Engine::Tensor,
    Engine::Vector,
    Engine::Scalar,
    Engine::GpSimd,
    Engine::Sync,
];

/// The engines a `sendrecv` is issued from: Sync for `dma_engine.dma`,
/// GpSimd for `dma_engine.gpsimd_dma`.
const SENDRECV_ENGINES: &[Engine] = &[Engine::Sync, Engine::GpSimd];

/// This instance's rank (0 or 1) in an LNC=2 launch, or E0525 at `span`
/// when the kernel is not launched on two cores; `does` completes "`api`
/// …" ("synchronises the two cores of an LNC=2 launch").
fn lnc2_rank(ctx: &Ctx<'_>, span: Span, api: &str, does: &str) -> Result<u32, Diagnostic> {
    let instances: u64 = (0..ctx.program_ndim())
        .map(|axis| u64::from(ctx.num_programs(axis).unwrap_or(1)))
        .product();
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
    if ctx.program_ndim() == 0 || instances != 2 {
        let found = if ctx.program_ndim() == 0 {
            "no launch grid".to_owned()
        } else {
            format!("a grid of {instances} instances")
        };
        return Err(ctx
            .error(
                codes::CORES,
                format!("`{api}` {does}, but this kernel has {found}"),
                span,
                "not an LNC=2 launch",
            )
            .with_help(
                "launch the kernel on a grid of 2 (`--grid 2` or `# nkic: grid 2`) on trn2 or trn3",
            ));
    }
    // Exactly one axis has 2 instances, the others 1: the rank is that
    // axis's program id.
    Ok((0..ctx.program_ndim())
        .map(|axis| ctx.program_id(axis).unwrap_or(0))
        .sum())
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
    if src.dtype() != dst.dtype() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`dst` of `{API}` must have the dtype of `src` ({}), found {}",
                src.dtype(),
                dst.dtype()
            ),
            b.span_of("dst"),
            format!("not {}", src.dtype()),
        ));
    }
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
        return Err(ctx.error(
            codes::VALUE,
            format!("`pipe_id` of `{API}` must be 0 to 255, found {pipe}"),
            b.span_of("pipe_id"),
            "out of range",
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
    if !data.buffer.is_hbm() {
        return Err(ctx.error(
            codes::BUFFER,
            format!(
                "`data` of `nisa.core_barrier` is the HBM tensor the cores share, found {}",
                check::describe(&data)
            ),
            b.span_of("data"),
            "not in HBM",
        ));
    }
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
    let kind = OpKind::CoreBarrier {
        data: Some(data.view.clone()),
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

fn unsupported(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    Err(ctx
        .error(
            codes::UNSUPPORTED,
            format!("`{}` is not supported by nkic yet", b.def.name),
            span,
            "not supported yet",
        )
        .with_note(format!(
            "nkic's IR has no operation for `{}`; see docs/language.md",
            b.def.name
        )))
}

fn in_sbuf(ctx: &Ctx<'_>, t: &Tensor, span: Span, what: &str) -> Result<(), Diagnostic> {
    check::operand(ctx, t, span, what)?;
    check::not_psum_on(ctx, t, Engine::GpSimd, span, what)
}

fn free_size_is(
    ctx: &Ctx<'_>,
    t: &Tensor,
    p: u64,
    f: u64,
    span: Span,
    what: &str,
) -> Result<(), Diagnostic> {
    if check::partitions(t) == p && check::free_size(t) == f {
        return Ok(());
    }
    Err(ctx.error(
        codes::SHAPE,
        format!(
            "{what} must have {p} partitions of {f} elements, found shape {}",
            shape_text(&t.shape)
        ),
        span,
        format!("not {p} × {f}"),
    ))
}

const INT_DTYPES: &[DType] = &[
    DType::I8,
    DType::I16,
    DType::I32,
    DType::U8,
    DType::U16,
    DType::U32,
];

// ------------------------------------------------------------------ runs

fn dropout_into(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    data: &Rc<Tensor>,
    dst: &Rc<Tensor>,
    prob: &Value,
    prob_span: Span,
    span: Span,
) -> Result<Value, Diagnostic> {
    let (sd, ds) = (b.span_of("data"), b.span_of("dst"));
    check::operand(ctx, data, sd, "`data`")?;
    check::operand(ctx, dst, ds, "`dst`")?;
    check::same_pf(ctx, (data, "data"), (dst, "dst", ds))?;
    if dst.dtype() != data.dtype() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`dst` must have `data`'s dtype {}, found {}",
                data.dtype(),
                check::describe(dst)
            ),
            ds,
            "dtype differs",
        ));
    }
    if let Value::Int(_) | Value::Float(_) = prob {
        let p = prob.as_float().unwrap_or(0.0);
        if !(0.0..=1.0).contains(&p) {
            return Err(ctx.error(
                codes::VALUE,
                format!("`prob` is a probability in [0, 1], found {p}"),
                prob_span,
                "out of range",
            ));
        }
    }
    if let Value::Tensor(t) = prob
        && data.dtype().is_int()
        && t.dtype() != DType::F32
    {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "a tensor `prob` must be float32 when `data` is an integer tile, found {}",
                check::describe(t)
            ),
            prob_span,
            "not float32",
        ));
    }
    let prob = scalar_operand(ctx, prob, data, prob_span, "`prob`")?;
    let kind = OpKind::Dropout {
        dst: dst.view.clone(),
        src: data.view.clone(),
        prob,
    };
    emit::finish(ctx, b, kind, None, Some(dst), span)
}

fn dropout(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let (dst, _) = emit::dst_or_new(ctx, b, &data.shape, data.dtype(), Buffer::Sbuf, span)?;
    let prob = b.value("prob");
    dropout_into(ctx, b, &data, &dst, &prob, b.span_of("prob"), span)
}

fn nl_dropout(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let x = b.tensor(ctx, "x")?;
    check::operand(ctx, &x, b.span_of("x"), "`x`")?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(x.dtype());
    let dst = emit::new_result(ctx, b, "dropout_", &x.shape, x.dtype(), Buffer::Sbuf, span)?;
    let rate = b.value("rate");
    dropout_into(ctx, b, &x, &dst, &rate, b.span_of("rate"), span)?;
    if dtype == x.dtype() {
        return Ok(Value::Tensor(emit::masked_result(b, &dst)));
    }
    let out = emit::new_result(ctx, b, "dropout_", &x.shape, dtype, Buffer::Sbuf, span)?;
    emit::push(
        ctx,
        b,
        OpKind::TensorCopy {
            dst: out.view.clone(),
            src: dst.view.clone(),
        },
        None,
        span,
    )?;
    Ok(Value::Tensor(emit::masked_result(b, &out)))
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

fn rng(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    let ds = b.span_of("dst");
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::dtype_in(ctx, &dst, INT_DTYPES, "`dst`", ds)?;
    let engine = emit::engine(ctx, b)?.or(Some(Engine::Vector));
    if engine == Some(Engine::GpSimd) {
        check::not_psum_on(ctx, &dst, Engine::GpSimd, ds, "`dst`")?;
    }
    let kind = OpKind::Rng {
        dst: dst.view.clone(),
    };
    emit::finish(ctx, b, kind, engine, None, span)
}

fn rand2(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    let ds = b.span_of("dst");
    check::operand(ctx, &dst, ds, "`dst`")?;
    if dst.dtype().is_packed_x4() || dst.dtype() == DType::F8E8M0 {
        return Err(ctx.error(
            codes::DTYPE,
            format!("`rand2` cannot write {}", check::describe(&dst)),
            ds,
            "dtype not allowed",
        ));
    }
    let lo = b.value("min");
    let hi = b.value("max");
    if let (Some(l), Some(h)) = (lo.as_float(), hi.as_float())
        && !matches!(lo, Value::Tensor(_))
        && !matches!(hi, Value::Tensor(_))
        && l >= h
    {
        return Err(ctx.error(
            codes::VALUE,
            format!("`min` must be below `max`, found {l} and {h}"),
            b.span_of("max"),
            "empty range",
        ));
    }
    let min = scalar_operand(ctx, &lo, &dst, b.span_of("min"), "`min`")?;
    let max = scalar_operand(ctx, &hi, &dst, b.span_of("max"), "`max`")?;
    let kind = OpKind::Rand2 {
        dst: dst.view.clone(),
        min,
        max,
    };
    emit::finish(ctx, b, kind, None, None, span)
}

fn seed_tensor(ctx: &Ctx<'_>, t: &Tensor, span: Span) -> Result<(), Diagnostic> {
    check::on_chip(ctx, t, span, "the seed")?;
    if check::partitions(t) != 1 || check::free_size(t) != 1 || t.dtype().size() != 4 {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "the seed must be a [1, 1] tensor of a 32-bit dtype, found {}",
                check::describe(t)
            ),
            span,
            "not a [1, 1] 32-bit tensor",
        ));
    }
    Ok(())
}

fn set_rng_seed(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src_seeds")?;
    seed_tensor(ctx, &src, b.span_of("src_seeds"))?;
    let kind = OpKind::SetRngSeed {
        src: src.view.clone(),
    };
    emit::finish(ctx, b, kind, None, None, span)
}

fn nl_random_seed(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "seed")?;
    seed_tensor(ctx, &src, b.span_of("seed"))?;
    let kind = OpKind::SetRngSeed {
        src: src.view.clone(),
    };
    emit::push(ctx, b, kind, None, span)?;
    Ok(Value::None)
}

fn nl_rand(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let shape = b.shape(ctx, "shape")?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(DType::F32);
    let buffer = b.buffer(ctx, "buffer")?.unwrap_or(Buffer::Sbuf);
    if buffer != Buffer::Sbuf {
        return Err(ctx.error(
            codes::BUFFER,
            format!("`nl.rand` makes an SBUF tile, found `buffer={buffer}`"),
            b.span_of("buffer"),
            "not sbuf",
        ));
    }
    let prefix = b
        .string(ctx, "name")?
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "rand_".to_owned());
    let out = emit::new_result(ctx, b, &prefix, &shape, dtype, Buffer::Sbuf, span)?;
    check::operand(ctx, &out, b.span_of("shape"), "the random tile")?;
    if ctx.target() >= Target::Trn3 {
        let kind = OpKind::Rand2 {
            dst: out.view.clone(),
            min: Scalar::imm(0.0),
            max: Scalar::imm(1.0),
        };
        emit::push(ctx, b, kind, None, span)?;
    } else {
        let bits = emit::new_result(ctx, b, "rand_bits_", &shape, DType::U16, Buffer::Sbuf, span)?;
        emit::push(
            ctx,
            b,
            OpKind::Rng {
                dst: bits.view.clone(),
            },
            Some(Engine::Vector),
            span,
        )?;
        let kind = OpKind::TensorScalar {
            dst: out.view.clone(),
            src: bits.view.clone(),
            op0: AluOp::Multiply,
            operand0: Some(Scalar::imm(1.0 / 65536.0)),
            reverse0: false,
            op1: None,
            operand1: None,
            reverse1: false,
        };
        emit::push(ctx, b, kind, None, span)?;
    }
    Ok(Value::Tensor(emit::masked_result(b, &out)))
}

fn local_gather(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src_buffer")?;
    let index = b.tensor(ctx, "index")?;
    let (ss, is) = (b.span_of("src_buffer"), b.span_of("index"));
    in_sbuf(ctx, &src, ss, "`src_buffer`")?;
    in_sbuf(ctx, &index, is, "`index`")?;
    let p = check::partitions(&src);
    if check::partitions(&index) != p || !p.is_multiple_of(16) {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`src_buffer` and `index` need the same partition count, a multiple of 16, found {} and {}",
                shape_text(&src.shape),
                shape_text(&index.shape)
            ),
            is,
            "partition counts",
        ));
    }
    check::dtype_in(ctx, &index, &[DType::U16], "`index`", is)?;
    let e = b.int_or(ctx, "num_elem_per_idx", 1)?;
    if ![1, 2, 4, 8, 16, 32].contains(&e) {
        return Err(ctx.error(
            codes::VALUE,
            format!("`num_elem_per_idx` is 1, 2, 4, 8, 16 or 32, found {e}"),
            b.span_of("num_elem_per_idx"),
            "bad element count",
        ));
    }
    let per_core = check::free_size(&index) * 16;
    let valid = match b.int(ctx, "num_valid_indices")? {
        None => None,
        Some(v) if v >= 1 && (v as u64) <= per_core => Some(v as u32),
        Some(v) => {
            return Err(ctx.error(
                codes::VALUE,
                format!(
                    "`num_valid_indices` is 1 to {per_core} (the indices of one core), found {v}"
                ),
                b.span_of("num_valid_indices"),
                "out of range",
            ));
        }
    };
    let n = valid.map_or(per_core, u64::from);
    if n > 4096 {
        return Err(ctx.error(
            codes::VALUE,
            format!("a GpSimd core gathers at most 4096 indices, found {n}"),
            is,
            "too many indices",
        ));
    }
    let f = n * e as u64;
    let (dst, _) = emit::dst_or_new(ctx, b, &[p, f], src.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    in_sbuf(ctx, &dst, ds, "`dst`")?;
    free_size_is(ctx, &dst, p, f, ds, "`dst`")?;
    if dst.dtype() != src.dtype() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`local_gather` does not cast: `dst` must be {}, found {}",
                src.dtype(),
                check::describe(&dst)
            ),
            ds,
            "dtype differs",
        ));
    }
    let kind = OpKind::LocalGather {
        dst: dst.view.clone(),
        src: src.view.clone(),
        index: index.view.clone(),
        elem_per_idx: e as u32,
        valid_indices: valid,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn n_gather_into(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    data: &Tensor,
    indices: &Tensor,
    dst: &Rc<Tensor>,
    names: (&str, &str),
    span: Span,
) -> Result<Option<nkic_ir::Handle<nkic_ir::Op>>, Diagnostic> {
    let (sd, si) = (b.span_of(names.0), b.span_of(names.1));
    in_sbuf(ctx, data, sd, &format!("`{}`", names.0))?;
    in_sbuf(ctx, indices, si, &format!("`{}`", names.1))?;
    in_sbuf(ctx, dst, span, "the result")?;
    check::dtype_in(
        ctx,
        indices,
        &[DType::U32, DType::I32],
        &format!("`{}`", names.1),
        si,
    )?;
    let p = check::partitions(data);
    free_size_is(
        ctx,
        indices,
        p,
        check::free_size(indices),
        si,
        &format!("`{}`", names.1),
    )?;
    free_size_is(ctx, dst, p, check::free_size(indices), span, "the result")?;
    let kind = OpKind::NGather {
        dst: dst.view.clone(),
        src: data.view.clone(),
        indices: indices.view.clone(),
    };
    emit::push(ctx, b, kind, None, span)
}

fn n_gather(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let indices = b.tensor(ctx, "indices")?;
    let shape = [check::partitions(&data), check::free_size(&indices)];
    let (dst, _) = emit::dst_or_new(ctx, b, &shape, data.dtype(), Buffer::Sbuf, span)?;
    if dst.dtype() != data.dtype() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`dst` must have `data`'s dtype {}, found {}",
                data.dtype(),
                check::describe(&dst)
            ),
            b.span_of("dst"),
            "dtype differs",
        ));
    }
    let h = n_gather_into(ctx, b, &data, &indices, &dst, ("data", "indices"), span)?;
    Ok(if b.is_value_form() {
        Value::Tensor(emit::masked_result(b, &dst))
    } else {
        Value::Ext(Rc::new(emit::Instruction::new(h)))
    })
}

fn nl_gather_flattened(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let indices = b.tensor(ctx, "indices")?;
    if b.int_or(ctx, "axis", 0)? != 0 {
        return Err(ctx.error(
            codes::AXIS,
            "`nl.gather_flattened` gathers per partition: `axis` must be 0",
            b.span_of("axis"),
            "not 0",
        ));
    }
    let shape = [check::partitions(&data), check::free_size(&indices)];
    let out = emit::new_result(ctx, b, "gather_", &shape, data.dtype(), Buffer::Sbuf, span)?;
    n_gather_into(ctx, b, &data, &indices, &out, ("data", "indices"), span)?;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(data.dtype());
    if dtype == data.dtype() {
        return Ok(Value::Tensor(emit::masked_result(b, &out)));
    }
    let cast = emit::new_result(ctx, b, "gather_", &shape, dtype, Buffer::Sbuf, span)?;
    emit::push(
        ctx,
        b,
        OpKind::TensorCopy {
            dst: cast.view.clone(),
            src: out.view.clone(),
        },
        None,
        span,
    )?;
    Ok(Value::Tensor(emit::masked_result(b, &cast)))
}

fn sequence_bounds(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "segment_ids")?;
    let ss = b.span_of("segment_ids");
    in_sbuf(ctx, &src, ss, "`segment_ids`")?;
    check::dtype_in(ctx, &src, &[DType::F32, DType::I32], "`segment_ids`", ss)?;
    if check::partitions(&src) != 1 {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`segment_ids` has one partition, found shape {}",
                shape_text(&src.shape)
            ),
            ss,
            "not (1, n)",
        ));
    }
    let n = check::free_size(&src);
    let (dst, _) = emit::dst_or_new(ctx, b, &[1, 2, n], src.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    in_sbuf(ctx, &dst, ds, "`dst`")?;
    free_size_is(ctx, &dst, 1, 2 * n, ds, "`dst`")?;
    if dst.dtype() != src.dtype() {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`dst` must have the dtype of `segment_ids` ({}), found {}",
                src.dtype(),
                check::describe(&dst)
            ),
            ds,
            "dtype differs",
        ));
    }
    let kind = OpKind::SequenceBounds {
        dst: dst.view.clone(),
        src: src.view.clone(),
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn nonzero_with_count(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let src = b.tensor(ctx, "src")?;
    let ss = b.span_of("src");
    in_sbuf(ctx, &src, ss, "`src`")?;
    check::dtype_in(ctx, &src, &[DType::F32, DType::I32], "`src`", ss)?;
    let (p, f) = (check::partitions(&src), check::free_size(&src));
    let (dst, _) = emit::dst_or_new(ctx, b, &[p, f + 1], DType::I32, Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    in_sbuf(ctx, &dst, ds, "`dst`")?;
    free_size_is(ctx, &dst, p, f + 1, ds, "`dst`")?;
    check::dtype_in(ctx, &dst, &[DType::I32], "`dst`", ds)?;
    let small = |name: &str, default: i64| -> Result<i32, Diagnostic> {
        let v = b.int_or(ctx, name, default)?;
        i32::try_from(v).map_err(|_| {
            ctx.error(
                codes::VALUE,
                format!("`{name}` must fit in int32, found {v}"),
                b.span_of(name),
                "out of range",
            )
        })
    };
    let kind = OpKind::NonzeroWithCount {
        dst: dst.view.clone(),
        src: src.view.clone(),
        index_offset: small("index_offset", 0)?,
        padding: small("padding_val", -1)?,
    };
    emit::finish(ctx, b, kind, None, Some(&dst), span)
}

fn activate2(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let func = b.act_func(ctx, "op")?.unwrap_or(ActFunc::Copy);
    let sd = b.span_of("data");
    let (dst, _) = emit::dst_or_new(ctx, b, &data.shape, data.dtype(), Buffer::Sbuf, span)?;
    let ds = b.span_of("dst");
    check::operand(ctx, &data, sd, "`data`")?;
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::same_pf(ctx, (&data, "data"), (&dst, "dst", ds))?;
    check::engine_free_size(ctx, &data, sd, "`data`")?;
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
        let Some(a) = b.get(name) else {
            return Err(ctx.error(
                codes::SCALAR_OPERAND,
                format!("`nl.{}` needs `{name}`", op.name()),
                span,
                format!("no `{name}`"),
            ));
        };
        Ok((
            Some(scalar_operand(
                ctx,
                &a.value,
                &data,
                a.span,
                &format!("`{name}`"),
            )?),
            reverse,
        ))
    };
    let (imm0, reverse0) = imm("imm0", op0, "reverse0")?;
    let (imm1, reverse1) = imm("imm1", op1, "reverse1")?;
    let relu_param = match b.get("relu_param") {
        None => None,
        Some(a) => Some(scalar_operand(
            ctx,
            &a.value,
            &data,
            a.span,
            "`relu_param`",
        )?),
    };
    let reduce_op = b.alu_op(ctx, "reduce_op")?;
    if let Some(op) = reduce_op
        && !matches!(op, A::Add | A::Maximum | A::Minimum | A::AbsMax | A::AbsMin)
    {
        return Err(ctx.error(
            codes::BAD_ENUM,
            format!(
                "`reduce_op` must be `nl.add`, `nl.maximum`, `nl.minimum`, `nl.abs_max` or `nl.abs_min`, found `nl.{}`",
                op.name()
            ),
            b.span_of("reduce_op"),
            "unsupported reduction",
        ));
    }
    let res = REDUCE_RESULT.check(ctx, b, check::partitions(&data))?;
    let cmd = match isa_core::reduce_cmd(ctx, b)? {
        Some(c) => c,
        None if res.is_some() || reduce_op.is_some() => ReduceCmd::ResetReduce,
        None => ReduceCmd::Idle,
    };
    if cmd == ReduceCmd::LoadReduce {
        return Err(ctx.error(
            codes::BAD_ENUM,
            "`activate2` has no `load_reduce` (it has no initial value)",
            b.span_of("reduce_cmd"),
            "not available",
        ));
    }
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

fn nl_identity(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let n = b.int_or(ctx, "n", 0)?;
    if !(1..=128).contains(&n) {
        return Err(ctx.error(
            codes::VALUE,
            format!("`n` is 1 to 128, found {n}"),
            b.span_of("n"),
            "out of range",
        ));
    }
    let n = n as u64;
    let dtype = b.dtype(ctx, "dtype")?.unwrap_or(DType::U8);
    let out = match b.opt_tensor(ctx, "dst")? {
        Some(t) => {
            let ds = b.span_of("dst");
            in_sbuf(ctx, &t, ds, "`dst`")?;
            if t.shape != [n, n] {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!("`dst` must be ({n}, {n}), found {}", check::describe(&t)),
                    ds,
                    "not n × n",
                ));
            }
            t
        }
        None => emit::new_result(ctx, b, "identity_", &[n, n], dtype, Buffer::Sbuf, span)?,
    };
    identity_into(ctx, b, &out, n, span)?;
    Ok(Value::Tensor(out))
}

/// `out = (f - p == 0)`: an `iota` of `f - p` into a fresh int32 tile,
/// compared with 0.
fn identity_into(
    ctx: &mut Ctx<'_>,
    b: &Bound,
    out: &Tensor,
    n: u64,
    span: Span,
) -> Result<(), Diagnostic> {
    let raw = emit::new_result(
        ctx,
        b,
        "identity_iota_",
        &[n, n],
        DType::I32,
        Buffer::Sbuf,
        span,
    )?;
    emit::push(
        ctx,
        b,
        OpKind::Iota {
            dst: raw.view.clone(),
            pattern: vec![Dim {
                stride: 1,
                count: n as u32,
            }],
            offset: 0,
            channel_multiplier: -1,
        },
        None,
        span,
    )?;
    emit::push(
        ctx,
        b,
        OpKind::TensorScalar {
            dst: out.view.clone(),
            src: raw.view.clone(),
            op0: AluOp::Equal,
            operand0: Some(Scalar::Imm(Fp32::new(0.0))),
            reverse0: false,
            op1: None,
            operand1: None,
            reverse1: false,
        },
        None,
        span,
    )?;
    Ok(())
}

/// A host-side `np.identity(n)` (the only NumPy array nkic can embed).
#[derive(Debug)]
pub struct HostIdentity {
    pub n: u64,
    pub dtype: Option<DType>,
}

impl crate::value::ApiObject for HostIdentity {
    fn type_name(&self) -> &'static str {
        "ndarray"
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn np_identity(ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    let n = b.int_or(ctx, "n", 0)?;
    if !(1..=128).contains(&n) {
        return Err(ctx.error(
            codes::VALUE,
            format!("`np.identity` in a kernel takes n from 1 to 128, found {n}"),
            b.span_of("n"),
            "out of range",
        ));
    }
    let dtype = match b.get("dtype") {
        Some(a) => Some(super::table::dtype_of(ctx, a)?),
        None => None,
    };
    Ok(Value::Ext(Rc::new(HostIdentity { n: n as u64, dtype })))
}

fn shared_constant(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let arg = b.value("constant");
    let host = match &arg {
        Value::Ext(e) => e
            .as_any()
            .downcast_ref::<HostIdentity>()
            .map(|h| (h.n, h.dtype)),
        _ => None,
    };
    let Some((n, host_dt)) = host else {
        return unsupported(ctx, b, span);
    };
    let dtype = b.dtype(ctx, "dtype")?.or(host_dt).unwrap_or(DType::F32);
    let ident = emit::new_result(ctx, b, "identity_", &[n, n], dtype, Buffer::Sbuf, span)?;
    identity_into(ctx, b, &ident, n, span)?;
    let name = ctx.fresh_name("shared_constant_");
    let hbm = super::tensor::alloc(ctx, &[n, n], dtype, Buffer::SharedHbm, &name, span, span)?;
    emit::push(
        ctx,
        b,
        OpKind::DmaCopy {
            dst: hbm.view.clone(),
            src: ident.view.clone(),
            accumulate: false,
            dge: None,
            oob: nkic_isa::OobMode::Error,
            priority: None,
        },
        None,
        span,
    )?;
    Ok(Value::tensor(hbm))
}

fn legacy_sbuf(_ctx: &mut Ctx<'_>, _b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(Value::Buffer(Buffer::Sbuf))
}

fn legacy_psum(_ctx: &mut Ctx<'_>, _b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(Value::Buffer(Buffer::Psum))
}

fn identity_decorator(_ctx: &mut Ctx<'_>, b: &Bound, _span: Span) -> Result<Value, Diagnostic> {
    Ok(b.value("func"))
}

fn device_print(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let prefix = b.string(ctx, "prefix")?.unwrap_or_default();
    let t = b.tensor(ctx, "tensor")?;
    if t.buffer == Buffer::Psum {
        return Err(ctx.error(
            codes::BUFFER,
            format!(
                "`nl.device_print` prints SBUF or HBM tensors, found {}",
                check::describe(&t)
            ),
            b.span_of("tensor"),
            "in psum",
        ));
    }
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
