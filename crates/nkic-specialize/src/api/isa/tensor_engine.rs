//! TensorE (isa.md §6.2): `nc_matmul`, `nc_matmul_mx` and `nc_transpose`.
//!
//! Choice where the spec is silent: legacy value-form `nc_matmul(a, b)` is
//! recorded when its result is first used (`psum[...] += ...` writes
//! straight into `psum` with the compiler-chosen accumulate flag; any
//! other use materializes a fresh PSUM tile), because the IR cannot
//! retarget a recorded op ([`PendingMatmul`]).

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Buffer, OpKind};
use nkic_isa::{DType, Engine, MatmulPerfMode, Target};

use crate::api::check::{self, shape_text};
use crate::api::table::{ApiDef, Bound, DATA, ENGINE, Kind, Param, instruction, opt, req};
use crate::api::{codes, emit};
use crate::ctx::Ctx;
use crate::value::{Tensor, Value};

/// `stationary`: the matmul input loaded into the PE array.
const STATIONARY: Param = req("stationary", Kind::Tensor);
/// `moving`: the matmul input streamed through the PE array.
const MOVING: Param = req("moving", Kind::Tensor);
/// `accumulate=`: add into `dst` instead of overwriting it (`None`: the
/// compiler decides).
const ACCUMULATE: Param = opt("accumulate", Kind::Bool, "None");

/// The functions of this file, registered in `table::REGISTRY`.
pub const DEFS: &[ApiDef] = &[
    instruction!(
        "nisa.nc_matmul",
        [
            STATIONARY,
            MOVING,
            opt("is_stationary_onezero", Kind::Bool, "False"),
            opt("is_moving_onezero", Kind::Bool, "False"),
            opt("is_transpose", Kind::Bool, "False"),
            ACCUMULATE,
            opt("tile_position", Kind::Ints, "()"),
            opt("tile_size", Kind::Ints, "()"),
            opt(
                "perf_mode",
                Kind::Enum("matmul_perf_mode"),
                "nisa.matmul_perf_mode.none",
            ),
        ],
        "`dst[m, n] (=|+=) Σ_k stationary[k, m] · moving[k, n]` on TensorE; the legacy form returns a PSUM tile (`psum[...] += nisa.nc_matmul(a, b)` accumulates).",
        &[
            "`stationary` and `moving` are SBUF, `dst` is PSUM.",
            "The contraction (partition) sizes are equal and at most 128; both inputs start on the same partition.",
            "`stationary` has at most 128 free elements (`gemm_stationary_fmax`).",
            "`moving` has at most 512 free elements on trn2, 4096 (fp32 `dst`) or 8192 (bf16 `dst`) on trn3.",
            "`dst` is `[M, N]`: M = stationary's free size, N = moving's free size; it stays inside one 2 KiB PSUM bank on trn2.",
            "Inputs are fp8 (e4m3, e5m2; e4m3fn on trn3), bf16, fp16, tf32 or fp32; fp32/tf32 only with each other; e4m3 and e4m3fn are not mixed.",
            "`dst` is fp32 (or bf16 on trn3); with `is_transpose` it may have `stationary`'s dtype.",
            "`perf_mode=double_row` takes fp8 inputs shaped `[P, 2, M]` / `[P, 2, N]`, not with `is_transpose` or PE tiles.",
            "`tile_position` and `tile_size` go together: sizes 32, 64 or 128, starts multiples of the size below 128, K ≤ rows and M ≤ columns; manually placed inputs start on partition `row` and `dst` on partition `col` (otherwise the backend places them so).",
        ],
        nc_matmul,
    )
    .with_value_form(),
    instruction!(
        "nisa.nc_transpose",
        [DATA, ENGINE],
        "`dst[f, p] = data[p, f]` (free dims flattened), on TensorE (SBUF to PSUM, up to 128×128) or VectorE (up to 32×32).",
        &[
            "`dst` has shape `[F, P]` of `data`'s `[P, F]` and the same dtype.",
            "TensorE: `data` in SBUF, `dst` in PSUM, both sides at most 128.",
            "VectorE: SBUF or PSUM, both sides at most 32.",
        ],
        nc_transpose,
    )
    .with_value_form(),
    instruction!(
        "nisa.nc_matmul_mx",
        [
            STATIONARY,
            MOVING,
            req("stationary_scale", Kind::Tensor),
            req("moving_scale", Kind::Tensor),
            opt("tile_position", Kind::Ints, "None"),
            opt("tile_size", Kind::Ints, "None"),
            ACCUMULATE,
        ],
        "The microscaled (MXFP8/MXFP4) matmul `dst[m, n] (=|+=) Σ_k Σ_q S[k, m, q]·2^(s−127) · V[k, n, q]·2^(v−127)` of packed x4 operands with one e8m0 scale per 8 partitions × 4 values.",
        &[
            "trn3 only; `stationary`, `moving` and both scales are SBUF, `dst` is PSUM.",
            "`stationary` and `moving` are float8_e5m2_x4, float8_e4m3fn_x4 or float4_e2m1fn_x4; scales are float8_e8m0fnu or uint8; `dst` is float32 or bfloat16.",
            "Both operands have the same partition count, a multiple of 32 and at most 128; `stationary` has an even free size of at most 128; `moving` at most 4096 (fp32 `dst`) or 8192 (bf16 `dst`) free elements.",
            "`dst` is `[M, N]` with M = stationary's and N = moving's free size; each scale has its data's free size and its partitions (or P/8 for P ≤ 32); the instruction reads 4 rows per 32-partition quadrant, rows 0 to 32·(P/32 − 1) + 3 of the scale view, so a scale view of exactly those 32·(P/32 − 1) + 4 rows works too.",
            "PE tiling is by rows only: `tile_size` is (32, 128), (64, 128) or (128, 128) and `tile_position` is (row, 0) with `row` a multiple of the row size.",
        ],
        nc_matmul_mx,
    ),
];

/// The most free elements of `moving` on trn3: 8192 with a bfloat16
/// `dst`, else 4096.
fn trn3_moving_fmax(dst: &Tensor) -> u64 {
    if dst.dtype() == DType::BF16 {
        8192
    } else {
        4096
    }
}

/// A legacy value-form `nc_matmul` not yet recorded (module doc).
#[derive(Debug, Clone)]
pub struct PendingMatmul {
    pub stationary: Rc<Tensor>,
    pub moving: Rc<Tensor>,
    pub flags: MatmulFlags,
    pub dtype: DType,
    pub span: Span,
    pub stationary_span: Span,
    pub moving_span: Span,
}

/// The attributes of a matmul call.
#[derive(Debug, Clone, Copy)]
pub struct MatmulFlags {
    pub stationary_onezero: bool,
    pub moving_onezero: bool,
    pub transpose: bool,
    pub perf_mode: MatmulPerfMode,
    pub tile_position: Option<[u32; 2]>,
    pub tile_size: Option<[u32; 2]>,
}

crate::value::api_object!(PendingMatmul, "matmul result");

impl PendingMatmul {
    /// The result shape `[M, N]`.
    pub fn shape(&self) -> Vec<u64> {
        let m = if self.flags.perf_mode == MatmulPerfMode::DoubleRow {
            self.stationary.shape.last().copied().unwrap_or(1)
        } else {
            check::free_size(&self.stationary)
        };
        let n = if self.flags.perf_mode == MatmulPerfMode::DoubleRow {
            self.moving.shape.last().copied().unwrap_or(1)
        } else {
            check::free_size(&self.moving)
        };
        vec![m, n]
    }

    /// Records the matmul into `dst` (a fresh PSUM tile when `None`).
    pub fn record(
        &self,
        ctx: &mut Ctx<'_>,
        dst: Option<(Rc<Tensor>, Span)>,
        accumulate: Option<bool>,
    ) -> Result<Rc<Tensor>, Diagnostic> {
        let (dst, dst_span) = match dst {
            Some(d) => d,
            None => {
                stationary_width(ctx, &self.stationary, self.stationary_span, self.shape()[0])?;
                let name = ctx.fresh_name("matmul_");
                let t = crate::api::tensor::alloc(
                    ctx,
                    &self.shape(),
                    self.dtype,
                    Buffer::Psum,
                    &name,
                    self.span,
                    self.span,
                )?;
                (Rc::new(t), self.span)
            }
        };
        matmul_checks(
            ctx,
            &dst,
            dst_span,
            (&self.stationary, self.stationary_span),
            (&self.moving, self.moving_span),
            &self.flags,
        )?;
        let kind = OpKind::NcMatmul {
            dst: dst.view.clone(),
            stationary: self.stationary.view.clone(),
            moving: self.moving.view.clone(),
            accumulate,
            transpose: self.flags.transpose,
            perf_mode: self.flags.perf_mode,
            stationary_onezero: self.flags.stationary_onezero,
            moving_onezero: self.flags.moving_onezero,
            tile_position: self.flags.tile_position,
            tile_size: self.flags.tile_size,
        };
        ctx.push_op(nkic_ir::Op::new(kind), self.span)?;
        Ok(dst)
    }
}

fn pair(ctx: &Ctx<'_>, b: &Bound, name: &str) -> Result<Option<[u32; 2]>, Diagnostic> {
    match b.ints(ctx, name)? {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v[..] {
            [x, y] if (0..=128).contains(&x) && (0..=128).contains(&y) => {
                Ok(Some([x as u32, y as u32]))
            }
            _ => Err(ctx.error(
                codes::MATMUL_TILE,
                format!("`{name}` is a pair of ints in 0..=128, found {v:?}"),
                b.span_of(name),
                "bad pair",
            )),
        },
    }
}

fn matmul_flags(ctx: &Ctx<'_>, b: &Bound) -> Result<MatmulFlags, Diagnostic> {
    // Legacy kernels name the mode with a string; `double_row_gen3` was
    // the legacy spelling of the trn2 double-row mode.
    let legacy = match b.get("perf_mode").map(|a| &a.value) {
        Some(Value::Str(s)) => match &**s {
            "double_row" | "double_row_gen3" => Some(MatmulPerfMode::DoubleRow),
            "none" | "" => Some(MatmulPerfMode::None),
            _ => None,
        },
        _ => None,
    };
    let perf_mode = match legacy {
        Some(m) => m,
        None => match b.enum_member(ctx, "perf_mode", "matmul_perf_mode")? {
            Some("double_row") => MatmulPerfMode::DoubleRow,
            _ => MatmulPerfMode::None,
        },
    };
    Ok(MatmulFlags {
        stationary_onezero: b.bool_or(ctx, "is_stationary_onezero", false)?,
        moving_onezero: b.bool_or(ctx, "is_moving_onezero", false)?,
        transpose: b.bool_or(ctx, "is_transpose", false)?,
        perf_mode,
        tile_position: pair(ctx, b, "tile_position")?,
        tile_size: pair(ctx, b, "tile_size")?,
    })
}

/// The stationary free size `mm` is within `gemm_stationary_fmax`.
fn stationary_width(ctx: &Ctx<'_>, s: &Tensor, ss: Span, mm: u64) -> Result<(), Diagnostic> {
    let max = u64::from(ctx.target().figures().matmul_stationary_fmax);
    if mm <= max {
        return Ok(());
    }
    Err(ctx
        .error(
            codes::MATMUL_TILE,
            format!(
                "`stationary` {} has {mm} free elements, above the TensorE limit of {max} (`gemm_stationary_fmax`)",
                shape_text(&s.shape)
            ),
            ss,
            "stationary too wide",
        )
        .with_help("tile the stationary operand's free dim by 128"))
}

const MATMUL_INPUTS: &[DType] = &[
    DType::F8E4M3,
    DType::F8E5M2,
    DType::F8E4M3FN,
    DType::BF16,
    DType::F16,
    DType::TF32,
    DType::F32,
];

/// Every `nc_matmul` rule of isa.md §4.1.
fn matmul_checks(
    ctx: &Ctx<'_>,
    dst: &Tensor,
    dst_span: Span,
    stationary: (&Tensor, Span),
    moving: (&Tensor, Span),
    f: &MatmulFlags,
) -> Result<(), Diagnostic> {
    let target = ctx.target();
    let (s, ss) = stationary;
    let (m, ms) = moving;
    for (t, sp, what) in [(s, ss, "`stationary`"), (m, ms, "`moving`")] {
        check::buffer_in(ctx, t, &[Buffer::Sbuf], sp, what)?;
        check::partition_count(ctx, t, sp, what)?;
        check::partition_start(ctx, t, sp, what)?;
        if !MATMUL_INPUTS.contains(&t.dtype()) {
            return Err(ctx.error(
                codes::DTYPE,
                format!(
                    "{what} is {}, but TensorE inputs are fp8, bf16, fp16, tf32 or fp32",
                    t.dtype()
                ),
                sp,
                "unsupported matmul dtype",
            ));
        }
        check::dtype_on_target(ctx, t.dtype(), sp)?;
    }
    check::buffer_in(ctx, dst, &[Buffer::Psum], dst_span, "`dst`")?;
    check::partition_count(ctx, dst, dst_span, "`dst`")?;
    let wide = |d: DType| matches!(d, DType::F32 | DType::TF32);
    if wide(s.dtype()) != wide(m.dtype()) {
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "fp32/tf32 inputs go only with fp32/tf32: `stationary` is {} and `moving` is {}",
                s.dtype(),
                m.dtype()
            ),
            ms,
            "mixed precision",
        ));
    }
    let pair_e4m3 = |a: DType, b: DType| a == DType::F8E4M3 && b == DType::F8E4M3FN;
    if pair_e4m3(s.dtype(), m.dtype()) || pair_e4m3(m.dtype(), s.dtype()) {
        return Err(ctx.error(
            codes::DTYPE,
            "float8_e4m3 and float8_e4m3fn cannot be mixed in one matmul",
            ms,
            "mixed fp8 formats",
        ));
    }
    // A transpose passes the data through: its PSUM result has the input's
    // dtype on every target.
    let ok_dst = (f.transpose && dst.dtype() == s.dtype())
        || match dst.dtype() {
            DType::F32 => true,
            DType::BF16 => target >= Target::Trn3,
            _ => false,
        };
    if !ok_dst {
        let allowed = if target >= Target::Trn3 {
            "float32 or bfloat16"
        } else {
            "float32"
        };
        return Err(ctx.error(
            codes::DTYPE,
            format!(
                "`dst` is {}, but a matmul writes {allowed} PSUM on {target}",
                dst.dtype()
            ),
            dst_span,
            "unsupported PSUM dtype",
        ));
    }
    let (k_s, k_m) = (check::partitions(s), check::partitions(m));
    if k_s != k_m {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "the contraction sizes differ: `stationary` {} has {k_s} partitions, `moving` {} has {k_m}",
                shape_text(&s.shape),
                shape_text(&m.shape)
            ),
            ms,
            "partition counts differ",
        ));
    }
    let (start_s, start_m) = (
        check::start_partition(ctx, s),
        check::start_partition(ctx, m),
    );
    if start_s != start_m {
        return Err(ctx.error(
            codes::PARTITION_START,
            format!(
                "`stationary` starts at partition {start_s} but `moving` at {start_m}; matmul inputs share the PE rows"
            ),
            ms,
            "different start partition",
        ));
    }
    let (mm, nn) = if f.perf_mode == MatmulPerfMode::DoubleRow {
        if f.transpose || f.tile_position.is_some() || f.tile_size.is_some() {
            return Err(ctx.error(
                codes::MATMUL_TILE,
                "`perf_mode=double_row` cannot be combined with `is_transpose` or PE tiles",
                ms,
                "double_row",
            ));
        }
        for (t, sp, what) in [(s, ss, "`stationary`"), (m, ms, "`moving`")] {
            if t.shape.len() != 3 || t.shape[1] != 2 {
                return Err(ctx.error(
                    codes::SHAPE,
                    format!(
                        "with `double_row`, {what} is shaped [P, 2, X], found {}",
                        shape_text(&t.shape)
                    ),
                    sp,
                    "not [P, 2, X]",
                ));
            }
            if !t.dtype().is_fp8() {
                return Err(ctx.error(
                    codes::DTYPE,
                    format!("`double_row` takes fp8 inputs, found {what} {}", t.dtype()),
                    sp,
                    "not fp8",
                ));
            }
        }
        (s.shape[2], m.shape[2])
    } else {
        (check::free_size(s), check::free_size(m))
    };
    let fig = target.figures();
    stationary_width(ctx, s, ss, mm)?;
    let moving_max: u64 = match target {
        Target::Trn1 | Target::Trn2 => 512,
        Target::Trn3 => trn3_moving_fmax(dst),
    };
    if nn > moving_max {
        return Err(ctx.error(
            codes::MATMUL_TILE,
            format!(
                "`moving` {} has {nn} free elements, above the limit of {moving_max} on {target}",
                shape_text(&m.shape)
            ),
            ms,
            "moving too wide",
        ));
    }
    if check::partitions(dst) != mm || check::free_size(dst) != nn {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must be [{mm}, {nn}] (stationary free size × moving free size), found {}",
                shape_text(&dst.shape)
            ),
            dst_span,
            "wrong result shape",
        ));
    }
    // PSUM banks: one bank on trn2, all banks on trn3.
    let size = u64::from(dst.dtype().size());
    let pstride = check::partition_stride(ctx, dst).max(1);
    let st = ctx.storage(dst.storage());
    let base = st.address.map_or(0, |a| a.byte);
    let start = base + (dst.view.offset.rem_euclid(pstride) as u64) * size;
    let last = dst
        .view
        .dims
        .iter()
        .skip(1)
        .map(|d| d.stride.max(0) as u64 * d.count.saturating_sub(1))
        .sum::<u64>();
    let end = start + (last + 1) * size;
    let bank = u64::from(fig.psum_bank_bytes);
    // Any bank of the partition may hold a result (isa.md: one bank per
    // accumulation group, 8 of them); on trn2 it may not cross a bank.
    let limit = u64::from(fig.psum_bytes_per_partition);
    if fig.matmul_psum_banks == 1 && start / bank != (end - 1) / bank {
        return Err(ctx.error(
            codes::PSUM_BANK,
            format!(
                "the matmul result covers PSUM bytes {start}..{end} of each partition, crossing a {bank}-byte bank boundary",
            ),
            dst_span,
            "crosses a PSUM bank",
        )
        .with_help("keep each matmul result inside one 2 KiB bank (at most 512 fp32 elements)"));
    }
    if end > limit {
        return Err(ctx.error(
            codes::PSUM_BANK,
            format!("the matmul result ends at PSUM byte {end}, beyond {limit}"),
            dst_span,
            "beyond PSUM",
        ));
    }
    match (f.tile_position, f.tile_size) {
        (None, None) => {}
        (Some([row, col]), Some([rows, cols])) => {
            let sizes_ok = [rows, cols].iter().all(|s| matches!(s, 32 | 64 | 128));
            let starts_ok = rows > 0 && cols > 0 && row % rows == 0 && col % cols == 0;
            if !sizes_ok || !starts_ok || row >= 128 || col >= 128 {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!(
                        "PE tile at {:?} of size {:?}: sizes are 32, 64 or 128 and starts are multiples of the size below 128",
                        [row, col],
                        [rows, cols]
                    ),
                    ss,
                    "bad PE tile",
                ));
            }
            if k_s > u64::from(rows) || mm > u64::from(cols) {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!(
                        "the stationary tile ({k_s} rows × {mm} columns) does not fit the {rows}×{cols} PE tile"
                    ),
                    ss,
                    "does not fit the PE tile",
                ));
            }
            // Only a manual placement fixes the partitions here; otherwise
            // the backend places the tiles on the PE tile's rows and columns.
            let manual = |t: &Tensor| ctx.storage(t.storage()).address.is_some();
            let placed = manual(s) || manual(dst);
            let start_d = check::start_partition(ctx, dst);
            if placed && (start_s != u64::from(row) || start_d != u64::from(col)) {
                return Err(ctx.error(
                    codes::PARTITION_START,
                    format!(
                        "with a PE tile at row {row}, column {col} the inputs start on partition {row} and `dst` on partition {col}; found {start_s} and {start_d}"
                    ),
                    ss,
                    "partitions do not match the PE tile",
                ));
            }
        }
        _ => {
            return Err(ctx.error(
                codes::MATMUL_TILE,
                "`tile_position` and `tile_size` are given together",
                ss,
                "only one given",
            ));
        }
    }
    if f.transpose && target < Target::Trn2 {
        return Err(ctx.error(codes::TARGET, "transpose mode needs trn2", ss, "target"));
    }
    Ok(())
}

fn nc_matmul(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let stationary = b.tensor(ctx, "stationary")?;
    let moving = b.tensor(ctx, "moving")?;
    let flags = matmul_flags(ctx, b)?;
    let pending = PendingMatmul {
        stationary,
        moving,
        flags,
        dtype: b.legacy_dtype(ctx)?.unwrap_or(DType::F32),
        span,
        stationary_span: b.span_of("stationary"),
        moving_span: b.span_of("moving"),
    };
    if b.is_value_form() {
        // Recorded where the result is first used (module doc).
        return Ok(Value::Ext(Rc::new(pending)));
    }
    let dst = b.tensor(ctx, "dst")?;
    let accumulate = match b.get("accumulate") {
        None => None,
        Some(_) => Some(b.bool_or(ctx, "accumulate", false)?),
    };
    matmul_checks(
        ctx,
        &dst,
        b.span_of("dst"),
        (&pending.stationary, pending.stationary_span),
        (&pending.moving, pending.moving_span),
        &flags,
    )?;
    let kind = OpKind::NcMatmul {
        dst: dst.view.clone(),
        stationary: pending.stationary.view.clone(),
        moving: pending.moving.view.clone(),
        accumulate,
        transpose: flags.transpose,
        perf_mode: flags.perf_mode,
        stationary_onezero: flags.stationary_onezero,
        moving_onezero: flags.moving_onezero,
        tile_position: flags.tile_position,
        tile_size: flags.tile_size,
    };
    emit::finish(ctx, b, kind, None, None, span)
}

/// Records `dst = transpose(data)`, choosing the engine when `engine` is
/// `None` and the shapes or buffers decide it.
pub fn transpose_into(
    ctx: &Ctx<'_>,
    dst: (&Tensor, Span),
    data: (&Tensor, Span),
    engine: Option<Engine>,
) -> Result<(OpKind, Option<Engine>), Diagnostic> {
    let (d, ds) = dst;
    let (x, xs) = data;
    check::operand(ctx, x, xs, "`data`")?;
    check::operand(ctx, d, ds, "`dst`")?;
    let (p, f) = (check::partitions(x), check::free_size(x));
    if check::partitions(d) != f || check::free_size(d) != p {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must be [{f}, {p}] (the transpose of `data` {}), found {}",
                shape_text(&x.shape),
                shape_text(&d.shape)
            ),
            ds,
            "not the transposed shape",
        ));
    }
    check::same_dtype(ctx, x, d, ds, "dtype differs", |x, d| {
        format!("`nc_transpose` keeps the dtype: `data` is {x} but `dst` is {d}")
    })?;
    let small = p <= 32 && f <= 32;
    let vector_only = x.buffer == Buffer::Psum || d.buffer == Buffer::Sbuf;
    let engine = match engine {
        Some(e) => Some(e),
        None if vector_only => Some(Engine::Vector),
        None if !small => Some(Engine::Tensor),
        None => None,
    };
    match engine {
        Some(Engine::Tensor) => {
            check::buffer_in(ctx, x, &[Buffer::Sbuf], xs, "TensorE transpose `data`")?;
            check::buffer_in(ctx, d, &[Buffer::Psum], ds, "TensorE transpose `dst`")?;
        }
        Some(_) if !small => {
            return Err(ctx.error(
                codes::FREE_SIZE,
                format!(
                    "a VectorE transpose handles up to 32×32, found {p}×{f} (data in {}, dst in {})",
                    x.buffer.name(),
                    d.buffer.name()
                ),
                xs,
                "too large for VectorE",
            )
            .with_help("use TensorE: `data` in SBUF, `dst` in PSUM"));
        }
        _ => {}
    }
    Ok((
        OpKind::NcTranspose {
            dst: d.view.clone(),
            src: x.view.clone(),
        },
        engine,
    ))
}

fn nc_transpose(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let data = b.tensor(ctx, "data")?;
    let engine = emit::engine(ctx, b)?;
    let shape = [check::free_size(&data), check::partitions(&data)];
    let buffer = if engine == Some(Engine::Vector) {
        Buffer::Sbuf
    } else {
        Buffer::Psum
    };
    let dst = emit::dst_or_new(ctx, b, &shape, data.dtype(), buffer, span)?;
    let (kind, engine) = transpose_into(
        ctx,
        (&dst, b.span_of("dst")),
        (&data, b.span_of("data")),
        engine,
    )?;
    emit::finish(ctx, b, kind, engine, Some(&dst), span)
}

/// The rows of an MX scale tile the hardware reads (isa.md §4.1, scale
/// layout): 4 per 32-partition quadrant of `p`-partition data, so
/// `32·(p/32 − 1) + 4` partitions from the view's start (4 for p ≤ 32).
/// A scale tile allocated with the data's `p` partitions, as the spec
/// describes for p > 32, is narrowed to those rows; a tile with exactly
/// those rows is used as is.
pub(crate) fn mx_scale_rows(
    ctx: &Ctx<'_>,
    t: &Tensor,
    p: u64,
    span: Span,
    what: &str,
) -> Result<Tensor, Diagnostic> {
    let want = mx_scale_span(p);
    let tp = check::partitions(t);
    if tp <= want {
        return Ok(t.clone());
    }
    let narrowed = t.view.slice(0, 0, want, 1).map(|view| {
        let mut shape = t.shape.clone();
        shape[0] = want;
        Tensor {
            view,
            shape,
            buffer: t.buffer,
        }
    });
    narrowed.ok_or_else(|| {
        ctx.error(
            codes::SHAPE,
            format!(
                "{what} must cover {want} partitions (4 per quadrant of the {p}-partition data), found {}",
                shape_text(&t.shape)
            ),
            span,
            "wrong scale shape",
        )
    })
}

/// How many partitions an MX scale view spans for `p`-partition data.
fn mx_scale_span(p: u64) -> u64 {
    32 * ((p / 32).max(1) - 1) + 4
}

fn nc_matmul_mx(ctx: &mut Ctx<'_>, b: &Bound, span: Span) -> Result<Value, Diagnostic> {
    let dst = b.tensor(ctx, "dst")?;
    let st = b.tensor(ctx, "stationary")?;
    let mv = b.tensor(ctx, "moving")?;
    let ss = b.tensor(ctx, "stationary_scale")?;
    let ms = b.tensor(ctx, "moving_scale")?;
    let ds = b.span_of("dst");
    check::operand(ctx, &dst, ds, "`dst`")?;
    check::buffer_in(ctx, &dst, &[Buffer::Psum], ds, "`dst`")?;
    check::dtype_in(ctx, &dst, &[DType::F32, DType::BF16], "`dst`", ds)?;
    let data_types = [DType::F8E5M2x4, DType::F8E4M3FNx4, DType::F4E2M1FNx4];
    for (t, name) in [(&st, "stationary"), (&mv, "moving")] {
        let sp = b.span_of(name);
        let what = format!("`{name}`");
        check::operand(ctx, t, sp, &what)?;
        check::buffer_in(ctx, t, &[Buffer::Sbuf], sp, &what)?;
        check::dtype_in(ctx, t, &data_types, &what, sp)?;
    }
    let p = check::partitions(&st);
    let sps = b.span_of("moving");
    if check::partitions(&mv) != p {
        return Err(ctx.error(
            codes::PARTITION_SIZE,
            format!(
                "the contraction sizes differ: `stationary` has {p} partitions, `moving` {}",
                check::partitions(&mv)
            ),
            sps,
            "partition counts differ",
        ));
    }
    if !p.is_multiple_of(32) {
        return Err(ctx.error(
            codes::PARTITION_SIZE,
            format!("`nc_matmul_mx` contracts over a multiple of 32 partitions, found {p}"),
            b.span_of("stationary"),
            "not a multiple of 32",
        ));
    }
    let (m, n) = (check::free_size(&st), check::free_size(&mv));
    if m > 128 || !m.is_multiple_of(2) {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!("`stationary` needs an even free size of at most 128, found {m}"),
            b.span_of("stationary"),
            "bad stationary width",
        ));
    }
    let nmax = trn3_moving_fmax(&dst);
    if n > nmax {
        return Err(ctx.error(
            codes::FREE_SIZE,
            format!(
                "`moving` has at most {nmax} free elements with a {} `dst`, found {n}",
                dst.dtype().name()
            ),
            sps,
            "too wide",
        ));
    }
    if check::partitions(&dst) != m || check::free_size(&dst) != n {
        return Err(ctx.error(
            codes::SHAPE,
            format!(
                "`dst` must be [{m}, {n}] (stationary × moving free sizes), found {}",
                shape_text(&dst.shape)
            ),
            ds,
            "wrong result shape",
        ));
    }
    for (t, data, name) in [(&ss, &st, "stationary_scale"), (&ms, &mv, "moving_scale")] {
        let sp = b.span_of(name);
        let what = format!("`{name}`");
        check::operand(ctx, t, sp, &what)?;
        check::buffer_in(ctx, t, &[Buffer::Sbuf], sp, &what)?;
        check::dtype_in(ctx, t, &[DType::F8E8M0, DType::U8], &what, sp)?;
        let tp = check::partitions(t);
        let parts_ok = tp == p || tp == mx_scale_span(p) || (p <= 32 && tp >= p / 8);
        if check::free_size(t) != check::free_size(data) || !parts_ok {
            return Err(ctx.error(
                codes::SHAPE,
                format!(
                    "{what} must have its data's free size ({}) and {p} partitions (or {} for 32 partitions), found {}",
                    check::free_size(data),
                    p / 8,
                    shape_text(&t.shape)
                ),
                sp,
                "wrong scale shape",
            ));
        }
    }
    let ss = mx_scale_rows(
        ctx,
        &ss,
        p,
        b.span_of("stationary_scale"),
        "`stationary_scale`",
    )?;
    let ms = mx_scale_rows(ctx, &ms, p, b.span_of("moving_scale"), "`moving_scale`")?;
    let tile_position = pair(ctx, b, "tile_position")?;
    let tile_size = pair(ctx, b, "tile_size")?;
    match (tile_position, tile_size) {
        (None, None) => {}
        (Some([row, col]), Some([rows, cols])) => {
            if cols != 128 || col != 0 || !matches!(rows, 32 | 64 | 128) || row % rows != 0 {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!(
                        "`nc_matmul_mx` tiles by rows only: `tile_size` is (32|64|128, 128) and `tile_position` (row, 0) with row a multiple of the row size; found position ({row}, {col}), size ({rows}, {cols})"
                    ),
                    b.span_of("tile_size"),
                    "unsupported tiling",
                ));
            }
            if u64::from(rows) < p {
                return Err(ctx.error(
                    codes::MATMUL_TILE,
                    format!("the contraction of {p} partitions does not fit a {rows}-row tile"),
                    b.span_of("tile_size"),
                    "tile too small",
                ));
            }
        }
        _ => {
            return Err(ctx.error(
                codes::MATMUL_TILE,
                "`tile_position` and `tile_size` are given together",
                b.span,
                "only one given",
            ));
        }
    }
    let accumulate = match b.get("accumulate") {
        None => None,
        Some(_) => Some(b.bool_or(ctx, "accumulate", false)?),
    };
    let kind = OpKind::NcMatmulMx {
        dst: dst.view.clone(),
        stationary: st.view.clone(),
        moving: mv.view.clone(),
        stationary_scale: ss.view.clone(),
        moving_scale: ms.view.clone(),
        accumulate,
        tile_position,
        tile_size,
    };
    emit::finish(ctx, b, kind, None, None, span)
}
