//! Faulting in, on another thread, the pages a run is about to write.
//!
//! A simulated memory is allocated zeroed and untouched (`pages` module
//! doc), so the first write to each of its 4 KiB pages takes a page fault
//! in which the kernel finds, clears and maps a page: about 2 µs on the
//! machines nkic is measured on, and nearly half of the stepping thread's
//! time in a 1024³ bf16 matmul, whose second core is meanwhile mostly
//! idle. The program says which bytes it writes, so a *warmer* thread
//! walks it ahead of the stepping thread and asks the kernel to fault in
//! the pages of every write it finds (`pages::populate`) while the
//! stepping thread runs.
//!
//! What the warmer may and may not do:
//! * it changes no byte and no bookkeeping: populating a page maps it
//!   without writing to it, so the run's results, faults and timeline are
//!   those of a run without it, whatever the two threads' timing;
//! * it warms only the on-chip memories (SBUF and PSUM) and the kernel's
//!   output tensors, whose whole size the peak-memory budget counts
//!   (docs/cycle-model.md), and of an output only the bytes its stores
//!   write: a run that faults early, or skips code, leaves the HBM
//!   scratch it never wrote unmapped (a run of nki-library's `bwmm_bwd`
//!   that faulted after a tenth of its program had 860 MB of warmed HBM
//!   scratch, 90 MB written);
//! * it faults in only pages the program's writes touch (the hull of
//!   each partition row of a write, when that hull is at most
//!   [`SPARSE_FACTOR`] times the bytes written);
//! * it skips writes it cannot place before the run (a dynamic offset, an
//!   indirect DMA's rows) and memories that already hold their pages;
//! * it stops when the run ends, and after [`IDLE_INSTRUCTIONS`]
//!   instructions in a row that named no new page (a long program keeps
//!   rewriting the tiles it has), so that it costs a long run no more
//!   than a walk through its first instructions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nkic_isa::{AccessPattern, Memory as MemKind, Program, Role};

use crate::pages;

/// A write's partition rows are warmed only when the hull of a row is at
/// most this many times the bytes the row writes: a sparse pattern (a
/// strided scatter) would fault in pages it never touches.
const SPARSE_FACTOR: u64 = 4;

/// The warmer stops after this many instructions in a row that named no
/// page it had not warmed.
const IDLE_INSTRUCTIONS: usize = 4096;

/// A memory's buffer: its address and length in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buffer {
    pub addr: usize,
    pub len: usize,
}

/// The buffers the warmer may fault in, per core (`None`: not to be
/// warmed).
#[derive(Debug)]
pub(crate) struct Targets {
    pub sbuf: Vec<Option<Buffer>>,
    pub psum: Vec<Option<Buffer>>,
    pub sbuf_stride: u64,
    pub psum_stride: u64,
    /// The buffers of the kernel's output tensors, once each (the cores
    /// of a launch share an output), and per core, per HBM tensor of its
    /// program, the index of its buffer there (`None` for the others).
    pub outputs: Vec<Buffer>,
    pub output_of: Vec<Vec<Option<usize>>>,
}

/// A memory being warmed: its buffer and which of its pages are done.
struct Space {
    buffer: Buffer,
    warmed: Vec<u64>,
}

impl Space {
    fn new(buffer: Option<Buffer>) -> Option<Space> {
        let buffer = buffer?;
        let page = pages::page_bytes();
        let pages = (buffer.addr + buffer.len).div_ceil(page) - buffer.addr / page;
        Some(Space {
            buffer,
            warmed: vec![0; pages.div_ceil(64)],
        })
    }

    /// Faults in the pages of bytes `lo..hi` not warmed yet (pages
    /// counted from the one the buffer starts in); returns how many there
    /// were.
    fn warm(&mut self, lo: u64, hi: u64) -> usize {
        let page = pages::page_bytes() as u64;
        let hi = hi.min(self.buffer.len as u64);
        if lo >= hi {
            return 0;
        }
        let skew = self.buffer.addr as u64 % page;
        let (lo, hi) = (lo + skew, hi + skew);
        let mut fresh = 0;
        let mut run: Option<(u64, u64)> = None;
        for p in lo / page..hi.div_ceil(page) {
            let (word, bit) = ((p / 64) as usize, p % 64);
            if self.warmed[word] >> bit & 1 == 1 {
                if let Some((a, b)) = run.take() {
                    self.populate(a, b);
                }
                continue;
            }
            self.warmed[word] |= 1 << bit;
            fresh += 1;
            run = match run {
                Some((a, b)) if b == p => Some((a, p + 1)),
                Some((a, b)) => {
                    self.populate(a, b);
                    Some((p, p + 1))
                }
                None => Some((p, p + 1)),
            };
        }
        if let Some((a, b)) = run {
            self.populate(a, b);
        }
        fresh
    }

    /// [`Space::warm`] of bytes `base + lo .. base + hi`; nothing (0) when
    /// they start or end below the buffer's address.
    fn warm_from(&mut self, base: i64, lo: i64, hi: i64) -> usize {
        match (
            u64::try_from(base.saturating_add(lo)),
            u64::try_from(base.saturating_add(hi)),
        ) {
            (Ok(lo), Ok(hi)) => self.warm(lo, hi),
            _ => 0,
        }
    }

    /// Populates pages `a..b`, counted from the one the buffer starts in
    /// (the first and last may hold bytes around the buffer: populating
    /// changes no byte).
    fn populate(&self, a: u64, b: u64) {
        let page = pages::page_bytes();
        let first = self.buffer.addr / page * page;
        pages::populate(first + a as usize * page, (b - a) as usize * page);
    }
}

/// The byte offsets `[lo, hi)` of an access pattern's elements from its
/// row's address (`AccessPattern::free_byte_extent`), and the bytes one
/// row writes; `None` for a pattern with no element.
fn row_hull(ap: &AccessPattern) -> Option<(i64, i64, u64)> {
    let (lo, hi) = ap.free_byte_extent()?;
    Some((lo, hi, ap.free_size().saturating_mul(ap.elem_bytes())))
}

/// Warms the pages `cores`' writes touch (module doc) until `stop` is
/// set; returns how many it warmed.
pub(crate) fn run(cores: &[Program], targets: &Targets, stop: &AtomicBool) -> usize {
    // Per on-chip memory (SBUF, PSUM): each core's space, and the stride
    // between its partition rows.
    let spaces = |buffers: &[Option<Buffer>]| -> Vec<Option<Space>> {
        buffers.iter().map(|&b| Space::new(b)).collect()
    };
    let mut on_chip = [
        (spaces(&targets.sbuf), targets.sbuf_stride as i64),
        (spaces(&targets.psum), targets.psum_stride as i64),
    ];
    // The cores' queues side by side, an instruction of each in turn:
    // roughly the order the stepping thread reaches them.
    let streams: Vec<(usize, &[nkic_isa::Instruction])> = cores
        .iter()
        .enumerate()
        .flat_map(|(c, p)| p.queues.iter().map(move |q| (c, &q.insts[..])))
        .collect();
    let mut outputs: Vec<Option<Space>> = targets
        .outputs
        .iter()
        .map(|&b| Space::new(Some(b)))
        .collect();
    let longest = streams.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    let mut idle = 0;
    let mut warmed = 0;
    for i in 0..longest {
        for &(core, insts) in &streams {
            if stop.load(Ordering::Relaxed) || idle >= IDLE_INSTRUCTIONS {
                return warmed;
            }
            let Some(inst) = insts.get(i) else { continue };
            let mut fresh = false;
            for operand in inst.op.operands() {
                let ap = operand.ap;
                if operand.role == Role::Read || ap.dyn_offset.is_some() {
                    continue;
                }
                let Some((lo, hi, written)) = row_hull(ap) else {
                    continue;
                };
                if (hi - lo) as u64 > written.saturating_mul(SPARSE_FACTOR) {
                    continue;
                }
                let (spaces, step) = match ap.mem {
                    MemKind::Sbuf => &mut on_chip[0],
                    MemKind::Psum => &mut on_chip[1],
                    MemKind::Hbm(id) => {
                        // An output's bytes from the first to the last the
                        // write touches (as dense as a row, checked above).
                        let output = targets
                            .output_of
                            .get(core)
                            .and_then(|o| o.get(id.0 as usize).copied().flatten());
                        let Some(space) = output
                            .and_then(|o| outputs.get_mut(o))
                            .and_then(Option::as_mut)
                        else {
                            continue;
                        };
                        let Some((lo, hi)) = ap.byte_range() else {
                            continue;
                        };
                        let rows = u64::from(ap.partition_count).max(1);
                        if (hi - lo) as u64
                            > written.saturating_mul(rows).saturating_mul(SPARSE_FACTOR)
                        {
                            continue;
                        }
                        let base = i64::try_from(ap.offset).unwrap_or(i64::MAX);
                        let pages = space.warm_from(base, lo, hi);
                        fresh |= pages > 0;
                        warmed += pages;
                        continue;
                    }
                };
                let Some(space) = spaces.get_mut(core).and_then(Option::as_mut) else {
                    continue;
                };
                let step = *step;
                let base = (i64::from(ap.partition_start) * step)
                    .saturating_add(i64::try_from(ap.offset).unwrap_or(i64::MAX));
                for p in 0..i64::from(ap.partition_count) {
                    let row = base.saturating_add(p.saturating_mul(step));
                    let pages = space.warm_from(row, lo, hi);
                    fresh |= pages > 0;
                    warmed += pages;
                }
            }
            idle = if fresh { 0 } else { idle + 1 };
        }
    }
    warmed
}

/// The warmer thread of a run: stopped and joined when dropped, so that
/// it ends before the memories it warms (declare it after them).
pub(crate) struct Warmer<'scope> {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::ScopedJoinHandle<'scope, ()>>,
}

impl<'scope> Warmer<'scope> {
    /// Starts warming `targets` for `cores` on a thread of `scope`; none
    /// when the thread cannot be made (the run goes on without it).
    pub fn start(
        scope: &'scope std::thread::Scope<'scope, '_>,
        cores: &'scope [Program],
        targets: Targets,
    ) -> Warmer<'scope> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("nkic-warm".into())
            .spawn_scoped(scope, move || {
                pages::lowest_priority();
                run(cores, &targets, &flag);
            })
            .ok();
        Warmer { stop, thread }
    }
}

impl Drop for Warmer<'_> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // The warmer changes nothing the run sees; a panic in it
            // (none is expected) leaves the run's result as it is.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nkic_isa::{DType, Dim};

    fn pattern(dims: &[(i64, u32)], dtype: DType) -> AccessPattern {
        let mut ap = AccessPattern::sbuf(0, 128, 0, &[], dtype);
        ap.dims = dims.iter().map(|&(s, c)| Dim::new(s, c)).collect();
        ap
    }

    /// A row's hull spans every element's bytes, with negative strides
    /// reaching below the row's address; an empty pattern has none.
    #[test]
    fn row_hulls() {
        assert_eq!(
            row_hull(&pattern(&[(1, 512)], DType::F32)),
            Some((0, 2048, 2048))
        );
        assert_eq!(
            row_hull(&pattern(&[(-1, 4)], DType::BF16)),
            Some((-6, 2, 8))
        );
        assert_eq!(
            row_hull(&pattern(&[(1024, 8), (1, 512)], DType::BF16)),
            Some((0, 7 * 2048 + 1024, 8 * 1024))
        );
        assert_eq!(row_hull(&pattern(&[(1, 0)], DType::F32)), None);
    }

    /// Warming marks each page of a range once (a second request for it
    /// finds nothing new), clamps to the buffer, and leaves every byte as
    /// it was, wherever in its first page the buffer starts.
    #[test]
    fn warming_marks_pages_once_and_changes_no_byte() {
        let page = pages::page_bytes();
        let bytes: Vec<u8> = (0..9 * page).map(|i| (i * 7 % 251) as u8).collect();
        let before = bytes.clone();
        let aligned = (bytes.as_ptr() as usize).next_multiple_of(page);
        for skew in [0, 1, page / 2, page - 1] {
            let buffer = Buffer {
                addr: aligned + skew,
                len: 6 * page + 100,
            };
            let mut space = Space::new(Some(buffer)).expect("a buffer");
            let (p, total) = (page as u64, buffer.len as u64);
            assert!(space.warm(0, 2 * p + 1) >= 3, "skew {skew}");
            assert_eq!(space.warm(10, 60), 0, "skew {skew}");
            assert_eq!(space.warm(p, 2 * p), 0, "skew {skew}");
            assert!(space.warm(5 * p, 100 * p) > 0, "skew {skew}");
            assert_eq!(space.warm(total, total + p), 0, "skew {skew}");
            assert!(space.warm(3 * p, 4 * p) > 0, "skew {skew}");
            assert_eq!(space.warm(3 * p, 4 * p), 0, "skew {skew}");
        }
        assert_eq!(bytes, before);
    }

    /// A buffer of `len` bytes starting at a page boundary, inside `backing`.
    fn aligned(backing: &[u8], len: usize) -> Buffer {
        let page = pages::page_bytes();
        let addr = (backing.as_ptr() as usize).next_multiple_of(page);
        assert!(addr + len <= backing.as_ptr() as usize + backing.len());
        Buffer { addr, len }
    }

    /// The test program of `body`, with an input `a` (HBM tensor 0) and
    /// an output `o` (tensor 1) of 128 × 512 f32.
    fn program(body: &str) -> Program {
        let text =
            format!(".target trn3\n.arg a f32[128,512] input\n.arg o f32[128,512] output\n{body}");
        nkic_isa::assemble(&text).expect("the test program assembles")
    }

    /// The walk warms the rows of every write, each page once, and none
    /// of a read, of an HBM write (no output buffer is given here) or of a
    /// sparse write.
    #[test]
    fn the_walk_warms_the_pages_of_on_chip_writes() {
        let page = pages::page_bytes();
        let (sbuf_stride, psum_stride) = (4 * page, 2048);
        let sbuf = vec![0u8; 128 * sbuf_stride + page];
        let psum = vec![0u8; 128 * psum_stride + page];
        let targets = Targets {
            outputs: Vec::new(),
            output_of: Vec::new(),
            sbuf: vec![Some(aligned(&sbuf, 128 * sbuf_stride))],
            psum: vec![Some(aligned(&psum, 128 * psum_stride))],
            sbuf_stride: sbuf_stride as u64,
            psum_stride: psum_stride as u64,
        };
        let warm = |body: &str| run(&[program(body)], &targets, &AtomicBool::new(false));
        // 128 rows of 2 KiB, each in a page of its own; written twice.
        let rows = ".queue dma0\n  dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512]\n  dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512]\n";
        assert_eq!(warm(rows), 128);
        // 128 PSUM rows of 2 KiB side by side: 256 KiB.
        let psum_rows = ".queue vector\n  memset dst=psum[0:128]:f32[1,512] value=0.0\n";
        assert_eq!(warm(psum_rows), 128 * 2048 / page);
        // Reads and HBM writes (no output buffer given) warm nothing.
        let store =
            ".queue dma0\n  dma_copy dst=hbm.o[0:128*512]:f32[1,512] src=sbuf[0:128]:f32[1,512]\n";
        assert_eq!(warm(store), 0);
        // Two elements a page apart: the hull is far more than the bytes.
        let sparse = ".queue vector\n  memset dst=sbuf[0:128]:f32[1024,2] value=0.0\n";
        assert_eq!(warm(sparse), 0);
        // A stop asked for before the walk ends it at once.
        assert_eq!(run(&[program(rows)], &targets, &AtomicBool::new(true)), 0);
    }

    /// With an output's buffer given, the walk warms the bytes each store
    /// to it writes, each page once; stores to other tensors and reads of
    /// the output warm nothing.
    #[test]
    fn the_walk_warms_the_stores_to_outputs() {
        let page = pages::page_bytes();
        let bytes = 128 * 512 * 4;
        let out = vec![0u8; bytes + page];
        let targets = Targets {
            // Tensor 0 is the input `a`, tensor 1 the output `o`.
            outputs: vec![aligned(&out, bytes)],
            output_of: vec![vec![None, Some(0)]],
            sbuf: vec![None],
            psum: vec![None],
            sbuf_stride: 2048,
            psum_stride: 2048,
        };
        let warm = |body: &str| {
            let body = format!(".queue dma0\n{body}");
            run(&[program(&body)], &targets, &AtomicBool::new(false))
        };
        let half = "  dma_copy dst=hbm.o[0:64*512]:f32[1,512] src=sbuf[0:64]:f32[1,512]\n";
        let whole = "  dma_copy dst=hbm.o[0:128*512]:f32[1,512] src=sbuf[0:128]:f32[1,512]\n";
        assert_eq!(warm(half), bytes / 2 / page);
        assert_eq!(warm(&format!("{whole}{whole}{half}")), bytes / page);
        let load = "  dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.o[0:128*512]:f32[1,512]\n";
        let to_input = "  dma_copy dst=hbm.a[0:128*512]:f32[1,512] src=sbuf[0:128]:f32[1,512]\n";
        assert_eq!(warm(&format!("{load}{to_input}")), 0);
    }
}
