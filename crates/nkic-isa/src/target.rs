//! Target machines and their figures: the one source of truth for clocks,
//! memory sizes, datapath widths, fixed overheads and DMA figures.
//!
//! The numbers restate `trn3-machine.md` §10 (and §2, §3, §6–§8 where §10
//! points to them). Both the backend (for scheduling decisions) and the
//! simulator (for start and end times) read them through `Target::figures`,
//! and the cost function in `cost.rs` is written only in terms of these
//! fields. Figures tagged "assume" in the machine spec are marked so here.

use std::fmt;

use crate::dtype::DType;
use crate::engine::Engine;

/// The machine a program is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// Trainium1 (and Inferentia2), NeuronCore-v2.
    Trn1,
    /// Trainium2, NeuronCore-v3.
    Trn2,
    /// Trainium3, NeuronCore-v4 (the primary target).
    Trn3,
}

impl Target {
    /// Every target, oldest first.
    pub const ALL: [Target; 3] = [Target::Trn1, Target::Trn2, Target::Trn3];

    /// The spelling in `.nkasm` (`.target trn3`) and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::Trn1 => "trn1",
            Target::Trn2 => "trn2",
            Target::Trn3 => "trn3",
        }
    }

    pub fn from_name(text: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == text)
    }

    /// Every target's name for messages: `trn1, trn2 or trn3`.
    pub fn choices() -> String {
        let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The target's figures.
    pub fn figures(self) -> &'static Figures {
        match self {
            Target::Trn1 => &TRN1,
            Target::Trn2 => &TRN2,
            Target::Trn3 => &TRN3,
        }
    }

    /// True when `dtype` exists on this target (fp8 e4m3fn and the MX types
    /// are v4 only; v2 already has fp8 e4m3 and e5m2, its "cFP8").
    pub fn supports_dtype(self, dtype: DType) -> bool {
        match dtype {
            DType::F8E4M3FN
            | DType::F8E8M0
            | DType::F8E4M3FNx4
            | DType::F8E5M2x4
            | DType::F4E2M1FNx4 => self >= Target::Trn3,
            _ => true,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// All cost-model and capacity figures of one target.
///
/// Clocks are in MHz so that cycle → picosecond conversions stay integral
/// (`ps = ceil(cycles · 1_000_000 / mhz)`), which keeps simulated times
/// deterministic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figures {
    /// NeuronCore generation (2 = Trn1, 3 = Trn2, 4 = Trn3), as
    /// `nisa.nc_version`.
    pub nc_version: u8,

    // ---- Clocks (§3.1, §10).
    pub tensor_clock_mhz: u32,
    pub vector_clock_mhz: u32,
    pub scalar_clock_mhz: u32,
    pub gpsimd_clock_mhz: u32,
    /// The Sync sequencer and the DMA queues' sequencers (assume: the
    /// Scalar clock; the spec gives none).
    pub sync_clock_mhz: u32,

    // ---- On-chip memories (§2).
    pub sbuf_partitions: u32,
    /// Physical SBUF bytes per partition.
    pub sbuf_bytes_per_partition: u32,
    /// Usable SBUF bytes per partition (`tile_size.sbuf_fmax_bytes`); SBUF
    /// access patterns must stay below this. trn2 uses the whole partition
    /// (docs/cycle-model.md, "SBUF capacity").
    pub sbuf_usable_bytes_per_partition: u32,
    pub psum_bytes_per_partition: u32,
    pub psum_banks: u32,
    pub psum_bank_bytes: u32,
    /// PSUM free-address alignment in bytes (`psum_min_align`).
    pub psum_min_align: u32,
    /// Outstanding matmul accumulation groups (one per PSUM bank).
    pub psum_accum_groups_max: u32,
    /// Scalar registers per sequencer (and per DMA queue in this pseudo-ISA).
    pub sequencer_registers: u32,
    /// Per-partition free-size limit of Vector/Scalar/GpSimd instructions on
    /// SBUF operands, in elements (§2.1 of isa.md).
    pub max_free_elems_sbuf: u32,
    /// The same limit for PSUM operands.
    pub max_free_elems_psum: u32,

    // ---- TensorE (§6).
    /// Stationary free size limit (`gemm_stationary_fmax`).
    pub matmul_stationary_fmax: u32,
    /// Moving free size limit with an fp32 PSUM destination.
    pub matmul_moving_fmax_fp32: u32,
    /// Moving free size limit with a bf16 PSUM destination (v4); equal to
    /// the fp32 limit where bf16 PSUM does not exist.
    pub matmul_moving_fmax_bf16: u32,
    pub mm_init_latency_cycles: u32,
    /// Multiplier of the matmul interval for fp32 (or tf32) inputs.
    pub mm_fp32_factor: u32,
    /// LoadStationary interval = stationary free size / this.
    pub ls_divisor: u32,
    /// PSUM banks one matmul result may span (v3: 1, v4: all 8).
    pub matmul_psum_banks: u32,
    /// Whether PSUM can hold bf16 matmul results (v4).
    pub psum_bf16: bool,
    /// Whether `nc_matmul` supports FP8 double-row mode.
    pub double_row: bool,
    /// Smallest PE tile (rows and columns), 64 or 32.
    pub pe_tile_min: u32,

    // ---- Vector / Scalar / GpSimd (§7).
    pub min_ii_cycles: u32,
    /// Added when an instruction depends on the previous instruction of the
    /// same queue.
    pub dependent_issue_overhead_cycles: u32,
    pub sram_access_overhead_cycles: u32,
    pub gpsimd_start_cycles: u32,
    /// ScalarE/VectorE accumulator read-out into `reduce_res`.
    pub act_read_accumulator_cycles: u32,
    /// Issue → result visible, on top of the work cycles (assume).
    pub pipeline_latency_cycles: u32,
    /// Interval multiplier when an operand's innermost stride exceeds 16 bytes.
    pub stride_penalty: u32,
    /// VectorE speed-up of `tensor_copy`/`tensor_scalar` with both sides
    /// 16-bit (or fp8 where `vector_fp8_fast`) in SBUF and contiguous.
    pub vector_fast_copy: u32,
    /// VectorE speed-up of the same ops when not contiguous or one side is PSUM.
    pub vector_fast_copy_slow: u32,
    /// Whether fp8 operands qualify for the VectorE fast modes (v4).
    pub vector_fp8_fast: bool,
    /// VectorE input elements read per lane per cycle for the types
    /// without a performance mode (fp32, int32, …) when every input is in
    /// SBUF: the data-path width "256 input/output for other data types"
    /// (trainium2_arch.rst, trainium3_arch.rst) over 128 lanes; v2 had
    /// 128, that is 1. PSUM inputs are read at one element per lane per
    /// cycle (the measured VectorE time of the trn2 v5 matmul).
    pub vector_lane_inputs: u32,
    /// ScalarE speed-up of `tensor_scalar`/`tensor_copy`/`activation(copy)`
    /// on 16-bit or fp8 data.
    pub scalar_fast: u32,
    /// VectorE `exponential` and `quantize_mx` elements per lane per cycle.
    pub vector_exp_rate: u32,
    /// VectorE `reciprocal` cycles per element.
    pub vector_reciprocal_factor: u32,
    /// GpSimd `tensor_scalar` cost multiplier relative to ScalarE.
    pub gpsimd_rsqrt_factor: u32,
    /// Dynamic-offset on-chip copies (`MIN_II_DYNAMIC`).
    pub min_ii_dynamic_cycles: u32,
    /// `bn_stats` input free-size limit (`bn_stats_fmax`).
    pub bn_stats_fmax: u32,

    // ---- DMA (§8).
    pub dma_engines: u32,
    /// DMA queues visible to a program (`dma0..dma{n-1}`).
    pub dma_queues: u32,
    /// Sustained bytes per ns of one DMA engine.
    pub dma_engine_bytes_per_ns: u32,
    /// Partitions served per DMA engine for a 128-partition SBUF side.
    pub dma_partitions_per_engine: u32,
    pub dma_start_latency_ns: u32,
    /// Minimum time of one contiguous chunk of a transfer (fit, "X" in
    /// §10): the DMAO-fig curve of one queue's transfers. It bounds a
    /// transfer's own time, not how long it occupies its engines.
    pub dma_chunk_min_ns: u32,
    /// Engine occupancy of one contiguous chunk on top of its bytes (fit
    /// to the measured DMA-bound trn2 matmuls, docs/cycle-model.md
    /// "Published measurements"; trn3 assumes the same bytes' worth of
    /// engine time, 16 ns × 23 / 33; trn1's is fit to its matmul tutorial
    /// within the bound its 8 KiB peak check sets, "The trn1 target").
    pub dma_chunk_overhead_ns: u32,
    pub hwdge_instruction_ns: u32,
    /// Whether hardware DGE and DMA transpose exist (v3+).
    pub hwdge: bool,
    /// DMA transpose efficiency in percent, HBM→SBUF and SBUF→SBUF.
    pub dma_transpose_pct_hbm: u32,
    pub dma_transpose_pct_sbuf: u32,
    /// HBM bandwidth share of one core in GB/s (lower end of the derived range).
    pub hbm_gbps_per_core: u32,

    // ---- Multi-core launches (LNC=2).
    /// From the last arrival at a `core_barrier` to its completion on every
    /// core: one semaphore increment sent to the peer core (assume: one DMA
    /// start latency, as the increment is a small write through the DMA
    /// fabric; the spec gives no figure).
    pub core_barrier_ns: u32,
    /// Physical cores one launch may use (`nl.program_id` range under LNC).
    pub max_lnc: u32,
    /// Whether VectorE and GpSimd serialise their SBUF accesses and VectorE
    /// and ScalarE their PSUM accesses (`Cost::ports`).
    pub shared_ports: bool,
}

impl Figures {
    /// The clock of an engine in MHz.
    pub fn clock_mhz(&self, engine: Engine) -> u32 {
        match engine {
            Engine::Tensor => self.tensor_clock_mhz,
            Engine::Vector => self.vector_clock_mhz,
            Engine::Scalar => self.scalar_clock_mhz,
            Engine::GpSimd => self.gpsimd_clock_mhz,
            Engine::Sync | Engine::Dma => self.sync_clock_mhz,
        }
    }

    /// Converts `cycles` of `engine` into picoseconds, rounding up.
    pub fn cycles_to_ps(&self, engine: Engine, cycles: u64) -> u64 {
        let mhz = u64::from(self.clock_mhz(engine));
        cycles.saturating_mul(1_000_000).div_ceil(mhz.max(1))
    }

    /// The Tensor engine's dense peak in TFLOP/s for 16-bit (bf16/fp16)
    /// inputs: a 128 × 128 PE array (`sbuf_partitions` rows ×
    /// `matmul_stationary_fmax` columns), one multiply-add (2 flops) per PE
    /// per cycle. fp32 is `1 / mm_fp32_factor` of it, fp8 double-row 2×,
    /// MX 4× (trn3-machine.md §3.2).
    pub fn tensor_peak_tflops(&self) -> f64 {
        2.0 * f64::from(self.sbuf_partitions)
            * f64::from(self.matmul_stationary_fmax)
            * f64::from(self.tensor_clock_mhz)
            / 1e6
    }

    /// The most bytes per ns (GB/s) all DMA engines together move: each
    /// engine at the lower of its own bandwidth and its share of the
    /// core's HBM bandwidth.
    pub fn dma_peak_gbps(&self) -> f64 {
        let engines = f64::from(self.dma_engines.max(1));
        engines
            * f64::from(self.dma_engine_bytes_per_ns)
                .min(f64::from(self.hbm_gbps_per_core) / engines)
    }

    /// Total PSUM bytes per partition available to matmul output (all banks).
    pub fn psum_total_bytes(&self) -> u32 {
        self.psum_banks * self.psum_bank_bytes
    }
}

/// Trainium1 / NeuronCore-v2: Trainium2's figures but for these (the
/// sources of each are in docs/cycle-model.md, "The trn1 target"). The
/// fixed overheads Trainium2 keeps (MIN_II, dependent issue, SBUF access,
/// GpSimd start, MM_INIT_LATENCY, accumulator read-out, stride penalty)
/// are the v2 figures the machine spec carries over.
pub static TRN1: Figures = Figures {
    nc_version: 2,
    tensor_clock_mhz: 2800,
    vector_clock_mhz: 1120,
    scalar_clock_mhz: 1400,
    gpsimd_clock_mhz: 1400,
    sync_clock_mhz: 1400,
    sbuf_bytes_per_partition: 196_608,
    sbuf_usable_bytes_per_partition: 196_608,
    double_row: false,
    pe_tile_min: 64,
    vector_fast_copy: 1,
    vector_fast_copy_slow: 1,
    vector_lane_inputs: 1,
    dma_engine_bytes_per_ns: 17,
    dma_chunk_overhead_ns: 25,
    hwdge: false,
    hbm_gbps_per_core: 410,
    max_lnc: 1,
    shared_ports: true,
    ..TRN2
};

/// Trainium2 / NeuronCore-v3.
pub static TRN2: Figures = Figures {
    nc_version: 3,
    tensor_clock_mhz: 2400,
    vector_clock_mhz: 960,
    scalar_clock_mhz: 1200,
    gpsimd_clock_mhz: 1200,
    sync_clock_mhz: 1200,
    sbuf_partitions: 128,
    sbuf_bytes_per_partition: 229_376,
    sbuf_usable_bytes_per_partition: 229_376,
    psum_bytes_per_partition: 16_384,
    psum_banks: 8,
    psum_bank_bytes: 2048,
    psum_min_align: 4,
    psum_accum_groups_max: 8,
    sequencer_registers: 64,
    max_free_elems_sbuf: 65_536,
    max_free_elems_psum: 4096,
    matmul_stationary_fmax: 128,
    matmul_moving_fmax_fp32: 512,
    matmul_moving_fmax_bf16: 512,
    matmul_psum_banks: 1,
    mm_init_latency_cycles: 64,
    mm_fp32_factor: 4,
    ls_divisor: 4,
    psum_bf16: false,
    double_row: true,
    pe_tile_min: 32,
    min_ii_cycles: 64,
    dependent_issue_overhead_cycles: 100,
    sram_access_overhead_cycles: 60,
    gpsimd_start_cycles: 150,
    act_read_accumulator_cycles: 64,
    pipeline_latency_cycles: 64,
    stride_penalty: 2,
    vector_fast_copy: 4,
    vector_fast_copy_slow: 2,
    vector_fp8_fast: false,
    vector_lane_inputs: 2,
    scalar_fast: 1,
    vector_exp_rate: 1,
    vector_reciprocal_factor: 8,
    gpsimd_rsqrt_factor: 4,
    min_ii_dynamic_cycles: 600,
    bn_stats_fmax: 512,
    dma_engines: 16,
    dma_queues: 16,
    dma_engine_bytes_per_ns: 23,
    dma_partitions_per_engine: 8,
    dma_start_latency_ns: 1300,
    dma_chunk_min_ns: 105,
    dma_chunk_overhead_ns: 16,
    hwdge_instruction_ns: 600,
    hwdge: true,
    dma_transpose_pct_hbm: 90,
    dma_transpose_pct_sbuf: 50,
    hbm_gbps_per_core: 363,
    core_barrier_ns: 1300,
    max_lnc: 2,
    shared_ports: false,
};

/// Trainium3 / NeuronCore-v4: Trainium2's figures but for these.
pub static TRN3: Figures = Figures {
    nc_version: 4,
    vector_clock_mhz: 1200,
    sbuf_bytes_per_partition: 262_144,
    sbuf_usable_bytes_per_partition: 245_752,
    matmul_moving_fmax_fp32: 4096,
    matmul_moving_fmax_bf16: 8192,
    matmul_psum_banks: 8,
    psum_bf16: true,
    vector_fp8_fast: true,
    scalar_fast: 2,
    vector_exp_rate: 4,
    dma_engine_bytes_per_ns: 33,
    dma_chunk_overhead_ns: 11,
    hbm_gbps_per_core: 588,
    ..TRN2
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_dtypes() {
        assert_eq!(Target::from_name("trn3"), Some(Target::Trn3));
        assert_eq!(Target::from_name("trn1"), Some(Target::Trn1));
        assert_eq!(Target::from_name("trn4"), None);
        assert_eq!(Target::choices(), "trn1, trn2 or trn3");
        assert!(Target::Trn1.supports_dtype(DType::F8E5M2));
        assert!(!Target::Trn1.supports_dtype(DType::F8E4M3FN));
        assert!(Target::Trn3.supports_dtype(DType::F8E4M3FN));
        assert!(!Target::Trn2.supports_dtype(DType::F8E5M2x4));
        assert!(Target::Trn2.supports_dtype(DType::BF16));
    }

    /// trn1's figures give NeuronCore-v2's published peaks and memories
    /// (docs/cycle-model.md, "The trn1 target").
    #[test]
    fn trn1_figures() {
        let f = Target::Trn1.figures();
        // 92 TFLOP/s bf16 (A2), rounded from 91.75.
        assert!((f.tensor_peak_tflops() - 91.75).abs() < 0.01);
        // 16 DMA engines × 17 B/ns; the 410 GB/s HBM share does not bind.
        assert_eq!(f.dma_peak_gbps(), 272.0);
        // 24 MiB SBUF, 2 MiB PSUM.
        assert_eq!(f.sbuf_partitions * f.sbuf_bytes_per_partition, 24 << 20);
        assert_eq!(f.sbuf_partitions * f.psum_total_bytes(), 2 << 20);
        assert_eq!(f.cycles_to_ps(Engine::Tensor, 28), 10_000);
        assert_eq!(f.max_lnc, 1);
    }

    #[test]
    fn figures() {
        let f = Target::Trn3.figures();
        assert_eq!(f.sbuf_usable_bytes_per_partition, 245_752);
        assert_eq!(f.psum_total_bytes(), 16_384);
        // One v4 TensorE cycle is 416.67 ps, rounded up.
        assert_eq!(f.cycles_to_ps(Engine::Tensor, 1), 417);
        assert_eq!(f.cycles_to_ps(Engine::Tensor, 512), 213_334);
        assert_eq!(f.cycles_to_ps(Engine::Vector, 64), 53_334);
        assert_eq!(
            Target::Trn2.figures().cycles_to_ps(Engine::Vector, 96),
            100_000
        );
    }
}
