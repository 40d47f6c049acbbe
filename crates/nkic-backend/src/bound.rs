//! The run report's lower bound on a program's simulated time.
//!
//! No schedule can finish before any of its resources has done its work:
//!
//! * each compute queue (`tensor`, `vector`, `scalar`, `gpsimd`, `sync`)
//!   is busy for the sum of its instructions' intervals (`Cost::busy_ps`);
//! * each of the core's DMA engines moves the data of every transfer that
//!   uses it, one transfer at a time (`Target::dma_transfer`: a transfer
//!   of 128 partitions occupies all 16 engines for its `engine_busy_ps`),
//!   so it is busy for the sum of those times; and the DMA queues together are
//!   busy for the sum of their intervals, which at best is spread evenly
//!   over the target's `dma_queues`;
//! * HBM moves the bytes of every DMA operand in HBM at most at
//!   `hbm_gbps_per_core` (GB/s, so bytes per nanosecond);
//! * where engines share RAM ports (`Cost::ports`), each port is held for
//!   the sum of the intervals of the instructions holding it, whatever
//!   their queue (named by `Ports::NAMES`).
//!
//! The bound is the maximum of these (the definition: the busiest
//! engine, or HBM bytes over HBM bandwidth). [`LowerBound::engine_ns`] is
//! the maximum of the first two parts alone. The simulator shares the DMA
//! engines and caps each engine's HBM traffic at its share of the core's
//! bandwidth exactly as `Target::dma_transfer` says, so a simulated run
//! never beats the bound. Costs depend only on the instructions, so the
//! bound is the same for every order of the same instructions; the
//! optimized and the sequential program share it when they choose the same
//! engines.
//!
//! [`lower_bound`] counts every instruction once, so for a program with
//! dynamic loops (branches) it does not multiply a loop body by its
//! run-time trip count and [`LowerBound::loops_counted_once`] is set.
//! [`lower_bound_counted`] takes each instruction's execution count (from
//! a run) instead, which bounds that run.

use std::collections::BTreeMap;

use nkic_isa::{Memory, Program, Queue};

/// A lower bound on a program's simulated time, with its parts.
#[derive(Clone, Debug, PartialEq)]
pub struct LowerBound {
    /// The bound in nanoseconds: the maximum of the parts below.
    pub ns: f64,
    /// Total interval time per queue in nanoseconds, in queue order
    /// (compute queues and each DMA queue as emitted).
    pub per_queue: Vec<(Queue, f64)>,
    /// Total interval time per engine in nanoseconds (DMA: all queues).
    pub per_engine: Vec<(nkic_isa::Engine, f64)>,
    /// The maximum of the engine and DMA parts (without HBM bandwidth).
    pub engine_ns: f64,
    /// The DMA part: the busiest DMA engine's data time, or the total DMA
    /// interval time over the number of DMA queues if that is larger.
    pub dma_ns: f64,
    /// The data time of each DMA engine in nanoseconds, by engine number.
    pub dma_engine_ns: Vec<f64>,
    /// Bytes read from and written to HBM by DMA instructions.
    pub hbm_bytes: u64,
    /// `hbm_bytes` at the per-core HBM bandwidth.
    pub hbm_ns: f64,
    /// What bounds it: an engine name, `dma` or `hbm`.
    pub limited_by: String,
    /// True when the program branches (dynamic loops) and every
    /// instruction was counted once, so the bound ignores trip counts.
    pub loops_counted_once: bool,
}

/// Computes the bound of `program`, every instruction counted once; see
/// the module doc.
pub fn lower_bound(program: &Program) -> LowerBound {
    let branches = program.queues.iter().any(|s| {
        s.insts
            .iter()
            .any(|i| matches!(i.op, nkic_isa::Op::Branch(_)))
    });
    let mut bound = lower_bound_counted(program, &|_, _| 1);
    bound.loops_counted_once = branches;
    bound
}

/// Computes the bound of one run of `program`, in which instruction
/// `index` of `queue` executed `executions(queue, index)` times.
pub fn lower_bound_counted(
    program: &Program,
    executions: &dyn Fn(Queue, usize) -> u64,
) -> LowerBound {
    let target = program.target;
    let f = target.figures();
    let mut per_queue = Vec::new();
    let mut per_engine: BTreeMap<nkic_isa::Engine, u64> = BTreeMap::new();
    let mut hbm_bytes = 0u64;
    let engines = f.dma_engines.max(1);
    let mut dma_engine_ps = vec![0u64; engines as usize];
    let mut port_ps = [0u64; nkic_isa::Ports::COUNT];
    for stream in &program.queues {
        let mut busy = 0u64;
        for (index, inst) in stream.insts.iter().enumerate() {
            let times = executions(stream.queue, index);
            let cost = target.cost(stream.queue, &inst.op);
            busy += cost.busy_ps * times;
            for p in cost.ports.indices() {
                port_ps[p] += cost.busy_ps * times;
            }
            if let Some(t) = target.dma_transfer(&inst.op) {
                for e in t.engine_ids(engines) {
                    dma_engine_ps[(e % engines) as usize] += t.engine_busy_ps * times;
                }
            }
            if inst.op.is_dma() {
                for operand in inst.op.operands() {
                    if matches!(operand.ap.mem, Memory::Hbm(_)) {
                        hbm_bytes += operand.ap.num_elements() * operand.ap.elem_bytes() * times;
                    }
                }
            }
        }
        per_queue.push((stream.queue, busy as f64 / 1000.0));
        *per_engine.entry(stream.queue.engine()).or_insert(0) += busy;
    }
    let dma_ps = per_engine.get(&nkic_isa::Engine::Dma).copied().unwrap_or(0);
    let busiest_engine = dma_engine_ps.iter().copied().max().unwrap_or(0);
    let dma_ns = (dma_ps as f64 / 1000.0 / f64::from(f.dma_queues.max(1)))
        .max(busiest_engine as f64 / 1000.0);
    let hbm_ns = hbm_bytes as f64 / f64::from(f.hbm_gbps_per_core.max(1));
    let mut ns = dma_ns.max(hbm_ns);
    let mut limited_by = if hbm_ns >= dma_ns { "hbm" } else { "dma" }.to_owned();
    if ns == 0.0 {
        limited_by = "nothing".to_owned();
    }
    for (&engine, &busy) in &per_engine {
        let t = busy as f64 / 1000.0;
        if engine != nkic_isa::Engine::Dma && t > ns {
            ns = t;
            limited_by = engine.name().to_owned();
        }
    }
    for (p, name) in nkic_isa::Ports::NAMES.into_iter().enumerate() {
        let t = port_ps[p] as f64 / 1000.0;
        if t > ns {
            ns = t;
            limited_by = name.to_owned();
        }
    }
    let engine_ns = per_engine
        .iter()
        .filter(|(e, _)| **e != nkic_isa::Engine::Dma)
        .map(|(_, &ps)| ps as f64 / 1000.0)
        .chain(port_ps.iter().map(|&ps| ps as f64 / 1000.0))
        .fold(dma_ns, f64::max);
    LowerBound {
        ns,
        engine_ns,
        per_queue,
        per_engine: per_engine
            .into_iter()
            .map(|(e, ps)| (e, ps as f64 / 1000.0))
            .collect(),
        dma_ns,
        dma_engine_ns: dma_engine_ps.iter().map(|&ps| ps as f64 / 1000.0).collect(),
        hbm_bytes,
        hbm_ns,
        limited_by,
        loops_counted_once: false,
    }
}
