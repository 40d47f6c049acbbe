//! Matmuls computed on rayon's pool while the interpreter goes on.
//!
//! The Tensor engine's multiply-adds are most of the arithmetic of a
//! matmul-heavy kernel, and the interpreter steps instructions on one
//! thread. A matmul (`nc_matmul`, `nc_matmul_mx`) large enough to pay for
//! the hand-off (`DEFER_MIN_MACS`) whose destination is plain f32 or bf16
//! PSUM rows (`MemoryState::psum_region`; a bf16 sum is rounded after each
//! matmul, as writing it would) is therefore queued, and the interpreter
//! goes on with the next instructions: DMA transfers, the decoding of the
//! next matmul's operands, the Vector and Scalar engines' work. A
//! *runner*, a job on rayon's pool, computes the first queued matmul and,
//! while more are queued, spawns the next runner (`run`).
//!
//! What stays on the interpreter's thread, so that nothing observable
//! depends on the runner:
//! * everything that can fault or mark memory: the operands are read (and
//!   every fault found) and the destination's written and defined bits
//!   are set when the matmul is issued, exactly as if it ran then;
//! * every timestamp (the cycle model never looks at values).
//!
//! Only the arithmetic is deferred: the same product (`Product`:
//! `matmul_moving` or `mx_product`) on the same values, in issue order.
//! At most one runner exists at a time and they take jobs first in,
//! first out, so a chain of accumulating matmuls into one region
//! (`continues`) adds in the order the program gives, and the sums are
//! the bits the interpreter's thread would compute; each job's own spread
//! over rayon's threads is `matmul`'s, which does not change a bit either.
//!
//! The runner is a job of the pool rather than a thread of its own
//! because a job's bands then split where it runs (`matmul::bands_of`):
//! the runner's thread computes them and the pool's other threads, the
//! interpreter's among them while it waits, take over some. A thread
//! outside the pool that hands every matmul's bands to it sleeps and is
//! woken once per matmul: the fp32 8192 × 4096 × 8192 tiled matmul's
//! 32,768 hand-offs were a tenth of its run's samples (docs/cycle-model.md,
//! 2026-12-07). The interpreter's thread waits (`Shared::wait_until`) by
//! doing the pool's work, the runner itself if no other thread has taken
//! it, so a pool of one thread computes every sum too.
//!
//! Until its matmuls are *settled* (their sums written into the PSUM
//! bytes), a region's bytes are stale. Whoever reads or writes PSUM
//! settles the regions it overlaps first (`MemoryState::settle_view`,
//! `settle_all`): `machine::step` for every PSUM operand of every
//! instruction (a matmul's destination that continues a chain excepted),
//! `Exec::matmul` before computing on its own thread, the `sendrecv`
//! payload, the operand dumps and the end of the run. Pending regions
//! never overlap one another: a new one settles whatever it overlaps.
//!
//! The queue holds at most `IN_FLIGHT_BYTES` of operand values; issuing
//! more waits for the runner. Where the pool's threads cannot run (a
//! process forked from one whose pool had started, `nkic_isa::threads`)
//! nothing is deferred: the matmul runs on the interpreter's thread
//! (`issue` hands the operands back).

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use nkic_isa::DType;
use nkic_isa::numerics;

use crate::matmul::Rows;
use crate::memory::SpaceId;

/// Multiply-adds from which a matmul is deferred: a smaller one
/// computes in less time than the hand-off and the wait for its sum take.
pub(crate) const DEFER_MIN_MACS: usize = 1 << 20;

/// The bytes of operand values queued jobs may hold; issuing more waits
/// until the runner has used some (a bound on the memory deferring adds
/// to a run).
const IN_FLIGHT_BYTES: usize = 2 << 20;

/// How long a thread waiting for the runner sleeps before it looks for
/// bands of its matmul to take over again.
const HELP_POLL: std::time::Duration = std::time::Duration::from_micros(50);

/// The PSUM rows a deferred matmul adds into: `rows` rows of `cols`
/// elements of `dtype` (f32, or bf16 rounded after every matmul as its
/// write rounds it), `step` bytes apart from byte `start` of `space`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub space: SpaceId,
    pub dtype: DType,
    pub start: usize,
    pub step: usize,
    pub rows: usize,
    pub cols: usize,
}

impl Region {
    /// The bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.cols * self.dtype.size() as usize
    }

    /// One past the last byte of the region.
    pub fn end(&self) -> usize {
        self.start + (self.rows.max(1) - 1) * self.step + self.row_bytes()
    }

    /// Whether the region holds a byte `touch` names.
    fn overlaps(&self, touch: &Touch) -> bool {
        if self.space != touch.space {
            return false;
        }
        let step = self.step;
        let width = touch.hi - touch.lo;
        let row_bytes = self.row_bytes();
        if touch.step == step && step > 0 && width <= step && row_bytes <= step {
            // Rows of one memory's partitions: the partitions and the
            // bytes within them must both meet.
            let (row, at) = (touch.lo / step, touch.lo % step);
            let (my_row, my_at) = (self.start / step, self.start % step);
            let rows_meet = row < my_row + self.rows && my_row < row + touch.rows;
            let bytes_meet = |a: usize, b: usize, c: usize, d: usize| a < d && c < b;
            // A touch whose bytes cross into the next row meets its
            // start there as well.
            let wraps = at + width > step;
            let next_rows_meet = row + 1 < my_row + self.rows && my_row < row + 1 + touch.rows;
            return (rows_meet && bytes_meet(at, at + width, my_at, my_at + row_bytes))
                || (wraps
                    && next_rows_meet
                    && bytes_meet(0, at + width - step, my_at, my_at + row_bytes));
        }
        let end = touch.lo + touch.step * touch.rows.saturating_sub(1) + width;
        self.start < end && touch.lo < self.end()
    }
}

/// The bytes a reader or writer of a memory touches, for `Region`'s
/// overlap test: bytes `lo..hi` of `space` and the same bytes `step`
/// apart in each of `rows` rows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Touch {
    pub space: SpaceId,
    pub lo: usize,
    pub hi: usize,
    pub step: usize,
    pub rows: usize,
}

/// A matmul's arithmetic: adds its products into the rows it is given,
/// in the definition's order (`Exec::matmul`, `Exec::matmul_mx`). It owns
/// the operand values it reads, so it can run on any thread.
pub(crate) type Product = Box<dyn for<'a> FnOnce(Rows<'a>) + Send>;

/// A matmul to issue: its arithmetic, the bytes of operand values it
/// holds (for `IN_FLIGHT_BYTES`) and the size of its `m × n` sum.
pub(crate) struct Operands {
    pub product: Product,
    pub bytes: usize,
    pub m: usize,
    pub n: usize,
}

/// Where a job's sum starts.
pub(crate) enum Start {
    /// From zeros (a buffer to reuse for them).
    Zeros(Vec<f32>),
    /// From the region's values when the matmul was issued.
    Values(Vec<f32>),
    /// From the sum the region's previous job left.
    Continue,
}

struct Job {
    seq: u64,
    key: u64,
    /// The region's dtype: a bf16 sum is rounded to it after the product,
    /// as writing it would.
    dtype: DType,
    start: Start,
    operands: Operands,
}

/// What the runner shares with the interpreter's thread.
#[derive(Default)]
struct State {
    /// Jobs issued and not yet taken by the runner, in issue order.
    jobs: VecDeque<Job>,
    /// Whether a runner is spawned: from the first job queued while none
    /// was until the last queued job is done.
    running: bool,
    /// The sequence number of the last job done.
    done: u64,
    /// The sum of each pending region (by the key of its first job) that
    /// the runner has finished with for now.
    sums: HashMap<u64, Vec<f32>>,
    /// Operand bytes of jobs issued and not yet done.
    queued: usize,
    /// Set if a job panicked (a broken invariant in `matmul`).
    failed: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Set when the run ends: the jobs still queued are dropped unrun.
    abandoned: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock is never held across a computation: no panic can
        // leave the state half changed.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `ready` holds of the state; panics if a job panicked,
    /// as it then never will.
    fn wait_until(&self, ready: impl Fn(&State) -> bool) -> MutexGuard<'_, State> {
        let mut state = self.lock();
        while !ready(&state) {
            assert!(
                !state.failed,
                "invariant broken: the matmul runner stopped with jobs pending"
            );
            // Rather than sleep, the waiting thread (a worker of rayon's
            // pool, `machine::simulate`) does the pool's work: bands of
            // the runner's matmul, or the runner itself; else it sleeps
            // until a job ends, or briefly, as a job's bands may come
            // before its end.
            drop(state);
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                let state = self.lock();
                if !ready(&state) {
                    let _ = self.changed.wait_timeout(state, HELP_POLL);
                }
            }
            state = self.lock();
        }
        state
    }
}

/// The queue and its runner; dropped when the run ends.
struct Queue {
    shared: Arc<Shared>,
}

/// A region with jobs issued and not yet settled.
struct Pending {
    region: Region,
    key: u64,
    /// The sequence number of its last job.
    last: u64,
}

/// The queue and the regions it owes (module doc).
pub(crate) struct Deferred {
    enabled: bool,
    queue: Option<Queue>,
    pending: Vec<Pending>,
    issued: u64,
    /// Settled sums' buffers (`recycle`).
    kept: Vec<Vec<f32>>,
}

/// The most settled sums' buffers `Deferred` keeps for reuse.
const KEPT_BUFFERS: usize = 4;

impl Deferred {
    /// No queue yet (it is made with the first job), and none ever unless
    /// `enabled`.
    pub fn new(enabled: bool) -> Deferred {
        Deferred {
            enabled,
            queue: None,
            pending: Vec::new(),
            issued: 0,
            kept: Vec::new(),
        }
    }

    /// Whether a matmul of `macs` multiply-adds is deferred.
    pub fn takes(&self, macs: usize) -> bool {
        self.enabled && macs >= DEFER_MIN_MACS
    }

    /// Whether no region is pending (nothing to settle).
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether `region` is exactly a pending region, so that a matmul
    /// accumulating into it continues its chain.
    pub fn continues(&self, region: &Region) -> bool {
        self.pending.iter().any(|p| p.region == *region)
    }

    /// Whether a pending region holds a byte `touch` names.
    pub fn overlaps(&self, touch: &Touch) -> bool {
        self.pending.iter().any(|p| p.region.overlaps(touch))
    }

    /// A buffer for a sum: one kept from a settled sum, if any.
    pub fn spare(&mut self) -> Vec<f32> {
        let mut v = self.kept.pop().unwrap_or_default();
        v.clear();
        v
    }

    /// Keeps a settled sum's buffer for `spare`.
    pub fn recycle(&mut self, buffer: Vec<f32>) {
        if self.kept.len() < KEPT_BUFFERS {
            self.kept.push(buffer);
        }
    }

    /// Issues a matmul adding `operands` into `region`, from `start`
    /// (`Start::Continue` only when `continues(region)`). The region must
    /// not overlap another pending one (`settle` it first). Hands the
    /// operands back when nothing is deferred; the caller computes
    /// them itself.
    pub fn issue(
        &mut self,
        region: Region,
        start: Start,
        operands: Operands,
    ) -> Result<(), Operands> {
        if self.queue().is_none() {
            return Err(operands);
        }
        let Deferred {
            queue: Some(queue),
            pending,
            issued,
            ..
        } = self
        else {
            return Err(operands);
        };
        *issued += 1;
        let seq = *issued;
        let key = match pending.iter_mut().find(|p| p.region == region) {
            Some(p) => {
                assert!(
                    matches!(start, Start::Continue),
                    "invariant broken: a pending region is settled before it starts anew"
                );
                p.last = seq;
                p.key
            }
            None => {
                assert!(
                    !matches!(start, Start::Continue),
                    "invariant broken: only a pending region's chain continues"
                );
                pending.push(Pending {
                    region,
                    key: seq,
                    last: seq,
                });
                seq
            }
        };
        let bytes = operands.bytes;
        let shared = &queue.shared;
        let mut state = shared.wait_until(|s| s.queued == 0 || s.queued + bytes <= IN_FLIGHT_BYTES);
        state.queued += bytes;
        state.jobs.push_back(Job {
            seq,
            key,
            dtype: region.dtype,
            start,
            operands,
        });
        let idle = !std::mem::replace(&mut state.running, true);
        drop(state);
        if idle {
            let shared = Arc::clone(shared);
            rayon::spawn(move || run(shared));
        }
        Ok(())
    }

    /// Waits for the sums of the pending regions that hold a byte `touch`
    /// names (of every region with `None`) and returns them, no longer
    /// pending, for the caller to write into memory.
    pub fn settle(&mut self, touch: Option<&Touch>) -> Vec<(Region, Vec<f32>)> {
        let mut due = Vec::new();
        self.pending.retain(|p| {
            let hit = touch.is_none_or(|t| p.region.overlaps(t));
            if hit {
                due.push((p.region, p.key, p.last));
            }
            !hit
        });
        if due.is_empty() {
            return Vec::new();
        }
        let Some(queue) = &self.queue else {
            panic!("invariant broken: pending regions have a queue");
        };
        let last = due.iter().map(|d| d.2).max().unwrap_or(0);
        let mut state = queue.shared.wait_until(|s| s.done >= last);
        due.into_iter()
            .map(|(region, key, _)| {
                let sum = state.sums.remove(&key);
                let Some(sum) = sum else {
                    panic!("invariant broken: a finished region's sum is kept until settled");
                };
                (region, sum)
            })
            .collect()
    }

    /// The queue, made with the first job; `None` when nothing is
    /// deferred: not `enabled`, or the pool's threads cannot run
    /// (`nkic_isa::threads`).
    fn queue(&mut self) -> Option<&mut Queue> {
        if self.queue.is_none() && self.enabled {
            self.enabled = nkic_isa::threads::parallel();
            self.queue = self.enabled.then(|| Queue {
                shared: Arc::new(Shared {
                    state: Mutex::new(State::default()),
                    changed: Condvar::new(),
                    abandoned: AtomicBool::new(false),
                }),
            });
        }
        self.queue.as_mut()
    }
}

/// The runner: the first queued job's sum; then, if more are queued, a
/// runner for them. One job per runner bounds the time a thread that
/// runs it while it waits for something else (`Shared::wait_until`, or
/// rayon's own waits: another run's runner, say) spends on it. A job
/// that panics (a broken invariant in `matmul`) marks the state failed,
/// for the waiting thread to report, instead of taking the pool down.
fn run(shared: Arc<Shared>) {
    // A runner is spawned only for a queued job; without one (a broken
    // invariant) it ends, as a panic here would end the process.
    let job = {
        let mut state = shared.lock();
        let job = state.jobs.pop_front();
        state.running &= job.is_some();
        job
    };
    let Some(job) = job else {
        shared.changed.notify_all();
        return;
    };
    let (seq, key, bytes) = (job.seq, job.key, job.operands.bytes);
    let sum = match shared.abandoned.load(Ordering::Relaxed) {
        true => Ok(None),
        false => std::panic::catch_unwind(AssertUnwindSafe(|| compute(job, &shared))).map(Some),
    };
    let mut state = shared.lock();
    match sum {
        Ok(sum) => {
            if let Some(sum) = sum {
                state.sums.insert(key, sum);
            }
            state.done = seq;
            state.queued -= bytes;
            state.running = !state.jobs.is_empty();
        }
        Err(_) => {
            state.failed = true;
            state.running = false;
        }
    }
    let more = state.running;
    drop(state);
    shared.changed.notify_all();
    if more {
        rayon::spawn(move || run(shared));
    }
}

/// One job's sum.
fn compute(job: Job, shared: &Shared) -> Vec<f32> {
    let Operands { product, m, n, .. } = job.operands;
    let mut sum = match job.start {
        Start::Zeros(mut buffer) => {
            buffer.clear();
            buffer.resize(m * n, 0.0);
            buffer
        }
        Start::Values(values) => values,
        Start::Continue => {
            let previous = shared.lock().sums.remove(&job.key);
            let Some(sum) = previous else {
                panic!("invariant broken: a chain's sum waits for its next job");
            };
            sum
        }
    };
    product(Rows::Values(&mut sum));
    if job.dtype != DType::F32 {
        round_to(job.dtype, &mut sum);
    }
    sum
}

impl Drop for Queue {
    /// The run ended (completed, faulted or unwinding): the sums still
    /// owed are no longer wanted. The runner drops the queued jobs unrun;
    /// the one it is computing may be spread over rayon's pool, of which
    /// the dropping thread may be the only thread, so the runner is
    /// awaited with `Shared::wait_until`, doing pool work rather than
    /// blocking on it (the runner owns what it reads: waiting keeps only
    /// its work inside the run). A failed job has cleared `running`, so
    /// this never reports the failure again while unwinding.
    fn drop(&mut self) {
        self.shared.abandoned.store(true, Ordering::Relaxed);
        drop(self.shared.wait_until(|s| !s.running));
    }
}

/// Rounds every value to `dtype` and back (`numerics::encode`, then
/// `decode`): what writing the sums and reading them again gives.
pub(crate) fn round_to(dtype: DType, sum: &mut Vec<f32>) {
    let mut bytes = Vec::with_capacity(sum.len() * dtype.size() as usize);
    numerics::encode(dtype, sum, &mut bytes);
    sum.clear();
    numerics::decode(dtype, &bytes, sum);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::Rows;

    /// Rows `start..start + rows` of 2 f32 columns, a row per 8 bytes.
    fn region(start: usize, rows: usize) -> Region {
        Region {
            space: SpaceId::Psum(0),
            dtype: DType::F32,
            start,
            step: 8,
            rows,
            cols: 2,
        }
    }

    /// A job whose "product" doubles the sum and adds `k`: a result that
    /// depends on the order jobs run in.
    fn job(k: f32, rows: usize) -> Operands {
        Operands {
            product: Box::new(move |sum: Rows<'_>| {
                let Rows::Values(values) = sum else {
                    panic!("deferred sums are values");
                };
                for v in values.iter_mut() {
                    *v = 2.0 * *v + k;
                }
            }),
            bytes: 1 << 20,
            m: rows,
            n: 2,
        }
    }

    /// Issues a chain of three jobs into one region and one job into
    /// another, more than `IN_FLIGHT_BYTES` in all, and settles them.
    fn chains(deferred: &mut Deferred) -> Vec<(Region, Vec<f32>)> {
        let (a, b) = (region(0, 2), region(64, 1));
        assert!(
            deferred
                .issue(a, Start::Zeros(Vec::new()), job(1.0, 2))
                .is_ok()
        );
        assert!(deferred.continues(&a));
        assert!(deferred.issue(a, Start::Continue, job(2.0, 2)).is_ok());
        assert!(
            deferred
                .issue(b, Start::Values(vec![5.0, 6.0]), job(0.5, 1))
                .is_ok()
        );
        assert!(deferred.issue(a, Start::Continue, job(3.0, 2)).is_ok());
        let mut sums = deferred.settle(None);
        sums.sort_by_key(|(r, _)| r.start);
        assert!(deferred.is_idle());
        sums
    }

    /// Every sum is the one the jobs give in issue order, on a pool of
    /// one thread too (whose only thread runs the runners while it
    /// waits) and on one of several.
    #[test]
    fn runners_sum_every_chain_in_issue_order_on_any_pool() {
        // ((0 · 2 + 1) · 2 + 2) · 2 + 3 = 11; 5 · 2 + 0.5, 6 · 2 + 0.5.
        let want = vec![
            (region(0, 2), vec![11.0; 4]),
            (region(64, 1), vec![10.5, 12.5]),
        ];
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a test pool");
            let sums = pool.install(|| chains(&mut Deferred::new(true)));
            assert_eq!(sums, want, "{threads} threads");
        }
        // Not enabled: nothing is deferred, the operands come back.
        let mut off = Deferred::new(false);
        assert!(
            off.issue(region(0, 1), Start::Zeros(Vec::new()), job(1.0, 1))
                .is_err()
        );
        assert!(off.is_idle());
    }

    /// A job that panics (a broken invariant) is reported by the thread
    /// that waits for it, and the pool goes on: rayon would end the
    /// process for a panic escaping a spawned job.
    #[test]
    fn a_panicking_job_is_reported_to_the_waiting_thread() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a test pool");
        let waited = pool.install(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                let mut deferred = Deferred::new(true);
                let boom = Operands {
                    product: Box::new(|_: Rows<'_>| panic!("a broken invariant")),
                    bytes: 8,
                    m: 1,
                    n: 2,
                };
                let _ = deferred.issue(region(0, 1), Start::Zeros(Vec::new()), boom);
                deferred.settle(None)
            }))
        });
        let Err(panic) = waited else {
            panic!("settling a failed job must not return sums");
        };
        let message = match panic.downcast_ref::<&str>() {
            Some(text) => (*text).to_owned(),
            None => panic.downcast_ref::<String>().cloned().unwrap_or_default(),
        };
        assert!(message.contains("the matmul runner stopped"), "{message}");
        assert_eq!(pool.install(|| rayon::join(|| 1, || 2)), (1, 2));
    }
}
