//! `nkic profile`: the run summary of a traced run — simulated time,
//! per-queue busy and idle fractions, achieved TFLOP/s and HBM GB/s against
//! the target's peaks, the lower bound, the critical path and the source
//! lines that take the most time — as text or JSON.
//!
//! # Definitions
//!
//! * A queue is *busy* from an instruction's start until the queue may
//!   issue its next one (`TraceEvent::free_ps`; for a DMA transfer, until
//!   its data has moved), except while a DMA transfer waits for DMA
//!   engines that earlier transfers hold (`QueueStats::dma_wait_ps`).
//!   Busy and idle fractions are of the total simulated time. *Waiting* is
//!   the time between when a queue could have issued an instruction and
//!   when a semaphore let it (`start_ps - ready_ps`), plus that wait for
//!   DMA engines.
//! * The DMA engines' busy fraction is the data-moving time of every
//!   transfer on every engine it used over `dma_engines` × the run.
//! * Achieved TFLOP/s counts Tensor-engine flops (2 per multiply-add) over
//!   the whole run, against the peak of the matmuls it executed: the
//!   dense bf16 peak (`Figures::tensor_peak_tflops`) times each matmul's
//!   mode factor (fp8 `double_row` 2, MX 4, fp32/tf32 inputs
//!   1/`mm_fp32_factor`, or twice that with a one-zero operand), weighted
//!   by flops: `flops / Σ (flops_i / peak_i)`. `peak_mode` names the mode
//!   (`bf16 dense`, `fp8 double_row`, `mx`, `fp32`, or `mixed`); a run
//!   without matmuls is measured against the bf16 peak.
//!   Achieved HBM GB/s counts bytes read plus written by DMA over the whole
//!   run, against the core's HBM share (`hbm_gbps_per_core`) and the DMA
//!   engines' aggregate (`Figures::dma_peak_gbps`), the lower of which the
//!   simulator can reach.
//! * The *critical path* walks back from the instruction that completes
//!   last, at each step to whatever decided the current instruction's time:
//!   the transfer that held its DMA engines, the instruction whose
//!   semaphore increment released it, the producer it read from (dependent
//!   issue), or the previous instruction of its queue. Each instruction on
//!   the path is charged the time from its predecessor's release to its
//!   own, so the charges add up to the simulated time. The path is reported
//!   grouped by queue, instruction and source line.
//! * *Top source lines* rank `file:line` by the busy time of their
//!   instructions (all queues; a transfer's wait for DMA engines is not
//!   busy time).
//! * A multi-core launch (LNC=2) lists the queues of every core (named
//!   `core0.vector`, `core1.dma0`, … in text; JSON entries gain `core`),
//!   measures TFLOP/s, HBM GB/s and the DMA engines against the peaks of
//!   all its cores together (each core its own Tensor engine, HBM share
//!   and 16 DMA engines), and follows the critical path across cores
//!   through `core_barrier`s.

use nkic_isa::insn;
use std::collections::{BTreeMap, HashMap};

use nkic_backend::LowerBound;
use nkic_isa::{Launch, Queue};
use nkic_sim::{Cause, RunResult, TraceEvent};
use serde_json::{Value, json};

/// How many source lines and critical-path groups the summary lists.
const TOP: usize = 10;

/// One queue's share of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSummary {
    /// The core in a multi-core launch (`None` in a one-core run).
    pub core: Option<u8>,
    pub queue: Queue,
    pub instructions: u64,
    pub busy_ns: f64,
    pub busy: f64,
    pub idle: f64,
    pub wait_ns: f64,
}

/// One group of the critical path: the instructions of one queue, mnemonic
/// and source line on it.
#[derive(Clone, Debug, PartialEq)]
pub struct PathGroup {
    /// The core in a multi-core launch (`None` in a one-core run).
    pub core: Option<u8>,
    pub queue: Queue,
    pub mnemonic: &'static str,
    pub source: String,
    pub instructions: u64,
    pub ns: f64,
    pub share: f64,
}

/// One source line's time.
#[derive(Clone, Debug, PartialEq)]
pub struct LineTime {
    pub source: String,
    pub instructions: u64,
    pub busy_ns: f64,
    pub share: f64,
}

/// The profile summary of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub target: &'static str,
    /// Physical cores of the launch (2 under LNC=2).
    pub cores: usize,
    /// Per core: its simulated time (its last completion, ns) and its
    /// executed instructions.
    pub per_core: Vec<(f64, u64)>,
    pub simulated_ns: f64,
    pub instructions: u64,
    pub queues: Vec<QueueSummary>,
    pub flops: u64,
    pub tflops: f64,
    pub peak_tflops: f64,
    /// The matmul mode `peak_tflops` is for (module doc).
    pub peak_mode: String,
    pub hbm_bytes: u64,
    pub hbm_gbps: f64,
    pub hbm_peak_gbps: f64,
    pub dma_peak_gbps: f64,
    /// The fraction of the run the DMA engines (shared by all DMA queues)
    /// spent moving data, averaged over the engines.
    pub dma_engines_busy: f64,
    pub lower_bound_ns: Option<f64>,
    pub limited_by: Option<String>,
    pub path_instructions: u64,
    pub path: Vec<PathGroup>,
    pub top_lines: Vec<LineTime>,
}

/// `file:line` of an event's line-table entry (in its core's program), or
/// `-` without one.
pub fn source_of(launch: &Launch, event: &TraceEvent) -> String {
    event
        .line
        .and_then(|l| launch.core(usize::from(event.core))?.location(l))
        .map_or_else(|| "-".to_owned(), |(f, line, _)| format!("{f}:{line}"))
}

/// A queue's name in reports: `vector`, or `core1.vector` with a core.
pub fn queue_name(core: Option<u8>, queue: Queue) -> String {
    match core {
        Some(c) => format!("core{c}.{queue}"),
        None => queue.to_string(),
    }
}

/// Builds the summary of a traced run (`SimConfig::trace` on).
pub fn summarize(launch: &Launch, result: &RunResult, bound: Option<&LowerBound>) -> Summary {
    let target = launch.target();
    let f = target.figures();
    let cores = launch.cores.len().max(1);
    let multi = cores > 1;
    let core_of = |c: u8| multi.then_some(c);
    let total = result.total_ps;
    let frac = |ps: u64| {
        if total == 0 {
            0.0
        } else {
            ps as f64 / total as f64
        }
    };
    let mut wait: BTreeMap<(u8, Queue), u64> = BTreeMap::new();
    for e in &result.trace {
        *wait.entry((e.core, e.queue)).or_default() += e.start_ps.saturating_sub(e.ready_ps);
    }
    let queues = result
        .per_queue
        .iter()
        .map(|q| QueueSummary {
            core: core_of(q.core),
            queue: q.queue,
            instructions: q.instructions,
            busy_ns: q.busy_ps as f64 / 1000.0,
            busy: frac(q.busy_ps),
            idle: 1.0 - frac(q.busy_ps).min(1.0),
            wait_ns: (wait.get(&(q.core, q.queue)).copied().unwrap_or(0) + q.dma_wait_ps) as f64
                / 1000.0,
        })
        .collect();
    let ns = total as f64 / 1000.0;
    let per_ns = |x: u64| if ns > 0.0 { x as f64 / ns } else { 0.0 };
    let hbm_bytes = result.hbm_bytes_read + result.hbm_bytes_written;
    let (path_instructions, path) = critical_path(launch, result);
    let peak = tensor_peak(launch, result);
    let engine_ps: u64 = result
        .trace
        .iter()
        .filter_map(|e| e.dma.as_ref())
        .map(|d| d.engine_busy_ps.saturating_mul(u64::from(d.engines)))
        .sum();
    let dma_engines_busy = frac(engine_ps) / (f64::from(f.dma_engines.max(1)) * cores as f64);
    Summary {
        target: target.name(),
        cores,
        per_core: (0..cores)
            .map(|c| {
                let c = u8::try_from(c).unwrap_or(u8::MAX);
                let instructions = result
                    .per_queue
                    .iter()
                    .filter(|q| q.core == c)
                    .map(|q| q.instructions)
                    .sum();
                (result.core_end_ps(c) as f64 / 1000.0, instructions)
            })
            .collect(),
        simulated_ns: ns,
        instructions: result.instructions,
        queues,
        flops: result.flops,
        tflops: per_ns(result.flops) / 1000.0,
        peak_tflops: peak.0 * cores as f64,
        peak_mode: peak.1,
        hbm_bytes,
        hbm_gbps: per_ns(hbm_bytes),
        hbm_peak_gbps: f64::from(f.hbm_gbps_per_core) * cores as f64,
        dma_peak_gbps: f.dma_peak_gbps() * cores as f64,
        dma_engines_busy,
        lower_bound_ns: bound.map(|b| b.ns),
        limited_by: bound.map(|b| b.limited_by.clone()),
        path_instructions,
        path,
        top_lines: top_lines(launch, result),
    }
}

/// The critical path, grouped; see the module doc.
fn critical_path(launch: &Launch, result: &RunResult) -> (u64, Vec<PathGroup>) {
    let multi = launch.is_multi_core();
    let trace = &result.trace;
    let Some(last) = (0..trace.len()).max_by_key(|&i| (trace[i].end_ps, i)) else {
        return (0, Vec::new());
    };
    let at: HashMap<(u8, Queue, u64), usize> = trace
        .iter()
        .enumerate()
        .map(|(i, e)| ((e.core, e.queue, e.seq), i))
        .collect();
    // Walk back: (event, the time it released its successor).
    let mut chain: Vec<(usize, u64)> = vec![(last, trace[last].end_ps)];
    let mut cur = last;
    while chain.len() <= trace.len() {
        let e = &trace[cur];
        let pred = match (e.dma.as_ref().and_then(|d| d.delayed_by), e.cause) {
            (Some((q, seq)), _) => at.get(&(e.core, q, seq)).map(|&p| {
                (
                    p,
                    trace[p]
                        .dma
                        .as_ref()
                        .map_or(trace[p].free_ps, |d| d.data_end_ps),
                )
            }),
            (None, Cause::Semaphore { queue, seq }) => {
                at.get(&(e.core, queue, seq)).map(|&p| (p, trace[p].end_ps))
            }
            (None, Cause::Dependency { seq }) => at
                .get(&(e.core, e.queue, seq))
                .map(|&p| (p, trace[p].end_ps)),
            (None, Cause::Queue) => e
                .seq
                .checked_sub(1)
                .and_then(|s| at.get(&(e.core, e.queue, s)))
                .map(|&p| (p, trace[p].free_ps)),
            (None, Cause::Start) => None,
            // The other core's barrier, released when it arrived.
            (None, Cause::Barrier { core, queue, seq }) => {
                at.get(&(core, queue, seq)).map(|&p| (p, trace[p].ready_ps))
            }
            // The holder of a shared port, released at the end of its
            // interval.
            (None, Cause::Port { queue, seq }) => at
                .get(&(e.core, queue, seq))
                .map(|&p| (p, trace[p].free_ps)),
        };
        match pred {
            Some((p, release)) => {
                chain.push((p, release));
                cur = p;
            }
            None => break,
        }
    }
    chain.reverse();
    let total = result.total_ps.max(1) as f64;
    let mut groups: BTreeMap<(u8, Queue, &'static str, String), (u64, u64)> = BTreeMap::new();
    let mut prev = 0u64;
    for &(i, release) in &chain {
        let e = &trace[i];
        let g = groups
            .entry((e.core, e.queue, e.mnemonic, source_of(launch, e)))
            .or_default();
        g.0 += 1;
        g.1 += release.saturating_sub(prev);
        prev = prev.max(release);
    }
    let mut out: Vec<PathGroup> = groups
        .into_iter()
        .map(|((core, queue, mnemonic, source), (n, ps))| PathGroup {
            core: multi.then_some(core),
            queue,
            mnemonic,
            source,
            instructions: n,
            ns: ps as f64 / 1000.0,
            share: ps as f64 / total,
        })
        .collect();
    // Largest share first; ties keep the key order (stable sort).
    out.sort_by(|a, b| b.ns.total_cmp(&a.ns));
    out.truncate(TOP);
    (chain.len() as u64, out)
}

/// The source lines with the most busy time.
fn top_lines(launch: &Launch, result: &RunResult) -> Vec<LineTime> {
    let mut lines: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut all = 0u64;
    for e in &result.trace {
        let busy = e
            .free_ps
            .saturating_sub(e.start_ps)
            .saturating_sub(engine_wait(e));
        all += busy;
        let l = lines.entry(source_of(launch, e)).or_default();
        l.0 += 1;
        l.1 += busy;
    }
    let mut out: Vec<LineTime> = lines
        .into_iter()
        .map(|(source, (n, ps))| LineTime {
            source,
            instructions: n,
            busy_ns: ps as f64 / 1000.0,
            share: if all == 0 {
                0.0
            } else {
                ps as f64 / all as f64
            },
        })
        .collect();
    out.sort_by(|a, b| b.busy_ns.total_cmp(&a.busy_ns));
    out.truncate(TOP);
    out
}

/// One core's Tensor-engine peak over the matmuls of the run, in TFLOP/s,
/// and its mode's name (module doc).
fn tensor_peak(launch: &Launch, result: &RunResult) -> (f64, String) {
    let f = launch.target().figures();
    let bf16 = f.tensor_peak_tflops();
    let wide = |d: nkic_isa::DType| matches!(d, nkic_isa::DType::F32 | nkic_isa::DType::TF32);
    let mut flops = 0u64;
    let mut at_peak = 0.0f64;
    let mut modes: Vec<&'static str> = Vec::new();
    for e in result.trace.iter().filter(|e| e.flops > 0) {
        let op = launch
            .core(usize::from(e.core))
            .and_then(|p| p.stream(e.queue))
            .and_then(|s| s.get(e.index))
            .map(|i| &i.op);
        let (factor, mode) = match op {
            Some(nkic_isa::Op::NcMatmulMx(_)) => (4.0, "mx"),
            Some(nkic_isa::Op::NcMatmul(insn::NcMatmul {
                stationary,
                moving,
                perf_mode,
                stationary_onezero,
                moving_onezero,
                ..
            })) => {
                if wide(stationary.dtype) || wide(moving.dtype) {
                    let onezero = (*stationary_onezero && wide(stationary.dtype))
                        || (*moving_onezero && wide(moving.dtype));
                    let slow = f64::from(f.mm_fp32_factor.max(1));
                    (if onezero { 2.0 / slow } else { 1.0 / slow }, "fp32")
                } else if *perf_mode == nkic_isa::MatmulPerfMode::DoubleRow {
                    (2.0, "fp8 double_row")
                } else {
                    (1.0, "bf16 dense")
                }
            }
            _ => (1.0, "bf16 dense"),
        };
        flops += e.flops;
        at_peak += e.flops as f64 / (bf16 * factor);
        if !modes.contains(&mode) {
            modes.push(mode);
        }
    }
    match modes.as_slice() {
        [] => (bf16, "bf16 dense".to_owned()),
        [one] => (flops as f64 / at_peak, (*one).to_owned()),
        _ => (flops as f64 / at_peak, "mixed".to_owned()),
    }
}

/// How long a DMA transfer waited for engines other transfers held.
pub fn engine_wait(e: &TraceEvent) -> u64 {
    e.dma.as_ref().map_or(0, |d| {
        d.data_end_ps
            .saturating_sub(d.engine_ps)
            .saturating_sub(d.data_ready_ps)
    })
}

/// A JSON entry with `core` added when there is one (multi-core runs).
fn with_core(mut entry: Value, core: Option<u8>) -> Value {
    if let Some(c) = core {
        entry["core"] = json!(c);
    }
    entry
}

/// Rounds to `digits` decimals so JSON numbers stay short and stable.
fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

impl Summary {
    /// The summary as one JSON object.
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "target": self.target,
            "simulated_ns": round(self.simulated_ns, 3),
            "instructions": self.instructions,
            "queues": self.queues.iter().map(|q| with_core(json!({
                "queue": queue_name(q.core, q.queue),
                "instructions": q.instructions,
                "busy_ns": round(q.busy_ns, 3),
                "busy": round(q.busy, 4),
                "idle": round(q.idle, 4),
                "wait_ns": round(q.wait_ns, 3),
            }), q.core)).collect::<Vec<_>>(),
            "flops": self.flops,
            "tflops": round(self.tflops, 4),
            "peak_tflops": round(self.peak_tflops, 4),
            "peak_mode": self.peak_mode,
            "hbm_bytes": self.hbm_bytes,
            "hbm_gbps": round(self.hbm_gbps, 3),
            "hbm_peak_gbps": round(self.hbm_peak_gbps, 3),
            "dma_peak_gbps": round(self.dma_peak_gbps, 3),
            "dma_engines_busy": round(self.dma_engines_busy, 4),
            "lower_bound_ns": self.lower_bound_ns.map(|b| round(b, 3)),
            "limited_by": self.limited_by,
            "bound_ratio": self.ratio().map(|r| round(r, 4)),
            "critical_path": {
                "instructions": self.path_instructions,
                "groups": self.path.iter().map(|g| with_core(json!({
                    "queue": queue_name(g.core, g.queue),
                    "instruction": g.mnemonic,
                    "source": g.source,
                    "instructions": g.instructions,
                    "ns": round(g.ns, 3),
                    "share": round(g.share, 4),
                }), g.core)).collect::<Vec<_>>(),
            },
            "top_lines": self.top_lines.iter().map(|l| json!({
                "source": l.source,
                "instructions": l.instructions,
                "busy_ns": round(l.busy_ns, 3),
                "share": round(l.share, 4),
            })).collect::<Vec<_>>(),
        });
        if self.cores > 1 {
            // As in `nkic run --report json`: one entry per core.
            value["cores"] = json!(
                self.per_core
                    .iter()
                    .enumerate()
                    .map(|(c, (ns, n))| json!({
                        "core": c,
                        "simulated_ns": round(*ns, 3),
                        "instructions": n,
                    }))
                    .collect::<Vec<_>>()
            );
        }
        value
    }

    /// Simulated time over the lower bound.
    pub fn ratio(&self) -> Option<f64> {
        self.lower_bound_ns
            .filter(|b| *b > 0.0)
            .map(|b| self.simulated_ns / b)
    }

    /// The summary for people.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let pct = |x: f64| 100.0 * x;
        let on = if self.cores > 1 {
            format!("{} cores of {}", self.cores, self.target)
        } else {
            self.target.to_owned()
        };
        let _ = writeln!(
            s,
            "simulated time: {:.3} us on {on} ({} instructions)",
            self.simulated_ns / 1000.0,
            self.instructions
        );
        if let (Some(b), Some(r)) = (self.lower_bound_ns, self.ratio()) {
            let _ = writeln!(
                s,
                "lower bound:    {:.3} us, limited by {}; simulated time is {r:.2}x the bound",
                b / 1000.0,
                self.limited_by.as_deref().unwrap_or("-")
            );
        }
        let _ = writeln!(
            s,
            "tensor:         {:.2} TFLOP/s of {:.2} peak ({}), {:.1}%",
            self.tflops,
            self.peak_tflops,
            self.peak_mode,
            pct(self.tflops / self.peak_tflops.max(f64::MIN_POSITIVE))
        );
        let _ = writeln!(
            s,
            "hbm:            {:.1} GB/s of {:.0} ({}; DMA engines {:.0}), {:.1}%",
            self.hbm_gbps,
            self.hbm_peak_gbps,
            if self.cores > 1 {
                "the cores' shares"
            } else {
                "core share"
            },
            self.dma_peak_gbps,
            pct(self.hbm_gbps / self.hbm_peak_gbps.max(f64::MIN_POSITIVE))
        );
        // Queue names are wider with a core prefix (`core1.vector`).
        let w = if self.cores > 1 { 12 } else { 8 };
        let _ = writeln!(
            s,
            "\n{:<w$} {:>8} {:>14} {:>7} {:>7} {:>14}",
            "queue", "instrs", "busy (ns)", "busy", "idle", "waiting (ns)"
        );
        for q in &self.queues {
            let _ = writeln!(
                s,
                "{:<w$} {:>8} {:>14.1} {:>6.1}% {:>6.1}% {:>14.1}",
                queue_name(q.core, q.queue),
                q.instructions,
                q.busy_ns,
                pct(q.busy),
                pct(q.idle),
                q.wait_ns
            );
        }
        let _ = writeln!(
            s,
            "dma engines: {:.1}% busy (averaged over the engines all DMA queues share)",
            pct(self.dma_engines_busy)
        );
        let _ = writeln!(
            s,
            "\ncritical path: {} instructions",
            self.path_instructions
        );
        let _ = writeln!(
            s,
            "{:>7} {:>12} {:<w$} {:<22} {:>7}  source",
            "share", "time (ns)", "queue", "instruction", "instrs"
        );
        for g in &self.path {
            let _ = writeln!(
                s,
                "{:>6.1}% {:>12.1} {:<w$} {:<22} {:>7}  {}",
                pct(g.share),
                g.ns,
                queue_name(g.core, g.queue),
                g.mnemonic,
                g.instructions,
                g.source
            );
        }
        let _ = writeln!(s, "\ntop source lines by busy time:");
        let _ = writeln!(
            s,
            "{:>7} {:>12} {:>7}  source",
            "share", "busy (ns)", "instrs"
        );
        for l in &self.top_lines {
            let _ = writeln!(
                s,
                "{:>6.1}% {:>12.1} {:>7}  {}",
                pct(l.share),
                l.busy_ns,
                l.instructions,
                l.source
            );
        }
        s
    }
}
