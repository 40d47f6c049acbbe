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

use nkic_isa::Queue;

use crate::Schedule;
use crate::deps::Graph;
use crate::schedule::Scheduled;

/// The waits and signals of every op.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Waits {
    /// The producer ops each op waits for (at most one per queue).
    pub waits: Vec<Vec<usize>>,
    /// Whether each op signals its queue's semaphore.
    pub signals: Vec<bool>,
}

/// A vector clock: per queue of the schedule (numbered in queue order,
/// `Clocks::slot`), how many of its instructions are complete.
type Clock = [usize];

/// `a = a ⊔ b`.
fn join(a: &mut Clock, b: &Clock) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = (*x).max(y);
    }
}

/// The clock of every op when it completes, side by side in one buffer
/// (a large kernel has hundreds of thousands of ops and a dozen queues).
struct Clocks {
    /// The queues the schedule uses, in queue order.
    queues: Vec<Queue>,
    done: Vec<usize>,
}

impl Clocks {
    /// The index of `q` in a clock.
    fn slot(&self, q: Queue) -> usize {
        self.queues
            .binary_search(&q)
            .expect("every op's queue is a queue of the schedule")
    }

    fn of(&self, op: usize) -> &Clock {
        let n = self.queues.len();
        &self.done[op * n..][..n]
    }
}

/// Computes the waits; see the module doc.
pub fn synchronize(sched: &Scheduled, graph: &Graph, mode: Schedule) -> Waits {
    let n = sched.queue.len();
    let mut out = Waits {
        waits: vec![Vec::new(); n],
        signals: vec![false; n],
    };
    let queues: Vec<Queue> = sched.streams.keys().copied().collect();
    let width = queues.len();
    let mut clocks = Clocks {
        queues,
        done: vec![0; n * width],
    };
    let slot_of: Vec<usize> = sched.queue.iter().map(|&q| clocks.slot(q)).collect();
    // What each queue knows when its next instruction starts.
    let mut known = vec![0usize; width * width];
    // The latest producer per queue that is not yet known complete.
    let mut needs: Vec<Option<usize>> = vec![None; width];
    let mut producers: Vec<usize> = Vec::new();
    let mut clock = vec![0usize; width];
    for &b in &sched.order {
        let qb = slot_of[b];
        clock.copy_from_slice(&known[qb * width..][..width]);
        needs.fill(None);
        for &p in &graph.preds[b] {
            let qa = slot_of[p];
            if qa == qb && mode == Schedule::Optimized {
                continue;
            }
            let count = sched.index_in_queue[p] + 1;
            if clock[qa] >= count {
                continue;
            }
            let e = needs[qa].get_or_insert(p);
            if sched.index_in_queue[p] > sched.index_in_queue[*e] {
                *e = p;
            }
        }
        producers.clear();
        producers.extend(needs.iter().flatten());
        for &p in &producers {
            let qa = slot_of[p];
            let count = sched.index_in_queue[p] + 1;
            let implied = producers
                .iter()
                .any(|&o| o != p && clocks.of(o)[qa] >= count);
            if implied {
                continue;
            }
            out.waits[b].push(p);
            out.signals[p] = true;
        }
        for &p in &out.waits[b] {
            join(&mut clock, clocks.of(p));
        }
        known[qb * width..][..width].copy_from_slice(&clock);
        clock[qb] = clock[qb].max(sched.index_in_queue[b] + 1);
        clocks.done[b * width..][..width].copy_from_slice(&clock);
    }
    out
}
