//! Calibration of the cycle model against the published figures
//! (`trn3-machine.md`): microbenchmark programs, their simulated
//! throughput, and the table of `docs/cycle-model.md`.
//!
//! Each `Bench` is a `.nkasm` program (also kept as
//! `kernels/bench/<target>/<name>.nkasm`) that loads its operands from an
//! internal HBM tensor (run it with `--poison zero`: the data do not
//! matter) and then issues the measured instruction many times on one
//! queue, or many transfers. The *achieved* rate is the work (flops,
//! elements or bytes) over the steady-state time: from the first measured
//! instruction's start until its queue is free after the last one (for
//! DMA, until the last transfer's data has moved), so the one-off start
//! latencies are left out. `published` is the figure the rate is held to
//! and `expect` what the model should give relative to it: 1 for large
//! operations (reach the peak; the test allows down to 0.95), the
//! documented fraction for small ones (fixed overheads), never above 1.

use nkic_isa::{Program, Target};

use crate::{Inputs, Poison, SimConfig};

/// What a bench measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Tensor-engine flops per ns (= TFLOP/s / 1000): reported in TFLOP/s.
    Tflops,
    /// Elements (per all 128 partitions) per ns.
    ElemsPerNs,
    /// Bytes per ns (GB/s).
    Gbps,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Tflops => "TFLOP/s",
            Unit::ElemsPerNs => "elem/ns",
            Unit::Gbps => "GB/s",
        }
    }
}

/// One microbenchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Bench {
    pub target: Target,
    pub name: String,
    /// What it runs, for the table.
    pub what: String,
    pub text: String,
    /// The queue measured (`tensor`, `vector`, …, or `dma` for all DMA
    /// queues).
    pub queue: &'static str,
    /// Work per measured instruction (flops, elements or bytes).
    pub work: f64,
    pub unit: Unit,
    /// The published figure in `unit` and where it comes from.
    pub published: f64,
    pub source: &'static str,
    /// The expected achieved / published ratio.
    pub expect: f64,
}

/// A bench's simulated result.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub achieved: f64,
    pub ratio: f64,
    /// Steady-state nanoseconds per measured instruction.
    pub ns_per_instruction: f64,
}

/// Measured instructions per compute bench.
const REPS: usize = 16;

fn mhz(target: Target, queue: &str) -> f64 {
    let f = target.figures();
    f64::from(match queue {
        "tensor" => f.tensor_clock_mhz,
        "vector" => f.vector_clock_mhz,
        "scalar" => f.scalar_clock_mhz,
        _ => f.gpsimd_clock_mhz,
    })
}

/// A compute bench: load `loads` (name, AP text, HBM dtype and element
/// count per partition) from internal HBM on dma0, then `REPS` copies of
/// `inst` on `queue`.
#[allow(clippy::too_many_arguments)]
fn compute(
    target: Target,
    name: &str,
    what: &str,
    queue: &'static str,
    loads: &[(&str, &str, &str, u64)],
    inst: &str,
    work: f64,
    unit: Unit,
    published: f64,
    source: &'static str,
    expect: f64,
) -> Bench {
    let mut text = format!("# {what}\n.target {}\n", target.name());
    for (i, (_, _, dtype, n)) in loads.iter().enumerate() {
        text.push_str(&format!(".hbm in{i} {dtype}[128,{n}]\n"));
    }
    text.push_str(".sem loaded\n.queue dma0\n");
    for (i, (_, ap, dtype, n)) in loads.iter().enumerate() {
        text.push_str(&format!(
            "  dma_copy dst={ap} src=hbm.in{i}[0:128*{n}]:{dtype}[1,{n}] signal(loaded)\n"
        ));
    }
    text.push_str(&format!("\n.queue {queue}\n"));
    for r in 0..REPS {
        let wait = if r == 0 {
            format!(" wait(loaded>={})", loads.len())
        } else {
            String::new()
        };
        text.push_str(&format!("  {inst}{wait}\n"));
    }
    Bench {
        target,
        name: name.to_owned(),
        what: what.to_owned(),
        text,
        queue,
        work,
        unit,
        published,
        source,
        expect,
    }
}

/// Tensor-engine benches: `[128, 128] × [128, n]` matmuls.
fn matmuls(target: Target, out: &mut Vec<Bench>) {
    let f = target.figures();
    // The published TensorE peaks (16-bit and fp32 inputs) and their source.
    let (peak, peak_fp32, source) = match target {
        Target::Trn1 => (92.0, 23.0, "§3.2 (A2)"),
        Target::Trn2 | Target::Trn3 => (79.0, 20.0, "§3.2 (T2, T3)"),
    };
    let mm =
        |name: &str, dt: &str, bytes: u64, n: u64, published: f64, source, expect, what: &str| {
            let st = format!("sbuf[0:128]:{dt}[1,128]");
            let mv = format!("sbuf[0:128]+{}:{dt}[1,{n}]", 128 * bytes);
            compute(
                target,
                name,
                what,
                "tensor",
                &[("st", &st, dt, 128), ("mv", &mv, dt, n)],
                &format!("nc_matmul dst=psum[0:128]:f32[1,{n}] stationary={st} moving={mv}"),
                2.0 * 128.0 * 128.0 * n as f64,
                Unit::Tflops,
                published,
                source,
                expect,
            )
        };
    out.push(mm(
        "matmul_bf16",
        "bf16",
        2,
        512,
        peak,
        source,
        1.0,
        "nc_matmul bf16 128×128×512",
    ));
    out.push(mm(
        "matmul_fp16",
        "f16",
        2,
        512,
        peak,
        source,
        1.0,
        "nc_matmul fp16 128×128×512",
    ));
    out.push(mm(
        "matmul_fp32",
        "f32",
        4,
        512,
        peak_fp32,
        source,
        1.0,
        "nc_matmul fp32 128×128×512",
    ));
    // Moving free size 16 < MM_INIT_LATENCY: 64 cycles for 16 columns.
    out.push(mm(
        "matmul_bf16_small",
        "bf16",
        2,
        16,
        peak,
        "§6 MM_INIT_LATENCY 64 cycles",
        16.0 / f64::from(f.mm_init_latency_cycles),
        "nc_matmul bf16 128×128×16 (short moving)",
    ));
    if !f.double_row {
        return;
    }
    // Double-row fp8: contraction 256 per matmul.
    let st = "sbuf[0:128]:f8e4m3[128,2][1,128]";
    let mv = "sbuf[0:128]+256:f8e4m3[512,2][1,512]";
    out.push(compute(
        target,
        "matmul_fp8_double_row",
        "nc_matmul fp8 double_row 256×128×512",
        "tensor",
        &[
            ("st", "sbuf[0:128]:f8e4m3[1,256]", "f8e4m3", 256),
            ("mv", "sbuf[0:128]+256:f8e4m3[1,1024]", "f8e4m3", 1024),
        ],
        &format!(
            "nc_matmul dst=psum[0:128]:f32[1,512] stationary={st} moving={mv} perf_mode=double_row"
        ),
        2.0 * 256.0 * 128.0 * 512.0,
        Unit::Tflops,
        158.0,
        "§3.2 (T2; v4 assumed 2×, §11.3)",
        1.0,
    ));
    if target >= Target::Trn3 {
        let st = "sbuf[0:128]:f8e4m3fnx4[1,128]";
        let mv = "sbuf[0:128]+512:f8e4m3fnx4[1,512]";
        let ss = "sbuf[0:100]+2560:e8m0[1,128]";
        let ms = "sbuf[0:100]+2688:e8m0[1,512]";
        out.push(compute(
            target,
            "matmul_mx",
            "nc_matmul_mx mxfp8 512×128×512",
            "tensor",
            &[
                ("st", st, "f8e4m3fnx4", 128),
                ("mv", mv, "f8e4m3fnx4", 512),
                ("ss", "sbuf[0:128]+2560:e8m0[1,128]", "e8m0", 128),
                ("ms", "sbuf[0:128]+2688:e8m0[1,512]", "e8m0", 512),
            ],
            &format!(
                "nc_matmul_mx dst=psum[0:128]:f32[1,512] stationary={st} moving={mv} stationary_scale={ss} moving_scale={ms}"
            ),
            2.0 * 512.0 * 128.0 * 512.0,
            Unit::Tflops,
            315.0,
            "§3.2 (T3, NC4)",
            1.0,
        ));
    }
}

/// Vector, Scalar and GpSimd elementwise benches over `[128, n]` tiles.
fn elementwise(target: Target, out: &mut Vec<Bench>) {
    let f = target.figures();
    let n: u64 = 4096;
    let fp8_fast = f.vector_fp8_fast;
    // VectorE reads two 32-bit elements per lane per cycle from SBUF (the
    // "256 for other data types" data-path width).
    let lane_inputs = f64::from(f.vector_lane_inputs);
    // NeuronCore-v2 reads 128 elements per cycle on every engine and has
    // no copy performance modes (A2); the v3/v4 sources do not apply.
    let v2 = target == Target::Trn1;
    let pick = |v2_source: &'static str, source: &'static str| if v2 { v2_source } else { source };
    let width = pick(
        "§3.1 v2 128 elem/cycle (A2)",
        "§3.1 256 elem/cycle for 32-bit types (T2, T3)",
    );
    let mut push = |name: &str,
                    what: &str,
                    queue: &'static str,
                    dt: &str,
                    bytes: u64,
                    inst: &str,
                    two: bool,
                    per_cycle: f64,
                    source: &'static str,
                    elems: u64,
                    expect: f64| {
        let a = format!("sbuf[0:128]:{dt}[1,{elems}]");
        let b = format!("sbuf[0:128]+{}:{dt}[1,{elems}]", elems * bytes);
        let c = format!("sbuf[0:128]+{}:{dt}[1,{elems}]", 2 * elems * bytes);
        let mut loads = vec![("a", a.as_str(), dt, elems)];
        if two {
            loads.push(("b", b.as_str(), dt, elems));
        }
        let inst = inst
            .replace("{a}", &a)
            .replace("{b}", &b)
            .replace("{c}", &c);
        out.push(compute(
            target,
            name,
            what,
            queue,
            &loads,
            &inst,
            128.0 * elems as f64,
            Unit::ElemsPerNs,
            per_cycle * mhz(target, queue) / 1000.0,
            source,
            expect,
        ));
    };
    let copy = "tensor_copy dst={c} src={a}";
    push(
        "vector_copy_fp32",
        "Vector tensor_copy fp32",
        "vector",
        "f32",
        4,
        copy,
        false,
        lane_inputs * 128.0,
        width,
        n,
        1.0,
    );
    // The 16-bit copies take the fast copy mode where the target has one.
    for (name, what, dtype) in [
        (
            "vector_copy_bf16",
            "Vector tensor_copy bf16 (SBUF, contiguous)",
            "bf16",
        ),
        (
            "vector_copy_fp16",
            "Vector tensor_copy fp16 (SBUF, contiguous)",
            "f16",
        ),
    ] {
        push(
            name,
            what,
            "vector",
            dtype,
            2,
            copy,
            false,
            128.0 * f64::from(f.vector_fast_copy),
            pick(
                "§3.1 v2 128 elem/cycle, no copy mode (A2)",
                "§3.1, §7.2 4× mode (T2, T3)",
            ),
            n,
            1.0,
        );
    }
    push(
        "vector_copy_fp8",
        "Vector tensor_copy fp8 e4m3 (SBUF, contiguous)",
        "vector",
        "f8e4m3",
        1,
        copy,
        false,
        if fp8_fast { 512.0 } else { lane_inputs * 128.0 },
        if fp8_fast {
            "§3.1 v4 512 elem/cycle for fp8 (T3)"
        } else {
            pick(
                "§3.1 v2 128 elem/cycle (A2)",
                "§3.1 v3 256 elem/cycle for non-16-bit types (T2)",
            )
        },
        n,
        1.0,
    );
    let scale = "tensor_scalar dst={c} src={a} op0=multiply operand0=2.0";
    push(
        "vector_tensor_scalar_fp32",
        "Vector tensor_scalar fp32",
        "vector",
        "f32",
        4,
        scale,
        false,
        lane_inputs * 128.0,
        width,
        n,
        1.0,
    );
    let add = "tensor_tensor dst={c} src0={a} src1={b} op=add";
    push(
        "vector_tensor_tensor_fp32",
        "Vector tensor_tensor add fp32",
        "vector",
        "f32",
        4,
        add,
        true,
        lane_inputs * 64.0,
        pick(
            "§7.1 two inputs, 2N cycles (A2)",
            "§3.1 256 input elem/cycle, two inputs (T2, T3)",
        ),
        n,
        1.0,
    );
    push(
        "vector_tensor_tensor_bf16",
        "Vector tensor_tensor add bf16 (SBUF)",
        "vector",
        "bf16",
        2,
        add,
        true,
        128.0,
        pick(
            "§7.2 v2 bf16 fast path, N cycles (OLDISA)",
            "§7.2 2× mode, N cycles (T2)",
        ),
        n,
        1.0,
    );
    let act = "activation dst={c} src={a} func=exp scale=1.0";
    push(
        "scalar_activation_fp32",
        "Scalar activation exp fp32",
        "scalar",
        "f32",
        4,
        act,
        false,
        128.0,
        "§3.1 128 elem/cycle, §7.3 (A2, OLDISA)",
        n,
        1.0,
    );
    push(
        "scalar_activation_bf16",
        "Scalar activation exp bf16",
        "scalar",
        "bf16",
        2,
        act,
        false,
        128.0,
        "§7.3 activation N cycles (OLDISA)",
        n,
        1.0,
    );
    push(
        "scalar_copy_bf16",
        "Scalar tensor_copy bf16",
        "scalar",
        "bf16",
        2,
        copy,
        false,
        if f.scalar_fast > 1 { 256.0 } else { 128.0 },
        if f.scalar_fast > 1 {
            "§3.1 v4 256 elem/cycle bf16 (T3)"
        } else {
            pick("§3.1 v2 128 elem/cycle (A2)", "§3.1 v3 128 elem/cycle (T2)")
        },
        n,
        1.0,
    );
    push(
        "gpsimd_copy_fp32",
        "GpSimd tensor_copy fp32",
        "gpsimd",
        "f32",
        4,
        copy,
        false,
        128.0,
        "§3.1 128 elem/cycle (A2, T3)",
        n,
        1.0,
    );
    // Small tiles pay MIN_II (64 cycles) per instruction.
    push(
        "vector_copy_fp32_small",
        "Vector tensor_copy fp32, 16 elements/partition",
        "vector",
        "f32",
        4,
        copy,
        false,
        lane_inputs * 128.0,
        "§7.1 MIN_II 64 cycles (SHARED)",
        16,
        16.0 / (lane_inputs * f64::from(f.min_ii_cycles)),
    );
}

/// The relative DMA throughput read off DMAO-fig (§8.3), by bytes per
/// partition.
fn dmao_fig(bytes: u64) -> Option<f64> {
    [
        (32, 0.019),
        (64, 0.029),
        (128, 0.055),
        (256, 0.105),
        (512, 0.21),
        (1024, 0.43),
        (2048, 0.82),
        (4096, 0.97),
        (8192, 0.98),
        (16384, 0.99),
        (32768, 1.0),
    ]
    .into_iter()
    .find(|(b, _)| *b == bytes)
    .map(|(_, r)| r)
}

/// The published aggregate DMA bandwidth of one core (DBW table), capped
/// by the core's HBM share.
fn dma_published(target: Target) -> (f64, &'static str) {
    match target {
        Target::Trn1 => (272.0, "§8.1 aggregate per core 272 GB/s (DBW)"),
        Target::Trn3 => (528.0, "§8.1 aggregate per core 528 GB/s (DBW)"),
        Target::Trn2 => (363.0, "§1 HBM share per core ≈ 363 GB/s (< 368 DBW)"),
    }
}

/// The model's steady-state efficiency for `bytes`-long rows on one
/// queue: each row is one chunk of `max(bytes / bw +
/// dma_chunk_overhead_ns, dma_chunk_min_ns)` (the engine bandwidth; the
/// core's HBM share binds instead when it is lower).
pub fn dma_efficiency(target: Target, bytes: u64) -> f64 {
    let f = target.figures();
    let engine_bw = f64::from(f.dma_engine_bytes_per_ns);
    let hbm_bw = f64::from(f.hbm_gbps_per_core) / f64::from(f.dma_engines);
    let peak = bytes as f64 / engine_bw.min(hbm_bw);
    let chunk = (bytes as f64 / engine_bw + f64::from(f.dma_chunk_overhead_ns))
        .max(f64::from(f.dma_chunk_min_ns))
        .max(peak);
    peak / chunk
}

/// DMA benches: HBM → SBUF copies of `[128, bytes/4]` fp32 tiles.
fn dmas(target: Target, out: &mut Vec<Bench>) {
    let (published, source) = dma_published(target);
    for bytes in [64u64, 512, 2048, 8192, 32768] {
        let n = bytes / 4;
        // About 16 MiB in total, at least 16 transfers.
        let reps = ((16u64 << 20) / (128 * bytes)).clamp(16, 512);
        let mut text = format!(
            "# dma_copy HBM → SBUF, [128, {n}] fp32 ({bytes} B per partition), {reps} transfers on one queue\n.target {}\n.hbm src f32[128,{n}]\n.queue dma0\n",
            target.name()
        );
        for _ in 0..reps {
            text.push_str(&format!(
                "  dma_copy dst=sbuf[0:128]:f32[1,{n}] src=hbm.src[0:128*{n}]:f32[1,{n}]\n"
            ));
        }
        let expect = dma_efficiency(target, bytes);
        let fig =
            dmao_fig(bytes).map_or(String::new(), |r| format!("; DMAO-fig {:.0} %", 100.0 * r));
        out.push(Bench {
            target,
            name: format!("dma_{bytes}"),
            what: format!("dma_copy HBM→SBUF, {bytes} B/partition{fig}"),
            text,
            queue: "dma",
            work: (128 * bytes) as f64,
            unit: Unit::Gbps,
            published,
            source,
            expect,
        });
    }
    // Sixteen queues at once share the engines: the aggregate stays at the
    // cap.
    let n = 2048;
    let mut text = format!(
        "# dma_copy HBM → SBUF on 16 queues at once, [128, {n}] fp32 (8 KiB per partition), 8 transfers each\n.target {}\n.hbm src f32[128,{n}]\n",
        target.name()
    );
    for q in 0..16 {
        text.push_str(&format!(".queue dma{q}\n"));
        for _ in 0..8 {
            text.push_str(&format!(
                "  dma_copy dst=sbuf[0:128]+{}:f32[1,{n}] src=hbm.src[0:128*{n}]:f32[1,{n}]\n",
                q * n * 4
            ));
        }
    }
    out.push(Bench {
        target,
        name: "dma_16_queues".to_owned(),
        what: "dma_copy on 16 queues at once, 8 KiB/partition".to_owned(),
        text,
        queue: "dma",
        work: (128 * 8192) as f64,
        unit: Unit::Gbps,
        published,
        source,
        expect: 1.0,
    });
}

/// Every bench of `target`.
pub fn benches(target: Target) -> Vec<Bench> {
    let mut out = Vec::new();
    matmuls(target, &mut out);
    elementwise(target, &mut out);
    dmas(target, &mut out);
    out
}

impl Bench {
    /// The bench's program.
    pub fn program(&self) -> Result<Program, String> {
        nkic_isa::assemble(&self.text).map_err(|errors| {
            errors
                .iter()
                .map(|e| format!("{}: {}", self.name, e.message))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    /// Runs the bench and measures its steady-state rate.
    pub fn measure(&self) -> Result<Measured, String> {
        let program = self.program()?;
        let config = SimConfig {
            poison: Poison::Zero,
            ..SimConfig::default()
        };
        let verified = nkic_isa::verify(&program).map_err(|errors| {
            errors
                .iter()
                .map(|e| format!("{}: {e}", self.name))
                .collect::<Vec<_>>()
                .join("\n")
        })?;
        let res = crate::run(verified, &Inputs::new(), &config)
            .map_err(|e| format!("{}: {e}", self.name))?;
        let events: Vec<_> = res
            .trace
            .iter()
            .filter(|e| {
                if self.queue == "dma" {
                    e.dma.is_some()
                } else {
                    e.queue.to_string() == self.queue
                }
            })
            .collect();
        let count = events.len();
        let first = events.iter().map(|e| e.start_ps).min().unwrap_or(0);
        let last = events
            .iter()
            .map(|e| e.dma.as_ref().map_or(e.free_ps, |d| d.data_end_ps))
            .max()
            .unwrap_or(0);
        let ns = (last.saturating_sub(first)) as f64 / 1000.0;
        if count == 0 || ns <= 0.0 {
            return Err(format!("{}: nothing measured", self.name));
        }
        let rate = self.work * count as f64 / ns;
        let achieved = match self.unit {
            Unit::Tflops => rate / 1000.0,
            Unit::ElemsPerNs | Unit::Gbps => rate,
        };
        Ok(Measured {
            achieved,
            ratio: achieved / self.published,
            ns_per_instruction: ns / count as f64,
        })
    }
}

/// The calibration table of `docs/cycle-model.md` for `targets`, in
/// Markdown.
pub fn table(targets: &[Target]) -> Result<String, String> {
    let mut s = String::from(
        "| target | bench | unit | simulated | published | ratio | expected | source |\n|---|---|---|---|---|---|---|---|\n",
    );
    for &t in targets {
        for b in benches(t) {
            let m = b.measure()?;
            s.push_str(&format!(
                "| {} | {} | {} | {:.2} | {:.2} | {:.3} | {:.3} | {} |\n",
                t.name(),
                b.what,
                b.unit.name(),
                m.achieved,
                b.published,
                m.ratio,
                b.expect,
                b.source
            ));
        }
    }
    Ok(s)
}
