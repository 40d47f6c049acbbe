//! Scheduling: a queue for every op and the order of every queue's stream.
//!
//! **Optimized** ([`Schedule::Optimized`]) is list scheduling over the
//! dependency graph with `Target::cost`, the model the simulator times
//! with. The scheduler replays that model as it goes (`Timer`): per
//! queue the time it is next free and its latest op, per DMA engine the
//! time it is next free (transfers of every DMA queue share the core's DMA
//! engines, `Target::dma_transfer`), per shared RAM port (`Cost::ports`)
//! the time it is next free, and per scheduled op its completion.
//! An op reading bytes its queue's previous op wrote (bounding boxes, as
//! the simulator tests) waits for that op's completion and pays the
//! dependent-issue overhead. The replay is exact for the kernels the
//! static path compiles, so the scheduler knows each candidate schedule's
//! simulated time; where engines share RAM ports it gives a port to ops in
//! the order they are appended, the simulator in start order, so there it
//! is an estimate.
//!
//! One *pass* builds a schedule: at every step, for each op whose
//! predecessors are all scheduled, it finds the legal queue where the op
//! would complete first (the DMA queue free first stands for all DMA
//! queues), and so its start there; among the ops that can start within a
//! *window* of the earliest of those starts it picks the one of highest
//! *priority* ([`Policy`]) and appends it to its queue. Engine choice for
//! ops NKI leaves open and the spreading of DMAs over the queues fall out
//! of that rule. Because ops are appended in a topological order, every
//! queue's stream only waits on instructions placed before it, and the
//! program cannot deadlock.
//!
//! No single rule is best for every kernel. Picking the earliest start
//! (window 0) packs the engines but tends to run every tile's first step
//! before any tile's last, which leaves all stores for the end, where they
//! queue up on the DMA engines; other rules finish tiles one after the
//! other but leave engines idle. The optimized schedule is therefore the
//! best of a search, all of it deterministic:
//!
//! 1. one pass per policy in [`POLICIES`]: windows × priorities (the
//!    critical path, source order, and the latest start in a schedule
//!    built backwards from the end, which sees the DMA engines fill up
//!    with stores at the end of the kernel);
//! 2. forward-backward improvement: a backward pass in the order the best
//!    schedule completes its ops, then forward passes by the latest starts
//!    it gives, repeated while it helps;
//! 3. a perturbation search: forward passes whose priorities are the best
//!    schedule's start times plus pseudo-random noise of decreasing size
//!    (a fixed-seed generator), keeping every improvement, for at most
//!    [`SEARCH_ROUNDS`] passes and [`SEARCH_BUDGET`] slot evaluations,
//!    and until [`SEARCH_STALL`] passes in a row, or passes in a row that
//!    spent [`SEARCH_STALL_WORK`] slot evaluations, found nothing better.
//!
//! The search stops early once the best schedule is within 2 % of a time
//! no schedule can beat ([`NEAR_FLOOR`]: the longest chain of latencies,
//! the busiest DMA engine, and each engine's work that has no other
//! engine to go to).
//!
//! Compile time stays linear in the program: a pass weighs at most
//! [`READY_LOOKAHEAD`] ready ops per step, steps 1 and 2 stop once they
//! have spent [`PASS_BUDGET`] slot evaluations (step 3 is then skipped),
//! and above [`MANY_OPS`] ops only the first policy runs, weighing at most
//! [`MANY_OPS_LOOKAHEAD`] ready ops per step.
//!
//! Ties keep the earlier schedule, so the result is the same on every run.
//!
//! **Sequential** ([`Schedule::Sequential`]) keeps source order; each op
//! takes the first of its legal queues (the graph already chains every op
//! to its predecessor).

use std::collections::BTreeMap;

use nkic_isa::intervals::overlap;
use nkic_isa::{Cost, DmaTransfer, Engine, Ports, Queue, Target};

use crate::Schedule;
use crate::collect::Unit;
use crate::deps::{Access, Graph, Resource};
use crate::lower::Lowered;

/// The schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scheduled {
    /// The queue of each op.
    pub queue: Vec<Queue>,
    /// The cost of each op on its queue.
    pub cost: Vec<Cost>,
    /// The global order ops were scheduled in (a topological order).
    pub order: Vec<usize>,
    /// Each queue's stream: op indices in order.
    pub streams: BTreeMap<Queue, Vec<usize>>,
    /// The index of each op within its queue's stream.
    pub index_in_queue: Vec<usize>,
    /// The scheduler's own estimate of the end time, in picoseconds.
    pub estimated_ps: u64,
    /// The scheduler's estimate of each op's start, in picoseconds.
    pub start: Vec<u64>,
}

/// The queues an engine's instructions may go to.
pub fn queues_of(engine: Engine, dma_queues: u32) -> Vec<Queue> {
    match Queue::of_engine(engine) {
        Some(q) => vec![q],
        None => (0..dma_queues.min(u32::from(u8::MAX)))
            .map(|i| Queue::Dma(u8::try_from(i).unwrap_or(u8::MAX)))
            .collect(),
    }
}

/// What a pass prefers among the ops it may pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// The longest chain of latencies from the op to the end.
    CriticalPath,
    /// The earlier op in source order.
    SourceOrder,
    /// The larger urgency given to the pass: how long before the end the
    /// op should start.
    Urgency,
}

/// One way of picking the next op; see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Ops that can start at most this many picoseconds after the earliest
    /// possible start compete by priority.
    pub window_ps: u64,
    pub priority: Priority,
}

impl Policy {
    const fn new(window_ps: u64, priority: Priority) -> Policy {
        Policy {
            window_ps,
            priority,
        }
    }
}

/// The policies of the first search step, in tie-break order. `Urgency`
/// here means the latest starts of the backward schedule.
pub const POLICIES: &[Policy] = &[
    Policy::new(0, Priority::CriticalPath),
    Policy::new(0, Priority::Urgency),
    Policy::new(250_000, Priority::Urgency),
    Policy::new(250_000, Priority::CriticalPath),
    Policy::new(250_000, Priority::SourceOrder),
    Policy::new(1_000_000, Priority::SourceOrder),
    Policy::new(1_000_000, Priority::CriticalPath),
    Policy::new(u64::MAX, Priority::Urgency),
];

/// Above this many ops only the first policy runs, with a shorter
/// lookahead ([`MANY_OPS_LOOKAHEAD`]), and the search is skipped, to bound
/// compile time.
pub const MANY_OPS: usize = 20_000;

/// The most ready ops a pass weighs at one step (its lookahead, as GCC's
/// `max-sched-ready-insns`): ops that become ready while this many wait
/// queue behind them in the order they became ready. A kernel that never
/// has more ready ops than this is scheduled as with no limit; one with
/// thousands of independent ops (many memsets, a large launch grid) costs
/// time linear in its size instead of quadratic.
pub const READY_LOOKAHEAD: usize = 256;

/// The lookahead of a pass over more than [`MANY_OPS`] ops, whose one pass
/// is the whole search. nki-library's k = 4093 depthwise conv1d (563k ops,
/// thousands of its DMAs ready at once) took 70 million slot evaluations
/// and 1.27 s with `READY_LOOKAHEAD`, 18 million and 0.47 s with this,
/// for a schedule 0.05 % longer; its 8K `attention_bwd` rows never have
/// more ops ready and are scheduled exactly as before.
pub const MANY_OPS_LOOKAHEAD: usize = 64;

/// The lookahead of a pass over `n` ops.
fn lookahead(n: usize) -> usize {
    match n > MANY_OPS {
        true => MANY_OPS_LOOKAHEAD,
        false => READY_LOOKAHEAD,
    }
}

/// The most slot evaluations steps 1 and 2 of the search spend: once the
/// passes so far took more, the remaining policies, the forward-backward
/// rounds and the perturbation search are skipped. Kernels with a few
/// thousand ops take far less; a large launch grid or thousands of
/// independent ops would otherwise pay a dozen passes of `READY_LOOKAHEAD`
/// evaluations per op.
pub const PASS_BUDGET: u64 = 4_000_000;

/// The search stops once the best schedule's time is within
/// 1/`NEAR_FLOOR` of `Table::floor_ps`, a time no schedule can beat: a
/// kernel bound by its DMA engines or one engine's work gains nothing
/// from more passes. At 2 % (1 % before 2026-12-07) every schedule of the
/// quality bench's 48 cases is unchanged, and a tutorial-style 1024³ bf16
/// matmul (`mm_tiled` of `kernels/published/matmul_versions.py`, 416 ops
/// whose first pass lands 1.7 % above the floor) stops after that pass
/// instead of ten more that found nothing better: its compile took
/// 12–18 ms, now 7–9 ms.
pub const NEAR_FLOOR: u64 = 50;

/// The most forward-backward rounds.
pub const FORWARD_BACKWARD_ROUNDS: usize = 4;

/// The most passes of the perturbation search.
pub const SEARCH_ROUNDS: usize = 64;

/// The perturbation search stops after this many passes in a row found
/// nothing better: most kernels' best schedule comes from step 1 or 2,
/// and then every pass is wasted (a 1024³ bf16 matmul spent a third of
/// its compile time there). The longest run of fruitless passes before
/// an improvement among the quality bench's kernels is 33 (a 6-op
/// kernel); the next longest 21 (`layernorm` at 1024 × 1024).
pub const SEARCH_STALL: usize = 34;

/// The perturbation search also stops once the passes since its last
/// improvement (or since it began) spent this many slot evaluations: a
/// fruitless stretch of a small kernel's cheap passes may be long, that
/// of a larger kernel's costly ones may not. Measured over the quality
/// bench's kernels (2026-12-06), the perturbation search improved eight
/// schedules, by 0.04–4.2 %, each after fruitless passes that had spent
/// at most about 11,000 evaluations (`layernorm` at 1024 × 1024: 21
/// passes of 500–570), so their schedules are unchanged; the 1024³ bf16
/// matmul (208 ops, about 2,000 evaluations a pass), whose best schedule
/// is the first policy's, ran 34 fruitless passes of the search, 4 ms of
/// its 9.5 ms compile, and now runs 8.
pub const SEARCH_STALL_WORK: u64 = 16_000;

/// The most slot evaluations (one op on one queue at one step) the
/// perturbation search spends.
pub const SEARCH_BUDGET: u64 = 500_000;

/// Schedules the lowered ops; see the module doc.
pub fn schedule(unit: &Unit<'_>, lowered: &Lowered, graph: &Graph, mode: Schedule) -> Scheduled {
    let table = Table::new(unit.target, lowered, graph);
    let none = vec![0; lowered.ops.len()];
    if mode == Schedule::Sequential {
        return list_schedule(&table, graph, None, &none).0;
    }
    if lowered.ops.len() > MANY_OPS {
        return list_schedule(&table, graph, Some(POLICIES[0]), &none).0;
    }
    let mut best = Best(None);
    let floor = table.floor_ps();
    let near_floor = |best: &Best| {
        best.0
            .as_ref()
            .is_some_and(|b| b.estimated_ps <= floor + floor / NEAR_FLOOR)
    };
    // 1. The policies.
    let backward = table.backward(graph, None);
    let mut spent = 0u64;
    for policy in POLICIES {
        let (s, work) = list_schedule(&table, graph, Some(*policy), &backward);
        best.consider(s);
        spent += work;
        if spent > PASS_BUDGET || near_floor(&best) {
            break;
        }
    }
    // 2. Forward-backward improvement.
    for _ in 0..FORWARD_BACKWARD_ROUNDS {
        if spent > PASS_BUDGET || near_floor(&best) {
            break;
        }
        let Some(current) = &best.0 else { break };
        let before = current.estimated_ps;
        let complete: Vec<u64> = (0..lowered.ops.len())
            .map(|i| current.start[i] + current.cost[i].latency_ps.max(current.cost[i].busy_ps))
            .collect();
        let urgency = table.backward(graph, Some(&complete));
        for window_ps in [0, u64::MAX] {
            let policy = Policy::new(window_ps, Priority::Urgency);
            let (s, work) = list_schedule(&table, graph, Some(policy), &urgency);
            best.consider(s);
            spent += work;
        }
        if best.0.as_ref().is_none_or(|b| b.estimated_ps >= before) {
            break;
        }
    }
    // 3. The perturbation search.
    let mut rng = nkic_isa::SplitMix64(0x6E6B_6963_5F73_6368);
    let searching = spent <= PASS_BUDGET && !near_floor(&best);
    let mut spent = 0u64;
    let (mut stale, mut stale_work) = (0, 0u64);
    for round in 0..SEARCH_ROUNDS {
        if !searching || stale == SEARCH_STALL || stale_work >= SEARCH_STALL_WORK {
            break;
        }
        let Some(current) = &best.0 else { break };
        let span = current.estimated_ps.max(1);
        let noise = (span >> (2 + round % 4)).max(1);
        let urgency: Vec<u64> = current
            .start
            .iter()
            .map(|&start| span.saturating_sub(start) + rng.next_u64() % noise)
            .collect();
        let window_ps = if round % 2 == 0 { 0 } else { u64::MAX };
        let (s, work) = list_schedule(
            &table,
            graph,
            Some(Policy::new(window_ps, Priority::Urgency)),
            &urgency,
        );
        (stale, stale_work) = match best.consider(s) {
            true => (0, 0),
            false => (stale + 1, stale_work + work),
        };
        spent += work;
        if spent + work > SEARCH_BUDGET {
            break;
        }
    }
    match best.0 {
        Some(s) => s,
        None => list_schedule(&table, graph, None, &none).0,
    }
}

/// The best schedule so far (the earlier one on ties).
struct Best(Option<Scheduled>);

impl Best {
    /// Keeps `s` if it is better; says whether it was.
    fn consider(&mut self, s: Scheduled) -> bool {
        let better = self
            .0
            .as_ref()
            .is_none_or(|b| s.estimated_ps < b.estimated_ps);
        if better {
            self.0 = Some(s);
        }
        better
    }
}

/// What every pass shares: candidates, costs and critical paths.
struct Table {
    target: Target,
    /// Per op: the legal engines with their costs, in preference order.
    candidates: Vec<Vec<(Engine, Cost)>>,
    /// Per op: its DMA transfer, if it is one.
    transfers: Vec<Option<DmaTransfer>>,
    /// Per op: the critical path (cheapest latency of it and of the
    /// longest chain after it).
    level: Vec<u64>,
    dma_queues: Vec<Queue>,
    dma_engines: usize,
    /// Per op: which queues its slot depends on, for cache invalidation.
    uses: Vec<Uses>,
    /// Per op: the memories it reads and those it writes, as
    /// [`resource_bit`] sets, so most pairs of ops need no box test.
    reads: Vec<u64>,
    writes: Vec<u64>,
}

/// A bit standing for `r` in the resource sets of [`Table`]: SBUF, PSUM,
/// and the HBM tensors sharing the other 62 bits.
fn resource_bit(r: Resource) -> u64 {
    match r {
        Resource::Sbuf => 1,
        Resource::Psum => 2,
        Resource::Hbm(t) => 4 << (t % 62),
    }
}

/// The kinds of scheduler state an op's slot depends on, as a bit set
/// (`kinds`): each sequencer engine among its candidates
/// ([`engine_bit`]), the DMA queues if a DMA engine is among them (their
/// free times and, through the transfers on them, the DMA engines), the
/// DMA engines if it is a transfer, and the shared RAM ports if a
/// candidate holds one. A commit changes some of these kinds
/// ([`Uses::changed_by`]); a cached slot is stale once one of its kinds
/// changed.
#[derive(Clone, Copy, Debug)]
struct Uses {
    kinds: u8,
}

impl Uses {
    /// The kinds: five engine bits, then these.
    const DMA_QUEUES: u8 = 1 << 5;
    const DMA_ENGINES: u8 = 1 << 6;
    const PORTS: u8 = 1 << 7;
    const KINDS: usize = 8;

    fn new(candidates: &[(Engine, Cost)], transfer: bool) -> Uses {
        let mut kinds = candidates.iter().fold(0, |m, &(e, _)| m | engine_bit(e));
        if candidates.iter().any(|&(e, _)| e == Engine::Dma) {
            kinds |= Uses::DMA_QUEUES | Uses::DMA_ENGINES;
        }
        if transfer {
            kinds |= Uses::DMA_ENGINES;
        }
        if candidates.iter().any(|(_, c)| !c.ports.is_empty()) {
            kinds |= Uses::PORTS;
        }
        Uses { kinds }
    }

    /// The kinds (bit indices) a commit of `slot` changes; `transfer`
    /// when the op is a DMA transfer.
    fn changed_by(transfer: bool, slot: &Slot) -> impl Iterator<Item = usize> {
        let mut kinds = match slot.queue.engine() {
            Engine::Dma => Uses::DMA_QUEUES,
            e => engine_bit(e),
        };
        if transfer {
            kinds |= Uses::DMA_ENGINES;
        }
        if !slot.cost.ports.is_empty() {
            kinds |= Uses::PORTS;
        }
        (0..Uses::KINDS).filter(move |k| kinds & (1 << k) != 0)
    }
}

/// A bit for a sequencer engine in [`Uses::kinds`] (bits 0 to 4; 0 for DMA).
fn engine_bit(e: Engine) -> u8 {
    match e {
        Engine::Tensor => 1,
        Engine::Vector => 2,
        Engine::Scalar => 4,
        Engine::GpSimd => 8,
        Engine::Sync => 16,
        Engine::Dma => 0,
    }
}

impl Table {
    fn new(target: Target, lowered: &Lowered, graph: &Graph) -> Table {
        let figures = target.figures();
        let dma_queues = queues_of(Engine::Dma, figures.dma_queues);
        // All DMA queues cost the same, so a DMA candidate stands for the
        // DMA queue that suits best.
        let candidates: Vec<Vec<(Engine, Cost)>> = lowered
            .ops
            .iter()
            .map(|l| {
                l.engines
                    .iter()
                    .filter_map(|&e| {
                        let q = *queues_of(e, figures.dma_queues).first()?;
                        Some((e, target.cost(q, &l.op)))
                    })
                    .collect()
            })
            .collect();
        let transfers: Vec<Option<DmaTransfer>> = lowered
            .ops
            .iter()
            .map(|l| target.dma_transfer(&l.op))
            .collect();
        let n = lowered.ops.len();
        let mut level = vec![0u64; n];
        for i in (0..n).rev() {
            let own = candidates[i]
                .iter()
                .map(|(_, c)| c.latency_ps.max(c.busy_ps))
                .min()
                .unwrap_or(0);
            let after = graph.succs[i].iter().map(|&s| level[s]).max().unwrap_or(0);
            level[i] = own + after;
        }
        let uses = candidates
            .iter()
            .zip(&transfers)
            .map(|(cands, t)| Uses::new(cands, t.is_some()))
            .collect();
        let set = |accesses: &[Access], write: bool| {
            accesses
                .iter()
                .filter(|a| a.write == write)
                .fold(0, |m, a| m | resource_bit(a.resource))
        };
        let reads = graph.accesses.iter().map(|a| set(a, false)).collect();
        let writes = graph.accesses.iter().map(|a| set(a, true)).collect();
        Table {
            reads,
            writes,
            target,
            candidates,
            transfers,
            level,
            dma_queues,
            dma_engines: figures.dma_engines.max(1) as usize,
            uses,
        }
    }

    /// List scheduling backwards from the end: an op is placed once all
    /// its successors are, as late as its successors, its queue and (for
    /// a transfer) the DMA engines allow, on the legal queue where it
    /// starts latest. With `justify` (completion times of a forward
    /// schedule) the op completing last goes first; otherwise the op that
    /// fits closest to the end. Returns, per op, how long before the end
    /// it starts: its urgency. Ops whose data must leave the chip early (a
    /// store behind other stores on busy DMA engines) get large urgencies.
    /// A time no schedule of these ops can beat: the longest chain of
    /// latencies (`level`), the busiest DMA engine (a transfer's engines
    /// do not depend on its queue), the DMA queues' work shared evenly,
    /// and the work of each engine that ops with no other candidate give
    /// it.
    fn floor_ps(&self) -> u64 {
        let mut engine_ps = vec![0u64; self.dma_engines.max(1)];
        let mut dma_queue_ps = 0u64;
        let mut only_ps: BTreeMap<Engine, u64> = BTreeMap::new();
        for (cands, transfer) in self.candidates.iter().zip(&self.transfers) {
            if let Some(t) = transfer {
                for span in t.engine_spans(engine_ps.len() as u32) {
                    for e in &mut engine_ps[span] {
                        *e += t.engine_busy_ps;
                    }
                }
            }
            match cands.as_slice() {
                [(Engine::Dma, c)] => dma_queue_ps += c.busy_ps,
                [(e, c)] => *only_ps.entry(*e).or_default() += c.busy_ps,
                _ => {}
            }
        }
        let queues = self.dma_queues.len().max(1) as u64;
        let level = self.level.iter().copied().max().unwrap_or(0);
        let engines = engine_ps.into_iter().chain(only_ps.into_values());
        engines.fold(level.max(dma_queue_ps / queues), u64::max)
    }

    fn backward(&self, graph: &Graph, justify: Option<&[u64]>) -> Vec<u64> {
        let n = self.candidates.len();
        let mut until = vec![0u64; n];
        let mut remaining: Vec<usize> = graph.succs.iter().map(Vec::len).collect();
        let mut ready = Ready::new((0..n).filter(|&i| remaining[i] == 0), lookahead(n), |i| i);
        let mut free: BTreeMap<Queue, u64> = BTreeMap::new();
        let mut engine_free = vec![0u64; self.dma_engines];
        while !ready.is_empty() {
            let dma = self
                .dma_queues
                .iter()
                .copied()
                .min_by_key(|q| (free.get(q).copied().unwrap_or(0), *q))
                .unwrap_or(Queue::Dma(0));
            type Key = (std::cmp::Reverse<u64>, u64, std::cmp::Reverse<usize>);
            let mut best: Option<(Key, Queue)> = None;
            for &i in &ready.pool {
                let rank = justify.map_or(0, |done| done[i]);
                let after = graph.succs[i].iter().map(|&s| until[s]).max().unwrap_or(0);
                for (e, c) in &self.candidates[i] {
                    let q = Queue::of_engine(*e).unwrap_or(dma);
                    let mut u = (after + c.latency_ps.max(c.busy_ps))
                        .max(free.get(&q).copied().unwrap_or(0) + c.busy_ps);
                    if let Some(t) = &self.transfers[i] {
                        let ef = latest_free(&engine_free, t);
                        u = u.max(ef + t.engine_busy_ps + t.issue_ps);
                    }
                    let key = (std::cmp::Reverse(rank), u, std::cmp::Reverse(i));
                    if best.is_none_or(|(b, _)| key < b) {
                        best = Some((key, q));
                    }
                }
            }
            let Some(((_, u, std::cmp::Reverse(i)), q)) = best else {
                break;
            };
            if let Some(k) = ready.pool.iter().position(|&r| r == i) {
                ready.remove_at(k);
            }
            until[i] = u;
            free.insert(q, u);
            if let Some(t) = &self.transfers[i] {
                for span in t.engine_spans(engine_free.len() as u32) {
                    engine_free[span].fill(u - t.issue_ps);
                }
            }
            for &p in &graph.preds[i] {
                remaining[p] -= 1;
                if remaining[p] == 0 {
                    ready.push(p);
                }
            }
        }
        until
    }
}

/// The ready ops of a pass: the first `lookahead` ([`READY_LOOKAHEAD`],
/// or [`MANY_OPS_LOOKAHEAD`] for a large program) to become ready are
/// weighed (`pool`), the others wait in the order they became ready.
/// A pass's picks do not depend on the order of the pool (every priority
/// key ends with the op's index). The pool holds `T`: an op, or an op with
/// what a pass weighs it by ([`Weighed`], kept next to it because the pool
/// is scanned at every step), made by `make` as the op enters the pool.
struct Ready<T, F: Fn(usize) -> T> {
    pool: Vec<T>,
    waiting: std::collections::VecDeque<usize>,
    lookahead: usize,
    make: F,
}

impl<T, F: Fn(usize) -> T> Ready<T, F> {
    fn new(ops: impl Iterator<Item = usize>, lookahead: usize, make: F) -> Ready<T, F> {
        let mut ready = Ready {
            pool: Vec::new(),
            waiting: std::collections::VecDeque::new(),
            lookahead,
            make,
        };
        for i in ops {
            ready.push(i);
        }
        ready
    }

    fn is_empty(&self) -> bool {
        self.pool.is_empty()
    }

    fn push(&mut self, i: usize) {
        if self.pool.len() < self.lookahead {
            self.pool.push((self.make)(i));
        } else {
            self.waiting.push_back(i);
        }
    }

    /// Takes the pool's `k`th item out; the longest-waiting op takes its
    /// place.
    fn remove_at(&mut self, k: usize) -> T {
        let item = self.pool.swap_remove(k);
        if let Some(next) = self.waiting.pop_front() {
            self.pool.push((self.make)(next));
        }
        item
    }
}

/// A ready op of a [`list_schedule`] pass and what the pass weighs it by.
#[derive(Clone, Copy, Debug)]
struct Weighed {
    op: usize,
    /// `Uses::kinds` of the op.
    kinds: u8,
    /// The first part of the priority: the op's level or urgency (0 for
    /// source order).
    rank: u64,
    /// The candidates the pass tries.
    cands: Cands,
    /// Its best slot, valid until a commit changes one of `kinds`.
    cached: Option<Cached>,
}

/// The candidates a pass tries for an op: none, one (copied here, as
/// most ops have one and it is read at every re-evaluation), or several
/// (read from `Table::candidates`).
#[derive(Clone, Copy, Debug)]
enum Cands {
    None,
    One(Engine, Cost),
    Many,
}

/// Where and when an op would run.
#[derive(Clone, Copy, Debug)]
struct Slot {
    queue: Queue,
    cost: Cost,
    start: u64,
    /// When the queue may issue its next instruction.
    free: u64,
    /// When the op's results are visible.
    complete: u64,
}

/// A ready op's best slot as found at step `at` of a pass: on `queue`
/// with candidate `cand` (an index into `Table::candidates`); `finished`
/// false when only its start is known (`free` and `complete` are 0 then:
/// [`Timer::finish`] gives them).
#[derive(Clone, Copy, Debug)]
struct Cached {
    start: u64,
    free: u64,
    complete: u64,
    at: u32,
    queue: Queue,
    cand: u8,
    finished: bool,
}

impl Cached {
    fn new(slot: &Slot, cand: usize, at: u32, finished: bool) -> Cached {
        Cached {
            start: slot.start,
            free: slot.free,
            complete: slot.complete,
            at,
            queue: slot.queue,
            // An op's candidates are engines, far fewer than 256.
            cand: u8::try_from(cand).unwrap_or(u8::MAX),
            finished,
        }
    }

    /// The slot again, `cost` being its candidate's.
    fn slot(&self, cost: Cost) -> Slot {
        Slot {
            queue: self.queue,
            cost,
            start: self.start,
            free: self.free,
            complete: self.complete,
        }
    }
}

/// The simulator's timing model, replayed as ops are appended.
struct Timer<'a> {
    table: &'a Table,
    graph: &'a Graph,
    /// When each queue is next free, by [`queue_slot`].
    free: Vec<u64>,
    /// The latest op on each queue, by [`queue_slot`].
    last_on: Vec<Option<usize>>,
    engine_free: Vec<u64>,
    /// When each shared RAM port is next free, by `Ports::indices`.
    port_free: [u64; Ports::COUNT],
    complete: Vec<u64>,
}

/// True when two accesses' bounding boxes share a byte.
fn boxes_meet(a: &Access, b: &Access) -> bool {
    a.resource == b.resource && overlap(a.partitions, b.partitions) && overlap(a.bounds, b.bounds)
}

impl Timer<'_> {
    /// True when op `i` reads bytes op `p` writes (bounding boxes, as the
    /// simulator's dependent-issue rule).
    fn reads_written(&self, i: usize, p: usize) -> bool {
        if self.table.reads[i] & self.table.writes[p] == 0 {
            return false;
        }
        let accesses = &self.graph.accesses;
        accesses[i].iter().filter(|a| !a.write).any(|r| {
            accesses[p]
                .iter()
                .filter(|a| a.write)
                .any(|w| boxes_meet(r, w))
        })
    }

    /// The slot of op `i` on queue `q`, its inputs complete at `ready`.
    fn slot(&self, i: usize, q: Queue, cost: Cost, ready: u64) -> Slot {
        self.finish(i, q, cost, self.start(i, q, cost, ready))
    }

    /// When op `i` would start on queue `q`, its inputs complete at
    /// `ready`: the first part of [`Timer::slot`].
    fn start(&self, i: usize, q: Queue, cost: Cost, ready: u64) -> u64 {
        let target = self.table.target;
        let mut start = ready.max(self.free[queue_slot(q)]);
        if let Some(prev) = self.last_on[queue_slot(q)]
            && self.reads_written(i, prev)
        {
            start = start.max(self.complete[prev]) + target.dependent_overhead_ps(q.engine());
        }
        for p in cost.ports.indices() {
            start = start.max(self.port_free[p]);
        }
        start
    }

    /// The slot of op `i` starting on queue `q` at `start`: the second
    /// part of [`Timer::slot`], when the queue is free again and the
    /// results are visible.
    fn finish(&self, i: usize, q: Queue, cost: Cost, start: u64) -> Slot {
        let mut free = start + cost.busy_ps;
        let mut complete = start + cost.latency_ps.max(cost.busy_ps);
        if let Some(t) = &self.table.transfers[i] {
            let data = start + t.issue_ps;
            let last = data.max(latest_free(&self.engine_free, t)) + t.engine_ps;
            free = free.max(last);
            complete = complete.max(last + t.start_latency_ps);
        }
        Slot {
            queue: q,
            cost,
            start,
            free,
            complete,
        }
    }

    /// Appends op `i` in `slot`.
    fn commit(&mut self, i: usize, slot: &Slot) {
        if let Some(t) = &self.table.transfers[i] {
            let data = slot.start + t.issue_ps;
            for span in t.engine_spans(self.engine_free.len() as u32) {
                for ef in &mut self.engine_free[span] {
                    *ef = data.max(*ef) + t.engine_busy_ps;
                }
            }
        }
        for p in slot.cost.ports.indices() {
            self.port_free[p] = self.port_free[p].max(slot.start + slot.cost.busy_ps);
        }
        self.free[queue_slot(slot.queue)] = slot.free;
        self.last_on[queue_slot(slot.queue)] = Some(i);
        self.complete[i] = slot.complete;
    }

    /// The DMA queue an op should use: the one free first (lowest on
    /// ties).
    fn dma_queue(&self) -> Queue {
        self.table
            .dma_queues
            .iter()
            .copied()
            .min_by_key(|&q| (self.free[queue_slot(q)], q))
            .unwrap_or(Queue::Dma(0))
    }
}

/// When the last of the DMA engines transfer `t` uses is next free
/// (`engine_free` holds every engine's time, by engine number).
fn latest_free(engine_free: &[u64], t: &DmaTransfer) -> u64 {
    let [a, b] = t.engine_spans(engine_free.len() as u32);
    let latest = |span: &[u64]| span.iter().copied().max().unwrap_or(0);
    latest(&engine_free[a]).max(latest(&engine_free[b]))
}

/// The number of queue slots: the five sequencer queues and every
/// possible DMA queue.
const QUEUE_SLOTS: usize = 5 + 256;

/// A dense index of `q` for the scheduler's per-queue arrays.
fn queue_slot(q: Queue) -> usize {
    match q {
        Queue::Tensor => 0,
        Queue::Vector => 1,
        Queue::Scalar => 2,
        Queue::GpSimd => 3,
        Queue::Sync => 4,
        Queue::Dma(n) => 5 + usize::from(n),
    }
}

/// The order in which a ranked policy prefers the ops it may pick: the
/// highest rank, then the earliest start, then the earliest op.
type Ranked = (std::cmp::Reverse<u64>, u64, usize);

fn ranked(rank: u64, start: u64, op: usize) -> Ranked {
    (std::cmp::Reverse(rank), start, op)
}

/// One list-scheduling pass: with a policy (optimized) or in source order
/// on first legal queues (`None`, sequential). `urgency` serves
/// [`Priority::Urgency`]. Returns the schedule and the number of slot
/// evaluations it took.
fn list_schedule(
    table: &Table,
    graph: &Graph,
    policy: Option<Policy>,
    urgency: &[u64],
) -> (Scheduled, u64) {
    let n = table.candidates.len();
    let mut timer = Timer {
        table,
        graph,
        free: vec![0; QUEUE_SLOTS],
        last_on: vec![None; QUEUE_SLOTS],
        engine_free: vec![0; table.dma_engines],
        port_free: [0; Ports::COUNT],
        complete: vec![0; n],
    };
    let mut queue = vec![Queue::Sync; n];
    let mut cost = vec![
        Cost {
            engine: Engine::Sync,
            cycles: 0,
            busy_ps: 0,
            latency_ps: 0,
            ports: nkic_isa::Ports::NONE,
        };
        n
    ];
    let mut start = vec![0u64; n];
    let mut remaining: Vec<usize> = graph.preds.iter().map(Vec::len).collect();
    let weighed = |op: usize| Weighed {
        op,
        kinds: table.uses[op].kinds,
        rank: match policy.map(|p| p.priority) {
            Some(Priority::CriticalPath) => table.level[op],
            Some(Priority::Urgency) => urgency[op],
            Some(Priority::SourceOrder) | None => 0,
        },
        // Without a policy only the first candidate is tried.
        cands: match (&table.candidates[op][..], policy) {
            ([], _) => Cands::None,
            (&[(e, c)], _) | (&[(e, c), ..], None) => Cands::One(e, c),
            (_, Some(_)) => Cands::Many,
        },
        cached: None,
    };
    let mut ready = Ready::new((0..n).filter(|&i| remaining[i] == 0), lookahead(n), weighed);
    let mut order = Vec::with_capacity(n);
    let mut streams: BTreeMap<Queue, Vec<usize>> = BTreeMap::new();
    let mut index_in_queue = vec![0usize; n];
    let mut end = 0u64;
    let mut work = 0u64;
    // When each ready op's inputs are complete (fixed once it is ready).
    let mut data_ready = vec![0u64; n];
    // The last step at which a commit changed each kind of resource.
    let mut changed = [0u32; Uses::KINDS];
    // The weighed ops: (index in the pool, start).
    let mut options: Vec<(usize, u64)> = Vec::new();
    for step in 1u32.. {
        if ready.is_empty() {
            break;
        }
        let dma = timer.dma_queue();
        let pool = match policy {
            Some(_) => 0..ready.pool.len(),
            // The first op of the pool in source order.
            None => match ready.pool.iter().enumerate().min_by_key(|(_, w)| w.op) {
                Some((k, _)) => k..k + 1,
                None => 0..0,
            },
        };
        options.clear();
        let mut earliest = u64::MAX;
        // With no window and a ranked priority the pick is, among the ops
        // that start earliest, the least `ranked` one: kept during the
        // scan, as (start, `ranked`, index).
        let scan_pick =
            policy.is_some_and(|p| p.window_ps == 0 && p.priority != Priority::SourceOrder);
        let mut best: Option<(u64, Ranked, usize)> = None;
        for k in pool {
            let w = &mut ready.pool[k];
            let i = w.op;
            let kinds = w.kinds;
            let fresh = w
                .cached
                .filter(|c| (0..Uses::KINDS).all(|k| kinds & (1 << k) == 0 || changed[k] < c.at));
            let start = match fresh {
                Some(c) => c.start,
                None => {
                    // Only the start matters to the pick; an op with one
                    // queue to try gets the rest of its slot if picked.
                    let entry = match w.cands {
                        Cands::None => continue,
                        Cands::One(e, c) => {
                            let q = Queue::of_engine(e).unwrap_or(dma);
                            work += 1;
                            let start = timer.start(i, q, c, data_ready[i]);
                            let slot = Slot {
                                queue: q,
                                cost: c,
                                start,
                                free: 0,
                                complete: 0,
                            };
                            Cached::new(&slot, 0, step, false)
                        }
                        Cands::Many => {
                            let mut best: Option<(Slot, usize)> = None;
                            for (k, &(e, c)) in table.candidates[i].iter().enumerate() {
                                let q = Queue::of_engine(e).unwrap_or(dma);
                                let s = timer.slot(i, q, c, data_ready[i]);
                                work += 1;
                                if best.as_ref().is_none_or(|(b, _)| {
                                    (s.complete, s.start) < (b.complete, b.start)
                                }) {
                                    best = Some((s, k));
                                }
                            }
                            let Some((slot, k)) = best else { continue };
                            Cached::new(&slot, k, step, true)
                        }
                    };
                    w.cached = Some(entry);
                    entry.start
                }
            };
            earliest = earliest.min(start);
            if scan_pick {
                let key = (start, ranked(w.rank, start, w.op), k);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            } else {
                options.push((k, start));
            }
        }
        let pool = &ready.pool;
        let pick = match policy {
            None => options.first().map(|&(k, _)| k),
            Some(_) if scan_pick => best.map(|(.., k)| k),
            Some(p) => {
                let limit = earliest.saturating_add(p.window_ps);
                let eligible = options.iter().filter(|&&(_, start)| start <= limit);
                match p.priority {
                    Priority::CriticalPath | Priority::Urgency => {
                        eligible.min_by_key(|&&(k, start)| ranked(pool[k].rank, start, pool[k].op))
                    }
                    Priority::SourceOrder => eligible.min_by_key(|&&(k, _)| pool[k].op),
                }
                .map(|&(k, _)| k)
            }
        };
        let Some((k, c)) = pick.and_then(|k| Some((k, pool[k].cached?))) else {
            break;
        };
        let i = ready.remove_at(k).op;
        let chosen = table.candidates[i][usize::from(c.cand)].1;
        let slot = if c.finished {
            c.slot(chosen)
        } else {
            // Nothing it depends on changed since `c.at`, so this is the
            // slot `Timer::slot` gave then.
            timer.finish(i, c.queue, chosen, c.start)
        };
        timer.commit(i, &slot);
        // Mark what changed: the slots of ops that could use the same
        // queue (any DMA op after a transfer: the engines changed) are
        // stale from now on.
        for k in Uses::changed_by(table.transfers[i].is_some(), &slot) {
            changed[k] = step;
        }
        queue[i] = slot.queue;
        cost[i] = slot.cost;
        start[i] = slot.start;
        end = end.max(slot.complete);
        let stream = streams.entry(slot.queue).or_default();
        index_in_queue[i] = stream.len();
        stream.push(i);
        order.push(i);
        for &s in &graph.succs[i] {
            remaining[s] -= 1;
            if remaining[s] == 0 {
                data_ready[s] = graph.preds[s]
                    .iter()
                    .map(|&p| timer.complete[p])
                    .max()
                    .unwrap_or(0);
                ready.push(s);
            }
        }
    }
    let scheduled = Scheduled {
        queue,
        cost,
        order,
        streams,
        index_in_queue,
        estimated_ps: end,
        start,
    };
    (scheduled, work)
}
