//! The cost model: how long an instruction occupies its queue and when its
//! results become visible, computed only from `Figures`.
//!
//! Both the backend (to schedule) and the simulator (to time) call
//! `Target::cost`; nothing else in the workspace may hold a latency.
//!
//! # Model
//!
//! `Cost::busy_ps` is the initiation interval: the next instruction of the
//! same queue may start `busy_ps` after this one started. `Cost::latency_ps`
//! is when this instruction's writes are visible and its signals fire; it
//! is at least `busy_ps` for every instruction (equal for control
//! instructions, including those on DMA queues), so an instruction started
//! at `t` completes at `t + latency_ps`. All times are integer picoseconds,
//! converted from engine cycles with `Figures::cycles_to_ps` (rounding up),
//! so simulated times are deterministic.
//!
//! Dependent issue (docs/isa.md §7): each queue remembers the byte
//! footprints written by its latest memory-writing instruction (any
//! non-control instruction, or `reg_store`) and that instruction's
//! completion time; control instructions that write no memory (`reg_alu`,
//! `branch`, labels, …) neither replace the record nor break the
//! dependency. An instruction that reads memory (non-control, or
//! `reg_load`) whose read footprint overlaps the record starts at
//! `max(queue free time, waits, producer completion) +
//! Target::dependent_overhead_ps(engine)`, that is
//! `dependent_issue_overhead_cycles` (trn3-machine.md §7.1) of the queue's
//! engine clock. Footprints are bounding boxes (memory, partition range,
//! per-partition byte range), so the test is conservative.
//!
//! Compute engines (N = free size of the main input, `max(·, min_ii)` on
//! every Vector/Scalar/GpSimd interval, latency = interval +
//! `pipeline_latency_cycles`), restating trn3-machine.md §6–§7:
//!
//! | instruction | interval (engine cycles) |
//! |---|---|
//! | `tensor_copy`, `tensor_scalar` (Vector) | N / `vector_fast_copy` when in/out are 16-bit (fp8 on v4) in SBUF with unit innermost stride, N / `vector_fast_copy_slow` when 16-bit otherwise, N / `vector_lane_inputs` for other types with both sides in SBUF, else N |
//! | `tensor_copy`, `tensor_scalar` (Scalar) | N / `scalar_fast` for 16-bit/fp8 in and out, else N |
//! | `tensor_copy` (GpSimd) | N; `tensor_scalar` on GpSimd: `gpsimd_rsqrt_factor` × N |
//! | `activation`, `activate2` | N, + `act_read_accumulator_cycles` with `reduce_res` |
//! | `activation_reduce` | N + `act_read_accumulator_cycles` |
//! | `tensor_tensor` | N when one input is PSUM and the other SBUF, or all operands 16-bit in SBUF; else 2N / `vector_lane_inputs` on Vector with both inputs in SBUF, else 2N |
//! | `scalar_tensor_tensor` | N when `src`, `src1` 16-bit in SBUF; else 2N / `vector_lane_inputs` on Vector with both in SBUF, else 2N |
//! | `tensor_tensor_scan` | 2N / `vector_lane_inputs` with both inputs in SBUF, else 2N |
//! | `tensor_copy_predicated` | N when `src`/`predicate` split SBUF/PSUM, else 2N / `vector_lane_inputs` on Vector with both in SBUF, else 2N |
//! | `tensor_reduce` | N/2 for bf16 in/out with add or max, else N |
//! | `tensor_scalar_reduce`, `tensor_scalar_cumulative`, `range_select`, `select_reduce`, `bn_stats`, `max8`, `nc_find_index8`, `nc_match_replace8`, `nc_stream_shuffle`, `nc_transpose` (Vector) | N; + `min_ii` for a `reduce_res` read-out |
//! | `memset` | N/2 for 0 into a 16-bit dst on Vector, else N (N = dst free size) |
//! | `reciprocal` | `vector_reciprocal_factor` × N |
//! | `exponential`, `quantize_mx` | N / `vector_exp_rate` (+ `min_ii` with `reduce_res`) |
//! | `bn_aggr` | 13·N/3 |
//! | `iota`, `affine_select`, `sequence_bounds`, `nonzero_with_count`, `nc_n_gather` | `gpsimd_start` + N (N of dst for `iota`/`nc_n_gather`) |
//! | `tensor_partition_reduce` | `gpsimd_start` + N · ⌈P/16⌉ (assume: one pass per GpSimd core) |
//! | `local_gather` | `gpsimd_start` + ⌈V·E / C⌉, C = ((28 + 4E)/(4E)) / min(4/b, E) |
//! | `nc_matmul` | max(MM, LS) TensorE cycles, MM = max(min(64, M), N_mov) × (`mm_fp32_factor` for fp32/tf32 inputs, halved by a one-zero flag), LS = M / `ls_divisor`; transpose mode: max(K, min(64, N_mov)), halved for 4-byte data; double-row and MX count columns, not packed values |
//! | `nc_transpose` (Tensor) | max(P, min(64, F)) |
//! | `rng`, `dropout` | N; `rand2` N / `vector_exp_rate`; `set_rng_seed` `min_ii` |
//! | control instructions | 1 sequencer cycle; `reg_load`/`reg_store` `sram_access_overhead_cycles`; labels 0 |
//!
//! Any Vector/Scalar/GpSimd operand whose innermost stride exceeds 16 bytes
//! multiplies the work by `stride_penalty` (before the `min_ii` floor).
//! Dynamic offsets cost nothing extra (assume; `min_ii_dynamic_cycles` is the
//! legacy figure for the removed dynamic-copy instructions).
//!
//! DMA (`dma_copy`, `dma_transpose`, `dma_gather`, `dma_scatter`;
//! `Target::dma_transfer`): the partition rows are spread over
//! `⌈P / dma_partitions_per_engine⌉` engines (at most `dma_engines`),
//! starting at the engine of the first on-chip partition (partition `p` is
//! served by engine `p / dma_partitions_per_engine`). A row moves as `c`
//! chunks, `c` = the larger number of contiguous runs per row of the two
//! sides, each occupying the engine for `bytes / dma_engine_bytes_per_ns +
//! dma_chunk_overhead_ns` (`DmaTransfer::engine_busy_ps`) and taking at
//! least `dma_chunk_min_ns` itself (`DmaTransfer::engine_ps`: the minimum
//! is a latency that transfers of other queues overlap). Each engine also
//! gets `1 / dma_engines` of the core's HBM bandwidth
//! (`hbm_gbps_per_core`), so both times are at least its HBM bytes (both
//! sides count) at that share. Transposes take
//! `100 / dma_transpose_pct_*` times as long as the same copy (fixed chunk
//! costs included) and v3 accumulation (DMA compute) twice as long. Descriptor generation comes first: `hwdge_instruction_ns` under
//! `dge=hwdge`, `gpsimd_start_cycles` of GpSimd time under `dge=swdge`.
//! `Target::cost` gives the transfer alone: interval = descriptor time +
//! the busiest engine's time, latency = interval + `dma_start_latency_ns`.
//! The simulator additionally makes transfers of all DMA queues share the
//! engines (each engine is occupied by one transfer at a time, in start
//! order, for its `engine_busy_ps`), which
//! caps the core's aggregate DMA bandwidth at `dma_engines ×
//! min(dma_engine_bytes_per_ns, hbm_gbps_per_core / dma_engines)`.
//!
//! Shared RAM ports (`Figures::shared_ports`, NeuronCore-v2): VectorE and
//! GpSimd cannot access SBUF in parallel, nor VectorE and ScalarE PSUM
//! (trainium_inferentia2_arch.rst, "Memory hierarchy": "VectorE and GpSimdE
//! instructions that access SBUF must be serialized, similarly for VectorE
//! and ScalarE instructions that access PSUM"; trainium2_arch.rst: on v3
//! they can). `Cost::ports` names the ports an instruction holds: a
//! VectorE or GpSimd instruction with an SBUF operand holds
//! [`Ports::SBUF`], a VectorE or ScalarE instruction with a PSUM operand
//! [`Ports::PSUM`]. An instruction holds its ports for its interval
//! (`busy_ps`) and starts no earlier than the port is free; the simulator
//! and the scheduler's replay give the port to its users in start order,
//! as they do the DMA engines. Ports are empty on every other target.

use crate::ap::{AccessPattern, Imm, Memory};
use crate::dtype::DType;
use crate::engine::{Engine, Queue};
use crate::enums::{AluOp, DgeMode, MatmulPerfMode};
use crate::insn;
use crate::inst::Op;
use crate::target::{Figures, Target};

/// On-chip RAM ports that engines share on some targets (module doc,
/// "Shared RAM ports"): a set of [`Ports::COUNT`] bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ports(u8);

impl Ports {
    /// No shared port.
    pub const NONE: Ports = Ports(0);
    /// The SBUF access VectorE and GpSimd share.
    pub const SBUF: Ports = Ports(1);
    /// The PSUM access VectorE and ScalarE share.
    pub const PSUM: Ports = Ports(2);
    /// The number of distinct ports: indices `0..COUNT`.
    pub const COUNT: usize = 2;
    /// Each port's name in reports, by index.
    pub const NAMES: [&'static str; Ports::COUNT] = ["sbuf port", "psum port"];

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The ports' indices, below [`Ports::COUNT`].
    pub fn indices(self) -> impl Iterator<Item = usize> {
        (0..Ports::COUNT).filter(move |&i| self.0 & (1 << i) != 0)
    }

    /// The ports an instruction of `engine` with `op`'s operands holds
    /// where engines share ports.
    fn held(engine: Engine, op: &Op) -> Ports {
        let mut bits = 0;
        for o in op.operands() {
            match (o.ap.mem, engine) {
                (Memory::Sbuf, Engine::Vector | Engine::GpSimd) => bits |= Ports::SBUF.0,
                (Memory::Psum, Engine::Vector | Engine::Scalar) => bits |= Ports::PSUM.0,
                _ => {}
            }
        }
        Ports(bits)
    }
}

/// The time an instruction takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cost {
    /// The engine whose clock the cycles count.
    pub engine: Engine,
    /// Engine cycles of the interval (0 for DMA, whose time is not cycles).
    pub cycles: u64,
    /// Initiation interval in picoseconds.
    pub busy_ps: u64,
    /// Start → results visible and signals fired, in picoseconds.
    pub latency_ps: u64,
    /// The shared RAM ports it holds for `busy_ps` (module doc).
    pub ports: Ports,
}

impl Target {
    /// The cost of `op` executed on `queue`.
    pub fn cost(self, queue: Queue, op: &Op) -> Cost {
        let f = self.figures();
        let engine = queue.engine();
        if engine == Engine::Dma || op.is_dma() {
            return dma_cost(self, f, op);
        }
        if let Op::SendRecv(insn::SendRecv { dst, src, .. }) = op {
            // A DMA of `src`'s bytes from one core's SBUF to the other's,
            // issued from this queue, which waits for it.
            let copy = dma_cost(self, f, &Op::dma_copy(dst.clone(), src.clone()));
            return Cost {
                engine,
                cycles: copy.cycles,
                busy_ps: copy.latency_ps,
                latency_ps: copy.latency_ps,
                ports: Ports::NONE,
            };
        }
        let cycles = engine_cycles(f, engine, op);
        let busy_ps = f.cycles_to_ps(engine, cycles);
        let latency_cycles = if op.is_control() {
            cycles
        } else {
            cycles.saturating_add(u64::from(f.pipeline_latency_cycles))
        };
        let mut latency_ps = f.cycles_to_ps(engine, latency_cycles);
        if matches!(op, Op::CoreBarrier(_)) {
            // Timed from the last core's arrival (the simulator starts a
            // barrier then): the increment sent to the peer core.
            latency_ps += u64::from(f.core_barrier_ns) * 1000;
        }
        let ports = if f.shared_ports && !op.is_control() {
            Ports::held(engine, op)
        } else {
            Ports::NONE
        };
        Cost {
            engine,
            cycles,
            busy_ps,
            latency_ps,
            ports,
        }
    }

    /// The extra start delay of an instruction that depends on the previous
    /// instruction of its queue.
    pub fn dependent_overhead_ps(self, engine: Engine) -> u64 {
        let f = self.figures();
        f.cycles_to_ps(engine, u64::from(f.dependent_issue_overhead_cycles))
    }
}

/// True for the types that run in the 16-bit fast modes.
fn fast_type(f: &Figures, dtype: DType) -> bool {
    matches!(dtype, DType::BF16 | DType::F16) || (f.vector_fp8_fast && dtype.is_fp8())
}

fn in_sbuf(ap: &AccessPattern) -> bool {
    ap.mem == Memory::Sbuf
}

fn unit_innermost(ap: &AccessPattern) -> bool {
    ap.dims.last().is_none_or(|d| d.stride == 1 || d.count <= 1)
}

/// Work counts are clamped here so that the cost formulas cannot overflow
/// on absurd (unverified) patterns; no real instruction comes close.
const MAX_WORK: u64 = 1 << 40;

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Cycles of a compute or control instruction on its engine.
fn engine_cycles(f: &Figures, engine: Engine, op: &Op) -> u64 {
    let min_ii = u64::from(f.min_ii_cycles);
    let gpsimd_start = u64::from(f.gpsimd_start_cycles);
    let readout = |r: &Option<AccessPattern>| if r.is_some() { min_ii } else { 0 };
    // Work before the stride penalty and the min_ii floor, plus fixed
    // cycles added after them.
    let (work, fixed): (u64, u64) = match op {
        Op::TensorCopy(insn::TensorCopy { dst, src }) => (copy_like_work(f, engine, dst, src), 0),
        Op::TensorScalar(insn::TensorScalar { dst, src, .. }) => {
            if engine == Engine::GpSimd {
                (
                    src.free_size().min(MAX_WORK) * u64::from(f.gpsimd_rsqrt_factor),
                    0,
                )
            } else {
                (copy_like_work(f, engine, dst, src), 0)
            }
        }
        Op::Activation(insn::Activation {
            src, reduce_res, ..
        })
        | Op::Activate2(insn::Activate2 {
            src, reduce_res, ..
        }) => (
            src.free_size().min(MAX_WORK),
            if reduce_res.is_some() {
                u64::from(f.act_read_accumulator_cycles)
            } else {
                0
            },
        ),
        Op::ActivationReduce(insn::ActivationReduce { src, .. }) => (
            src.free_size().min(MAX_WORK),
            u64::from(f.act_read_accumulator_cycles),
        ),
        Op::TensorTensor(insn::TensorTensor {
            dst, src0, src1, ..
        }) => {
            let n = src0.free_size().min(MAX_WORK);
            let split = (src0.mem == Memory::Psum) != (src1.mem == Memory::Psum);
            let all_fast = in_sbuf(src0)
                && in_sbuf(src1)
                && [dst, src0, src1].iter().all(|a| fast_type(f, a.dtype));
            if engine == Engine::Vector && (split || all_fast) {
                (n, 0)
            } else {
                (two_input_work(f, engine, n, &[src0, src1]), 0)
            }
        }
        Op::ScalarTensorTensor(insn::ScalarTensorTensor { src, src1, .. }) => {
            let n = src.free_size().min(MAX_WORK);
            let fast = in_sbuf(src)
                && in_sbuf(src1)
                && fast_type(f, src.dtype)
                && fast_type(f, src1.dtype);
            if fast {
                (n, 0)
            } else {
                (two_input_work(f, engine, n, &[src, src1]), 0)
            }
        }
        Op::TensorTensorScan(insn::TensorTensorScan { src0, src1, .. }) => (
            two_input_work(f, engine, src0.free_size().min(MAX_WORK), &[src0, src1]),
            0,
        ),
        Op::TensorCopyPredicated(insn::TensorCopyPredicated { src, predicate, .. }) => {
            let n = src.free_size().min(MAX_WORK);
            let split = (src.mem == Memory::Psum) != (predicate.mem == Memory::Psum);
            if split {
                (n, 0)
            } else {
                (two_input_work(f, engine, n, &[src, predicate]), 0)
            }
        }
        Op::TensorReduce(insn::TensorReduce { dst, src, op, .. }) => {
            let n = src.free_size().min(MAX_WORK);
            let fast = src.dtype == DType::BF16
                && dst.dtype == DType::BF16
                && matches!(op, AluOp::Add | AluOp::Maximum);
            (if fast { div_ceil(n, 2) } else { n }, 0)
        }
        Op::TensorScalarReduce(insn::TensorScalarReduce {
            src, reduce_res, ..
        }) => (src.free_size().min(MAX_WORK), readout(reduce_res)),
        Op::TensorScalarCumulative(insn::TensorScalarCumulative { src, .. }) => {
            (src.free_size().min(MAX_WORK), 0)
        }
        Op::RangeSelect(insn::RangeSelect {
            src, reduce_res, ..
        }) => (src.free_size().min(MAX_WORK), readout(reduce_res)),
        Op::SelectReduce(insn::SelectReduce {
            on_true,
            reduce_res,
            ..
        }) => (on_true.free_size().min(MAX_WORK), readout(reduce_res)),
        Op::BnStats(insn::BnStats { src, .. })
        | Op::Max8(insn::Max8 { src, .. })
        | Op::FindIndex8(insn::FindIndex8 { src, .. })
        | Op::MatchReplace8(insn::MatchReplace8 { src, .. })
        | Op::StreamShuffle(insn::StreamShuffle { src, .. }) => (src.free_size().min(MAX_WORK), 0),
        Op::Memset(insn::Memset { dst, value }) => {
            let n = dst.free_size().min(MAX_WORK);
            let zero = match value {
                Imm::Int(v) => *v == 0,
                Imm::Float(v) => v.get() == 0.0,
            };
            let fast =
                engine == Engine::Vector && zero && matches!(dst.dtype, DType::BF16 | DType::F16);
            (if fast { div_ceil(n, 2) } else { n }, 0)
        }
        Op::Reciprocal(insn::Reciprocal { src, .. }) => (
            src.free_size().min(MAX_WORK) * u64::from(f.vector_reciprocal_factor),
            0,
        ),
        Op::Exponential(insn::Exponential {
            src, reduce_res, ..
        }) => (
            div_ceil(src.free_size().min(MAX_WORK), u64::from(f.vector_exp_rate)),
            readout(reduce_res),
        ),
        Op::QuantizeMx(insn::QuantizeMx { src, .. }) => (
            div_ceil(src.free_size().min(MAX_WORK), u64::from(f.vector_exp_rate)),
            0,
        ),
        Op::BnAggr(insn::BnAggr { src, .. }) => {
            (div_ceil(13 * src.free_size().min(MAX_WORK), 3), 0)
        }
        Op::Iota(insn::Iota { dst, .. }) | Op::NGather(insn::NGather { dst, .. }) => {
            (dst.free_size().min(MAX_WORK), gpsimd_start)
        }
        Op::AffineSelect(insn::AffineSelect { src, .. })
        | Op::SequenceBounds(insn::SequenceBounds { src, .. })
        | Op::NonzeroWithCount(insn::NonzeroWithCount { src, .. }) => {
            (src.free_size().min(MAX_WORK), gpsimd_start)
        }
        Op::TensorPartitionReduce(insn::TensorPartitionReduce { src, .. }) => (
            src.free_size()
                .min(MAX_WORK)
                .saturating_mul(div_ceil(u64::from(src.partition_count), 16)),
            gpsimd_start,
        ),
        Op::LocalGather(insn::LocalGather {
            src,
            index,
            elem_per_idx,
            valid_indices,
            ..
        }) => {
            let e = f64::from((*elem_per_idx).max(1));
            let b = f64::from(src.dtype.size());
            let valid =
                valid_indices.map_or(16 * index.free_size().min(MAX_WORK), u64::from) as f64;
            let c = ((28.0 + 4.0 * e) / (4.0 * e)) / (4.0 / b).min(e);
            ((valid * e / c).ceil() as u64, gpsimd_start)
        }
        Op::NcTranspose(insn::NcTranspose { src, .. }) => {
            if engine == Engine::Tensor {
                let p = u64::from(src.partition_count);
                return p.max(src.free_size().min(MAX_WORK).min(64)).max(1);
            }
            (src.free_size().min(MAX_WORK), 0)
        }
        Op::NcMatmul(insn::NcMatmul {
            stationary,
            moving,
            transpose,
            perf_mode,
            stationary_onezero,
            moving_onezero,
            ..
        }) => {
            return matmul_cycles(
                f,
                stationary,
                moving,
                *transpose,
                *perf_mode,
                *stationary_onezero,
                *moving_onezero,
            );
        }
        Op::NcMatmulMx(insn::NcMatmulMx {
            stationary, moving, ..
        }) => {
            let m = stationary.free_size().min(MAX_WORK);
            let n = moving.free_size().min(MAX_WORK);
            let mm = m.min(u64::from(f.mm_init_latency_cycles)).max(n);
            return mm.max(div_ceil(m, u64::from(f.ls_divisor))).max(1);
        }
        Op::RegLoad(_) | Op::RegStore(_) => {
            return u64::from(f.sram_access_overhead_cycles);
        }
        Op::Label(_) => return 0,
        Op::RegSet(_)
        | Op::RegMove(_)
        | Op::RegAlu(_)
        | Op::Branch(_)
        | Op::Jump(_)
        | Op::Nop(insn::Nop {})
        | Op::CoreBarrier(_)
        | Op::SendRecv(_) => {
            // `Target::cost` times `sendrecv` as a DMA before this.
            return 1;
        }
        // `Target::cost` sends DMA instructions to `dma_cost` before this
        // function is reached.
        Op::DmaCopy(_) | Op::DmaTranspose(_) | Op::DmaGather(_) | Op::DmaScatter(_) => return 0,
        Op::Rng(insn::Rng { dst }) | Op::Rand2(insn::Rand2 { dst, .. }) => {
            let n = dst.free_size().min(MAX_WORK);
            // rand2 makes `vector_exp_rate` values per lane per cycle (v4).
            if matches!(op, Op::Rand2(_)) {
                (div_ceil(n, u64::from(f.vector_exp_rate)), 0)
            } else {
                (n, 0)
            }
        }
        Op::Dropout(insn::Dropout { src, .. }) => (src.free_size().min(MAX_WORK), 0),
        Op::SetRngSeed(_) => (1, 0),
    };
    let penalized = if op
        .operands()
        .iter()
        .any(|o| o.ap.mem.is_on_chip() && o.ap.innermost_stride_bytes() > 16)
    {
        work.saturating_mul(u64::from(f.stride_penalty))
    } else {
        work
    };
    penalized.max(min_ii).saturating_add(fixed)
}

/// `tensor_copy` and Vector/Scalar `tensor_scalar`: the perf modes.
fn copy_like_work(f: &Figures, engine: Engine, dst: &AccessPattern, src: &AccessPattern) -> u64 {
    let n = src.free_size().min(MAX_WORK);
    let both_fast = fast_type(f, dst.dtype) && fast_type(f, src.dtype);
    match engine {
        Engine::Vector if both_fast => {
            let contiguous =
                in_sbuf(dst) && in_sbuf(src) && unit_innermost(dst) && unit_innermost(src);
            let speedup = if contiguous {
                f.vector_fast_copy
            } else {
                f.vector_fast_copy_slow
            };
            div_ceil(n, u64::from(speedup))
        }
        Engine::Scalar if both_fast => div_ceil(n, u64::from(f.scalar_fast)),
        Engine::Vector if in_sbuf(dst) && in_sbuf(src) => {
            div_ceil(n, u64::from(f.vector_lane_inputs.max(1)))
        }
        _ => n,
    }
}

/// A two-input instruction without a performance mode: `2 · n` input
/// elements per lane, read `vector_lane_inputs` per cycle on VectorE when
/// every input is in SBUF, else one per cycle.
fn two_input_work(f: &Figures, engine: Engine, n: u64, inputs: &[&AccessPattern]) -> u64 {
    let rate = if engine == Engine::Vector && inputs.iter().all(|a| in_sbuf(a)) {
        u64::from(f.vector_lane_inputs.max(1))
    } else {
        1
    };
    div_ceil(2 * n, rate)
}

fn matmul_cycles(
    f: &Figures,
    stationary: &AccessPattern,
    moving: &AccessPattern,
    transpose: bool,
    perf_mode: MatmulPerfMode,
    stationary_onezero: bool,
    moving_onezero: bool,
) -> u64 {
    let rows = if perf_mode == MatmulPerfMode::DoubleRow {
        2
    } else {
        1
    };
    let m = div_ceil(stationary.free_size().min(MAX_WORK), rows);
    let n = div_ceil(moving.free_size().min(MAX_WORK), rows);
    let wide = |d: DType| matches!(d, DType::F32 | DType::TF32);
    if transpose {
        let k = u64::from(moving.partition_count);
        let base = k.max(n.min(64));
        let halve = stationary.dtype.size() == 4 || moving.dtype.size() == 4;
        return if halve { div_ceil(base, 2) } else { base }.max(1);
    }
    let mut mm = m.min(u64::from(f.mm_init_latency_cycles)).max(n);
    if wide(stationary.dtype) || wide(moving.dtype) {
        let onezero = (stationary_onezero && wide(stationary.dtype))
            || (moving_onezero && wide(moving.dtype));
        let factor = u64::from(f.mm_fp32_factor);
        mm *= if onezero { div_ceil(factor, 2) } else { factor };
    }
    let ls = div_ceil(m, u64::from(f.ls_divisor));
    mm.max(ls).max(1)
}

/// How a DMA transfer uses the core's DMA engines: which engines, for how
/// long each, and its fixed times. The simulator reserves the engines (they
/// are shared by every DMA queue); `Target::cost` gives the time of the
/// transfer alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DmaTransfer {
    /// The first engine used; the transfer uses engines `first_engine`,
    /// `first_engine + 1`, … (modulo `dma_engines`).
    pub first_engine: u32,
    /// How many engines share the rows (1 to `dma_engines`).
    pub engines: u32,
    /// Descriptor generation before any data moves (`hwdge_instruction_ns`
    /// under `dge=hwdge`, `gpsimd_start_cycles` of GpSimd time under
    /// `dge=swdge`, 0 for static descriptors), in picoseconds.
    pub issue_ps: u64,
    /// How long this transfer's data takes on each used engine, in
    /// picoseconds: the larger of its chunk time (each chunk at least
    /// `dma_chunk_min_ns`) and `engine_busy_ps`. A queue that issues
    /// transfers one after another waits this long for each.
    pub engine_ps: u64,
    /// How long each used engine is occupied, in picoseconds: its bytes at
    /// the engine's bandwidth plus `dma_chunk_overhead_ns` per chunk, at
    /// least its HBM bytes at its share of the core's HBM bandwidth. The
    /// next transfer (of any queue) may start moving data on the engine
    /// this long after this one began; at most `engine_ps`.
    pub engine_busy_ps: u64,
    /// The fixed start latency (`dma_start_latency_ns`) added to the
    /// completion, in picoseconds.
    pub start_latency_ps: u64,
    /// Bytes read from or written to HBM (both sides count).
    pub hbm_bytes: u64,
}

impl DmaTransfer {
    /// The engines used, in order.
    pub fn engine_ids(&self, total: u32) -> impl Iterator<Item = u32> {
        self.engine_spans(total)
            .into_iter()
            .flatten()
            .map(|e| e as u32)
    }

    /// The engines used as at most two contiguous index ranges of the
    /// `total` engines (the second one non-empty when the engines wrap
    /// around past the last), so a caller can walk per-engine state as
    /// slices.
    pub fn engine_spans(&self, total: u32) -> [std::ops::Range<usize>; 2] {
        let total = total.max(1) as usize;
        let first = self.first_engine as usize % total;
        let count = (self.engines as usize).min(total);
        let end = first + count;
        if end <= total {
            [first..end, 0..0]
        } else {
            [first..total, 0..end - total]
        }
    }
}

impl Target {
    /// How a DMA instruction (`dma_copy`, `dma_transpose`, `dma_gather`,
    /// `dma_scatter`) uses the DMA engines; `None` for other instructions.
    /// See the module doc.
    pub fn dma_transfer(self, op: &Op) -> Option<DmaTransfer> {
        let f = self.figures();
        let (dst, src, transpose, accumulate, dge) = match op {
            Op::DmaCopy(insn::DmaCopy {
                dst,
                src,
                accumulate,
                dge,
                ..
            }) => (dst, src, false, *accumulate, *dge),
            Op::DmaTranspose(insn::DmaTranspose { dst, src, dge }) => (dst, src, true, false, *dge),
            Op::DmaGather(insn::DmaGather {
                dst,
                src,
                accumulate,
                ..
            }) => (dst, src, false, *accumulate, DgeMode::Swdge),
            Op::DmaScatter(insn::DmaScatter {
                dst,
                src,
                accumulate,
                ..
            }) => (dst, src, false, *accumulate, DgeMode::Swdge),
            _ => return None,
        };
        // Rows follow the on-chip side when there is one.
        let rows_ap = if src.mem.is_on_chip() { src } else { dst };
        let rows = u64::from(rows_ap.partition_count.max(1));
        let total = u64::from(f.dma_engines.max(1));
        let per_engine = u64::from(f.dma_partitions_per_engine.max(1));
        let engines = div_ceil(rows, per_engine).clamp(1, total);
        let rows_per_engine = div_ceil(rows, engines);
        // Partition p is served by engine p / dma_partitions_per_engine; a
        // transfer with no on-chip side starts at engine 0.
        let first_engine = if rows_ap.mem.is_on_chip() {
            (u64::from(rows_ap.partition_start) / per_engine) % total
        } else {
            0
        };
        let elems_per_row = div_ceil(src.num_elements().max(dst.num_elements()), rows);
        let elem_bytes = src.elem_bytes().max(dst.elem_bytes());
        let row_bytes = elems_per_row.saturating_mul(elem_bytes);
        let chunks = src
            .contiguous_runs_per_partition()
            .max(dst.contiguous_runs_per_partition())
            .max(1);
        let chunk_bytes = div_ceil(row_bytes, chunks);
        // The efficiency in percent.
        let mut pct: u64 = 100;
        if transpose {
            pct = u64::from(if src.mem == Memory::Sbuf {
                f.dma_transpose_pct_sbuf
            } else {
                f.dma_transpose_pct_hbm
            });
        }
        if accumulate && self < Target::Trn3 {
            pct = pct * 50 / 100;
        }
        // Chunk occupancy in ps = bytes / bw ns + the per-chunk overhead;
        // the chunk's own time is at least the chunk minimum. A transpose
        // or a v3 accumulation then takes 100/pct times as long as the copy
        // (the efficiency applies to the whole transfer, fixed chunk costs
        // included).
        let bw = u64::from(f.dma_engine_bytes_per_ns.max(1));
        let busy_chunk_ps = div_ceil(chunk_bytes.saturating_mul(1000), bw)
            .saturating_add(u64::from(f.dma_chunk_overhead_ns) * 1000);
        let chunk_ps = busy_chunk_ps.max(u64::from(f.dma_chunk_min_ns) * 1000);
        let per_engine = |ps: u64| {
            div_ceil(
                rows_per_engine
                    .saturating_mul(chunks)
                    .saturating_mul(ps)
                    .saturating_mul(100),
                pct.max(1),
            )
        };
        let chunk_total = per_engine(chunk_ps);
        let busy_total = per_engine(busy_chunk_ps);
        // HBM: each engine gets an equal share of the core's bandwidth
        // (`hbm_gbps_per_core` is bytes per ns), so all engines together
        // never move more than the core's share of the device's HBM.
        let hbm_sides = u64::from(matches!(src.mem, Memory::Hbm(_)))
            + u64::from(matches!(dst.mem, Memory::Hbm(_)));
        let bytes = rows.saturating_mul(row_bytes);
        let hbm_bytes = bytes.saturating_mul(hbm_sides);
        let engine_hbm_bytes = rows_per_engine
            .saturating_mul(row_bytes)
            .saturating_mul(hbm_sides);
        let hbm_ps = div_ceil(
            engine_hbm_bytes.saturating_mul(1000).saturating_mul(total),
            u64::from(f.hbm_gbps_per_core.max(1)),
        );
        let issue_ps = match dge {
            DgeMode::Hwdge => u64::from(f.hwdge_instruction_ns) * 1000,
            DgeMode::Swdge => f.cycles_to_ps(Engine::GpSimd, u64::from(f.gpsimd_start_cycles)),
            DgeMode::None => 0,
        };
        Some(DmaTransfer {
            first_engine: first_engine as u32,
            engines: engines as u32,
            issue_ps,
            engine_ps: chunk_total.max(hbm_ps),
            engine_busy_ps: busy_total.max(hbm_ps),
            start_latency_ps: u64::from(f.dma_start_latency_ns) * 1000,
            hbm_bytes,
        })
    }
}

/// The cost of a DMA instruction: its transfer alone on idle engines.
fn dma_cost(target: Target, f: &Figures, op: &Op) -> Cost {
    let Some(t) = target.dma_transfer(op) else {
        // Control instructions on a DMA queue run on its sequencer.
        let cycles = engine_cycles(f, Engine::Sync, op);
        let ps = f.cycles_to_ps(Engine::Dma, cycles);
        return Cost {
            engine: Engine::Dma,
            cycles,
            busy_ps: ps,
            latency_ps: ps,
            ports: Ports::NONE,
        };
    };
    let busy_ps = t.issue_ps.saturating_add(t.engine_ps);
    Cost {
        engine: Engine::Dma,
        cycles: 0,
        busy_ps,
        latency_ps: busy_ps.saturating_add(t.start_latency_ps),
        ports: Ports::NONE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ap::{Dim, Scalar, TensorId};
    use crate::enums::{ActFunc, ReduceCmd};

    fn sbuf(dt: DType, n: u32) -> AccessPattern {
        AccessPattern::sbuf(0, 128, 0, &[Dim::new(1, n)], dt)
    }

    /// An `nc_matmul` of a [128, 128] stationary and a [128, 512] moving
    /// tile of `dtype` into fp32 PSUM.
    fn matmul_128x128x512(dtype: DType, accumulate: bool) -> Op {
        Op::matmul(
            AccessPattern::psum(0, 128, 0, &[Dim::new(1, 512)], DType::F32),
            sbuf(dtype, 128),
            sbuf(dtype, 512),
            accumulate,
        )
    }

    /// A plain `dma_copy` (no accumulation, faults out of bounds).
    fn dma_copy(dst: AccessPattern, src: AccessPattern, dge: DgeMode) -> Op {
        let mut op = Op::dma_copy(dst, src);
        if let Op::DmaCopy(insn::DmaCopy { dge: mode, .. }) = &mut op {
            *mode = dge;
        }
        op
    }

    #[test]
    fn matmul_bf16_128x128x512_is_512_cycles() {
        let op = matmul_128x128x512(DType::BF16, false);
        let c = Target::Trn3.cost(Queue::Tensor, &op);
        assert_eq!(c.cycles, 512);
        // 512 cycles at 2.4 GHz = 213.33 ns (rounded up to the picosecond).
        assert_eq!(c.busy_ps, 213_334);
        assert_eq!(
            c.latency_ps,
            Target::Trn3.figures().cycles_to_ps(Engine::Tensor, 576)
        );
        // fp32 inputs are 4× slower.
        let fp32 = matmul_128x128x512(DType::F32, true);
        assert_eq!(Target::Trn3.cost(Queue::Tensor, &fp32).cycles, 2048);
    }

    /// NeuronCore-v2's shared RAM ports: VectorE and GpSimd share SBUF
    /// access, VectorE and ScalarE PSUM access; later targets share none.
    #[test]
    fn shared_ports() {
        let psum = || AccessPattern::psum(0, 128, 0, &[Dim::new(1, 512)], DType::F32);
        let in_sbuf = Op::TensorCopy(insn::TensorCopy {
            dst: sbuf(DType::F32, 512),
            src: sbuf(DType::F32, 512),
        });
        let from_psum = Op::TensorCopy(insn::TensorCopy {
            dst: sbuf(DType::F32, 512),
            src: psum(),
        });
        let ports = |t: Target, q: Queue, op: &Op| t.cost(q, op).ports;
        assert_eq!(ports(Target::Trn1, Queue::Vector, &in_sbuf), Ports::SBUF);
        assert_eq!(ports(Target::Trn1, Queue::GpSimd, &in_sbuf), Ports::SBUF);
        assert_eq!(ports(Target::Trn1, Queue::Scalar, &in_sbuf), Ports::NONE);
        let both = ports(Target::Trn1, Queue::Vector, &from_psum);
        assert_eq!(both.indices().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(Ports::NAMES, ["sbuf port", "psum port"]);
        assert_eq!(ports(Target::Trn1, Queue::Scalar, &from_psum), Ports::PSUM);
        assert_eq!(ports(Target::Trn1, Queue::GpSimd, &from_psum), Ports::SBUF);
        let mm = matmul_128x128x512(DType::BF16, false);
        assert_eq!(ports(Target::Trn1, Queue::Tensor, &mm), Ports::NONE);
        for t in [Target::Trn2, Target::Trn3] {
            for q in [Queue::Vector, Queue::Scalar, Queue::GpSimd] {
                assert_eq!(ports(t, q, &from_psum), Ports::NONE);
            }
        }
    }

    #[test]
    fn vector_and_scalar_rules() {
        let copy = |dt| {
            Op::TensorCopy(insn::TensorCopy {
                dst: sbuf(dt, 1024),
                src: sbuf(dt, 1024),
            })
        };
        // fp32 in SBUF: two elements per lane per cycle ("256 for other
        // data types"); from PSUM one.
        assert_eq!(
            Target::Trn3.cost(Queue::Vector, &copy(DType::F32)).cycles,
            512
        );
        let from_psum = Op::TensorCopy(insn::TensorCopy {
            dst: sbuf(DType::F32, 1024),
            src: AccessPattern::psum(0, 128, 0, &[Dim::new(1, 1024)], DType::F32),
        });
        assert_eq!(Target::Trn2.cost(Queue::Vector, &from_psum).cycles, 1024);
        // Two fp32 inputs in SBUF: 2N input elements at two per cycle.
        let add = |src1: AccessPattern| {
            Op::TensorTensor(insn::TensorTensor {
                dst: sbuf(DType::F32, 1024),
                src0: sbuf(DType::F32, 1024),
                src1,
                op: AluOp::Add,
            })
        };
        assert_eq!(
            Target::Trn2
                .cost(Queue::Vector, &add(sbuf(DType::F32, 1024)))
                .cycles,
            1024
        );
        let psum1 = AccessPattern::psum(0, 128, 0, &[Dim::new(1, 1024)], DType::F32);
        assert_eq!(Target::Trn2.cost(Queue::Vector, &add(psum1)).cycles, 1024);
        assert_eq!(
            Target::Trn3.cost(Queue::Vector, &copy(DType::BF16)).cycles,
            256
        );
        assert_eq!(
            Target::Trn3.cost(Queue::Scalar, &copy(DType::BF16)).cycles,
            512
        );
        assert_eq!(
            Target::Trn2.cost(Queue::Scalar, &copy(DType::BF16)).cycles,
            1024
        );
        // Small tiles pay MIN_II.
        let small = Op::TensorCopy(insn::TensorCopy {
            dst: sbuf(DType::F32, 8),
            src: sbuf(DType::F32, 8),
        });
        assert_eq!(Target::Trn3.cost(Queue::Vector, &small).cycles, 64);
        // Strided innermost (32 bytes) doubles the work.
        let strided = Op::TensorCopy(insn::TensorCopy {
            dst: sbuf(DType::F32, 1024),
            src: AccessPattern::sbuf(0, 128, 0, &[Dim::new(8, 1024)], DType::F32),
        });
        assert_eq!(Target::Trn3.cost(Queue::Vector, &strided).cycles, 1024);
        let act = Op::Activation(insn::Activation {
            dst: sbuf(DType::F32, 512),
            src: sbuf(DType::F32, 512),
            func: ActFunc::Exp,
            scale: Scalar::imm(1.0),
            bias: None,
            reduce_op: Some(AluOp::Add),
            reduce_cmd: ReduceCmd::ResetReduce,
            reduce_res: Some(sbuf(DType::F32, 1)),
        });
        let c = Target::Trn3.cost(Queue::Scalar, &act);
        assert_eq!(c.cycles, 512 + 64);
        assert_eq!(
            c.busy_ps,
            Target::Trn3.figures().cycles_to_ps(Engine::Scalar, 576)
        );
        let iota = Op::Iota(insn::Iota {
            dst: sbuf(DType::I32, 512),
            pattern: vec![Dim::new(1, 512)],
            offset: 0,
            channel_multiplier: 0,
        });
        assert_eq!(Target::Trn3.cost(Queue::GpSimd, &iota).cycles, 662);
    }

    #[test]
    fn dma_follows_the_chunk_fit() {
        // [128, 512] fp32 = 2 KiB per partition: 8 rows per engine, each a
        // 2 KiB chunk taking max(2048/33 + 11 ns, 105 ns) = 105 ns but
        // occupying its engine for 2048/33 + 11 ns only.
        let op = dma_copy(
            sbuf(DType::F32, 512),
            AccessPattern::hbm(TensorId(0), 128, 512, 0, &[Dim::new(1, 512)], DType::F32),
            DgeMode::None,
        );
        let c = Target::Trn3.cost(Queue::Dma(0), &op);
        assert_eq!(c.busy_ps, 8 * 105_000);
        let t = Target::Trn3.dma_transfer(&op).expect("a transfer");
        assert_eq!(t.engine_busy_ps, 8 * (62_061 + 11_000));
        assert_eq!(c.latency_ps, 8 * 105_000 + 1_300_000);
        // 8 KiB per partition: 8192 / 33 + 11 = 259.2 ns per row.
        let big = dma_copy(
            sbuf(DType::F32, 2048),
            AccessPattern::hbm(TensorId(0), 128, 2048, 0, &[Dim::new(1, 2048)], DType::F32),
            DgeMode::Hwdge,
        );
        let c = Target::Trn3.cost(Queue::Dma(1), &big);
        assert_eq!(c.busy_ps, 8 * 259_243 + 600_000);
    }

    #[test]
    fn dma_transfers_pick_their_engines_and_scale_by_efficiency() {
        // 32 partitions starting at 64: engines 8..12.
        let part = dma_copy(
            AccessPattern::sbuf(64, 32, 0, &[Dim::new(1, 1024)], DType::F32),
            AccessPattern::hbm(TensorId(0), 32, 1024, 0, &[Dim::new(1, 1024)], DType::F32),
            DgeMode::None,
        );
        let t = Target::Trn3.dma_transfer(&part).expect("a transfer");
        assert_eq!((t.first_engine, t.engines), (8, 4));
        assert_eq!(t.engine_ids(16).collect::<Vec<_>>(), vec![8, 9, 10, 11]);
        assert_eq!(t.engine_spans(16), [8..12, 0..0]);
        // Engines past the last wrap around to engine 0.
        let wrapped = DmaTransfer {
            first_engine: 14,
            ..t
        };
        assert_eq!(
            wrapped.engine_ids(16).collect::<Vec<_>>(),
            vec![14, 15, 0, 1]
        );
        assert_eq!(wrapped.engine_spans(16), [14..16, 0..2]);
        assert_eq!(t.hbm_bytes, 32 * 4096);
        // A transpose SBUF -> SBUF takes twice the copy, chunk minimum
        // included: 8 rows of 512 B cost 8 x 105 ns as a copy.
        let copy = dma_copy(
            sbuf(DType::F32, 128),
            AccessPattern::sbuf(0, 128, 4096, &[Dim::new(1, 128)], DType::F32),
            DgeMode::None,
        );
        let transpose = Op::DmaTranspose(insn::DmaTranspose {
            dst: sbuf(DType::F32, 128),
            src: AccessPattern::sbuf(0, 128, 4096, &[Dim::new(1, 128)], DType::F32),
            dge: DgeMode::None,
        });
        let c = Target::Trn3.dma_transfer(&copy).expect("a transfer");
        let tr = Target::Trn3.dma_transfer(&transpose).expect("a transfer");
        assert_eq!(c.engine_ps, 8 * 105_000);
        assert_eq!(tr.engine_ps, 2 * c.engine_ps);
        assert_eq!(c.hbm_bytes, 0);
        // Not a transfer.
        assert_eq!(Target::Trn3.dma_transfer(&Op::Nop(insn::Nop {})), None);
    }
}
