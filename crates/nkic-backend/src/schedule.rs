//! Scheduling: a queue for every op and the order of every queue's stream.
//!
//! **Optimized** ([`Schedule::Optimized`]) is list scheduling over the
//! dependency graph with `Target::cost`, the same model the simulator
//! times with. Each op's priority is its critical path: its own latency
//! plus the longest chain of latencies after it. The scheduler keeps, per
//! queue, the time it is next free and, per scheduled op, its estimated
//! completion. At every step it takes, among the ops whose predecessors
//! are all scheduled, the one that can start earliest on one of its legal
//! queues (ties: the longer critical path, then source order), and appends
//! it to that queue. So engine choice for ops NKI leaves open, and the
//! spreading of DMAs over the target's DMA queues, fall out of the same
//! rule: the queue where the op finishes first wins. Because ops are
//! appended in a topological order, every queue's stream only waits on
//! instructions placed before it, and the program cannot deadlock.
//!
//! **Sequential** ([`Schedule::Sequential`]) keeps source order; each op
//! takes the first of its legal queues (the graph already chains every op
//! to its predecessor).

use std::collections::BTreeMap;

use nkic_isa::{Cost, Engine, Queue};

use crate::Schedule;
use crate::collect::Unit;
use crate::deps::Graph;
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

/// Schedules the lowered ops; see the module doc.
pub fn schedule(unit: &Unit<'_>, lowered: &Lowered, graph: &Graph, mode: Schedule) -> Scheduled {
    let target = unit.target;
    let figures = target.figures();
    let n = lowered.ops.len();
    // Candidate engines with their costs, per op. All DMA queues cost the
    // same, so a DMA candidate stands for the DMA queue free first.
    let dma_queues = queues_of(Engine::Dma, figures.dma_queues);
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
    // Critical path (bottom level) with the cheapest latency per op.
    let mut level = vec![0u64; n];
    for i in (0..n).rev() {
        let own = candidates[i]
            .iter()
            .map(|(_, c)| c.latency_ps)
            .min()
            .unwrap_or(0);
        let after = graph.succs[i].iter().map(|&s| level[s]).max().unwrap_or(0);
        level[i] = own + after;
    }
    let mut free: BTreeMap<Queue, u64> = BTreeMap::new();
    let mut last_on: BTreeMap<Queue, usize> = BTreeMap::new();
    let mut complete = vec![0u64; n];
    let mut queue = vec![Queue::Sync; n];
    let mut cost = vec![
        Cost {
            engine: Engine::Sync,
            cycles: 0,
            busy_ps: 0,
            latency_ps: 0,
        };
        n
    ];
    let mut remaining: Vec<usize> = graph.preds.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| remaining[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    let mut streams: BTreeMap<Queue, Vec<usize>> = BTreeMap::new();
    let mut index_in_queue = vec![0usize; n];
    let mut end = 0u64;
    // When each ready op's inputs are complete (fixed once it is ready).
    let mut data_ready = vec![0u64; n];
    // The earliest start of op `i` on `q`.
    let start_on = |i: usize,
                    q: Queue,
                    free: &BTreeMap<Queue, u64>,
                    last_on: &BTreeMap<Queue, usize>,
                    complete: &[u64],
                    data_ready: &[u64]| {
        let mut start = data_ready[i].max(free.get(&q).copied().unwrap_or(0));
        if let Some(&last) = last_on.get(&q)
            && graph.preds[i].binary_search(&last).is_ok()
        {
            start = start.max(complete[last]) + target.dependent_overhead_ps(q.engine());
        }
        start
    };
    while !ready.is_empty() {
        // Pick the op and queue; see the module doc.
        let mut best: Option<(u64, std::cmp::Reverse<u64>, usize, usize, Queue, Cost)> = None;
        let dma = dma_queues
            .iter()
            .copied()
            .min_by_key(|q| (free.get(q).copied().unwrap_or(0), *q))
            .unwrap_or(Queue::Dma(0));
        let pool: Vec<usize> = match mode {
            Schedule::Optimized => ready.clone(),
            Schedule::Sequential => ready.iter().copied().min().into_iter().collect(),
        };
        for &i in &pool {
            for (k, &(e, c)) in candidates[i].iter().enumerate() {
                let q = Queue::of_engine(e).unwrap_or(dma);
                let start = start_on(i, q, &free, &last_on, &complete, &data_ready);
                let key = (start, std::cmp::Reverse(level[i]), i, k, q, c);
                let better = match &best {
                    None => true,
                    Some(b) => {
                        (key.0, key.1, key.2, key.0 + key.5.latency_ps)
                            < (b.0, b.1, b.2, b.0 + b.5.latency_ps)
                    }
                };
                if better {
                    best = Some(key);
                }
                if mode == Schedule::Sequential {
                    break;
                }
            }
        }
        let Some((start, _, i, _, q, c)) = best else {
            break;
        };
        ready.retain(|&r| r != i);
        queue[i] = q;
        cost[i] = c;
        complete[i] = start + c.latency_ps.max(c.busy_ps);
        end = end.max(complete[i]);
        free.insert(q, start + c.busy_ps);
        last_on.insert(q, i);
        let stream = streams.entry(q).or_default();
        index_in_queue[i] = stream.len();
        stream.push(i);
        order.push(i);
        for &s in &graph.succs[i] {
            remaining[s] -= 1;
            if remaining[s] == 0 {
                data_ready[s] = graph.preds[s]
                    .iter()
                    .map(|&p| complete[p])
                    .max()
                    .unwrap_or(0);
                ready.push(s);
            }
        }
    }
    Scheduled {
        queue,
        cost,
        order,
        streams,
        index_in_queue,
        estimated_ps: end,
    }
}
