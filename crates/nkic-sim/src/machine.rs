//! The discrete-event driver: queues, semaphores, the clock and the
//! stepping policy.
//!
//! # Timing
//!
//! Each queue has a *free time*, when it may issue its next instruction.
//! An instruction's start is the latest of its queue's free time and, for
//! each wait `sem >= v`, the time of the `v`-th increment of `sem`. When it
//! reads memory written by the previous memory-writing instruction of its
//! queue, it also waits for that instruction's completion and then pays
//! `Target::dependent_overhead_ps` (cost.rs). From `Target::cost`, the queue
//! is free again at `start + busy_ps`, and the instruction completes (its
//! signals fire) at `start + latency_ps`. The run's total time is the
//! latest completion; a queue's busy time is the sum of its intervals.
//!
//! DMA transfers (`Target::dma_transfer`) also share the core's DMA
//! engines: after its descriptor time, a transfer's data starts moving on
//! each of its engines once that engine is free of the transfers that
//! started before it (of any queue), and takes `engine_ps` there; the
//! engine is free again `engine_busy_ps` after the transfer began on it
//! (transfers of different queues overlap their per-chunk latency). The
//! queue is free when its data has moved on every engine, and the transfer
//! completes `start_latency_ps` later. Alone on idle engines this is
//! exactly `Target::cost`; together it caps the core's aggregate bandwidth.
//!
//! Where engines share on-chip RAM ports (`Cost::ports`, NeuronCore-v2),
//! an instruction holding a port starts no earlier than the port is free,
//! and the port is free again `busy_ps` after that start. The trace names
//! the instruction that held the port (`Cause::Port`).
//!
//! # Stepping
//!
//! The interpreter executes one instruction at a time and applies its
//! memory effects at once. It may execute an instruction only when its
//! start time is *final*: every increment it waits for has executed, and
//! no instruction still to execute could produce an earlier increment of
//! the same semaphore. Every instruction still to execute starts no
//! earlier than `G`, the earliest start among the currently executable
//! instructions, and no earlier than its own queue's free time, so an
//! instruction whose waits are met by increments at or before
//! `min over other queues q of max(free(q), G)` is final. Among the final
//! instructions the `StepOrder` picks one. The earliest one is always
//! final, so the run never stalls while some queue can progress. A DMA
//! transfer, and an instruction holding a shared port, is in addition
//! executed only when no other queue can still issue anything before it
//! (ties go to the queue earlier in the program), so transfers reserve the
//! engines, and port users the ports, in time order whatever the step
//! order; the earliest instruction still always qualifies.
//!
//! A queue at the back branch of a loop that only counts (no wait, no
//! signal, no memory: a queue with nothing to do in a dynamic loop whose
//! control it runs) takes as many of its iterations at once as it may
//! (`idle`, `take_counting`): nothing it does in them is visible to
//! another queue, and its registers, times and statistics are those of
//! stepping through them, so results do not change; only which
//! instruction a limit error (E2007) names, and after how many executed
//! instructions, depends on it, as it does on the step order.
//!
//! For a race-free program (every pair of accesses to the same bytes, one
//! of them a write, ordered through semaphores) the bytes and every time
//! are the same for every step order: an instruction never executes before
//! the instructions it waits for, and its start time is fixed when it
//! executes. Programs with races may give different bytes.
//!
//! A deadlock is reported when no queue can execute but some still have
//! instructions: the message lists each blocked instruction and the
//! semaphore value it waits for.
//!
//! # Cores
//!
//! A multi-core launch runs every core's queues in the one loop above:
//! each core has its own queues, registers, semaphores, accumulators, SBUF,
//! PSUM and DMA engines (so each core moves data at its own share of the
//! HBM bandwidth), and the cores share the kernel's HBM arguments. The
//! run's time is the latest completion over all cores.
//!
//! A `core_barrier` runs in two steps. It first *arrives*: once its start
//! is final (queue free, waits met) the arrival time and the queue's race
//! clock are recorded, and the queue stays at the barrier. The barrier
//! then starts when the paired barrier (same queue, same rank) of every
//! other core has arrived, at the latest arrival, and completes
//! `core_barrier_ns` later (`Target::cost`). Arrival times are final when
//! recorded, so the barrier's start is final as soon as it is known.
//! A `sendrecv` is paired the same way (the rank counts both kinds): its
//! arrival also reads its `src`, and when it executes it writes the other
//! core's `src` bytes into its `dst`, taking the time of an SBUF-to-SBUF
//! DMA of them.

use nkic_isa::insn;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use nkic_isa::{
    Instruction, Label, Memory, Op, Ports, Program, Queue, Role, SemWait, Target, TensorKind,
    intervals,
};

use crate::config::{InputKey, Inputs, Poison, SimConfig, SimTier, StepOrder};
use crate::error::{SimError, SimErrorKind, Site};
use crate::exec::{Accumulators, Exec, Flow};
use crate::idle::{self, Region};
use crate::memory::{MemoryState, SpaceId, View};
use crate::output::OutputBytes;
use crate::race::Races;
use crate::result::{
    Cause, DmaSlot, Dump, DumpSpec, QueueStats, RunResult, TraceEvent, UndefinedOutput, Waited,
};
use crate::warm;

/// The byte region an operand covers, for the dependent-issue rule.
#[derive(Clone, Copy, Debug)]
struct Footprint {
    space: SpaceId,
    parts: (usize, usize),
    bytes: (i64, i64),
}

impl Footprint {
    fn of(v: &View) -> Footprint {
        let min_run = v.runs.iter().copied().min().unwrap_or(0);
        let max_run = v.runs.iter().copied().max().unwrap_or(0);
        let run_bytes = (v.run_len * v.size) as i64;
        match v.space {
            SpaceId::Hbm(_) => {
                let last = (v.rows as i64 - 1).saturating_mul(v.row_step);
                Footprint {
                    space: v.space,
                    parts: (0, 1),
                    bytes: (
                        v.row_base
                            .saturating_add(last.min(0))
                            .saturating_add(min_run),
                        v.row_base
                            .saturating_add(last.max(0))
                            .saturating_add(max_run)
                            .saturating_add(run_bytes),
                    ),
                }
            }
            _ => {
                // On chip the row address is `partition · stride + offset`;
                // the per-partition offset is what matters.
                let off = v.row_base.saturating_sub(v.part_start as i64 * v.row_step);
                Footprint {
                    space: v.space,
                    parts: (v.part_start, v.part_start + v.rows),
                    bytes: (
                        off.saturating_add(min_run),
                        off.saturating_add(max_run).saturating_add(run_bytes),
                    ),
                }
            }
        }
    }

    fn overlaps(&self, other: &Footprint) -> bool {
        self.space == other.space
            && intervals::overlap(self.parts, other.parts)
            && intervals::overlap(self.bytes, other.bytes)
    }
}

/// The state of one queue.
struct QueueState<'p> {
    /// The core of the launch the queue belongs to.
    core: usize,
    /// The index of the core's first semaphore in the run's numbering.
    sem_base: usize,
    /// The `core_barrier` at `pc` once it arrived: its arrival (start,
    /// readiness and the wait that decided it).
    arrived: Option<Cand>,
    /// `core_barrier`s completed so far (the rank of the next one).
    barriers: usize,
    queue: Queue,
    insts: &'p [Instruction],
    labels: BTreeMap<Label, usize>,
    pc: usize,
    regs: Vec<i32>,
    free_ps: u64,
    /// Writes, completion time and `seq` of the last memory-writing
    /// instruction.
    last_write: Option<(Vec<Footprint>, u64, u64)>,
    /// For the instruction at `pc`: the completion time and `seq` of the
    /// producer it must wait for when it depends on `last_write` (computed
    /// once per `pc`).
    dep: Option<(usize, Option<(u64, u64)>)>,
    /// The index and completion of the instruction executed last.
    last_index: Option<usize>,
    last_done: u64,
    stats: QueueStats,
    /// `Target::dependent_overhead_ps` of the queue's engine.
    overhead_ps: u64,
    target: Target,
    /// Per instruction, what all its executions share (found at the
    /// first).
    facts: Vec<Option<Facts>>,
    /// Per backward `branch` or `jump` reached, the quiet region it
    /// closes, if it closes one (`idle`).
    regions: HashMap<usize, Option<Rc<Region>>>,
}

/// What every execution of one instruction shares: its cost (a function
/// of the queue and the instruction alone), and whether it has memory
/// operands (the race detector sees no access of one without).
#[derive(Clone, Copy, Debug)]
struct Facts {
    cost: nkic_isa::Cost,
    operands: bool,
}

impl QueueState<'_> {
    fn finished(&self) -> bool {
        self.pc >= self.insts.len()
    }

    /// The facts of instruction `index`, found at its first execution
    /// (or candidacy) and kept.
    fn facts(&mut self, index: usize) -> Facts {
        let (target, queue, op) = (self.target, self.queue, &self.insts[index].op);
        let find = || Facts {
            cost: target.cost(queue, op),
            operands: !op.operands().is_empty(),
        };
        match self.facts.get_mut(index) {
            Some(slot) => *slot.get_or_insert_with(find),
            None => find(),
        }
    }

    /// The waits of instruction `index` as the race detector sees them:
    /// (semaphore in the run's numbering, increments needed).
    fn race_waits(&self, index: usize) -> Vec<(usize, usize)> {
        self.insts[index]
            .waits
            .iter()
            .map(|w| {
                (
                    self.sem_base + w.sem.0 as usize,
                    wait_need(w, &self.regs).max(0) as usize,
                )
            })
            .collect()
    }
}

/// One increment of a semaphore: when it happens and which instruction
/// (queue index, `seq`) makes it.
#[derive(Clone, Copy, Debug)]
struct Inc {
    time: u64,
    queue: usize,
    seq: u64,
}

/// The increments of one semaphore, in time order.
///
/// A wait starts no earlier than its queue is free, so an increment at or
/// before the free time of every unfinished queue can no longer delay
/// (or be named as the cause of) any start: `forget` drops such
/// increments and keeps only their count. A loop that signals millions
/// of times then keeps the increments in flight, not its whole history.
#[derive(Clone, Debug, Default)]
struct SemLog {
    forgotten: usize,
    incs: std::collections::VecDeque<Inc>,
}

/// What a forgotten increment reads as: a time no start is below, so it
/// decides nothing.
const FORGOTTEN: Inc = Inc {
    time: 0,
    queue: usize::MAX,
    seq: 0,
};

impl SemLog {
    /// How many increments the semaphore has had.
    fn len(&self) -> usize {
        self.forgotten + self.incs.len()
    }

    /// The `k`-th increment in time order (0-based).
    fn get(&self, k: usize) -> Option<Inc> {
        match k.checked_sub(self.forgotten) {
            None => Some(FORGOTTEN),
            Some(i) => self.incs.get(i).copied(),
        }
    }

    /// Adds an increment after every increment at or before its time
    /// (usually at the end).
    fn insert(&mut self, inc: Inc) {
        if self.incs.back().is_none_or(|last| last.time <= inc.time) {
            self.incs.push_back(inc);
        } else {
            let at = self.incs.partition_point(|t| t.time <= inc.time);
            self.incs.insert(at, inc);
        }
    }

    /// Forgets the increments at or before `floor`, the earliest free
    /// time of an unfinished queue.
    fn forget(&mut self, floor: u64) {
        while self.incs.front().is_some_and(|i| i.time <= floor) {
            self.incs.pop_front();
            self.forgotten += 1;
        }
    }
}

/// Every this many steps the machine forgets old semaphore increments.
const FORGET_EVERY: u64 = 4096;

/// A queue's next instruction, ready to issue.
#[derive(Clone, Copy, Debug)]
struct Cand {
    start: u64,
    /// The latest increment it relies on (0 without waits).
    last_sig: u64,
    /// The time it could start without its waits.
    ready: u64,
    /// The increment that decided the start, with the wait's semaphore
    /// and count, when a wait decided it.
    sig: Option<(Inc, usize, u64)>,
    /// The producer `seq` when a dependent read decided the start.
    dep: Option<u64>,
    /// Whether the instruction uses a resource queues share: a DMA
    /// transfer (the DMA engines) or a holder of a shared RAM port.
    shared: bool,
    /// A `core_barrier` that has not arrived yet: executing the candidate
    /// records its arrival (module doc).
    arrive: bool,
    /// For an arrived `core_barrier` started late by another core's
    /// arrival: that core and the barrier's `seq` there.
    barrier: Option<(usize, u64)>,
}

/// One arrival at a `core_barrier`: when, the barrier's `seq` in its
/// queue, and the queue's race clock (when the race detector runs).
#[derive(Clone, Debug)]
struct Arrival {
    time: u64,
    seq: u64,
    clock: Option<Vec<u32>>,
    /// A `sendrecv`'s `src` bytes, read when it arrived.
    payload: Option<Vec<u8>>,
}

/// Arrivals at `core_barrier`s by core and queue, in rank order.
type Arrivals = BTreeMap<(usize, Queue), Vec<Arrival>>;

/// A resource the queues of a core share (a DMA engine or a RAM port):
/// when it is free and which instruction held it last.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    free_ps: u64,
    last: Option<(Queue, u64)>,
}

/// What the queues of one core share: its DMA engines and, by
/// `Ports::indices`, its RAM ports.
struct Shared {
    engines: Vec<Held>,
    ports: [Held; Ports::COUNT],
}

/// Why a queue cannot issue: a semaphore wait, or (`peer`) a
/// `core_barrier` waiting for the paired barrier of core `peer`.
struct Blocked {
    sem: usize,
    need: i64,
    have: usize,
    peer: Option<usize>,
}

/// A read of bytes the other core stores without ordering (the `race`
/// module doc), found by a first run.
struct RacyRead {
    conflict: crate::race::Conflict,
    /// The race as an error.
    error: SimError,
    /// When the store came after the read: the bytes it stored there.
    stored: Option<Vec<u8>>,
}

/// Timing-dependent reads: what the first run found, and how the second
/// run makes each read see the other side of its store.
#[derive(Default)]
struct Racy {
    /// Such reads are recorded instead of being errors (a launch of two
    /// cores, race check on, `Poison::Precise`).
    tolerate: bool,
    found: Vec<RacyRead>,
    /// Second run: each read's overlap and the bytes it sees (the store's,
    /// or the bytes from before the store, kept when the store runs).
    subs: Vec<(crate::race::Region, Option<Vec<u8>>)>,
    /// Second run: per (queue, epoch) of a store that came before a read,
    /// the `subs` whose bytes to keep before it runs.
    before_store: HashMap<(usize, u32), Vec<usize>>,
    /// Second run: per (queue, epoch) of a read, its `subs`.
    at_read: HashMap<(usize, u32), Vec<usize>>,
    /// Second run: a read's other side was never written.
    unknown: bool,
}

/// Runs the cores of a launch (one `Program` each; `cores[0]` defines the
/// arguments); see the crate doc.
///
/// Timing-dependent reads: when the first run finds reads of bytes the
/// other core stores without ordering (`race`), the launch runs again in
/// the same order with each such read seeing the other side of its store
/// (the bytes from before the store where the store came first, the
/// stored bytes where it came later). If that run faults, changes an
/// output or its undefined elements, or a read's other side was never
/// written, the first race is the error; otherwise the first run's result
/// stands with the races listed in `RunResult::races`.
pub(crate) fn simulate(
    cores: &[Program],
    inputs: &Inputs,
    config: &SimConfig,
    dump: &DumpSpec,
) -> Result<(RunResult, Vec<Dump>), SimError> {
    // The native tier's module is built while the run sets up.
    if config.tier == SimTier::Jit {
        crate::start_native_tier();
    }
    // A process forked from one whose pool had started runs on the
    // calling thread (`nkic_isa::threads`).
    if !nkic_isa::threads::parallel() {
        return simulate_on_worker(cores, inputs, config, dump);
    }
    // The run goes on a worker of the thread pool, so a matmul's parallel
    // bands (`matmul::blocked`) split locally: the running thread computes
    // one half and the other worker steals the other, instead of the
    // caller handing both halves to the pool and sleeping until they end.
    // The worker's count of native instructions is credited to a caller
    // outside the pool (`native_instructions` is per calling thread; a
    // caller on a worker ran the instructions itself).
    let outside = rayon::current_thread_index().is_none();
    let (result, native) = rayon::scope(|_| {
        let before = crate::native_instructions();
        let result = simulate_on_worker(cores, inputs, config, dump);
        (result, crate::native_instructions() - before)
    });
    if outside {
        crate::credit_native_instructions(native);
    }
    result
}

/// [`simulate`] on the thread it is called on.
fn simulate_on_worker(
    cores: &[Program],
    inputs: &Inputs,
    config: &SimConfig,
    dump: &DumpSpec,
) -> Result<(RunResult, Vec<Dump>), SimError> {
    let mut racy = Racy {
        tolerate: cores.len() > 1 && config.race_check && config.poison == Poison::Precise,
        ..Racy::default()
    };
    let (mut res, dumps) =
        std::thread::scope(|scope| simulate_pass(scope, cores, inputs, config, dump, &mut racy))?;
    if racy.found.is_empty() {
        return Ok((res, dumps));
    }
    let found = std::mem::take(&mut racy.found);
    for (k, read) in found.iter().enumerate() {
        let Some(overlap) = &read.conflict.overlap else {
            continue;
        };
        racy.subs.push(((**overlap).clone(), read.stored.clone()));
        if read.stored.is_none() {
            racy.before_store
                .entry(read.conflict.writer)
                .or_default()
                .push(k);
        }
        racy.at_read
            .entry(read.conflict.reader)
            .or_default()
            .push(k);
    }
    let first = || found[0].error.clone();
    let (other, _) = std::thread::scope(|scope| {
        simulate_pass(
            scope,
            cores,
            inputs,
            config,
            &DumpSpec::default(),
            &mut racy,
        )
    })
    .map_err(|_| first())?;
    if racy.unknown || other.outputs != res.outputs || other.undefined != res.undefined {
        return Err(first());
    }
    res.races = found.into_iter().map(|r| r.error).collect();
    Ok((res, dumps))
}

/// One run of the launch (`simulate`).
fn simulate_pass<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    cores: &'scope [Program],
    inputs: &Inputs,
    config: &SimConfig,
    dump: &DumpSpec,
    racy: &mut Racy,
) -> Result<(RunResult, Vec<Dump>), SimError> {
    // The verifier's launch rules hold: at least one core, one target.
    let Some(program) = cores.first() else {
        panic!("invariant broken: a verified launch has at least one core");
    };
    let multi = cores.len() > 1;
    let mut dumps = Vec::new();
    let target = program.target;
    let f = target.figures();
    for p in cores {
        check_sizes(p)?;
        assert!(
            p.target == target,
            "invariant broken: the cores of a verified launch share one target, not {} and {}",
            target,
            p.target
        );
    }
    let mut mem = MemoryState::for_cores(cores, config.poison);
    mem.set_matmul_worker(config.matmul_worker);
    load_inputs(program, inputs, &mut mem)?;
    // Declared after `mem`, so dropped (and joined) before it.
    let _warmer = config
        .warm_pages
        .then(|| warm::Warmer::start(scope, cores, mem.warm_targets(cores)));
    let mut queues: Vec<QueueState<'_>> = Vec::new();
    let mut sem_total = 0usize;
    for (c, p) in cores.iter().enumerate() {
        for s in &p.queues {
            queues.push(QueueState {
                core: c,
                sem_base: sem_total,
                arrived: None,
                barriers: 0,
                queue: s.queue,
                insts: &s.insts,
                labels: s
                    .insts
                    .iter()
                    .enumerate()
                    .filter_map(|(i, inst)| match inst.op {
                        Op::Label(insn::Label { label }) => Some((label, i)),
                        _ => None,
                    })
                    .rev()
                    .collect(),
                pc: 0,
                regs: vec![0; f.sequencer_registers as usize],
                free_ps: 0,
                last_write: None,
                dep: None,
                last_index: None,
                last_done: 0,
                stats: QueueStats {
                    core: u8::try_from(c).unwrap_or(u8::MAX),
                    queue: s.queue,
                    instructions: 0,
                    busy_ps: 0,
                    dma_wait_ps: 0,
                    end_ps: 0,
                    executions: vec![0; s.insts.len()],
                },
                overhead_ps: target.dependent_overhead_ps(s.queue.engine()),
                target,
                facts: vec![None; s.insts.len()],
                regions: HashMap::new(),
            });
        }
        sem_total += p.semaphores.len();
    }
    // The verifier's semaphore rule holds every waited or signalled
    // semaphore declared, so the loop below indexes them freely (core by
    // core: an undeclared id would name another core's semaphore).
    for q in &queues {
        let declared = cores[q.core].semaphores.len();
        for inst in q.insts {
            let ids = inst
                .waits
                .iter()
                .map(|w| w.sem)
                .chain(inst.signals.iter().copied());
            for s in ids {
                assert!(
                    (s.0 as usize) < declared,
                    "invariant broken: a verified program declares every semaphore it uses, not #{}",
                    s.0
                );
            }
        }
    }
    let cores_of: Vec<usize> = queues.iter().map(|q| q.core).collect();
    let mut sems: Vec<SemLog> = vec![SemLog::default(); sem_total];
    let mut shared: Vec<Shared> = (0..cores.len())
        .map(|_| Shared {
            engines: vec![Held::default(); f.dma_engines.max(1) as usize],
            ports: [Held::default(); Ports::COUNT],
        })
        .collect();
    let mut races = config
        .race_check
        .then(|| Races::new(queues.len(), sem_total));
    let mut accs: Vec<Accumulators> = (0..cores.len())
        .map(|_| Accumulators::new(f.sbuf_partitions as usize))
        .collect();
    let mut arrivals: Arrivals = BTreeMap::new();
    let mut rng = config_seed(config.step_order);
    let mut cursor = 0usize;
    let mut res = RunResult {
        outputs: Vec::new(),
        total_ps: 0,
        per_queue: Vec::new(),
        trace: Vec::new(),
        hbm_bytes_read: 0,
        hbm_bytes_written: 0,
        flops: 0,
        instructions: 0,
        elements: 0,
        undefined: Vec::new(),
        races: Vec::new(),
    };
    let n = queues.len();
    let n_cores = cores.len();
    let mut starts: Vec<Option<Cand>> = vec![None; n];
    // Whether `starts[i]` still holds: a queue that could issue keeps its
    // candidate until it executes (the increments its waits rely on stay
    // where they are while increments land at the end of their logs; a
    // forgotten one lies at or before the queue's free time, so it decided
    // nothing), except at a `core_barrier`, whose start depends on the
    // other cores' arrivals.
    let mut kept = vec![false; n];
    let names: Vec<Queue> = queues.iter().map(|q| q.queue).collect();
    let mut steps = 0u64;
    // The first uninitialised read, held back while the race detector
    // runs: see `step`.
    let mut pending: Option<SimError> = None;
    // Per step: the lower bound of each queue's future increments, and
    // which queues have finished (buffers kept across steps).
    let mut lb: Vec<Option<u64>> = Vec::with_capacity(n);
    let mut finished: Vec<bool> = Vec::with_capacity(n);
    loop {
        // Candidates: (start, latest increment waited for) per queue.
        let mut g = u64::MAX;
        let mut any_left = false;
        for (i, q) in queues.iter_mut().enumerate() {
            if q.finished() {
                starts[i] = None;
                continue;
            }
            any_left = true;
            if !kept[i] {
                mem.set_core(q.core);
                starts[i] = candidate(q, &sems, &mem, &arrivals, n_cores).ok();
                kept[i] = starts[i].is_some() && !q.insts[q.pc].op.is_paired();
            }
            if let Some(c) = starts[i] {
                g = g.min(c.start);
            }
        }
        if !any_left {
            break;
        }
        if g == u64::MAX {
            let e = deadlock(cores, &mut queues, &sems, &mut mem, &arrivals);
            return Err(prefer(pending, e));
        }
        // Lower bounds of future increments from each unfinished queue.
        lb.clear();
        lb.extend(
            queues
                .iter()
                .map(|q| (!q.finished()).then(|| q.free_ps.max(g))),
        );
        let (mut min1, mut min1_at, mut min2) = (u64::MAX, usize::MAX, u64::MAX);
        for (i, b) in lb.iter().enumerate() {
            if let Some(b) = *b {
                if b < min1 {
                    min2 = min1;
                    min1 = b;
                    min1_at = i;
                } else if b < min2 {
                    min2 = b;
                }
            }
        }
        // A DMA transfer reserves the shared engines (a port user its
        // ports), so they execute in (start, queue position) order. At the earliest start `g` that
        // holds when no earlier-placed queue has a candidate at `g` (a
        // queue blocked on a semaphore issues strictly later, as every
        // signalling instruction takes time); later, every other queue must
        // be unable to issue before it.
        let safe = |i: usize| -> bool {
            let Some(c) = starts[i] else {
                return false;
            };
            let bound = if i == min1_at { min2 } else { min1 };
            if c.last_sig > bound {
                return false;
            }
            if !c.shared {
                return true;
            }
            (0..n).filter(|&j| j != i).all(|j| {
                if c.start == g {
                    starts[j].is_none_or(|o| (o.start, j) > (c.start, i))
                } else {
                    lb[j].is_none_or(|b| (b, j) > (c.start, i))
                }
            })
        };
        let chosen = match config.step_order {
            StepOrder::RoundRobin => {
                let pick = (0..n).map(|k| (cursor + k) % n).find(|&i| safe(i));
                if let Some(i) = pick {
                    cursor = i + 1;
                }
                pick
            }
            StepOrder::Reverse => (0..n).rev().find(|&i| safe(i)),
            StepOrder::Earliest => (0..n)
                .filter(|&i| safe(i))
                .min_by_key(|&i| starts[i].map_or(u64::MAX, |s| s.start)),
            StepOrder::Seeded(_) => {
                let ok: Vec<usize> = (0..n).filter(|&i| safe(i)).collect();
                (!ok.is_empty()).then(|| ok[(next_random(&mut rng) % ok.len() as u64) as usize])
            }
        };
        // The earliest candidate is always safe; this is a fallback only.
        let chosen = chosen.unwrap_or_else(|| {
            (0..n)
                .filter(|&i| starts[i].is_some())
                .min_by_key(|&i| starts[i].map_or(u64::MAX, |s| s.start))
                .unwrap_or(0)
        });
        let Some(cand) = starts[chosen] else {
            let e = deadlock(cores, &mut queues, &sems, &mut mem, &arrivals);
            return Err(prefer(pending, e));
        };
        kept[chosen] = false;
        let core = queues[chosen].core;
        let core_program = &cores[core];
        mem.set_core(core);
        if cand.arrive {
            // A `core_barrier` arrives: record when, with the race clock
            // it carries to the other cores.
            let q = &mut queues[chosen];
            let clock = races
                .as_ref()
                .map(|r| r.snapshot(chosen, &q.race_waits(q.pc)));
            // A `sendrecv` reads its `src` as it arrives.
            let payload = match &q.insts[q.pc].op {
                Op::SendRecv(insn::SendRecv { src, .. }) => {
                    let mut bytes = Vec::new();
                    let read = mem.view(src, &q.regs, "src", false).and_then(|v| {
                        mem.settle_view(&v);
                        mem.read_raw(&v, &mut bytes)
                    });
                    if let Err(fault) = read {
                        let mut e =
                            SimError::at(fault.kind, fault.message, core_program, q.queue, q.pc);
                        e.core = multi.then_some(q.stats.core);
                        return Err(prefer(pending, e));
                    }
                    Some(bytes)
                }
                _ => None,
            };
            arrivals.entry((core, q.queue)).or_default().push(Arrival {
                time: cand.start,
                seq: q.stats.instructions,
                clock,
                payload,
            });
            q.arrived = Some(cand);
            continue;
        }
        // Iterations of a counting loop (`idle`), within the limits below.
        if cand.start <= config.max_simulated_ps
            && take_counting(
                chosen,
                &mut queues[chosen],
                &mut res,
                races.as_mut(),
                config,
            )
        {
            continue;
        }
        // A run limit stops the run at the chosen queue's instruction.
        let limit = |message: String| {
            let q = &queues[chosen];
            let mut e = SimError::at(
                SimErrorKind::InstructionLimit,
                message,
                core_program,
                q.queue,
                q.pc,
            );
            e.core = multi.then_some(q.stats.core);
            e
        };
        if cand.start > config.max_simulated_ps {
            let e = limit(format!(
                "the run passed {} of simulated time after {} executed instructions (a loop that never ends?)",
                time_text(config.max_simulated_ps),
                res.instructions
            ));
            return Err(prefer(pending, e));
        }
        res.instructions += 1;
        if res.instructions > config.max_instructions {
            let e = limit(format!(
                "the run exceeded {} executed instructions (a loop that never ends?)",
                config.max_instructions
            ));
            return Err(prefer(pending, e));
        }
        let barrier = queues[chosen].arrived.is_some();
        if barrier && let Some(r) = races.as_mut() {
            // Everything before the paired barriers happens before this
            // barrier's completion.
            let q = &queues[chosen];
            for other in (0..n_cores).filter(|&c| c != core) {
                if let Some(clock) = arrivals
                    .get(&(other, q.queue))
                    .and_then(|list| list.get(q.barriers))
                    .and_then(|a| a.clock.as_ref())
                {
                    r.join(chosen, clock);
                }
            }
        }
        // What the other core's `sendrecv` sent (a launch has two cores).
        let incoming: Option<Vec<u8>> = if barrier {
            let q = &queues[chosen];
            (0..n_cores).filter(|&c| c != core).find_map(|c| {
                arrivals
                    .get(&(c, q.queue))
                    .and_then(|list| list.get(q.barriers))
                    .and_then(|a| a.payload.clone())
            })
        } else {
            None
        };
        let (index, seq) = (queues[chosen].pc, queues[chosen].stats.instructions);
        let stepped = step(
            cores,
            multi,
            chosen,
            &mut queues[chosen],
            &cand,
            &names,
            &cores_of,
            &mut mem,
            &mut accs[core],
            &mut sems,
            &mut shared[core],
            races.as_mut(),
            &mut res,
            config,
            &mut pending,
            incoming.as_deref(),
            racy,
        );
        if let Err(mut e) = stepped {
            if multi && e.queue.is_some() && e.core.is_none() {
                e.core = Some(queues[chosen].stats.core);
            }
            return Err(prefer(pending, e));
        }
        if barrier {
            let q = &mut queues[chosen];
            q.arrived = None;
            q.barriers += 1;
        }
        // An increment that landed before a later one can change which
        // increment another queue's wait relies on: compute every
        // candidate again.
        let q = &queues[chosen];
        let appended = q.insts[index].signals.iter().all(|s| {
            sems[q.sem_base + s.0 as usize]
                .incs
                .back()
                .is_some_and(|last| (last.queue, last.seq) == (chosen, seq))
        });
        if !appended {
            kept.fill(false);
        }
        steps += 1;
        if steps.is_multiple_of(FORGET_EVERY)
            && let Some(floor) = queues
                .iter()
                .filter(|q| !q.finished())
                .map(|q| q.free_ps)
                .min()
        {
            for sem in &mut sems {
                sem.forget(floor);
            }
        }
        if !dump.is_empty() {
            record_dumps(core_program, &queues[chosen], dump, &mut mem, &mut dumps);
        }
        if let Some(r) = races.as_mut() {
            finished.clear();
            finished.extend(queues.iter().map(QueueState::finished));
            r.prune(&finished);
        }
    }
    // Execution order depends on the step order; the trace is reported in
    // simulated time order (then core, queue, then program order), which
    // does not.
    let rank = |core: u8, queue: Queue| -> usize {
        queues
            .iter()
            .position(|q| q.stats.core == core && q.queue == queue)
            .unwrap_or(usize::MAX)
    };
    res.trace
        .sort_by_key(|e| (e.start_ps, rank(e.core, e.queue), e.seq));
    res.per_queue = queues.iter().map(|q| q.stats.clone()).collect();
    res.hbm_bytes_read = mem.hbm_read;
    res.hbm_bytes_written = mem.hbm_written;
    mem.settle_all();
    if let Some(e) = pending {
        return Err(e);
    }
    if config.poison == Poison::Precise {
        res.undefined = undefined_outputs(cores, &mem);
    }
    res.outputs = collect_outputs(program, &mut mem, config.poison)?;
    dumps.sort_by_key(|d| (d.time_ps, rank(d.core, d.queue), d.seq));
    Ok((res, dumps))
}

/// Fewer iterations of a counting loop than this are stepped through.
const COUNTING_MIN_ITERATIONS: u64 = 2;

/// The tests' view of `take_counting`: whether it may take iterations at
/// once (off: every instruction is stepped, as before counting loops were
/// taken), and how many it took. Process-wide: a test running meanwhile
/// may step too, which changes none of its results.
#[cfg(test)]
pub(crate) mod counting {
    use std::sync::atomic::{AtomicBool, AtomicU64};

    pub(crate) static STEP_ALL: AtomicBool = AtomicBool::new(false);
    pub(crate) static TAKEN: AtomicU64 = AtomicU64::new(0);
}

/// At a queue's backward `branch` or `jump` that closes a quiet region
/// whose next iterations are a counting cycle (`idle`): executes the
/// iterations it may take at once, as stepping through them would
/// (registers, free time, statistics, trace events, race clock). Returns
/// whether it took any; the queue is then at the same branch again.
fn take_counting(
    qi: usize,
    q: &mut QueueState<'_>,
    res: &mut RunResult,
    races: Option<&mut Races>,
    config: &SimConfig,
) -> bool {
    let at = q.pc;
    if !matches!(q.insts[at].op, Op::Branch(_) | Op::Jump(_)) {
        return false;
    }
    #[cfg(test)]
    if counting::STEP_ALL.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    let region = match q.regions.get(&at) {
        Some(region) => region.clone(),
        None => {
            let (insts, target, queue) = (q.insts, q.target, q.queue);
            let cost = |i: usize| {
                let cost = target.cost(queue, &insts[i].op);
                cost.ports
                    .is_empty()
                    .then_some((cost.busy_ps, cost.latency_ps))
            };
            let region = Region::of(insts, at, &q.labels, cost).map(Rc::new);
            q.regions.insert(at, region.clone());
            region
        }
    };
    let Some(cycle) = region.and_then(|r| r.cycle(q.insts, &q.labels, &q.regs)) else {
        return false;
    };
    let limits = idle::Limits {
        max_start_ps: config.max_simulated_ps,
        instructions_left: config.max_instructions.saturating_sub(res.instructions),
    };
    let take = cycle.iterations(&q.regs, q.free_ps, limits);
    let k = take.iterations;
    if k < COUNTING_MIN_ITERATIONS {
        return false;
    }
    let m = cycle.indices.len() as u64;
    let free = q.free_ps;
    // A run whose loop goes on past its limit ends in the limit's error,
    // with no trace to show: a runaway loop records none of its events.
    if config.trace && !take.doomed {
        for j in 0..k {
            let base = free + j * cycle.busy_ps;
            for (n, (&index, &(start, end))) in cycle.indices.iter().zip(&cycle.offsets).enumerate()
            {
                let seq = q.stats.instructions + j * m + n as u64;
                let inst = &q.insts[index];
                res.trace.push(TraceEvent {
                    core: q.stats.core,
                    queue: q.queue,
                    index,
                    mnemonic: inst.op.mnemonic(),
                    seq,
                    start_ps: base + start,
                    free_ps: base + start + cycle.busy_of(n),
                    end_ps: base + end,
                    line: inst.line,
                    ready_ps: base + start,
                    cause: if seq == 0 { Cause::Start } else { Cause::Queue },
                    waited: None,
                    flops: 0,
                    hbm_bytes: 0,
                    dma: None,
                });
            }
        }
    }
    cycle.advance(&mut q.regs, k);
    for &index in &cycle.indices {
        if let Some(n) = q.stats.executions.get_mut(index) {
            *n += k;
        }
    }
    let last = free + (k - 1) * cycle.busy_ps;
    let done = last + cycle.offsets.iter().map(|&(_, end)| end).max().unwrap_or(0);
    q.stats.instructions += k * m;
    q.stats.busy_ps += k * cycle.busy_ps;
    q.stats.end_ps = q.stats.end_ps.max(done);
    res.total_ps = res.total_ps.max(done);
    res.instructions += k * m;
    q.free_ps = free + k * cycle.busy_ps;
    q.dep = None;
    q.last_index = cycle.indices.last().copied();
    q.last_done = last + cycle.offsets.last().map_or(0, |&(_, end)| end);
    if let Some(r) = races {
        r.tick(qi, k * m);
    }
    #[cfg(test)]
    counting::TAKEN.fetch_add(k, std::sync::atomic::Ordering::Relaxed);
    true
}

/// After a queue stepped: records what its last instruction wrote into
/// the tensors `dump` names. The queue's registers are those after the
/// instruction, which only control instructions (which write no tensor)
/// change.
fn record_dumps(
    program: &Program,
    q: &QueueState<'_>,
    dump: &DumpSpec,
    mem: &mut MemoryState,
    dumps: &mut Vec<Dump>,
) {
    let seq = q.stats.instructions - 1;
    let Some(index) = q.last_index else {
        return;
    };
    let inst = &q.insts[index];
    if inst.op.is_control() {
        return;
    }
    for o in inst.op.operands() {
        if o.role != Role::Write {
            continue;
        }
        let Some(name) = program.operand_name(q.queue, index, o.field) else {
            continue;
        };
        if !dump.contains(name) {
            continue;
        }
        let Ok(v) = mem.view_unchecked(o.ap, &q.regs, o.field) else {
            continue;
        };
        mem.settle_view(&v);
        dumps.push(Dump {
            name: name.to_owned(),
            core: q.stats.core,
            queue: q.queue,
            index,
            seq,
            line: inst.line,
            field: o.field,
            dtype: o.ap.dtype,
            shape: o.ap.shape(),
            bytes: mem.peek_raw(&v),
            time_ps: q.last_done,
        });
    }
}

/// The start time of `q`'s next instruction given the increments executed
/// so far, with the time of the latest increment it relies on; `Err` when
/// a wait is not yet met.
fn candidate(
    q: &mut QueueState<'_>,
    sems: &[SemLog],
    mem: &MemoryState,
    arrivals: &Arrivals,
    n_cores: usize,
) -> Result<Cand, Blocked> {
    let inst = &q.insts[q.pc];
    let is_barrier = inst.op.is_paired();
    if let (true, Some(arrival)) = (is_barrier, q.arrived) {
        // Arrived: start with the last paired barrier to arrive.
        let (mut start, mut by) = (arrival.start, None);
        for other in (0..n_cores).filter(|&c| c != q.core) {
            let list = arrivals.get(&(other, q.queue));
            match list.and_then(|l| l.get(q.barriers)) {
                Some(a) => {
                    if a.time > start {
                        start = a.time;
                        by = Some((other, a.seq));
                    }
                }
                None => {
                    return Err(Blocked {
                        sem: 0,
                        need: q.barriers as i64 + 1,
                        have: list.map_or(0, Vec::len),
                        peer: Some(other),
                    });
                }
            }
        }
        // Without a later peer, what decided the arrival decided the start.
        return Ok(Cand {
            start,
            last_sig: 0,
            ready: arrival.ready,
            sig: arrival.sig.filter(|_| by.is_none()),
            dep: arrival.dep.filter(|_| by.is_none()),
            shared: false,
            arrive: false,
            barrier: by,
        });
    }
    let mut last_sig = 0u64;
    let mut sig = None;
    for w in &inst.waits {
        let need = wait_need(w, &q.regs);
        if need <= 0 {
            continue;
        }
        let times = &sems[q.sem_base + w.sem.0 as usize];
        match times.get(need as usize - 1) {
            Some(inc) => {
                if sig.is_none() || inc.time > last_sig {
                    sig = Some((inc, w.sem.0 as usize, need as u64));
                }
                last_sig = last_sig.max(inc.time);
            }
            None => {
                return Err(Blocked {
                    sem: q.sem_base + w.sem.0 as usize,
                    need,
                    have: times.len(),
                    peer: None,
                });
            }
        }
    }
    let pc = q.pc;
    let dep = match q.dep {
        Some((at, d)) if at == pc => d,
        _ => {
            let d = dependency(q, mem);
            q.dep = Some((pc, d));
            d
        }
    };
    let overhead = q.overhead_ps;
    let ready = match dep {
        Some((done, _)) => q.free_ps.max(done) + overhead,
        None => q.free_ps,
    };
    let start = match dep {
        Some((done, _)) => q.free_ps.max(last_sig).max(done) + overhead,
        None => q.free_ps.max(last_sig),
    };
    // The wait decided the start when the start is later than the queue
    // alone allows.
    let sig = sig.filter(|_| start > ready);
    let dep_seq = dep
        .filter(|(done, _)| sig.is_none() && done + overhead > q.free_ps)
        .map(|(_, seq)| seq);
    Ok(Cand {
        start,
        last_sig,
        ready,
        sig,
        dep: dep_seq,
        shared: inst.op.is_dma() || !q.facts(pc).cost.ports.is_empty(),
        arrive: is_barrier,
        barrier: None,
    })
}

/// The increments a wait needs: `wait(sem >= rK + N)` reads the register
/// as an unsigned 32-bit value and the sum wraps (docs/isa.md §2.1).
fn wait_need(w: &SemWait, regs: &[i32]) -> i64 {
    match w.reg {
        Some(r) => {
            let reg = regs.get(usize::from(r.0)).copied().unwrap_or(0) as u32;
            i64::from(reg.wrapping_add(w.value))
        }
        None => i64::from(w.value),
    }
}

/// The completion time and `seq` of the queue's last memory-writing
/// instruction when the instruction at `pc` reads what it wrote.
fn dependency(q: &QueueState<'_>, mem: &MemoryState) -> Option<(u64, u64)> {
    let (writes, done, seq) = q.last_write.as_ref()?;
    let inst = &q.insts[q.pc];
    if inst.op.is_control() && !matches!(inst.op, Op::RegLoad(_)) {
        return None;
    }
    let reads = footprints(&inst.op, Role::Read, &q.regs, mem);
    reads
        .iter()
        .any(|r| writes.iter().any(|w| w.overlaps(r)))
        .then_some((*done, *seq))
}

fn footprints(op: &Op, role: Role, regs: &[i32], mem: &MemoryState) -> Vec<Footprint> {
    crate::footprint::operand_views(op, |ap, field| mem.view_unchecked(ap, regs, field).ok())
        .into_iter()
        .filter(|o| o.role == role)
        .map(|o| Footprint::of(&o.view))
        .collect()
}

/// The bytes `op`'s operand `field` covers (never-written bytes read as
/// `peek_raw` reads them), if it has that operand and its pattern is in
/// bounds.
fn operand_bytes(op: &Op, field: &str, regs: &[i32], mem: &MemoryState) -> Option<Vec<u8>> {
    op.operands()
        .into_iter()
        .find(|o| o.field == field)
        .and_then(|o| mem.view_unchecked(o.ap, regs, o.field).ok())
        .map(|v| mem.peek_raw(&v))
}

/// Settles the deferred matmuls (`deferred`) whose PSUM rows `op` reads
/// or writes, before anything looks at its operands: those its operands'
/// views overlap, except the rows of the chain an accumulating matmul
/// continues (`Exec::matmul` issues it after the others); every one for
/// an instruction whose rows an index remaps (`dma_gather`, `dma_scatter`:
/// their rows are not their views') or whose view does not resolve.
fn settle_operands(op: &Op, regs: &[i32], mem: &mut MemoryState) {
    if mem.nothing_deferred() {
        return;
    }
    let operands = op.operands();
    if !operands.iter().any(|o| o.ap.mem == Memory::Psum) {
        return;
    }
    if operands.iter().any(|o| o.field == "index") {
        mem.settle_all();
        return;
    }
    let chain = match op {
        Op::NcMatmul(m) => m.accumulate,
        Op::NcMatmulMx(m) => m.accumulate,
        _ => false,
    };
    for o in operands.iter().filter(|o| o.ap.mem == Memory::Psum) {
        match mem.view_unchecked(o.ap, regs, o.field) {
            Ok(v) if chain && o.field == "dst" && mem.continues_chain(&v) => {}
            Ok(v) => mem.settle_view(&v),
            Err(_) => mem.settle_all(),
        }
    }
}

/// Executes the instruction at `q.pc` as `cand` describes; `names` are
/// the queues by index.
#[allow(clippy::too_many_arguments)]
fn step(
    cores: &[Program],
    multi: bool,
    qi: usize,
    q: &mut QueueState<'_>,
    cand: &Cand,
    names: &[Queue],
    cores_of: &[usize],
    mem: &mut MemoryState,
    acc: &mut Accumulators,
    sems: &mut [SemLog],
    shared: &mut Shared,
    mut races: Option<&mut Races>,
    res: &mut RunResult,
    config: &SimConfig,
    pending: &mut Option<SimError>,
    incoming: Option<&[u8]>,
    racy: &mut Racy,
) -> Result<(), SimError> {
    let program = &cores[q.core];
    let target = program.target;
    let seq = q.stats.instructions;
    let (flops_before, hbm_before) = (res.flops, mem.hbm_read + mem.hbm_written);
    let index = q.pc;
    let facts = q.facts(index);
    let inst = &q.insts[index];
    let op = &inst.op;
    settle_operands(op, &q.regs, mem);
    // A shared port held by another queue's instruction holds it back.
    let mut start = cand.start;
    let mut port_by = None;
    for p in facts.cost.ports.indices() {
        let port = shared.ports[p];
        if port.free_ps > start {
            start = port.free_ps;
            port_by = port.last;
        }
    }
    let mut same_stores = Vec::new();
    if let Some(r) = races.as_deref_mut() {
        r.begin(qi, &q.race_waits(index));
    }
    if let Some(r) = races.as_deref_mut().filter(|_| facts.operands) {
        let accesses = r.accesses(qi, q.queue, index, op, |ap, field| {
            mem.view_unchecked(ap, &q.regs, field).ok()
        });
        let my_core = q.core;
        let checked = r.check(
            accesses,
            |earlier| cores_of.get(earlier).is_some_and(|&c| c != my_core),
            racy.tolerate,
        );
        match checked {
            Ok(checked) => {
                same_stores = checked.stores;
                for conflict in checked.racy {
                    let error =
                        race_error(&conflict, cores, cores_of, multi, q.queue, index, q.core);
                    racy.found.push(RacyRead {
                        conflict,
                        error,
                        stored: None,
                    });
                }
            }
            Err(conflict) => {
                return Err(race_error(
                    &conflict, cores, cores_of, multi, q.queue, index, q.core,
                ));
            }
        }
    }
    // Unordered stores of another core to the same bytes are accepted only
    // when this instruction stores exactly what is there: keep the bytes.
    // A store racing with the other core's earlier read also notes whether
    // that read saw written bytes (else it is a race whatever the timing).
    let before: Vec<(crate::race::Conflict, Option<Vec<u8>>, bool)> = same_stores
        .into_iter()
        .map(|c| {
            let bytes = operand_bytes(op, c.field, &q.regs, mem);
            let read_written = c
                .overlap
                .as_ref()
                .is_some_and(|o| mem.peek_region(o).is_some());
            (c, bytes, read_written)
        })
        .collect();
    let writes = if op.is_control() && !matches!(op, Op::RegStore(_)) {
        Vec::new()
    } else {
        footprints(op, Role::Write, &q.regs, mem)
    };
    let rule = crate::exec::shadow_rule(op);
    mem.begin(q.stats.core, q.queue, index, rule);
    // The second run of a launch with timing-dependent reads: a store that
    // came before a racy read keeps the bytes it replaces for the read, and
    // the read sees them (or the bytes a later store stored) instead.
    let mut swapped = Vec::new();
    if let Some(at) = races.as_deref().map(|r| (qi, r.epoch(qi))) {
        for &k in racy.before_store.get(&at).into_iter().flatten() {
            let old = mem.peek_region(&racy.subs[k].0);
            racy.unknown |= old.is_none();
            racy.subs[k].1 = old;
        }
        for &k in racy.at_read.get(&at).into_iter().flatten() {
            match &racy.subs[k] {
                (region, Some(bytes)) => swapped.push((k, mem.poke_region(region, bytes))),
                (_, None) => racy.unknown = true,
            }
        }
    }
    let mut exec = Exec {
        mem,
        regs: &mut q.regs,
        acc,
        engine: q.queue.engine(),
        flops: &mut res.flops,
    };
    let located = |fault: crate::error::Fault| {
        let mut message = name_operand(program, q.queue, index, op, fault.kind, fault.message);
        if let Some(o) = fault.origin {
            let site = origin_site(cores, multi, o);
            message =
                format!("{message}; it was computed from memory first read undefined by {site}");
        }
        let mut e = SimError::at(fault.kind, message, program, q.queue, index);
        e.core = multi.then_some(q.stats.core);
        e.oob = fault.oob.map(|mut facts| {
            if matches!(facts.tensor.as_str(), "sbuf" | "psum")
                && let Some(name) = program.operand_name(q.queue, index, facts.field)
            {
                facts.tensor = name.to_owned();
            }
            if let Some((tile, _)) = &mut facts.index_tile
                && let Some(name) = program.operand_name(q.queue, index, "index")
            {
                *tile = name.to_owned();
            }
            facts
        });
        e
    };
    let flow = match execute(&mut exec, op, config) {
        Ok(flow) => flow,
        // An uninitialised read (with `Poison::Precise`: an undefined
        // index or register) may be the symptom of a race with a write
        // that simply has not executed yet in this step order. With the
        // race detector on, the fault is held back and the instruction
        // re-run reading zeros, so a race found later is reported instead
        // (its cause); otherwise the run ends with the first such fault.
        // Later uninitialised reads are held back the same way (each may
        // be the other side of a race too, e.g. both cores of a launch
        // reading what the other has not written yet). Reads fail before
        // an instruction writes anything, so the re-run is clean.
        Err(fault)
            if fault.kind == SimErrorKind::UninitialisedRead
                && races.is_some()
                && matches!(exec.mem.poison(), Poison::Error | Poison::Precise) =>
        {
            if pending.is_none() {
                *pending = Some(located(fault));
            }
            // The re-run uses the same execution context.
            let policy = exec.mem.poison();
            exec.mem.set_poison(Poison::Zero);
            exec.mem.begin(q.stats.core, q.queue, index, rule);
            let rerun = exec.run(op);
            exec.mem.set_poison(policy);
            rerun.map_err(located)?
        }
        Err(fault) => return Err(located(fault)),
    };
    // A `sendrecv` receives what the other core's `src` held when it
    // arrived.
    if let (Op::SendRecv(insn::SendRecv { dst, .. }), Some(bytes)) = (op, incoming) {
        let v = mem.view(dst, &q.regs, "dst", true).map_err(&located)?;
        let want = v.elements() * v.size;
        if bytes.len() != want {
            return Err(located(crate::error::Fault::bad(format!(
                "the other core's `src` has {} bytes but this `dst` has {want}",
                bytes.len()
            ))));
        }
        mem.write_raw(&v, bytes).map_err(&located)?;
    }
    for (k, bytes) in swapped.into_iter().rev() {
        mem.poke_region(&racy.subs[k].0, &bytes);
    }
    for (conflict, old, read_written) in before {
        let new = operand_bytes(op, conflict.field, &q.regs, mem);
        if old.is_none() || new != old {
            let error = race_error(&conflict, cores, cores_of, multi, q.queue, index, q.core);
            // A store changing bytes the other core read without ordering:
            // that read depended on timing.
            if racy.tolerate
                && read_written
                && let Some(overlap) = &conflict.overlap
            {
                let stored = mem.peek_region(overlap);
                racy.found.push(RacyRead {
                    conflict,
                    error,
                    stored,
                });
            } else {
                return Err(error);
            }
        }
    }
    if !op.is_control() {
        res.elements += op
            .operands()
            .iter()
            .filter(|o| o.role == Role::Write)
            .map(|o| o.ap.num_elements())
            .sum::<u64>();
    }
    let cost = facts.cost;
    let mut free = start + cost.busy_ps;
    let mut done = start + cost.latency_ps.max(cost.busy_ps);
    // A transfer moves its data on the shared DMA engines, each one
    // transfer at a time; the queue is busy until its data has moved.
    let mut slot = None;
    let mut engine_wait = 0;
    if let Some(t) = target.dma_transfer(op) {
        let ready = start + t.issue_ps;
        let (mut first, mut last) = (u64::MAX, ready);
        let (mut latest, mut delayed_by) = (ready, None);
        let engines = &mut shared.engines;
        let total = engines.len() as u32;
        let mut begins = Vec::with_capacity(t.engines as usize);
        for e in t.engine_ids(total) {
            let engine = &mut engines[e as usize];
            let begin = ready.max(engine.free_ps);
            if begin > latest {
                latest = begin;
                delayed_by = engine.last;
            }
            engine.free_ps = begin + t.engine_busy_ps;
            engine.last = Some((q.queue, seq));
            begins.push(begin);
            first = first.min(begin);
            last = last.max(begin + t.engine_ps);
        }
        free = free.max(last);
        done = done.max(last + t.start_latency_ps);
        // Its data could have started moving at `ready`; the engines the
        // transfer waited for held it back until `latest`.
        engine_wait = latest - ready;
        slot = Some(DmaSlot {
            first_engine: t.first_engine,
            engines: t.engines,
            engine_begins_ps: begins,
            engine_ps: t.engine_ps,
            engine_busy_ps: t.engine_busy_ps,
            data_start_ps: first.min(last),
            data_end_ps: last,
            data_ready_ps: ready,
            delayed_by,
        });
    }
    for s in &inst.signals {
        let sem = q.sem_base + s.0 as usize;
        sems[sem].insert(Inc {
            time: done,
            queue: qi,
            seq,
        });
        if let Some(r) = races.as_deref_mut() {
            r.signal(qi, sem, done);
        }
    }
    for p in facts.cost.ports.indices() {
        shared.ports[p] = Held {
            free_ps: start + cost.busy_ps,
            last: Some((q.queue, seq)),
        };
    }
    q.free_ps = free;
    q.dep = None;
    q.stats.instructions += 1;
    if let Some(n) = q.stats.executions.get_mut(index) {
        *n += 1;
    }
    q.stats.busy_ps += (free - start).saturating_sub(engine_wait);
    q.stats.dma_wait_ps += engine_wait;
    q.stats.end_ps = q.stats.end_ps.max(done);
    res.total_ps = res.total_ps.max(done);
    if !writes.is_empty() {
        q.last_write = Some((writes, done, seq));
    }
    q.last_index = Some(index);
    q.last_done = done;
    if config.trace {
        let cause = if let Some((queue, seq)) = port_by {
            Cause::Port { queue, seq }
        } else if let Some((core, seq)) = cand.barrier {
            Cause::Barrier {
                core: u8::try_from(core).unwrap_or(u8::MAX),
                queue: q.queue,
                seq,
            }
        } else if let Some((inc, _, _)) = cand.sig {
            Cause::Semaphore {
                queue: names[inc.queue],
                seq: inc.seq,
            }
        } else if let Some(p) = cand.dep {
            Cause::Dependency { seq: p }
        } else if seq == 0 {
            Cause::Start
        } else {
            Cause::Queue
        };
        res.trace.push(TraceEvent {
            core: q.stats.core,
            queue: q.queue,
            index,
            mnemonic: op.mnemonic(),
            seq,
            start_ps: start,
            free_ps: free,
            end_ps: done,
            line: inst.line,
            ready_ps: cand.ready,
            cause,
            waited: cand
                .sig
                .filter(|_| port_by.is_none())
                .map(|(_, sem, count)| Waited {
                    sem: nkic_isa::SemId(sem as u32),
                    count,
                }),
            flops: res.flops - flops_before,
            hbm_bytes: mem.hbm_read + mem.hbm_written - hbm_before,
            dma: slot,
        });
    }
    q.pc = match flow {
        Flow::Next => index + 1,
        // The verifier's branch-target rule holds every target defined.
        Flow::Jump(label) => *q.labels.get(&label).unwrap_or_else(|| {
            panic!(
                "invariant broken: a verified program defines every branch target, not {label} in queue {}",
                q.queue
            )
        }),
    };
    Ok(())
}

/// The fault of a data race between instruction `index` of `queue` on
/// core `core` and the earlier access `conflict` names.
/// Runs `op` in the tier `tier` asks for: natively when it qualifies
/// (`jit`), else in the interpreter.
fn execute(exec: &mut Exec<'_>, op: &Op, config: &SimConfig) -> crate::error::FResult<Flow> {
    #[cfg(feature = "jit")]
    if config.tier == SimTier::Jit
        && let Some(res) = crate::jit::run(exec, op, !config.jit_background)
    {
        return res.map(|()| Flow::Next);
    }
    #[cfg(not(feature = "jit"))]
    let _ = config;
    exec.run(op)
}

fn race_error(
    conflict: &crate::race::Conflict,
    cores: &[Program],
    cores_of: &[usize],
    multi: bool,
    queue: Queue,
    index: usize,
    core: usize,
) -> SimError {
    let earlier_core = cores_of.get(conflict.earlier_q).copied().unwrap_or(0);
    let mut earlier = Site::of(
        &cores[earlier_core],
        conflict.earlier_queue,
        conflict.earlier_index,
    );
    if multi {
        earlier.core = Some(u8::try_from(earlier_core).unwrap_or(u8::MAX));
    }
    let mut e = SimError::at(
        SimErrorKind::Race,
        conflict.message(&earlier, multi),
        &cores[core],
        queue,
        index,
    );
    e.related = Some(Box::new(earlier));
    if multi {
        e.core = Some(u8::try_from(core).unwrap_or(u8::MAX));
    }
    e
}

/// The error a run reports: a data race (the cause) over an earlier held
/// back uninitialised read; otherwise the held back read, which came first.
fn prefer(pending: Option<SimError>, error: SimError) -> SimError {
    match pending {
        Some(p) if error.kind != SimErrorKind::Race => p,
        _ => error,
    }
}

/// Adds the kernel's tensor name to an out-of-bounds or uninitialised-read
/// message that names an on-chip operand (`through `src``), when the
/// program knows it (`Program::operand_names`); HBM messages already name
/// their tensor.
fn name_operand(
    program: &Program,
    queue: Queue,
    index: usize,
    op: &Op,
    kind: SimErrorKind,
    message: String,
) -> String {
    if !matches!(
        kind,
        SimErrorKind::OutOfBounds | SimErrorKind::UninitialisedRead
    ) {
        return message;
    }
    for o in op.operands() {
        if !o.ap.mem.is_on_chip() {
            continue;
        }
        let through = format!("through `{}`", o.field);
        if !message.contains(&through) {
            continue;
        }
        if let Some(name) = program.operand_name(queue, index, o.field) {
            return message.replacen(&through, &format!("{through} (tensor `{name}`)"), 1);
        }
    }
    message
}

fn deadlock(
    cores: &[Program],
    queues: &mut [QueueState<'_>],
    sems: &[SemLog],
    mem: &mut MemoryState,
    arrivals: &Arrivals,
) -> SimError {
    let multi = cores.len() > 1;
    let mut parts = Vec::new();
    let mut first = None;
    for q in queues.iter() {
        if q.finished() {
            continue;
        }
        // Re-evaluate without caching to name the unmet wait.
        let mut probe = QueueState {
            core: q.core,
            sem_base: q.sem_base,
            arrived: q.arrived,
            barriers: q.barriers,
            queue: q.queue,
            insts: q.insts,
            labels: BTreeMap::new(),
            pc: q.pc,
            regs: q.regs.clone(),
            free_ps: q.free_ps,
            last_write: None,
            dep: None,
            last_index: None,
            last_done: 0,
            stats: q.stats.clone(),
            overhead_ps: q.overhead_ps,
            target: q.target,
            facts: Vec::new(),
            regions: HashMap::new(),
        };
        mem.set_core(q.core);
        let prefix = if multi {
            format!("core{}.", q.core)
        } else {
            String::new()
        };
        match candidate(&mut probe, sems, mem, arrivals, cores.len()) {
            Err(Blocked {
                peer: Some(peer),
                need,
                ..
            }) => {
                parts.push(format!(
                    "{prefix}{}[{}] `{}` waits for core {peer}'s {} queue to reach its paired instruction #{need}, which it never does",
                    q.queue,
                    q.pc,
                    q.insts[q.pc].op.mnemonic(),
                    q.queue
                ));
                first.get_or_insert((q.core, q.queue, q.pc));
            }
            Err(b) => {
                let local = b.sem - q.sem_base;
                let name = cores[q.core]
                    .sem_name(nkic_isa::SemId(local as u32))
                    .unwrap_or("?");
                parts.push(format!(
                    "{prefix}{}[{}] `{}` waits for `{name}` >= {} but it is {} and nothing left can signal it",
                    q.queue,
                    q.pc,
                    q.insts[q.pc].op.mnemonic(),
                    b.need,
                    b.have
                ));
                first.get_or_insert((q.core, q.queue, q.pc));
            }
            Ok(_) => {}
        }
    }
    let message = format!("deadlock: {}", parts.join("; "));
    match first {
        Some((core, queue, index)) => {
            let mut e = SimError::at(SimErrorKind::Deadlock, message, &cores[core], queue, index);
            // The instruction did not fault itself; keep its location only.
            e.mnemonic = None;
            e.core = multi.then(|| u8::try_from(core).unwrap_or(u8::MAX));
            e
        }
        None => SimError::new(SimErrorKind::Deadlock, message),
    }
}

/// The most HBM the simulator allocates for one program's tensors.
const MAX_HBM_BYTES: u64 = 1 << 36;

/// Rejects HBM tensors whose sizes overflow or exceed `MAX_HBM_BYTES` in
/// total, before anything is allocated.
pub(crate) fn check_sizes(program: &Program) -> Result<(), SimError> {
    let mut total: u64 = 0;
    for t in &program.hbm {
        let bytes = t
            .shape
            .iter()
            .try_fold(u64::from(t.dtype.size()), |a, &d| a.checked_mul(d))
            .and_then(|b| total.checked_add(b));
        match bytes {
            Some(b) if b <= MAX_HBM_BYTES => total = b,
            _ => {
                return Err(SimError::about(
                    SimErrorKind::BadProgram,
                    format!(
                        "HBM tensor `{}` makes the program's tensors larger than the simulator's {} GiB",
                        t.name,
                        MAX_HBM_BYTES >> 30
                    ),
                    &t.name,
                ));
            }
        }
    }
    Ok(())
}

fn load_inputs(program: &Program, inputs: &Inputs, mem: &mut MemoryState) -> Result<(), SimError> {
    let mut given = vec![false; program.hbm.len()];
    for (key, bytes) in &inputs.entries {
        let found = match key {
            InputKey::Name(name) => program.tensor_by_name(name),
            InputKey::Id(id) => program.tensor(*id).map(|_| *id),
        };
        let label = match key {
            InputKey::Name(name) => format!("`{name}`"),
            InputKey::Id(id) => format!("tensor #{}", id.0),
        };
        let Some(id) = found else {
            return Err(SimError::new(
                SimErrorKind::BadInput,
                format!("the kernel has no argument {label}"),
            ));
        };
        let Some(t) = program.tensor(id) else {
            return Err(SimError::new(
                SimErrorKind::BadInput,
                format!("the kernel has no argument {label}"),
            ));
        };
        if !matches!(t.kind, TensorKind::Input | TensorKind::InOut) {
            return Err(SimError::about(
                SimErrorKind::BadInput,
                format!("`{}` is {} argument, not an input", t.name, article(t.kind)),
                &t.name,
            ));
        }
        if given[id.0 as usize] {
            return Err(SimError::about(
                SimErrorKind::BadInput,
                format!("`{}` is given twice", t.name),
                &t.name,
            ));
        }
        if bytes.len() as u64 != t.bytes() {
            return Err(SimError::about(
                SimErrorKind::BadInput,
                format!(
                    "`{}` is {}{:?} ({} bytes) but the input has {} bytes",
                    t.name,
                    t.dtype,
                    t.shape,
                    t.bytes(),
                    bytes.len()
                ),
                &t.name,
            ));
        }
        given[id.0 as usize] = true;
        mem.load_shared(id.0 as usize, bytes.clone());
    }
    for (id, t) in program.tensors() {
        if matches!(t.kind, TensorKind::Input | TensorKind::InOut) && !given[id.0 as usize] {
            return Err(SimError::about(
                SimErrorKind::BadInput,
                format!("missing input `{}`", t.name),
                &t.name,
            ));
        }
    }
    Ok(())
}

fn article(kind: TensorKind) -> &'static str {
    match kind {
        TensorKind::Internal => "an internal",
        TensorKind::Shared => "a shared internal",
        TensorKind::Output => "an output",
        TensorKind::Input => "an input",
        TensorKind::InOut => "an inout",
    }
}

/// The outputs' bytes, moved out of `mem` (the last use of it).
fn collect_outputs(
    program: &Program,
    mem: &mut MemoryState,
    poison: Poison,
) -> Result<Vec<(String, OutputBytes)>, SimError> {
    let mut out = Vec::new();
    for (id, t) in program.args() {
        if !matches!(t.kind, TensorKind::Output | TensorKind::InOut) {
            continue;
        }
        if poison == Poison::Error
            && let Some(byte) = mem.first_unwritten(id.0 as usize)
        {
            let mut e = SimError::new(
                SimErrorKind::UninitialisedRead,
                format!(
                    "output `{}` is not fully written: byte {byte} (element {}) was never written ({} of {} elements never written)",
                    t.name,
                    byte / t.dtype.size() as usize,
                    mem.unwritten_elements(id.0 as usize, t.dtype.size() as usize),
                    t.numel()
                ),
            );
            e.tensor = Some(t.name.as_str().into());
            return Err(e);
        }
        out.push((t.name.clone(), mem.take_output(id.0 as usize, t.dtype)));
    }
    Ok(out)
}

/// The instruction an origin names, located.
fn origin_site(cores: &[Program], multi: bool, o: crate::memory::Origin) -> crate::error::Site {
    let program = cores.get(usize::from(o.core)).unwrap_or(&cores[0]);
    let mut site = crate::error::Site::of(program, o.queue, o.index);
    site.core = multi.then_some(o.core);
    site
}

/// The undefined elements of every output of core 0's program
/// (`Poison::Precise`): per output, the never-written ones, then those
/// computed from undefined data.
fn undefined_outputs(cores: &[Program], mem: &MemoryState) -> Vec<UndefinedOutput> {
    let program = &cores[0];
    let multi = cores.len() > 1;
    let mut out = Vec::new();
    for (id, t) in program.args() {
        if !matches!(t.kind, TensorKind::Output | TensorKind::InOut) {
            continue;
        }
        let found = mem.undefined_summary(id.0 as usize, t.dtype.size() as usize);
        let unravel = |mut e: u64| {
            let mut idx = vec![0; t.shape.len()];
            for (k, &d) in t.shape.iter().enumerate().rev() {
                idx[k] = e % d.max(1);
                e /= d.max(1);
            }
            idx
        };
        let never = found.never.map(|(count, first)| (count, first, None));
        for (count, first, origin) in [never, found.undefined].into_iter().flatten() {
            out.push(UndefinedOutput {
                output: t.name.clone(),
                shape: t.shape.clone(),
                elements: count,
                first_index: unravel(first as u64),
                origin: origin.map(|o| origin_site(cores, multi, o)),
            });
        }
    }
    out
}

/// `1 s`, `250 ms`, `40 us` or `900 ns` for a time limit.
fn time_text(ps: u64) -> String {
    let units = [
        (1_000_000_000_000, "s"),
        (1_000_000_000, "ms"),
        (1_000_000, "us"),
        (1_000, "ns"),
    ];
    for (scale, unit) in units {
        if ps >= scale && ps.is_multiple_of(scale) {
            return format!("{} {unit}", ps / scale);
        }
    }
    format!("{ps} ps")
}

fn config_seed(order: StepOrder) -> u64 {
    match order {
        StepOrder::Seeded(s) => s,
        _ => 0,
    }
}

/// splitmix64.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(time: u64, seq: u64) -> Inc {
        Inc {
            time,
            queue: 0,
            seq,
        }
    }

    #[test]
    fn a_semaphore_log_keeps_time_order_and_counts_what_it_forgets() {
        let mut log = SemLog::default();
        for (time, seq) in [(10, 0), (30, 1), (20, 2), (30, 3), (5, 4)] {
            log.insert(inc(time, seq));
        }
        let order: Vec<u64> = (0..log.len()).map(|k| log.get(k).unwrap().seq).collect();
        assert_eq!(order, [4, 0, 2, 1, 3]);
        log.forget(20);
        assert_eq!(log.len(), 5);
        assert_eq!((log.forgotten, log.incs.len()), (3, 2));
        // A forgotten increment decides no start; the others keep theirs.
        assert_eq!(log.get(0).unwrap().time, 0);
        assert_eq!(log.get(2).unwrap().queue, usize::MAX);
        assert_eq!((log.get(3).unwrap().time, log.get(3).unwrap().seq), (30, 1));
        assert!(log.get(5).is_none());
        log.insert(inc(25, 5));
        assert_eq!(log.get(3).unwrap().seq, 5);
    }
}
