//! Semaphore insertion: the waits that order every dependency the queues
//! do not order by themselves, and no others.
//!
//! **Semaphores.** Each queue that some other queue waits on has one
//! semaphore, incremented by exactly those of its instructions that are
//! waited on. A queue's instructions complete in the order they start
//! (every instruction of a compute queue completes a fixed pipeline
//! latency after its interval, every DMA a fixed start latency after its
//! interval, and a queue starts its next instruction only after the
//! previous one's interval), so when the semaphore of queue `A` reaches
//! `k`, the `k` waited-on instructions of `A` and everything before them
//! in `A` have completed. A wait for the instruction at index `i` of `A`
//! is therefore `wait(A's semaphore >= number of signalling instructions
//! of A up to i)`.
//!
//! **Few waits.** Instructions are visited in the scheduler's global order
//! with a vector clock per queue: for each other queue, how many of its
//! instructions are known complete when the queue's next instruction
//! starts. Knowledge comes from the queue's own waits and, transitively,
//! from what the awaited instruction itself knew when it started. A
//! dependency needs a wait only if the clock does not already cover it;
//! of the waits one instruction needs, a wait implied by another of them
//! (through that one's clock) is dropped, and per producer queue only the
//! latest producer is awaited. Dependencies within one queue need no wait
//! at all (the queue is in order and sees its own writes in program
//! order), except under [`Schedule::Sequential`], where every instruction
//! waits for the previous one to complete.

use std::collections::BTreeMap;

use nkic_isa::Queue;

use crate::Schedule;
use crate::deps::Graph;
use crate::schedule::Scheduled;

/// A vector clock: per queue, how many of its instructions are complete.
type Clock = BTreeMap<Queue, usize>;

/// The waits and signals of every op.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Waits {
    /// The producer ops each op waits for (at most one per queue).
    pub waits: Vec<Vec<usize>>,
    /// Whether each op signals its queue's semaphore.
    pub signals: Vec<bool>,
}

/// `a = a ⊔ b`.
fn join(a: &mut Clock, b: &Clock) {
    for (&q, &n) in b {
        let e = a.entry(q).or_insert(0);
        *e = (*e).max(n);
    }
}

/// Computes the waits; see the module doc.
pub fn synchronize(sched: &Scheduled, graph: &Graph, mode: Schedule) -> Waits {
    let n = sched.queue.len();
    let mut out = Waits {
        waits: vec![Vec::new(); n],
        signals: vec![false; n],
    };
    let mut known: BTreeMap<Queue, Clock> = BTreeMap::new();
    let mut done: Vec<Clock> = vec![Clock::new(); n];
    for &b in &sched.order {
        let qb = sched.queue[b];
        let mut clock = known.remove(&qb).unwrap_or_default();
        // The latest producer per queue that is not yet known complete.
        let mut needs: BTreeMap<Queue, usize> = BTreeMap::new();
        for &p in &graph.preds[b] {
            let qa = sched.queue[p];
            if qa == qb && mode == Schedule::Optimized {
                continue;
            }
            let count = sched.index_in_queue[p] + 1;
            if clock.get(&qa).copied().unwrap_or(0) >= count {
                continue;
            }
            let e = needs.entry(qa).or_insert(p);
            if sched.index_in_queue[p] > sched.index_in_queue[*e] {
                *e = p;
            }
        }
        let producers: Vec<usize> = needs.values().copied().collect();
        for &p in &producers {
            let qa = sched.queue[p];
            let count = sched.index_in_queue[p] + 1;
            let implied = producers
                .iter()
                .any(|&o| o != p && done[o].get(&qa).copied().unwrap_or(0) >= count);
            if implied {
                continue;
            }
            out.waits[b].push(p);
            out.signals[p] = true;
        }
        for &p in &out.waits[b] {
            join(&mut clock, &done[p]);
        }
        let mut mine = clock.clone();
        let e = mine.entry(qb).or_insert(0);
        *e = (*e).max(sched.index_in_queue[b] + 1);
        done[b] = mine;
        known.insert(qb, clock);
    }
    out
}
