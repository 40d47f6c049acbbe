//! Matmuls computed on a worker thread while the interpreter goes on.
//!
//! The Tensor engine's multiply-adds are most of the arithmetic of a
//! matmul-heavy kernel, and the interpreter steps instructions on one
//! thread. A matmul (`nc_matmul`, `nc_matmul_mx`) large enough to pay for
//! the hand-off (`DEFER_MIN_MACS`) whose destination is plain f32 or bf16
//! PSUM rows (`MemoryState::psum_region`; a bf16 sum is rounded after each
//! matmul, as writing it would) is therefore issued to one worker thread
//! and the interpreter goes on with the next instructions: DMA transfers,
//! the decoding of the next matmul's operands, the Vector and Scalar
//! engines' work.
//!
//! What stays on the interpreter's thread, so that nothing observable
//! depends on the worker:
//! * everything that can fault or mark memory: the operands are read (and
//!   every fault found) and the destination's written and defined bits
//!   are set when the matmul is issued, exactly as if it ran then;
//! * every timestamp (the cycle model never looks at values).
//!
//! Only the arithmetic is deferred: the same product (`Product`:
//! `matmul_moving` or `mx_product`) on the same values, in issue order. The worker takes jobs first in, first out, so
//! a chain of accumulating matmuls into one region (`continues`) adds in
//! the order the program gives, and the sums are the bits the
//! interpreter's thread would compute; each job's own spread over rayon's
//! threads is `matmul`'s, which does not change a bit either.
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
//! The worker holds at most `IN_FLIGHT_BYTES` of operand values; issuing
//! more waits for it. If the thread cannot be started the matmul simply
//! runs on the interpreter's thread (`issue` hands the operands back).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};
use std::thread::JoinHandle;

use nkic_isa::DType;
use nkic_isa::numerics;

use crate::matmul::Rows;
use crate::memory::SpaceId;

/// Multiply-adds from which a matmul goes to the worker: a smaller one
/// computes in less time than the hand-off and the wait for its sum take.
pub(crate) const DEFER_MIN_MACS: usize = 1 << 20;

/// The bytes of operand values queued jobs may hold; issuing more waits
/// until the worker has used some (a bound on the memory the worker adds
/// to a run).
const IN_FLIGHT_BYTES: usize = 2 << 20;

/// How long a thread waiting for the worker sleeps before it looks for
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
/// the operand values it reads, so it can run on the worker.
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

/// What the worker shares with the interpreter's thread.
#[derive(Default)]
struct State {
    /// The sequence number of the last job done.
    done: u64,
    /// The sum of each pending region (by the key of its first job) that
    /// the worker has finished with for now.
    sums: HashMap<u64, Vec<f32>>,
    /// Operand bytes of jobs issued and not yet done.
    queued: usize,
    /// Set if the worker died (a broken invariant in `matmul`).
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
        // A panic while holding the lock can only be the worker's, which
        // then also sets `failed`: the state stays consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `ready` holds of the state; panics if the worker died,
    /// as it then never will.
    fn wait_until(&self, ready: impl Fn(&State) -> bool) -> MutexGuard<'_, State> {
        let mut state = self.lock();
        while !ready(&state) {
            assert!(
                !state.failed,
                "invariant broken: the matmul worker stopped with jobs pending"
            );
            // Rather than sleep, the waiting thread (a worker of rayon's
            // pool, `machine::simulate`) takes over bands of the matmul
            // the worker is spreading over the pool, if any; else it
            // sleeps until a job ends, or briefly, as a job's bands may
            // come before its end.
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

/// Marks the shared state failed if the worker unwinds, so that the
/// interpreter's thread does not wait forever.
struct FailGuard<'a>(&'a Shared);

impl Drop for FailGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().failed = true;
            self.0.changed.notify_all();
        }
    }
}

struct Worker {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

/// A region with jobs issued and not yet settled.
struct Pending {
    region: Region,
    key: u64,
    /// The sequence number of its last job.
    last: u64,
}

/// The worker and the regions it owes (module doc).
pub(crate) struct Deferred {
    enabled: bool,
    worker: Option<Worker>,
    pending: Vec<Pending>,
    issued: u64,
    /// Settled sums' buffers (`recycle`).
    kept: Vec<Vec<f32>>,
}

/// The most settled sums' buffers `Deferred` keeps for reuse.
const KEPT_BUFFERS: usize = 4;

impl Deferred {
    /// No worker yet (it starts with the first job), and none ever unless
    /// `enabled`.
    pub fn new(enabled: bool) -> Deferred {
        Deferred {
            enabled,
            worker: None,
            pending: Vec::new(),
            issued: 0,
            kept: Vec::new(),
        }
    }

    /// Whether a matmul of `macs` multiply-adds goes to the worker.
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
    /// operands back when no worker can be started; the caller computes
    /// them itself.
    pub fn issue(
        &mut self,
        region: Region,
        start: Start,
        operands: Operands,
    ) -> Result<(), Operands> {
        if self.worker().is_none() {
            return Err(operands);
        }
        let Deferred {
            worker: Some(worker),
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
        let shared = &worker.shared;
        let mut state = shared.wait_until(|s| s.queued == 0 || s.queued + bytes <= IN_FLIGHT_BYTES);
        state.queued += bytes;
        drop(state);
        let job = Job {
            seq,
            key,
            dtype: region.dtype,
            start,
            operands,
        };
        let sent = worker
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok());
        assert!(
            sent,
            "invariant broken: the matmul worker takes jobs until it is dropped"
        );
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
        let Some(worker) = &self.worker else {
            panic!("invariant broken: pending regions have a worker");
        };
        let last = due.iter().map(|d| d.2).max().unwrap_or(0);
        let mut state = worker.shared.wait_until(|s| s.done >= last);
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

    /// The worker, started if it is not yet; `None` if it cannot be.
    fn worker(&mut self) -> Option<&mut Worker> {
        if self.worker.is_none() && self.enabled {
            self.worker = Worker::start();
            // A thread that cannot start now will not later.
            self.enabled = self.worker.is_some();
        }
        self.worker.as_mut()
    }
}

impl Worker {
    fn start() -> Option<Worker> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            abandoned: AtomicBool::new(false),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("nkic-matmul".to_owned())
            .spawn(move || work(&inbox, &theirs))
            .ok()?;
        Some(Worker {
            jobs: Some(jobs),
            thread: Some(thread),
            shared,
        })
    }
}

/// The worker's loop: each job's sum, in the order they come.
fn work(inbox: &mpsc::Receiver<Job>, shared: &Shared) {
    let _guard = FailGuard(shared);
    for job in inbox {
        if shared.abandoned.load(Ordering::Relaxed) {
            continue;
        }
        let Operands {
            product,
            bytes,
            m,
            n,
        } = job.operands;
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
        {
            let mut state = shared.lock();
            state.sums.insert(job.key, sum);
            state.done = job.seq;
            state.queued -= bytes;
        }
        shared.changed.notify_all();
    }
}

impl Drop for Worker {
    /// The run ended (completed, faulted or unwinding): the sums still
    /// owed are no longer wanted. The worker drops its queued jobs unrun
    /// and ends with the channel; the job it is computing may be spread
    /// over rayon's pool, of which the dropping thread may be the only
    /// thread, so the thread is awaited as `Shared::wait_until` waits,
    /// taking over pool work rather than blocking on it.
    fn drop(&mut self) {
        self.shared.abandoned.store(true, Ordering::Relaxed);
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            while !thread.is_finished() {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::sleep(HELP_POLL);
                }
            }
            let _ = thread.join();
        }
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
