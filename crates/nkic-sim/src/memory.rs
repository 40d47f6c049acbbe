//! Memory state of one NeuronCore and the resolution of access patterns.
//!
//! * **SBUF** is one byte array of `sbuf_partitions × sbuf_bytes_per_partition`
//!   (the physical size); partition `p` starts at byte `p ·
//!   sbuf_bytes_per_partition`. Accesses must stay below the *usable* bytes
//!   of each partition.
//! * **PSUM** is `partitions × psum_bytes_per_partition` (8 banks of 2 KiB
//!   on trn3).
//! * **HBM** is one byte array per program tensor.
//!
//! In a multi-core launch every core has its own SBUF and PSUM; the
//! kernel's arguments are one HBM tensor shared by all cores (numbered as
//! core 0 numbers them) and each core's internal tensors are its own. The
//! core whose instruction runs is set with `MemoryState::set_core`; access
//! patterns resolve against it.
//!
//! Every byte has a "written" bit (a `u64` bitset per memory). Writes set
//! it; reads of a clear bit fault or read poison (`Poison`). Input tensors
//! and tensors with data (constants) start written and defined, everything
//! else not.
//!
//! With `Poison::Precise` every byte also has a definedness shadow, as
//! Memcheck keeps one: a byte is *undefined* when it was never written or
//! when the instruction that wrote it computed it from undefined data (an
//! "undefined" bit per byte, and per 64-byte block the origin: the
//! instruction that first read never-written memory on that path).
//! During an instruction, every read records which of its elements were
//! undefined (`ReadTaint`); every write derives the definedness of each
//! element it writes from those reads through the instruction's
//! `ShadowRule` (docs/isa.md, "Definedness"). Reads used as an index or a
//! register go through `read_defined`, which faults on any undefined
//! element.
//!
//! An access pattern is resolved once per instruction into a `View`: the
//! address of each partition row plus the byte offsets of the maximal
//! contiguous runs of a row in row-major order (a contiguous row is one
//! run, a broadcast row one run per element). Reads and writes then move
//! whole runs.

use nkic_isa::numerics;
use nkic_isa::{AccessPattern, DType, Memory as MemKind, Program, Queue, TensorKind};

use crate::config::{Bytes, Poison};
use crate::decoded::{Decoded, Key, Values};
use crate::deferred::{Deferred, Operands, Region, Start, Touch};
use crate::error::{FResult, Fault, OutOfBounds, SimErrorKind};
use crate::output::OutputBytes;
use crate::pages::{self, Pages};
use crate::warm;
use std::sync::Arc;

/// The most elements one operand may name (2^26): a bound on the memory
/// one instruction may need, far above any real instruction.
const MAX_ELEMENTS: u64 = 1 << 26;

/// Which byte array a view addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SpaceId {
    /// A core's SBUF.
    Sbuf(u8),
    /// A core's PSUM.
    Psum(u8),
    /// An HBM tensor, numbered over the whole launch.
    Hbm(u32),
}

/// The instruction that first read undefined memory on a path (the
/// origin of an undefined value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub core: u8,
    pub queue: Queue,
    pub index: usize,
}

/// What `MemoryState::undefined_summary` finds in an output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UndefinedSummary {
    /// Never-written elements: how many, and the first.
    pub never: Option<(u64, usize)>,
    /// Written but undefined elements: how many, the first, and the
    /// instruction that made it undefined.
    pub undefined: Option<(u64, usize, Option<Origin>)>,
}

/// How the definedness of an instruction's reads flows into the elements
/// it writes (with `Poison::Precise`). A written element `(p, i)` of a
/// `[P, F]` destination is undefined when a read operand `[r, f]` that
/// found undefined elements reaches it:
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShadowRule {
    /// The same element count: the element of the same row-major
    /// position; else the same rows: any element of row `p`; else the same
    /// free size: any element of column `i`; else any element.
    Elementwise,
    /// Same rows: any element of row `p` (scans, top-8, sorts); else any.
    Row,
    /// Same free size: any element of column `i` (moves across
    /// partitions); else any.
    Column,
    /// A `[F, P]` read: its element `(i, p)`; else as `Elementwise`.
    Transpose,
    /// `stationary [K, M]`: any element of its column `p`; `moving [K,
    /// N]`: any element of its column `i`; others as `Elementwise`.
    Matmul,
    /// Any undefined element read makes every written element undefined.
    All,
    /// `nc_stream_shuffle`: row `p` of the destination is row
    /// `p / 32 · 32 + mask[p % 32]` of the source (255: not written) when
    /// both have the same shape; else as `Column`.
    Shuffle([u8; 32]),
}

/// The undefined elements one read of an instruction found.
struct ReadTaint {
    field: &'static str,
    rows: usize,
    free: usize,
    undef: Vec<bool>,
    row_any: Vec<bool>,
    col_any: Vec<bool>,
}

impl ReadTaint {
    fn new(field: &'static str, rows: usize, free: usize, undef: Vec<bool>) -> ReadTaint {
        let mut row_any = vec![false; rows];
        let mut col_any = vec![false; free];
        for (k, &u) in undef.iter().enumerate() {
            if u && free > 0 {
                row_any[k / free] = true;
                col_any[k % free] = true;
            }
        }
        ReadTaint {
            field,
            rows,
            free,
            undef,
            row_any,
            col_any,
        }
    }

    /// Whether element `(p, i)` of a `[rows, free]` destination depends on
    /// an undefined element of this read under `rule`.
    fn reaches(&self, rule: ShadowRule, rows: usize, free: usize, p: usize, i: usize) -> bool {
        let elementwise = || {
            if self.rows * self.free == rows * free {
                self.undef[p * free + i]
            } else if self.rows == rows {
                self.row_any[p]
            } else if self.free == free {
                self.col_any[i]
            } else {
                true
            }
        };
        match rule {
            ShadowRule::Elementwise => elementwise(),
            ShadowRule::Row if self.rows == rows => self.row_any[p],
            ShadowRule::Column if self.free == free => self.col_any[i],
            ShadowRule::Row | ShadowRule::Column | ShadowRule::All => true,
            ShadowRule::Transpose if self.rows == free && self.free == rows => {
                self.undef[i * self.free + p]
            }
            ShadowRule::Transpose => elementwise(),
            ShadowRule::Shuffle(mask) if self.rows == rows && self.free == free => {
                let m = mask[p % 32];
                let from = p / 32 * 32 + usize::from(m);
                m != 255 && from < rows && self.undef[from * free + i]
            }
            ShadowRule::Shuffle(_) => self.free != free || self.col_any[i],
            ShadowRule::Matmul => match self.field {
                "stationary" if self.free == rows => self.col_any[p],
                "moving" if self.free == free => self.col_any[i],
                "stationary" | "moving" => true,
                _ => elementwise(),
            },
        }
    }
}

/// The definedness one instruction has read so far.
#[derive(Default)]
struct Taint {
    reads: Vec<ReadTaint>,
    /// An undefined element read by `read_elem` since the last
    /// `write_elem` (element-at-a-time instructions pair them).
    pending: bool,
    /// The origin of the undefined data read (the first found).
    origin: Option<u32>,
}

impl Taint {
    fn is_clean(&self) -> bool {
        self.reads.is_empty() && !self.pending
    }
}

/// What one element of memory holds.
enum ElemState {
    Defined,
    /// A byte of it was never written.
    NeverWritten(usize),
    /// Written, computed from undefined data whose origin is this id.
    Undefined(u32),
}

/// One memory: bytes plus their written bits, and with `Poison::Precise`
/// their undefined bits and per 64-byte block an origin (both allocated
/// at the first undefined write).
///
/// The bytes of a never-written byte are never observed (every read
/// checks its written bit first and reads poison instead), so a space can
/// be reused by clearing its written bits alone: `dirty` has one bit per
/// block of `DIRTY_WORDS` words of `init` that `mark` touched, and
/// `recycle` clears only those blocks.
///
/// `full` summarises `init` for reads of long ranges (a strided operand's
/// rows span many times the bytes they read): one bit per `FULL_WORDS`
/// words, set when all of them are all ones. Every writer of written bits
/// sets it (`Space::marked`), `recycle` clears it with the bits; a bit
/// left clear only sends a read to the word-by-word check.
///
/// Once the cache of decoded matmul operands (`decoded`) keeps values
/// read from a memory (`track_writes`), `stamps` holds per
/// `STAMP_BYTES` block the count of `writes` at the last write of any of
/// its bytes: every change of the bytes goes through `bytes_mut` or is
/// stamped with its range (the native tier's writes, by `wrote`; the
/// rows `psum_in_place` lends out, when it lends them), so a block whose
/// stamp is at most a count seen earlier holds the bytes it held then.
pub(crate) struct Space {
    pub(crate) data: Data,
    /// Every written bit is set: an input's space, until it is recycled.
    /// `init` and `full` are empty meanwhile (an input of gigabytes needs
    /// no bits).
    all_written: bool,
    init: Vec<u64>,
    full: Vec<u64>,
    dirty: Vec<u64>,
    undef: Vec<u64>,
    origin: Vec<u32>,
    /// The page size of its buffers (`pages` module doc).
    pages: Pages,
    /// Writes stamped so far, and per block the count at its last one;
    /// empty until `track_writes`.
    writes: u64,
    stamps: Vec<u64>,
}

/// Bytes per write stamp (`Space::stamps`): a few per SBUF tile row.
const STAMP_BYTES: usize = 512;

/// A memory's bytes: its own, or an input tensor's shared with the
/// caller's `Inputs` until the kernel writes it (`Data::make_mut` copies
/// them then).
pub(crate) enum Data {
    Own(Vec<u8>),
    Shared(Bytes),
}

impl Default for Data {
    fn default() -> Data {
        Data::Own(Vec::new())
    }
}

impl std::ops::Deref for Data {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Data::Own(bytes) => bytes,
            Data::Shared(bytes) => bytes,
        }
    }
}

impl Data {
    /// The bytes to write, copied from the caller's first if shared.
    /// Private to this module: a write is stamped (`Space::bytes_mut`).
    fn make_mut(&mut self) -> &mut Vec<u8> {
        if let Data::Shared(bytes) = self {
            let mut own = pages::zeroed(bytes.len(), Pages::Huge);
            own.copy_from_slice(bytes);
            *self = Data::Own(own);
        }
        match self {
            Data::Own(bytes) => bytes,
            Data::Shared(_) => unreachable!("shared bytes were copied above"),
        }
    }

    /// The bytes, moved out (copied if shared).
    fn into_vec(self) -> Vec<u8> {
        match self {
            Data::Own(bytes) => bytes,
            Data::Shared(bytes) => bytes.to_vec(),
        }
    }
}

/// Words of written bits (each covering 64 bytes) per dirty bit: a dirty
/// bit stands for 32 KiB of memory.
const DIRTY_WORDS: usize = 512;

/// Words of written bits per bit of `Space::full` (512 bytes of memory),
/// so that a dirty block's summary is one word of `full`.
const FULL_WORDS: usize = DIRTY_WORDS / 64;

/// The bytes of memory one bit of `Space::full` stands for.
const FULL_BYTES: usize = FULL_WORDS * 64;

/// Whether `all_marked` checks the range `start..end` mostly through
/// `Space::full` (at least two whole groups of `FULL_WORDS` words), and
/// so costs a few bits rather than a word per 64 bytes.
fn summarised(start: usize, end: usize) -> bool {
    end.saturating_sub(start) >= 2 * FULL_BYTES
}

impl Space {
    fn new(len: usize, pages: Pages) -> Space {
        let words = len.div_ceil(64);
        Space {
            data: Data::Own(pages::zeroed(len, pages)),
            all_written: false,
            init: pages::zeroed(words, pages),
            full: vec![0; words.div_ceil(DIRTY_WORDS)],
            dirty: vec![0; words.div_ceil(DIRTY_WORDS).div_ceil(64)],
            undef: Vec::new(),
            origin: Vec::new(),
            pages,
            writes: 0,
            stamps: Vec::new(),
        }
    }

    fn initialised(bytes: Bytes) -> Space {
        let n = bytes.len();
        let words = n.div_ceil(64);
        Space {
            data: Data::Shared(bytes),
            all_written: true,
            init: Vec::new(),
            full: Vec::new(),
            dirty: vec![0; words.div_ceil(DIRTY_WORDS).div_ceil(64)],
            undef: Vec::new(),
            origin: Vec::new(),
            pages: Pages::Huge,
            writes: 0,
            stamps: Vec::new(),
        }
    }

    /// Starts stamping writes (`stamps`), if not yet; returns the count of
    /// writes so far, which every later write's stamp exceeds.
    fn track_writes(&mut self) -> u64 {
        if self.stamps.is_empty() {
            self.stamps = pages::zeroed(self.data.len().div_ceil(STAMP_BYTES), self.pages);
        }
        self.writes
    }

    /// Stamps a write of bytes `a..b` (`stamps`).
    fn stamp(&mut self, a: usize, b: usize) {
        if self.stamps.is_empty() || a >= b {
            return;
        }
        self.writes += 1;
        let last = ((b - 1) / STAMP_BYTES).min(self.stamps.len() - 1);
        for s in self.stamps.iter_mut().take(last + 1).skip(a / STAMP_BYTES) {
            *s = self.writes;
        }
    }

    /// Bytes `a..b` to write, stamped.
    fn bytes_mut(&mut self, a: usize, b: usize) -> &mut [u8] {
        self.stamp(a, b);
        &mut self.data.make_mut()[a..b]
    }

    /// Whether no write since the count `since` (`track_writes`) touched
    /// bytes `a..b`.
    fn unchanged(&self, since: u64, a: usize, b: usize) -> bool {
        a >= b
            || self
                .stamps
                .get(a / STAMP_BYTES..=(b - 1) / STAMP_BYTES)
                .is_some_and(|s| s.iter().all(|&w| w <= since))
    }

    /// The byte range of each row of `v` (from its lowest run to the end
    /// of its highest); `None` when one lies outside the memory.
    fn row_ranges(&self, v: &View) -> impl Iterator<Item = Option<(usize, usize)>> {
        let (lo, hi) = v.row_span();
        let len = self.data.len();
        (0..v.rows).map(move |p| {
            let base = v.row_addr(p);
            let a = usize::try_from(base.checked_add(lo)?).ok()?;
            let b = usize::try_from(base.checked_add(hi)?).ok()?;
            (b <= len).then_some((a, b))
        })
    }

    /// Stamps a write of every row of `v` (`stamp`), from its lowest run
    /// to the end of its highest (more bytes than it writes, which only
    /// costs a decode). Only the native tier writes whole views this way.
    #[cfg(feature = "jit")]
    fn stamp_view(&mut self, v: &View) {
        if self.stamps.is_empty() {
            return;
        }
        let (lo, hi) = v.row_span();
        for p in 0..v.rows {
            let base = v.row_addr(p);
            let a = usize::try_from(base.saturating_add(lo)).unwrap_or(0);
            let b = usize::try_from(base.saturating_add(hi)).unwrap_or(usize::MAX);
            self.stamp(a, b.min(self.data.len()));
        }
    }

    /// Whether no write since the count `since` touched a byte of `v`.
    fn view_unchanged(&self, since: u64, v: &View) -> bool {
        self.row_ranges(v)
            .all(|r| r.is_some_and(|(a, b)| self.unchanged(since, a, b)))
    }

    /// Makes every byte never-written again, as `Space::new` leaves it,
    /// clearing only the blocks written since the last reset.
    fn recycle(&mut self) {
        if std::mem::take(&mut self.all_written) {
            self.init = pages::zeroed(self.words(), self.pages);
            self.full = vec![0; self.words().div_ceil(DIRTY_WORDS)];
        }
        for (d, word) in self.dirty.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let block = d * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let lo = block * DIRTY_WORDS;
                let hi = (lo + DIRTY_WORDS).min(self.init.len());
                self.init[lo..hi].fill(0);
                self.full[block] = 0;
            }
        }
        self.undef = Vec::new();
        self.origin = Vec::new();
    }

    /// After bits were set in written-bit words `a..b` (`a < b`), every
    /// word strictly between the first and the last one whole, and those
    /// two too when `whole`: marks their dirty blocks, and sets the `full`
    /// bits of the groups of `FULL_WORDS` words they made all ones.
    fn marked(&mut self, a: usize, b: usize, whole: bool) {
        for block in a / DIRTY_WORDS..=(b - 1) / DIRTY_WORDS {
            self.dirty[block / 64] |= 1 << (block % 64);
        }
        let ones = |words: &[u64]| words.iter().all(|&w| w == u64::MAX);
        for group in a / FULL_WORDS..=(b - 1) / FULL_WORDS {
            let (lo, hi) = (group * FULL_WORDS, (group + 1) * FULL_WORDS);
            // A group of words just set whole is full. At the ends, the
            // words just set first: an element's write usually leaves its
            // word short of full, and then the group too.
            let inside = if whole {
                lo >= a && hi <= b
            } else {
                lo > a && hi < b
            };
            if hi <= self.init.len()
                && (inside || ones(&self.init[a.max(lo)..b.min(hi)]) && ones(&self.init[lo..hi]))
            {
                self.full[group / 64] |= 1 << (group % 64);
            }
        }
    }

    /// Whether each `size`-byte element at `base + r`, for every `r` of
    /// `runs`, is written and defined (`clean` of each): the bits the
    /// elements in one word need are gathered into a mask and that word
    /// checked once.
    fn elements_clean(&self, base: i64, runs: &[i64], size: usize) -> bool {
        if self.all_written && self.undef.is_empty() {
            return true;
        }
        let ok = |w: usize, need: u64| {
            (self.all_written || self.init[w] & need == need)
                && self.undef.get(w).is_none_or(|u| u & need == 0)
        };
        let (mut word, mut need) = (None, 0);
        for &r in runs {
            let a = (base + r) as usize;
            let (w, bit) = (a / 64, a % 64);
            if bit + size > 64 {
                if !self.clean(a, a + size) {
                    return false;
                }
                continue;
            }
            if word != Some(w) {
                if let Some(prev) = word
                    && !ok(prev, need)
                {
                    return false;
                }
                (word, need) = (Some(w), 0);
            }
            need |= bits_mask(bit, bit + size);
        }
        word.is_none_or(|w| ok(w, need))
    }

    /// Whether every written bit of `start..end` is set: whole groups of
    /// `FULL_WORDS` words through `full`, the ends word by word.
    fn all_marked(&self, start: usize, end: usize) -> bool {
        if self.groups_full(start, end) {
            return true;
        }
        if !summarised(start, end) {
            return bits_all(&self.init, start, end, u64::MAX);
        }
        let (lo, hi) = (start.div_ceil(FULL_BYTES), end / FULL_BYTES);
        bits_all(&self.full, lo, hi, u64::MAX)
            && bits_all(&self.init, start, lo * FULL_BYTES, u64::MAX)
            && bits_all(&self.init, hi * FULL_BYTES, end, u64::MAX)
    }

    /// Whether every group of `FULL_WORDS` words that `start..end` touches
    /// is full (`Space::full`): then every byte of it is marked, read from
    /// a bit or two where a short range's words would be read one by one.
    fn groups_full(&self, start: usize, end: usize) -> bool {
        if start >= end || self.all_written {
            return true;
        }
        bits_all(
            &self.full,
            start / FULL_BYTES,
            (end - 1) / FULL_BYTES + 1,
            u64::MAX,
        )
    }

    /// Words of written bits (and of undefined bits): one bit per byte.
    fn words(&self) -> usize {
        self.data.len().div_ceil(64)
    }

    /// Word `w` of the written bits.
    fn init_word(&self, w: usize) -> u64 {
        if self.all_written {
            u64::MAX
        } else {
            self.init[w]
        }
    }

    /// The first byte in `start..end` written with undefined data.
    fn first_undef(&self, start: usize, end: usize) -> Option<usize> {
        if self.undef.is_empty() {
            return None;
        }
        let mut i = start;
        while i < end {
            let w = i / 64;
            let hi = (end - w * 64).min(64);
            let hit = self.undef[w] & bits_mask(i % 64, hi);
            if hit != 0 {
                return Some(w * 64 + hit.trailing_zeros() as usize);
            }
            i = w * 64 + hi;
        }
        None
    }

    /// Whether every byte of `start..end` is written and defined: every bit
    /// of `init` set and every bit of `undef` clear there (`first_uninit`
    /// and `first_undef` find nothing), checked a whole word at a time.
    #[inline]
    fn clean(&self, start: usize, end: usize) -> bool {
        (self.all_written || self.all_marked(start, end))
            && (self.undef.is_empty() || bits_all(&self.undef, start, end, 0))
    }

    /// Of the space's whole elements of `size` bytes, as `state` classes
    /// them: the never-written ones and the undefined ones (their origin
    /// ids named by `origin`). Runs of never-written bytes are found a
    /// word of written bits at a time, so a large, mostly unwritten output
    /// costs a pass over its bits and no list.
    fn undefined_summary(
        &self,
        size: usize,
        origin: impl Fn(u32) -> Option<Origin>,
    ) -> UndefinedSummary {
        let limit = self.data.len() / size * size;
        // Adds `n` elements from `first` on to a kind's count and first.
        let add = |found: &mut Option<(u64, usize)>, n: u64, first: usize| {
            *found = Some(found.map_or((n, first), |(c, f)| (c + n, f)));
        };
        // Counts the elements covering bytes `b0..b1` (runs come in
        // increasing order; `last` is the last element counted so far).
        let cover =
            |b0: usize, b1: usize, last: &mut Option<usize>, found: &mut Option<(u64, usize)>| {
                let (e0, e1) = (b0 / size, (b1 - 1) / size);
                let from = match *last {
                    Some(l) if l >= e0 => l + 1,
                    _ => e0,
                };
                if from <= e1 {
                    add(found, (e1 - from + 1) as u64, from);
                    *last = Some(e1);
                }
            };
        // The runs of set bits of `words(w)` among bits `0..limit`.
        let runs = |word: &dyn Fn(usize) -> u64, each: &mut dyn FnMut(usize, usize)| {
            for w in 0..limit.div_ceil(64) {
                let mut bits = word(w) & bits_mask(0, (limit - w * 64).min(64));
                while bits != 0 {
                    let lo = bits.trailing_zeros() as usize;
                    let run = (!(bits >> lo)).trailing_zeros() as usize;
                    each(w * 64 + lo, w * 64 + lo + run);
                    bits &= !bits_mask(lo, lo + run);
                }
            }
        };
        let mut never = None;
        let mut last = None;
        self.unwritten_runs(limit, &mut |b0, b1| cover(b0, b1, &mut last, &mut never));
        let mut undefined: Option<(u64, usize)> = None;
        if !self.undef.is_empty() {
            let mut last = None;
            runs(&|w| self.undef[w], &mut |b0, b1| {
                // Elements with a never-written byte are in `never`.
                for e in b0 / size..=(b1 - 1) / size {
                    if last.is_some_and(|l| l >= e) {
                        continue;
                    }
                    last = Some(e);
                    if self.first_uninit(e * size, e * size + size).is_none() {
                        add(&mut undefined, 1, e);
                    }
                }
            });
        }
        let undefined = undefined.map(|(count, e)| {
            let b = self
                .first_undef(e * size, e * size + size)
                .expect("an undefined element has an undefined byte");
            (
                count,
                e,
                origin(self.origin.get(b / 64).copied().unwrap_or(0)),
            )
        });
        UndefinedSummary { never, undefined }
    }

    /// Passes each run of never-written bytes among `0..limit` to `each`,
    /// in increasing order (a run may come in pieces that meet). A block
    /// no write touched (its `dirty` bit clear) is one run, its written
    /// bits not read (a mostly unwritten output of gigabytes has hundreds
    /// of megabytes of them, never mapped); a block whose `full` word is
    /// all ones has none; the rest are read a word at a time.
    fn unwritten_runs(&self, limit: usize, each: &mut dyn FnMut(usize, usize)) {
        if self.all_written {
            return;
        }
        let words = limit.div_ceil(64);
        for block in 0..words.div_ceil(DIRTY_WORDS) {
            let (lo, hi) = (block * DIRTY_WORDS, ((block + 1) * DIRTY_WORDS).min(words));
            if self.dirty[block / 64] >> (block % 64) & 1 == 0 {
                each(lo * 64, (hi * 64).min(limit));
                continue;
            }
            if self.full[block] == u64::MAX {
                continue;
            }
            for w in lo..hi {
                let mut bits = !self.init[w] & bits_mask(0, (limit - w * 64).min(64));
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    let run = (!(bits >> b)).trailing_zeros() as usize;
                    each(w * 64 + b, w * 64 + b + run);
                    bits &= !bits_mask(b, b + run);
                }
            }
        }
    }

    fn state(&self, start: usize, end: usize) -> ElemState {
        if let Some(bad) = self.first_uninit(start, end) {
            return ElemState::NeverWritten(bad);
        }
        match self.first_undef(start, end) {
            Some(b) => ElemState::Undefined(self.origin.get(b / 64).copied().unwrap_or(0)),
            None => ElemState::Defined,
        }
    }

    /// Marks `start..end` undefined with `origin`, or defined.
    fn shade(&mut self, start: usize, end: usize, origin: Option<u32>) {
        let Some(o) = origin else {
            if !self.undef.is_empty() {
                let mut i = start;
                while i < end {
                    let w = i / 64;
                    let hi = (end - w * 64).min(64);
                    self.undef[w] &= !bits_mask(i % 64, hi);
                    i = w * 64 + hi;
                }
            }
            return;
        };
        if self.undef.is_empty() {
            self.undef = pages::zeroed(self.words(), self.pages);
            self.origin = pages::zeroed(self.words(), self.pages);
        }
        let mut i = start;
        while i < end {
            let w = i / 64;
            let hi = (end - w * 64).min(64);
            self.undef[w] |= bits_mask(i % 64, hi);
            self.origin[w] = o;
            i = w * 64 + hi;
        }
    }

    /// The first byte in `start..end` never written.
    pub(crate) fn first_uninit(&self, start: usize, end: usize) -> Option<usize> {
        if self.all_written {
            return None;
        }
        // A long range (a whole output at the end of a run) is first
        // checked a group of words at a time through `full`.
        if summarised(start, end) && self.all_marked(start, end) {
            return None;
        }
        let mut i = start;
        while i < end {
            let w = i / 64;
            let bit = i % 64;
            let word = self.init[w];
            let hi = (end - w * 64).min(64);
            let mask = bits_mask(bit, hi);
            let missing = !word & mask;
            if missing != 0 {
                return Some(w * 64 + missing.trailing_zeros() as usize);
            }
            i = w * 64 + hi;
        }
        None
    }

    fn mark(&mut self, start: usize, end: usize) {
        if self.all_written {
            return;
        }
        // A long range written before (a PSUM tile a loop rewrites) has
        // nothing left to set, its blocks already dirty: a few bits of
        // `full` say so where setting its words would read and write
        // each of them.
        if self.groups_full(start, end) || summarised(start, end) && self.all_marked(start, end) {
            return;
        }
        let mut i = start;
        while i < end {
            let w = i / 64;
            let bit = i % 64;
            let hi = (end - w * 64).min(64);
            self.init[w] |= bits_mask(bit, hi);
            i = w * 64 + hi;
        }
        if start < end {
            self.marked(start / 64, (end - 1) / 64 + 1, false);
        }
    }
}

thread_local! {
    /// The on-chip memories of this thread's finished runs, kept for its
    /// next run: a fresh SBUF is tens of MiB, and allocating, zeroing and
    /// faulting it in again cost more than a small kernel's whole run.
    static ON_CHIP: std::cell::RefCell<Vec<Space>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most on-chip memories `ON_CHIP` keeps (an LNC=2 launch's SBUFs and
/// PSUMs).
const POOLED_SPACES: usize = 4;

/// A never-written on-chip memory of `len` bytes: a recycled one when
/// this thread has one of that size.
fn on_chip_space(len: usize) -> Space {
    let pooled = ON_CHIP
        .try_with(|pool| {
            let mut pool = pool.try_borrow_mut().ok()?;
            let i = pool.iter().position(|s| s.data.len() == len)?;
            Some(pool.swap_remove(i))
        })
        .ok()
        .flatten();
    match pooled {
        Some(mut space) => {
            space.recycle();
            space
        }
        None => Space::new(len, Pages::Base),
    }
}

impl Drop for MemoryState {
    fn drop(&mut self) {
        let spaces = std::mem::take(&mut self.sbuf)
            .into_iter()
            .chain(std::mem::take(&mut self.psum));
        let _ = ON_CHIP.try_with(|pool| {
            if let Ok(mut pool) = pool.try_borrow_mut() {
                for space in spaces {
                    if pool.len() < POOLED_SPACES {
                        pool.push(space);
                    }
                }
            }
        });
    }
}

/// Bits `lo..hi` of a word (`hi ≤ 64`).
#[inline]
fn bits_mask(lo: usize, hi: usize) -> u64 {
    let upper = if hi >= 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & (u64::MAX << lo)
}

/// Whether bits `start..end` of `words` all equal the bits of `fill`
/// (`0` or `u64::MAX`): inline within one word (an element of a strided
/// operand), else `bits_all_across`.
#[inline]
fn bits_all(words: &[u64], start: usize, end: usize, fill: u64) -> bool {
    if start >= end {
        return true;
    }
    let (first, last) = (start / 64, (end - 1) / 64);
    if first == last {
        return (words[first] ^ fill) & bits_mask(start % 64, end - first * 64) == 0;
    }
    bits_all_across(words, start, end, fill)
}

/// `bits_all` for a range over more than one word.
fn bits_all_across(words: &[u64], start: usize, end: usize, fill: u64) -> bool {
    let (first, last) = (start / 64, (end - 1) / 64);
    let head = bits_mask(start % 64, 64);
    let tail = bits_mask(0, end - last * 64);
    // A fold without early exit, which the compiler vectorises.
    let inner = words[first + 1..last]
        .iter()
        .fold(0, |acc, &w| acc | (w ^ fill));
    (words[first] ^ fill) & head == 0 && inner == 0 && (words[last] ^ fill) & tail == 0
}

/// The first byte of every run of every row of `v`, in row-major order
/// (run `i` holds elements `i * v.run_len..` of the view).
fn run_starts(v: &View) -> impl Iterator<Item = usize> + '_ {
    (0..v.rows).flat_map(move |p| {
        let base = v.row_addr(p);
        v.runs.iter().map(move |&r| (base + r) as usize)
    })
}

/// Whether `ok` holds for the bytes `a..b` of every run of every row of
/// `v`.
fn every_run(v: &View, ok: impl Fn(usize, usize) -> bool) -> bool {
    let run_bytes = v.run_len * v.size;
    run_starts(v).all(|a| ok(a, a + run_bytes))
}

/// Shades the elements of one run, `size` bytes each from byte `a`, as a
/// write leaves them: those `flags` marks undefined with origin `o`, the
/// others defined; one call per stretch of elements alike.
fn shade_run(space: &mut Space, a: usize, size: usize, flags: &[bool], o: u32) {
    let mut j = 0;
    while j < flags.len() {
        let same = flags[j..].iter().take_while(|&&u| u == flags[j]).count();
        let b = a + j * size;
        space.shade(b, b + same * size, flags[j].then_some(o));
        j += same;
    }
}

/// Whether every run of the row at `base` (`run_bytes` bytes at `base + r`
/// for each `r` of `runs`) is written and defined, so the row is copied
/// without a check per element (`copy_runs`): the bytes from its first run
/// to the end of its last (`hull`, from `dense_hull`) when that is cheap
/// to check and all clean (a tile written whole), else each run (a
/// strided operand of a tile written in columns). What `read_raw` and
/// `read_f32_padded` copy whole.
fn row_clean(
    space: &Space,
    base: i64,
    runs: &[i64],
    run_bytes: usize,
    hull: Option<(i64, usize)>,
) -> bool {
    hull.is_some_and(|(lo, len)| {
        usize::try_from(base + lo).is_ok_and(|start| space.clean(start, start + len))
    }) || space.elements_clean(base, runs, run_bytes)
}

/// Appends the `run_bytes` bytes at `base + r` for every run offset `r`,
/// unchecked (the caller knows them written and defined).
fn copy_runs(data: &[u8], base: i64, runs: &[i64], run_bytes: usize, out: &mut Vec<u8>) {
    fn fixed<const N: usize>(data: &[u8], base: i64, runs: &[i64], out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + runs.len() * N, 0);
        for (to, &r) in out[at..].chunks_exact_mut(N).zip(runs) {
            let a = (base + r) as usize;
            to.copy_from_slice(&data[a..a + N]);
        }
    }
    match run_bytes {
        1 => fixed::<1>(data, base, runs, out),
        2 => fixed::<2>(data, base, runs, out),
        4 => fixed::<4>(data, base, runs, out),
        _ => {
            for &r in runs {
                let a = (base + r) as usize;
                out.extend_from_slice(&data[a..a + run_bytes]);
            }
        }
    }
}

/// Whether `v`'s rows can be laid out `stride` values apart
/// (`MemoryState::read_f32_padded`): a row's values fit, and its dtype
/// decodes element by element.
fn paddable(v: &View, stride: usize) -> bool {
    !v.dtype.is_packed_x4() && stride >= v.free()
}

/// Appends the values of one row's bytes `row` of `dtype`, then zeros up
/// to `stride` values.
fn decode_padded(dtype: DType, row: &[u8], stride: usize, out: &mut Vec<f32>) {
    let end = out.len() + stride;
    numerics::decode(dtype, row, out);
    out.resize(end, 0.0);
}

/// How many rows ahead `decode_clean` touches the row it will decode.
const TOUCH_AHEAD: usize = 8;

/// The bytes of a cache line on the machines nkic runs on: the step at
/// which `touch` reads a row.
const CACHE_LINE: usize = 64;

/// Reads a byte of every cache line of `bytes`, so that their misses are
/// under way (in parallel) before the row is read in order; the result is
/// only for `black_box`.
fn touch(bytes: &[u8]) -> u8 {
    bytes.iter().step_by(CACHE_LINE).fold(0, |acc, &b| acc ^ b)
}

/// Appends the values of every element of `v`, row-major, each row
/// followed by zeros up to `stride` values when given (what `read_f32`
/// and `read_f32_padded` give), for a view whose bytes are all written
/// and defined: a row of one run long enough (or padded) is decoded
/// straight from memory, other rows are gathered first.
fn decode_clean(space: &Space, v: &View, stride: Option<usize>, out: &mut Vec<f32>) {
    let run_bytes = v.run_len * v.size;
    let data = &space.data[..];
    out.reserve(decoded_len(v, stride));
    if let [run] = v.runs[..]
        && (stride.is_some() || run_bytes >= WHOLE_ROW_MIN_BYTES)
    {
        // Each row is in another partition, a page or more from the last,
        // where the caches and the TLB miss, and the hardware prefetchers
        // do not follow: reading a byte of every cache line of the row
        // `TOUCH_AHEAD` rows on starts its misses while this one decodes
        // (a byte of its first line only, the 1024³ bf16 matmul's whole run
        // took 3-4 % longer).
        let row_bytes = |p: usize| {
            let a = (v.row_addr(p) + run) as usize;
            data.get(a..a + run_bytes).unwrap_or_default()
        };
        let mut touched = (0..TOUCH_AHEAD.min(v.rows)).fold(0, |t, p| t ^ touch(row_bytes(p)));
        for p in 0..v.rows {
            if p + TOUCH_AHEAD < v.rows {
                touched ^= touch(row_bytes(p + TOUCH_AHEAD));
            }
            let a = (v.row_addr(p) + run) as usize;
            let row = &data[a..a + run_bytes];
            match stride {
                Some(stride) => decode_padded(v.dtype, row, stride, out),
                None => numerics::decode(v.dtype, row, out),
            }
        }
        std::hint::black_box(touched);
        return;
    }
    let mut bytes = Vec::with_capacity(v.elements() * v.size);
    match stride {
        None => {
            for p in 0..v.rows {
                copy_runs(data, v.row_addr(p), &v.runs, run_bytes, &mut bytes);
            }
            numerics::decode(v.dtype, &bytes, out);
        }
        Some(stride) => {
            for p in 0..v.rows {
                bytes.clear();
                copy_runs(data, v.row_addr(p), &v.runs, run_bytes, &mut bytes);
                decode_padded(v.dtype, &bytes, stride, out);
            }
        }
    }
}

/// How many values `decode_clean` gives for `v` and `stride`.
fn decoded_len(v: &View, stride: Option<usize>) -> usize {
    stride.map_or(v.elements() * numerics::lanes(v.dtype), |s| v.rows * s)
}

/// Whether `values` are, bit for bit, what `decode_clean` gives for `v`
/// now (a check of the decoded-operand cache in debug builds).
fn decodes_to(space: &Space, v: &View, stride: Option<usize>, values: &[f32]) -> bool {
    let mut fresh = Vec::new();
    decode_clean(space, v, stride, &mut fresh);
    fresh.len() == values.len()
        && fresh
            .iter()
            .zip(values)
            .all(|(a, b)| a.to_bits() == b.to_bits())
}

/// The bytes from the first to the end of the last run of a row, as
/// offsets `(lo, len)` from the row's address, when checking all of them
/// costs no more than 8 bit words per run (so one check of the hull
/// replaces one per run); `None` for an empty or sparse row.
fn dense_hull(runs: &[i64], run_bytes: usize) -> Option<(i64, usize)> {
    let lo = *runs.iter().min()?;
    let hi = *runs.iter().max()?;
    let len = usize::try_from(hi - lo).ok()? + run_bytes;
    (len <= runs.len() * 8 * 64).then_some((lo, len))
}

/// The shortest row `MemoryState::read_f32` decodes straight from memory
/// (one decode call per row); shorter rows are copied first and decoded
/// in one call.
const WHOLE_ROW_MIN_BYTES: usize = 256;

/// An access pattern resolved against the memory and the queue's registers.
#[derive(Clone, Debug)]
pub(crate) struct View {
    pub space: SpaceId,
    pub dtype: DType,
    /// Bytes per element.
    pub size: usize,
    /// Partition rows (P).
    pub rows: usize,
    /// First partition on chip (0 in HBM); the accumulator lane of row 0.
    pub part_start: usize,
    /// Byte address of row 0 and the distance between rows.
    pub row_base: i64,
    pub row_step: i64,
    /// Elements per contiguous run.
    pub run_len: usize,
    /// Byte offset of each run from its row's address, in row-major order.
    pub runs: Vec<i64>,
    /// The operand's field name, for messages.
    pub field: &'static str,
    /// Per-row addresses replacing `row_base + p · row_step` (the rows of
    /// an indirect DMA).
    pub row_addrs: Option<Vec<i64>>,
}

impl View {
    /// Elements per row (F).
    pub fn free(&self) -> usize {
        self.run_len * self.runs.len()
    }

    /// All elements (P × F).
    pub fn elements(&self) -> usize {
        self.rows * self.free()
    }

    /// Values per row as `f32` (4 per element for packed x4 dtypes).
    pub fn values_per_row(&self) -> usize {
        self.free() * numerics::lanes(self.dtype)
    }

    pub fn row_addr(&self, p: usize) -> i64 {
        match &self.row_addrs {
            Some(rows) => rows[p],
            None => self
                .row_base
                .saturating_add((p as i64).saturating_mul(self.row_step)),
        }
    }

    /// The byte address of element `i` of row `p`.
    pub fn addr(&self, p: usize, i: usize) -> i64 {
        self.row_addr(p)
            .saturating_add(self.runs[i / self.run_len])
            .saturating_add(((i % self.run_len) * self.size) as i64)
    }

    /// Rows `first .. first + count` of this view as a view of their own
    /// (the caller keeps the range inside `0..rows`).
    pub fn sub_rows(&self, first: usize, count: usize) -> View {
        let on_chip = !matches!(self.space, SpaceId::Hbm(_));
        View {
            rows: count,
            part_start: if on_chip {
                self.part_start + first
            } else {
                self.part_start
            },
            row_base: self.row_addr(first),
            row_addrs: self
                .row_addrs
                .as_ref()
                .map(|rows| rows[first..first + count].to_vec()),
            runs: self.runs.clone(),
            ..*self
        }
    }
}

/// The machine's memories.
pub(crate) struct MemoryState {
    sbuf: Vec<Space>,
    psum: Vec<Space>,
    hbm: Vec<Space>,
    /// Per core, the launch-wide HBM tensor of each of its tensor ids.
    hbm_map: Vec<Vec<u32>>,
    /// The core whose access patterns are resolved.
    core: usize,
    hbm_names: Vec<String>,
    hbm_shapes: Vec<Vec<u64>>,
    partitions: usize,
    sbuf_stride: usize,
    sbuf_limit: usize,
    psum_stride: usize,
    poison: Poison,
    pub hbm_read: u64,
    pub hbm_written: u64,
    /// The executing instruction and its shadow rule (`begin`).
    site: Option<Origin>,
    rule: ShadowRule,
    /// The origin id of the executing instruction, once it read
    /// never-written memory.
    site_id: Option<u32>,
    origins: Vec<Origin>,
    taint: Taint,
    /// Matmuls summed on rayon's pool, and their pending PSUM rows.
    deferred: Deferred,
    /// Matmul operands kept decoded (`read_operand`).
    decoded: Decoded,
    /// The matmul operands the launch reads only once (`decoded::read_once`).
    read_once: std::collections::HashSet<AccessPattern, nkic_isa::hash::FastBuild>,
    /// Tests turn `copy_row` off to compare it with the element loop.
    #[cfg(test)]
    pub element_copies: bool,
}

impl MemoryState {
    /// Fresh memories for `program`: every byte uninitialised, HBM tensors
    /// sized from their shapes.
    /// The policy for reads of never-written bytes.
    pub fn poison(&self) -> Poison {
        self.poison
    }

    /// Changes the policy for reads of never-written bytes.
    pub fn set_poison(&mut self, poison: Poison) {
        self.poison = poison;
    }

    #[cfg(test)]
    pub fn new(program: &Program, poison: Poison) -> MemoryState {
        MemoryState::for_cores(std::slice::from_ref(program), poison)
    }

    /// Fresh memories for the cores of a launch: core 0's tensors keep
    /// their ids; another core's arguments and `shared` internal tensors
    /// are core 0's tensor of the same name, its other internal tensors new
    /// ones. A tensor with data holds it, written and defined.
    pub fn for_cores(cores: &[Program], poison: Poison) -> MemoryState {
        let target = cores.first().map_or(nkic_isa::Target::Trn3, |p| p.target);
        let f = target.figures();
        let partitions = f.sbuf_partitions as usize;
        let mut hbm = Vec::new();
        let mut hbm_names = Vec::new();
        let mut hbm_shapes = Vec::new();
        let mut hbm_map = Vec::new();
        for (c, program) in cores.iter().enumerate() {
            let mut map = Vec::with_capacity(program.hbm.len());
            for t in &program.hbm {
                // Arguments, and internal tensors of kind `Shared`, are
                // core 0's tensor of the same name and kind family.
                let family = |k: TensorKind| (k.is_arg(), k == TensorKind::Shared);
                let shared = (c > 0 && (t.kind.is_arg() || t.kind == TensorKind::Shared))
                    .then(|| cores[0].tensor_by_name(&t.name))
                    .flatten()
                    .filter(|id| {
                        cores[0]
                            .tensor(*id)
                            .is_some_and(|m| family(m.kind) == family(t.kind))
                    });
                match shared {
                    Some(id) => map.push(id.0),
                    None => {
                        map.push(u32::try_from(hbm.len()).unwrap_or(u32::MAX));
                        // A constant's bytes are written and defined, and
                        // shared with the program until the kernel writes them.
                        hbm.push(match &t.data {
                            Some(data) => Space::initialised(Bytes::new(data.clone())),
                            None => {
                                Space::new(usize::try_from(t.bytes()).unwrap_or(0), Pages::Huge)
                            }
                        });
                        hbm_shapes.push(t.shape.clone());
                        hbm_names.push(if c > 0 {
                            format!("core{c}.{}", t.name)
                        } else {
                            t.name.clone()
                        });
                    }
                }
            }
            hbm_map.push(map);
        }
        let cores_n = cores.len().max(1);
        MemoryState {
            sbuf: (0..cores_n)
                .map(|_| on_chip_space(partitions * f.sbuf_bytes_per_partition as usize))
                .collect(),
            psum: (0..cores_n)
                .map(|_| on_chip_space(partitions * f.psum_bytes_per_partition as usize))
                .collect(),
            hbm,
            hbm_map,
            core: 0,
            hbm_names,
            hbm_shapes,
            partitions,
            sbuf_stride: f.sbuf_bytes_per_partition as usize,
            sbuf_limit: f.sbuf_usable_bytes_per_partition as usize,
            psum_stride: f.psum_bytes_per_partition as usize,
            poison,
            hbm_read: 0,
            hbm_written: 0,
            site: None,
            rule: ShadowRule::Elementwise,
            site_id: None,
            origins: Vec::new(),
            taint: Taint::default(),
            deferred: Deferred::new(false),
            decoded: Decoded::default(),
            read_once: crate::decoded::read_once(cores),
            #[cfg(test)]
            element_copies: false,
        }
    }

    /// The buffers the `warm` module may fault in: each core's on-chip
    /// memories, unless they already hold their pages (written whole).
    pub fn warm_targets(&self, cores: &[Program]) -> warm::Targets {
        let buffer = |s: &Space| match &s.data {
            Data::Own(bytes) if !s.all_written && !bytes.is_empty() => Some(warm::Buffer {
                addr: bytes.as_ptr() as usize,
                len: bytes.len(),
            }),
            _ => None,
        };
        // Each output's buffer once, by its HBM space: the cores of a
        // launch share their outputs' spaces (`hbm_map`).
        let mut outputs = Vec::new();
        // Per HBM space: its index in `outputs`, once listed.
        let mut listed: Vec<Option<usize>> = vec![None; self.hbm.len()];
        let output_of = cores
            .iter()
            .zip(&self.hbm_map)
            .map(|(program, map)| {
                program
                    .hbm
                    .iter()
                    .zip(map)
                    .map(|(t, &global)| {
                        if t.kind != TensorKind::Output {
                            return None;
                        }
                        let slot = listed.get_mut(global as usize)?;
                        if slot.is_none() {
                            outputs.push(buffer(&self.hbm[global as usize])?);
                            *slot = Some(outputs.len() - 1);
                        }
                        *slot
                    })
                    .collect()
            })
            .collect();
        warm::Targets {
            outputs,
            output_of,
            sbuf: self.sbuf.iter().map(buffer).collect(),
            psum: self.psum.iter().map(buffer).collect(),
            sbuf_stride: self.sbuf_stride as u64,
            psum_stride: self.psum_stride as u64,
        }
    }

    /// Starts instruction `index` of `queue` on core `core`: forgets the
    /// previous instruction's reads.
    pub fn begin(&mut self, core: u8, queue: Queue, index: usize, rule: ShadowRule) {
        self.site = Some(Origin { core, queue, index });
        self.rule = rule;
        self.site_id = None;
        self.taint = Taint::default();
    }

    /// The instruction an origin id names.
    pub fn origin(&self, id: u32) -> Option<Origin> {
        self.origins.get(id as usize).copied()
    }

    /// The origin id of the executing instruction.
    fn site_origin(&mut self) -> u32 {
        if let Some(id) = self.site_id {
            return id;
        }
        let id = u32::try_from(self.origins.len()).unwrap_or(u32::MAX);
        self.origins.push(self.site.unwrap_or(Origin {
            core: 0,
            queue: Queue::Sync,
            index: 0,
        }));
        self.site_id = Some(id);
        id
    }

    fn precise(&self) -> bool {
        self.poison == Poison::Precise
    }

    /// Records that row `p` of the next write depends on lane `p` of an
    /// engine's accumulators, undefined where `lanes` holds an origin.
    pub fn taint_lanes(&mut self, lanes: &[Option<u32>]) {
        if !self.precise() || lanes.iter().all(Option::is_none) {
            return;
        }
        if self.taint.origin.is_none() {
            self.taint.origin = lanes.iter().flatten().next().copied();
        }
        let undef: Vec<bool> = lanes.iter().map(Option::is_some).collect();
        self.taint
            .reads
            .push(ReadTaint::new("accumulator", undef.len(), 1, undef));
    }

    /// Per row of a `[rows, free]` destination: the origin of undefined
    /// data the instruction's reads so far bring into that row (for
    /// accumulators).
    pub fn row_taint(&self, rows: usize, free: usize) -> Vec<Option<u32>> {
        let origin = self.taint.origin;
        (0..rows)
            .map(|p| {
                let hit = self.taint.pending
                    || self.taint.reads.iter().any(|t| {
                        (0..free.max(1)).any(|i| t.reaches(self.rule, rows, free.max(1), p, i))
                    });
                if hit { origin } else { None }
            })
            .collect()
    }

    /// Forgets undefined `read_elem` reads not yet paired with a write.
    pub fn clear_pending(&mut self) {
        self.taint.pending = false;
    }

    /// Sets HBM tensor `index` to `bytes`, all initialised.
    #[cfg(test)]
    pub fn load_tensor(&mut self, index: usize, bytes: Vec<u8>) {
        self.load_shared(index, Bytes::from(bytes));
    }

    /// Sets HBM tensor `index` to `bytes` shared with the caller (copied
    /// at the kernel's first write to it), all initialised.
    pub fn load_shared(&mut self, index: usize, bytes: Bytes) {
        if let Some(t) = self.hbm.get_mut(index) {
            *t = Space::initialised(bytes);
        }
    }

    /// Of HBM tensor `index`'s elements of `size` bytes: the never-written
    /// ones (count and first element) and the written but undefined ones
    /// (count, first element and its origin), what the undefined-output
    /// warning reports; without a list of the elements, whose 16–24 bytes
    /// each made a mostly unwritten 1 GiB output take 6 GB.
    pub fn undefined_summary(&self, index: usize, size: usize) -> UndefinedSummary {
        let Some(t) = self.hbm.get(index) else {
            return UndefinedSummary::default();
        };
        if t.clean(0, t.data.len()) {
            return UndefinedSummary::default();
        }
        t.undefined_summary(size.max(1), |o| self.origin(o))
    }

    /// The undefined elements of HBM tensor `index` (elements of `size`
    /// bytes), in row-major order: each element's number and its origin
    /// (`None`: never written); the tests' oracle of `undefined_summary`.
    #[cfg(test)]
    pub fn undefined_elements(&self, index: usize, size: usize) -> Vec<(usize, Option<Origin>)> {
        let Some(t) = self.hbm.get(index) else {
            return Vec::new();
        };
        if t.clean(0, t.data.len()) {
            return Vec::new();
        }
        let size = size.max(1);
        let mut out = Vec::new();
        for e in 0..t.data.len() / size {
            match t.state(e * size, e * size + size) {
                ElemState::Defined => {}
                ElemState::NeverWritten(_) => out.push((e, None)),
                ElemState::Undefined(o) => out.push((e, self.origin(o))),
            }
        }
        out
    }

    /// The first never-written byte of HBM tensor `index`, if there is one.
    pub fn first_unwritten(&self, index: usize) -> Option<usize> {
        let t = self.hbm.get(index)?;
        t.first_uninit(0, t.data.len())
    }

    /// The bytes of HBM tensor `index`, moved out (the run is over: the
    /// tensor keeps its written bits but no bytes), each element with a
    /// never-written byte reading as the policy's poison: kept as runs of
    /// elements, not written into the bytes (`output` module doc).
    pub fn take_output(&mut self, index: usize, dtype: DType) -> OutputBytes {
        let poison = self.poison_bytes(dtype);
        let Some(t) = self.hbm.get_mut(index) else {
            return OutputBytes::written(Vec::new());
        };
        let size = dtype.size() as usize;
        let len = t.data.len();
        let mut data = std::mem::take(&mut t.data).into_vec();
        // Past the runs an output keeps (a scattered write) the fill goes
        // into the bytes, the runs found so far and those to come.
        let most = crate::output::most_runs(len);
        let mut unwritten: Vec<std::ops::Range<usize>> = Vec::new();
        let mut filled = false;
        let fill = |data: &mut [u8], r: std::ops::Range<usize>| {
            crate::output::fill_range(&mut data[r], &poison);
        };
        t.unwritten_runs(len, &mut |b0, b1| {
            // Whole elements, a run meeting or overlapping the last one
            // merged into it.
            let (e0, e1) = (b0 / size * size, (b1.div_ceil(size) * size).min(len));
            let kept = unwritten.len();
            match unwritten.last_mut() {
                Some(r) if r.end >= e0 => r.end = r.end.max(e1),
                _ if filled => fill(&mut data, e0..e1),
                _ if kept == most => {
                    filled = true;
                    for r in unwritten.drain(..) {
                        fill(&mut data, r);
                    }
                    fill(&mut data, e0..e1);
                }
                _ => unwritten.push(e0..e1),
            }
        });
        if filled {
            // Every run went into the bytes (none is kept once filling).
            debug_assert!(unwritten.is_empty());
            return OutputBytes::written(data);
        }
        OutputBytes::with_unwritten(data, poison, unwritten)
    }

    /// How many elements of `size` bytes of HBM tensor `index` have a
    /// byte never written.
    pub fn unwritten_elements(&self, index: usize, size: usize) -> usize {
        let Some(t) = self.hbm.get(index) else {
            return 0;
        };
        let size = size.max(1);
        (0..t.data.len() / size)
            .filter(|e| t.first_uninit(e * size, e * size + size).is_some())
            .count()
    }

    fn space(&self, id: SpaceId) -> &Space {
        match id {
            SpaceId::Sbuf(c) => &self.sbuf[c as usize],
            SpaceId::Psum(c) => &self.psum[c as usize],
            SpaceId::Hbm(i) => &self.hbm[i as usize],
        }
    }

    fn space_mut(&mut self, id: SpaceId) -> &mut Space {
        match id {
            SpaceId::Sbuf(c) => &mut self.sbuf[c as usize],
            SpaceId::Psum(c) => &mut self.psum[c as usize],
            SpaceId::Hbm(i) => &mut self.hbm[i as usize],
        }
    }

    /// The HBM bytes of `region` (a race's overlap, `race`), interval by
    /// interval; `None` when one of them was never written or the region
    /// is on chip (only HBM is shared between cores).
    pub fn peek_region(&self, region: &crate::race::Region) -> Option<Vec<u8>> {
        let (space, _, intervals) = region.parts();
        if !matches!(space, SpaceId::Hbm(_)) {
            return None;
        }
        let t = self.space(space);
        let mut out = Vec::new();
        for &(lo, hi) in intervals {
            let (lo, hi) = (usize::try_from(lo).ok()?, usize::try_from(hi).ok()?);
            if t.first_uninit(lo, hi).is_some() {
                return None;
            }
            out.extend_from_slice(t.data.get(lo..hi)?);
        }
        Some(out)
    }

    /// Puts `bytes` (from [`MemoryState::peek_region`]) into the HBM
    /// bytes of `region`, leaving written bits and shadow as they are, and
    /// returns the bytes it replaced.
    pub fn poke_region(&mut self, region: &crate::race::Region, bytes: &[u8]) -> Vec<u8> {
        let (space, _, intervals) = region.parts();
        let mut old = Vec::with_capacity(bytes.len());
        if !matches!(space, SpaceId::Hbm(_)) {
            return old;
        }
        let space = self.space_mut(space);
        let mut at = 0;
        for &(lo, hi) in intervals {
            let (Ok(lo), Ok(hi)) = (usize::try_from(lo), usize::try_from(hi)) else {
                continue;
            };
            let n = hi - lo;
            if let (true, Some(src)) = (hi <= space.data.len(), bytes.get(at..at + n)) {
                let dst = space.bytes_mut(lo, hi);
                old.extend_from_slice(dst);
                dst.copy_from_slice(src);
            }
            at += n;
        }
        old
    }

    /// Makes access patterns resolve against core `core`'s memories.
    pub fn set_core(&mut self, core: usize) {
        if core < self.sbuf.len() {
            self.core = core;
        }
    }

    /// Resolves `ap` with the executing queue's registers and checks that
    /// every element lies inside its memory.
    pub fn view(
        &self,
        ap: &AccessPattern,
        regs: &[i32],
        field: &'static str,
        write: bool,
    ) -> FResult<View> {
        let v = self.view_unchecked(ap, regs, field)?;
        if let Err(mut f) = self.check_bounds(&v, ap, write) {
            if let Some(facts) = self.outside(&v, 0..v.rows) {
                f.message = format!("{}: {}", f.message, facts.message());
                f.oob = Some(Box::new(facts));
            }
            return Err(f);
        }
        Ok(v)
    }

    /// Resolves `ap` without the bounds check (DMA `oob=skip` checks each
    /// element instead).
    pub fn view_unchecked(
        &self,
        ap: &AccessPattern,
        regs: &[i32],
        field: &'static str,
    ) -> FResult<View> {
        let size = ap.dtype.size() as usize;
        let dynamic = match ap.dyn_offset {
            Some(d) => {
                // The verifier's Register rule holds a dynamic offset's
                // register below the queue's register count.
                let r = *regs.get(usize::from(d.reg.0)).unwrap_or_else(|| {
                    panic!(
                        "`{field}` of a verified program uses register {}, which does not exist",
                        d.reg
                    )
                });
                i64::from(r).saturating_mul(d.scale)
            }
            None => 0,
        };
        let offset = i64::try_from(ap.offset)
            .unwrap_or(i64::MAX)
            .saturating_add(dynamic);
        // Refuse patterns whose element count cannot be materialised (a
        // broadcast may name far more elements than memory holds).
        let elements = ap
            .dims
            .iter()
            .try_fold(u64::from(ap.partition_count), |a, d| {
                a.checked_mul(u64::from(d.count))
            });
        // The free size alone too: with zero partitions the product above
        // is 0 whatever the dims, but the runs of a row are still built.
        let free = ap
            .dims
            .iter()
            .try_fold(1u64, |a, d| a.checked_mul(u64::from(d.count)));
        if elements.is_none_or(|n| n > MAX_ELEMENTS) || free.is_none_or(|n| n > MAX_ELEMENTS) {
            return Err(Fault::bad(format!(
                "`{field}` names more than {MAX_ELEMENTS} elements, more than the simulator handles in one instruction"
            )));
        }
        let (run_len, runs) = runs_of(ap, size);
        let rows = ap.partition_count as usize;
        let (space, part_start, row_base, row_step) = match ap.mem {
            MemKind::Sbuf => (
                SpaceId::Sbuf(self.core as u8),
                ap.partition_start as usize,
                (ap.partition_start as i64 * self.sbuf_stride as i64).saturating_add(offset),
                self.sbuf_stride as i64,
            ),
            MemKind::Psum => (
                SpaceId::Psum(self.core as u8),
                ap.partition_start as usize,
                (ap.partition_start as i64 * self.psum_stride as i64).saturating_add(offset),
                self.psum_stride as i64,
            ),
            MemKind::Hbm(id) => {
                // The verifier's tensor and HBM-partition rules hold.
                let Some(&global) = self
                    .hbm_map
                    .get(self.core)
                    .and_then(|m| m.get(id.0 as usize))
                else {
                    panic!(
                        "invariant broken: `{field}` of a verified program names HBM tensor #{}, which does not exist",
                        id.0
                    );
                };
                assert!(
                    ap.partition_start == 0,
                    "invariant broken: `{field}` of a verified program starts on HBM at partition 0"
                );
                (
                    SpaceId::Hbm(global),
                    0,
                    offset,
                    ap.partition_stride.saturating_mul(size as i64),
                )
            }
        };
        Ok(View {
            space,
            dtype: ap.dtype,
            size,
            rows,
            part_start,
            row_base,
            row_step,
            run_len,
            runs,
            field,
            row_addrs: None,
        })
    }

    fn check_bounds(&self, v: &View, ap: &AccessPattern, write: bool) -> FResult<()> {
        if v.elements() == 0 {
            return Ok(());
        }
        let what = if write { "write" } else { "read" };
        let field = v.field;
        let min_run = v.runs.iter().copied().min().unwrap_or(0);
        let max_run = v.runs.iter().copied().max().unwrap_or(0);
        let run_bytes = (v.run_len * v.size) as i64;
        match v.space {
            SpaceId::Sbuf(_) | SpaceId::Psum(_) => {
                let name = if matches!(v.space, SpaceId::Sbuf(_)) {
                    "sbuf"
                } else {
                    "psum"
                };
                let end = v.part_start + v.rows;
                if end > self.partitions {
                    return Err(Fault::new(
                        SimErrorKind::OutOfBounds,
                        format!(
                            "out-of-bounds {what} of {name} partitions {}..{end} (limit {}) through `{field}`",
                            v.part_start, self.partitions
                        ),
                    ));
                }
                let limit = if matches!(v.space, SpaceId::Sbuf(_)) {
                    self.sbuf_limit
                } else {
                    self.psum_stride
                } as i64;
                let stride = if matches!(v.space, SpaceId::Sbuf(_)) {
                    self.sbuf_stride
                } else {
                    self.psum_stride
                } as i64;
                let off = v.row_base - v.part_start as i64 * stride;
                let lo = off.saturating_add(min_run);
                let hi = off.saturating_add(max_run).saturating_add(run_bytes);
                if lo < 0 || hi > limit {
                    return Err(Fault::new(
                        SimErrorKind::OutOfBounds,
                        format!(
                            "out-of-bounds {what} of {name} bytes {lo}..{hi} of each partition (limit {limit}) through `{field}`"
                        ),
                    ));
                }
            }
            SpaceId::Hbm(id) => {
                let len = self.hbm[id as usize].data.len() as i64;
                let last = (v.rows as i64 - 1).saturating_mul(v.row_step);
                let lo = v
                    .row_base
                    .saturating_add(last.min(0))
                    .saturating_add(min_run);
                let hi = v
                    .row_base
                    .saturating_add(last.max(0))
                    .saturating_add(max_run)
                    .saturating_add(run_bytes);
                if lo < 0 || hi > len {
                    return Err(Fault::new(
                        SimErrorKind::OutOfBounds,
                        format!(
                            "out-of-bounds {what} of hbm tensor `{}` bytes {lo}..{hi} (size {len}) through `{field}`",
                            self.hbm_names[id as usize]
                        ),
                    ));
                }
            }
        }
        let _ = ap;
        Ok(())
    }

    /// The first element of rows `rows` of `v` outside its memory, in
    /// NumPy's terms.
    pub fn outside(&self, v: &View, rows: std::ops::Range<usize>) -> Option<OutOfBounds> {
        let last = v.run_len.saturating_sub(1);
        for p in rows {
            for (r, _) in v.runs.iter().enumerate() {
                let first = r * v.run_len;
                if self.in_bounds(v, p, first) && self.in_bounds(v, p, first + last) {
                    continue;
                }
                let i = (first..=first + last).find(|&i| !self.in_bounds(v, p, i))?;
                return Some(self.facts(v, p, i));
            }
        }
        None
    }

    /// The NumPy-level facts of element `i` of row `p` of `v` (outside its
    /// memory).
    fn facts(&self, v: &View, p: usize, i: usize) -> OutOfBounds {
        let addr = v.addr(p, i);
        let size = v.size.max(1) as i64;
        let (tensor, shape, axis, index, flat) = match v.space {
            SpaceId::Hbm(id) => {
                let mut shape = self.hbm_shapes[id as usize].clone();
                if shape.is_empty() {
                    shape.push(1);
                }
                let flat = addr.div_euclid(size);
                let inner: i64 = shape[1..].iter().map(|&d| d as i64).product::<i64>().max(1);
                let tensor = self.hbm_names[id as usize].clone();
                (tensor, shape, 0, flat.div_euclid(inner), flat)
            }
            SpaceId::Sbuf(_) | SpaceId::Psum(_) => {
                let sbuf = matches!(v.space, SpaceId::Sbuf(_));
                let (stride, limit) = if sbuf {
                    (self.sbuf_stride, self.sbuf_limit)
                } else {
                    (self.psum_stride, self.psum_stride)
                };
                let per = (limit / v.size.max(1)) as i64;
                let part = (v.part_start + p) as i64;
                let within = addr.saturating_sub(part * stride as i64).div_euclid(size);
                let shape = vec![self.partitions as u64, per as u64];
                let (axis, index) = if part >= self.partitions as i64 {
                    (0, part)
                } else {
                    (1, within)
                };
                let name = if sbuf { "sbuf" } else { "psum" };
                (name.to_owned(), shape, axis, index, part * per + within)
            }
        };
        OutOfBounds {
            tensor,
            shape,
            axis,
            index,
            flat_offset: flat,
            field: v.field,
            row: p as u64,
            index_tile: None,
        }
    }

    /// True when every element of row `p` lies inside its memory.
    pub fn row_in_bounds(&self, v: &View, p: usize) -> bool {
        let (Some(&lo), Some(&hi)) = (v.runs.iter().min(), v.runs.iter().max()) else {
            return true;
        };
        let run_bytes = (v.run_len * v.size) as i64;
        let a = v.row_addr(p);
        match v.space {
            SpaceId::Hbm(id) => {
                a.saturating_add(lo) >= 0
                    && a.saturating_add(hi).saturating_add(run_bytes)
                        <= self.hbm[id as usize].data.len() as i64
            }
            _ => {
                let last = v.run_len.saturating_sub(1);
                self.in_bounds(v, p, 0)
                    && (0..v.runs.len()).all(|r| {
                        self.in_bounds(v, p, r * v.run_len)
                            && self.in_bounds(v, p, r * v.run_len + last)
                    })
            }
        }
    }

    /// True when element `i` of row `p` lies inside its memory.
    pub fn in_bounds(&self, v: &View, p: usize, i: usize) -> bool {
        let a = v.addr(p, i);
        let size = v.size as i64;
        match v.space {
            SpaceId::Sbuf(_) | SpaceId::Psum(_) => {
                let (stride, limit) = if matches!(v.space, SpaceId::Sbuf(_)) {
                    (self.sbuf_stride as i64, self.sbuf_limit as i64)
                } else {
                    (self.psum_stride as i64, self.psum_stride as i64)
                };
                let part = v.part_start + p;
                let off = a.saturating_sub(part as i64 * stride);
                part < self.partitions && off >= 0 && off.saturating_add(size) <= limit
            }
            SpaceId::Hbm(id) => {
                a >= 0 && a.saturating_add(size) <= self.hbm[id as usize].data.len() as i64
            }
        }
    }

    /// The bytes an uninitialised element reads as.
    fn poison_bytes(&self, dtype: DType) -> Vec<u8> {
        let size = dtype.size() as usize;
        match self.poison {
            Poison::Nan | Poison::Precise if dtype.is_float() => {
                let mut out = Vec::with_capacity(size);
                numerics::encode(dtype, &vec![f32::NAN; numerics::lanes(dtype)], &mut out);
                out
            }
            Poison::Precise => {
                let mut out = vec![0; size];
                if let Some(b) = out.first_mut() {
                    *b = 4;
                }
                out
            }
            _ => vec![0; size],
        }
    }

    /// Where byte `addr` of `v`'s memory lies, for messages.
    fn place(&self, v: &View, addr: usize) -> String {
        match v.space {
            SpaceId::Sbuf(_) => format!(
                "sbuf partition {} byte {}",
                addr / self.sbuf_stride,
                addr % self.sbuf_stride
            ),
            SpaceId::Psum(_) => format!(
                "psum partition {} byte {}",
                addr / self.psum_stride,
                addr % self.psum_stride
            ),
            SpaceId::Hbm(id) => format!("hbm tensor `{}` byte {addr}", self.hbm_names[id as usize]),
        }
    }

    fn uninit_fault(&self, v: &View, addr: usize) -> Fault {
        let place = self.place(v, addr);
        Fault::new(
            SimErrorKind::UninitialisedRead,
            format!(
                "read of uninitialised memory through `{}`: {place} was never written",
                v.field
            ),
        )
    }

    /// Appends the raw bytes of every element of `v`, row-major. With
    /// `Poison::Precise` it records which elements were undefined.
    pub fn read_raw(&mut self, v: &View, out: &mut Vec<u8>) -> FResult<()> {
        out.reserve(v.elements() * v.size);
        self.walk_read(v, Some(out))?;
        self.count_read(v);
        Ok(())
    }

    /// What `read_raw` does but count the HBM bytes: records the
    /// definedness of every element of `v` and, with `out`, appends its
    /// bytes (poison for a never-written one, or the fault under
    /// `Poison::Error`).
    fn walk_read(&mut self, v: &View, mut out: Option<&mut Vec<u8>>) -> FResult<()> {
        let run_bytes = v.run_len * v.size;
        let precise = self.precise();
        let space = self.space(v.space);
        let mut poison: Option<Vec<u8>> = None;
        // Per element, once one is undefined; and whether one was never
        // written, and the origin of the first written-undefined one.
        let mut undef: Option<Vec<bool>> = None;
        let (mut never, mut origin) = (false, None);
        let data: &[u8] = &space.data;
        let hull = dense_hull(&v.runs, run_bytes);
        let mut k = 0;
        for p in 0..v.rows {
            let base = v.row_addr(p);
            // A row whose runs are all written and defined is copied
            // without a check per element.
            if row_clean(space, base, &v.runs, run_bytes, hull) {
                if let Some(out) = out.as_deref_mut() {
                    copy_runs(data, base, &v.runs, run_bytes, out);
                }
                k += v.free();
                continue;
            }
            for &r in &v.runs {
                let a = (base + r) as usize;
                let e = a + run_bytes;
                if space.clean(a, e) {
                    if let Some(out) = out.as_deref_mut() {
                        out.extend_from_slice(&data[a..e]);
                    }
                    k += v.run_len;
                    continue;
                }
                for el in (a..e).step_by(v.size) {
                    let bytes = match space.state(el, el + v.size) {
                        ElemState::Defined => &data[el..el + v.size],
                        ElemState::NeverWritten(bad) => {
                            if self.poison == Poison::Error {
                                return Err(self.uninit_fault(v, bad));
                            }
                            if precise {
                                never = true;
                                undef.get_or_insert_with(|| vec![false; v.elements()])[k] = true;
                            }
                            poison.get_or_insert_with(|| self.poison_bytes(v.dtype))
                        }
                        ElemState::Undefined(o) => {
                            origin.get_or_insert(o);
                            undef.get_or_insert_with(|| vec![false; v.elements()])[k] = true;
                            &data[el..el + v.size]
                        }
                    };
                    if let Some(out) = out.as_deref_mut() {
                        out.extend_from_slice(bytes);
                    }
                    k += 1;
                }
            }
        }
        if let Some(undef) = undef {
            self.record(origin, never);
            self.taint
                .reads
                .push(ReadTaint::new(v.field, v.rows, v.free(), undef));
        }
        Ok(())
    }

    /// Notes the origin of undefined data just read: `origin` for data
    /// written undefined, this instruction for never-written memory.
    fn record(&mut self, origin: Option<u32>, never: bool) {
        let o = match origin {
            Some(o) => o,
            None if never => self.site_origin(),
            None => return,
        };
        self.taint.origin.get_or_insert(o);
    }

    /// `read_raw` for a value that must be defined (an index, a register,
    /// a seed): any undefined element faults, naming where it came from.
    pub fn read_defined(&mut self, v: &View, out: &mut Vec<u8>) -> FResult<()> {
        let before = self.taint.reads.len();
        let origin_before = self.taint.origin;
        self.read_raw(v, out)?;
        if self.taint.reads.len() == before {
            return Ok(());
        }
        let Some(t) = self.taint.reads.pop() else {
            return Ok(());
        };
        self.taint.origin = origin_before;
        let k = t.undef.iter().position(|&u| u).unwrap_or(0);
        let free = v.free().max(1);
        let addr = v.addr(k / free, k % free) as usize;
        let space = self.space(v.space);
        match space.state(addr, addr + v.size) {
            ElemState::Undefined(o) => {
                let mut f = Fault::new(
                    SimErrorKind::UninitialisedRead,
                    format!(
                        "an index or a register read through `{}` is undefined: element {k} ({}) holds a value computed from undefined memory",
                        v.field,
                        self.place(v, addr)
                    ),
                );
                f.origin = self.origin(o);
                Err(f)
            }
            _ => Err(Fault::new(
                SimErrorKind::UninitialisedRead,
                format!(
                    "an index or a register read through `{}` is undefined: element {k} ({}) was never written",
                    v.field,
                    self.place(v, addr)
                ),
            )),
        }
    }

    /// `read_bits` through `read_defined`.
    pub fn read_defined_bits(&mut self, v: &View) -> FResult<Vec<u32>> {
        let mut raw = Vec::new();
        self.read_defined(v, &mut raw)?;
        Ok(raw.chunks_exact(v.size).map(bits_of).collect())
    }

    /// The raw bytes of every element of `v`, row-major, without counting
    /// HBM traffic; bytes never written read as the dtype's NaN (0 for
    /// integers), whatever the poison policy. For `--dump`.
    pub fn peek_raw(&self, v: &View) -> Vec<u8> {
        let mut out = Vec::with_capacity(v.elements() * v.size);
        let space = self.space(v.space);
        let poison = if v.dtype.is_float() {
            let mut nan = Vec::with_capacity(v.size);
            numerics::encode(v.dtype, &vec![f32::NAN; numerics::lanes(v.dtype)], &mut nan);
            nan
        } else {
            vec![0; v.size]
        };
        for p in 0..v.rows {
            let base = v.row_addr(p);
            for &r in &v.runs {
                for i in 0..v.run_len {
                    let a = (base + r) as usize + i * v.size;
                    match space.data.get(a..a + v.size) {
                        Some(bytes) if space.first_uninit(a, a + v.size).is_none() => {
                            out.extend_from_slice(bytes);
                        }
                        _ => out.extend_from_slice(&poison),
                    }
                }
            }
        }
        out
    }

    /// The raw bytes of one element.
    pub fn read_elem(&mut self, v: &View, p: usize, i: usize, out: &mut Vec<u8>) -> FResult<()> {
        let a = v.addr(p, i) as usize;
        let space = self.space(v.space);
        match space.state(a, a + v.size) {
            ElemState::Defined => out.extend_from_slice(&space.data[a..a + v.size]),
            ElemState::NeverWritten(bad) => {
                if self.poison == Poison::Error {
                    return Err(self.uninit_fault(v, bad));
                }
                let pb = self.poison_bytes(v.dtype);
                out.extend_from_slice(&pb);
                if self.precise() {
                    self.elem_read_undefined(None);
                }
            }
            ElemState::Undefined(o) => {
                out.extend_from_slice(&space.data[a..a + v.size]);
                self.elem_read_undefined(Some(o));
            }
        }
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_read += v.size as u64;
        }
        Ok(())
    }

    /// Notes that the element just read (one at a time) was undefined,
    /// with `origin`, or never written (`None`): the next element write
    /// is tainted (`elem_shade`).
    fn elem_read_undefined(&mut self, origin: Option<u32>) {
        self.record(origin, origin.is_none());
        self.taint.pending = true;
    }

    /// Writes `bytes` (every element of `v`, row-major) and marks them
    /// initialised.
    pub fn write_raw(&mut self, v: &View, bytes: &[u8]) -> FResult<()> {
        let run_bytes = v.run_len * v.size;
        if bytes.len() != v.elements() * v.size {
            return Err(Fault::bad(format!(
                "`{}` expects {} bytes, the instruction produced {}",
                v.field,
                v.elements() * v.size,
                bytes.len()
            )));
        }
        let precise = self.precise();
        let shadow = (precise && !self.taint.is_clean()).then(|| self.shadow_of(v));
        let space = self.space_mut(v.space);
        let mut k = 0;
        for p in 0..v.rows {
            let base = v.row_addr(p);
            for &r in &v.runs {
                let a = (base + r) as usize;
                space
                    .bytes_mut(a, a + run_bytes)
                    .copy_from_slice(&bytes[k..k + run_bytes]);
                space.mark(a, a + run_bytes);
                if precise {
                    match &shadow {
                        None => space.shade(a, a + run_bytes, None),
                        Some((undef, o)) => {
                            let e0 = k / v.size;
                            shade_run(space, a, v.size, &undef[e0..e0 + v.run_len], *o);
                        }
                    }
                }
                k += run_bytes;
            }
        }
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_written += bytes.len() as u64;
        }
        Ok(())
    }

    /// Per element of the destination `v` (row-major): whether it is
    /// undefined under the instruction's rule, and the origin to give it.
    fn shadow_of(&mut self, v: &View) -> (Vec<bool>, u32) {
        let (rows, free) = (v.rows, v.free());
        let pending = self.taint.pending;
        let undef = (0..rows * free)
            .map(|k| {
                let (p, i) = (k / free.max(1), k % free.max(1));
                pending
                    || self
                        .taint
                        .reads
                        .iter()
                        .any(|t| t.reaches(self.rule, rows, free, p, i))
            })
            .collect();
        let o = match self.taint.origin {
            Some(o) => o,
            None => self.site_origin(),
        };
        (undef, o)
    }

    /// Row `p` of `sv` copied to row `p` of `dv` a row at a time, as the
    /// element loop of a copy (`read_elem` then `write_elem` for each
    /// element in order, the loop `Exec::copy_elements` runs) would: the
    /// same bytes (poison for never-written ones), written bits, shadow
    /// and origins, taint and counters, with one state check per element
    /// but one copy and one marking per row (the loop was a quarter of an
    /// MX `bwmm` run, gathering token rows that hold undefined bytes).
    ///
    /// For two different memories, the same dtype, and rows that are one
    /// run each of the same length; `false`, having done nothing, for
    /// anything else and when a never-written element would fault
    /// (`Poison::Error`): the caller's element loop then does all of it.
    pub fn copy_row(&mut self, sv: &View, dv: &View, p: usize) -> bool {
        let free = sv.free();
        let one_run = |v: &View| v.runs.len() == 1 && v.run_len == free;
        if sv.space == dv.space
            || sv.dtype != dv.dtype
            || dv.free() != free
            || !one_run(sv)
            || !one_run(dv)
        {
            return false;
        }
        #[cfg(test)]
        if self.element_copies {
            return false;
        }
        let (size, len) = (sv.size, free * sv.size);
        let (a, b) = (sv.addr(p, 0) as usize, dv.addr(p, 0) as usize);
        let precise = self.precise();
        // What each element read: `None` defined, else the origin of its
        // undefined data (`None` inside for never-written bytes).
        let mut read = vec![None; free];
        let mut bytes = Vec::with_capacity(len);
        let src = self.space(sv.space);
        let mut poison = None;
        for (i, r) in read.iter_mut().enumerate() {
            let el = a + i * size;
            match src.state(el, el + size) {
                ElemState::Defined => bytes.extend_from_slice(&src.data[el..el + size]),
                ElemState::NeverWritten(_) if self.poison == Poison::Error => return false,
                ElemState::NeverWritten(_) => {
                    bytes.extend_from_slice(
                        poison.get_or_insert_with(|| self.poison_bytes(sv.dtype)),
                    );
                    *r = precise.then_some(None);
                }
                ElemState::Undefined(o) => {
                    bytes.extend_from_slice(&src.data[el..el + size]);
                    *r = Some(Some(o));
                }
            }
        }
        // The taint and shadow of each element in order, as `read_elem`
        // and `write_elem` leave them.
        let mut shades: Vec<Option<u32>> = Vec::with_capacity(if precise { free } else { 0 });
        for (i, r) in read.iter().enumerate() {
            if let Some(origin) = *r {
                self.elem_read_undefined(origin);
            }
            if let Some(shade) = self.elem_shade(dv.rows, free, p, i) {
                shades.push(shade);
            }
        }
        let dst = self.space_mut(dv.space);
        dst.bytes_mut(b, b + len).copy_from_slice(&bytes);
        dst.mark(b, b + len);
        let mut i = 0;
        while i < shades.len() {
            let n = shades[i..].iter().take_while(|&&o| o == shades[i]).count();
            dst.shade(b + i * size, b + (i + n) * size, shades[i]);
            i += n;
        }
        if let SpaceId::Hbm(_) = sv.space {
            self.hbm_read += len as u64;
        }
        if let SpaceId::Hbm(_) = dv.space {
            self.hbm_written += len as u64;
        }
        true
    }

    /// The shadow of element `i` of row `p` of a `[rows, free]` write of
    /// one element at a time, after the reads so far: `None` without
    /// `Poison::Precise`, else the origin it is undefined with (or `None`
    /// inside: defined). Ends the taint of the element's own read, but for
    /// the `Row` rule, whose taint lasts.
    fn elem_shade(&mut self, rows: usize, free: usize, p: usize, i: usize) -> Option<Option<u32>> {
        if !self.precise() {
            return None;
        }
        let undef = self.taint.pending
            || self
                .taint
                .reads
                .iter()
                .any(|t| t.reaches(self.rule, rows, free, p, i));
        if self.rule != ShadowRule::Row {
            self.taint.pending = false;
        }
        Some(undef.then(|| self.taint.origin.unwrap_or_else(|| self.site_origin())))
    }

    /// Writes one element's bytes.
    pub fn write_elem(&mut self, v: &View, p: usize, i: usize, bytes: &[u8]) {
        let a = v.addr(p, i) as usize;
        let n = bytes.len().min(v.size);
        let shade = self.elem_shade(v.rows, v.free(), p, i);
        let space = self.space_mut(v.space);
        space.bytes_mut(a, a + n).copy_from_slice(&bytes[..n]);
        space.mark(a, a + n);
        if let Some(o) = shade {
            space.shade(a, a + n, o);
        }
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_written += n as u64;
        }
    }

    /// The values of every element of `v` as `f32`, row-major (four per
    /// element for packed x4 dtypes).
    pub fn read_f32(&mut self, v: &View) -> FResult<Vec<f32>> {
        if let Some(values) = self.read_f32_whole_rows(v) {
            return Ok(values);
        }
        let mut raw = Vec::new();
        self.read_raw(v, &mut raw)?;
        let mut out = Vec::with_capacity(v.elements() * numerics::lanes(v.dtype));
        numerics::decode(v.dtype, &raw, &mut out);
        Ok(out)
    }

    /// [`MemoryState::read_f32`] when every row is one run of at least
    /// `WHOLE_ROW_MIN_BYTES` whose bytes are all written and defined (a
    /// tile row written whole): the values are
    /// decoded from the memory directly, without copying the bytes first
    /// (what `read_raw` + `decode` give, with the same HBM read count).
    /// `None` otherwise, for the general path.
    fn read_f32_whole_rows(&mut self, v: &View) -> Option<Vec<f32>> {
        let run_bytes = v.run_len * v.size;
        // Short rows decode faster from one copied buffer than by a call
        // per row.
        if run_bytes < WHOLE_ROW_MIN_BYTES {
            return None;
        }
        let starts = self.clean_row_starts(v)?;
        let space = self.space(v.space);
        let mut out = Vec::with_capacity(v.elements() * numerics::lanes(v.dtype));
        for a in starts {
            numerics::decode(v.dtype, &space.data[a..a + run_bytes], &mut out);
        }
        self.count_read(v);
        Some(out)
    }

    /// The values `read_f32` reads, each row followed by zeros up to
    /// `stride` values (at least its own length), into `out` (emptied
    /// first), when every row's bytes are all written and defined: a row
    /// of one run is decoded straight from memory, a row of several (a
    /// strided operand) has its runs gathered and then decoded when
    /// `row_clean`, as `read_raw` copies it; `false`, with `out`
    /// untouched, otherwise (`read_f32` then checks the rows again, element
    /// by element where they are unclean). (Rows a matmul reads in place:
    /// `matmul::Moving::Padded`.)
    pub fn read_f32_padded(&mut self, v: &View, stride: usize, out: &mut Vec<f32>) -> bool {
        if !paddable(v, stride) {
            return false;
        }
        let run_bytes = v.run_len * v.size;
        if let Some(starts) = self.clean_row_starts(v) {
            let space = self.space(v.space);
            out.clear();
            out.reserve(v.rows * stride);
            for a in starts {
                decode_padded(v.dtype, &space.data[a..a + run_bytes], stride, out);
            }
            self.count_read(v);
            return true;
        }
        let hull = dense_hull(&v.runs, run_bytes);
        let space = self.space(v.space);
        if !(0..v.rows).all(|p| row_clean(space, v.row_addr(p), &v.runs, run_bytes, hull)) {
            return false;
        }
        out.clear();
        out.reserve(v.rows * stride);
        let mut row = Vec::with_capacity(v.free() * v.size);
        for p in 0..v.rows {
            row.clear();
            copy_runs(&space.data, v.row_addr(p), &v.runs, run_bytes, &mut row);
            decode_padded(v.dtype, &row, stride, out);
        }
        self.count_read(v);
        true
    }

    /// Whether `ap` is a matmul operand the launch reads only once
    /// (`decoded::read_once`): its values are decoded but not kept.
    pub fn read_once(&self, ap: &AccessPattern) -> bool {
        // Most launches with many matmuls loop: no hashing then.
        !self.read_once.is_empty() && self.read_once.contains(ap)
    }

    /// A matmul operand's values as `read_f32` gives them, through the
    /// cache of decoded operands (`read_cached`; kept there unless `once`).
    pub fn read_operand(&mut self, v: &View, once: bool) -> FResult<Arc<Values>> {
        match self.read_cached(v, None, once)? {
            Some(values) => Ok(values),
            None => Ok(Arc::new(Values::new(self.read_f32(v)?))),
        }
    }

    /// A matmul operand's values as `read_f32_padded` gives them with
    /// `stride`, through the cache of decoded operands (`read_cached`);
    /// `None` when it cannot (the caller reads them with `read_operand`).
    pub fn read_operand_padded(
        &mut self,
        v: &View,
        stride: usize,
        once: bool,
    ) -> FResult<Option<Arc<Values>>> {
        self.read_cached(v, Some(stride), once)
    }

    /// What `read_f32` gives (`stride` `None`) or what `read_f32_padded`
    /// gives with `stride` (`Ok(None)` when it cannot). When every byte of
    /// `v` is written and defined and no write touched it since it was
    /// last decoded for the same view and layout (`Space::stamps`), the
    /// values are those decoded then (`decoded`). Values read `once` are
    /// neither looked up nor kept.
    fn read_cached(
        &mut self,
        v: &View,
        stride: Option<usize>,
        once: bool,
    ) -> FResult<Option<Arc<Values>>> {
        let len = decoded_len(v, stride);
        let clean = Key::keyable(v) && self.is_clean(v);
        // The key (a copy of the view's runs) only for values to keep.
        let key = (clean && !once && Decoded::fits(len))
            .then(|| Key::of(v, stride))
            .flatten();
        if let Some(key) = &key {
            // The cache is taken out while the test borrows the memory.
            let mut decoded = std::mem::take(&mut self.decoded);
            let space = self.space(v.space);
            let hit = decoded.get(key, |since| space.view_unchanged(since, v));
            self.decoded = decoded;
            if let Some(values) = hit {
                let space = self.space(v.space);
                debug_assert!(
                    decodes_to(space, v, stride, &values),
                    "invariant broken: a decoded operand's bytes changed without a stamp"
                );
                self.count_read(v);
                return Ok(Some(values));
            }
        }
        let mut values = match self.decoded.spare(len) {
            Some(buffer) => buffer,
            None => self.deferred.spare(),
        };
        if !clean {
            match stride {
                Some(stride) => {
                    if !self.read_f32_padded(v, stride, &mut values) {
                        return Ok(None);
                    }
                }
                None => values = self.read_f32(v)?,
            }
            return Ok(Some(Arc::new(Values::new(values))));
        }
        // Written and defined: decoded straight from memory into what
        // `read_f32` or `read_f32_padded` gives, and kept with the count
        // of writes so far.
        if stride.is_some_and(|stride| !paddable(v, stride)) {
            return Ok(None);
        }
        let space = self.space_mut(v.space);
        // Stamping starts with the first values kept from a memory.
        let since = key.is_some().then(|| space.track_writes());
        values.clear();
        decode_clean(space, v, stride, &mut values);
        self.count_read(v);
        let values = Arc::new(Values::new(values));
        if let (Some(key), Some(since)) = (key, since) {
            self.decoded.put(key, since, Arc::clone(&values));
        }
        Ok(Some(values))
    }

    /// Where each row of `v` starts in its memory's bytes, when every row
    /// is one run whose bytes are all written and defined (what
    /// `read_f32_whole_rows` and `read_f32_padded` decode straight from
    /// memory); `None` otherwise.
    fn clean_row_starts(&self, v: &View) -> Option<Vec<usize>> {
        let [run] = v.runs[..] else {
            return None;
        };
        let run_bytes = v.run_len * v.size;
        let space = self.space(v.space);
        let row = |p: usize| {
            let start = usize::try_from(v.row_addr(p) + run).ok()?;
            space.clean(start, start + run_bytes).then_some(start)
        };
        (0..v.rows).map(row).collect()
    }

    /// The bytes of each row of `v`, what `read_raw` would append row by
    /// row, when every row is one run of elements all written and
    /// defined (so the read records nothing and cannot fault); counts
    /// the read as `read_raw` does. `None` otherwise: the caller reads
    /// with `read_raw`.
    pub fn clean_rows(&mut self, v: &View) -> Option<Vec<&[u8]>> {
        if v.runs.len() != 1 {
            return None;
        }
        let run_bytes = v.run_len * v.size;
        let hull = dense_hull(&v.runs, run_bytes);
        let space = self.space(v.space);
        let clean = (0..v.rows).all(|p| row_clean(space, v.row_addr(p), &v.runs, run_bytes, hull));
        if !clean {
            return None;
        }
        self.count_read(v);
        let data: &[u8] = &self.space(v.space).data;
        let rows = (0..v.rows).map(|p| {
            let a = (v.row_addr(p) + v.runs[0]) as usize;
            &data[a..a + run_bytes]
        });
        Some(rows.collect())
    }

    /// Counts the HBM bytes a read of every element of `v` moves (what
    /// `read_raw` and `read_f32` count, and the native tier for its
    /// sources).
    pub fn count_read(&mut self, v: &View) {
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_read += (v.elements() * v.size) as u64;
        }
    }

    /// The bytes of an f32 PSUM destination for an instruction to add its
    /// results into in place, and the distance between its rows, when
    /// that is all `read_f32` + `write_f32` would do (`psum_region`);
    /// without `accumulate` the rows are zeroed, since the caller's sum
    /// starts from zero. `None` otherwise, for the copying path.
    pub fn psum_in_place(&mut self, v: &View, accumulate: bool) -> Option<(&mut [u8], usize)> {
        if v.dtype != DType::F32 {
            return None;
        }
        let region = self.psum_region(v, accumulate)?;
        let run_bytes = region.row_bytes();
        let data = self
            .space_mut(region.space)
            .bytes_mut(region.start, region.end());
        if !accumulate {
            for p in 0..region.rows {
                let a = p * region.step;
                data[a..a + run_bytes].fill(0);
            }
        }
        Some((data, region.step))
    }

    /// The rows of an f32 or bf16 PSUM destination an instruction may add
    /// its results into in place or on the matmul worker (`deferred`),
    /// when that is all `read_f32` + `write_f32` would do: every row one contiguous run of its own
    /// (`View::psum_rows`), and the instruction read nothing undefined
    /// (so the write makes every element written and defined). With
    /// `accumulate` every element must already be written and defined;
    /// without, the rows are marked written (what `write_raw` marks) and
    /// their bytes are the caller's to fill. `None` otherwise.
    pub fn psum_region(&mut self, v: &View, accumulate: bool) -> Option<Region> {
        let region = v.psum_rows()?;
        if !self.taint.is_clean() {
            return None;
        }
        let run_bytes = region.row_bytes();
        let precise = self.precise();
        let space = self.space_mut(region.space);
        if region.end() > space.data.len() {
            return None;
        }
        let rows = (0..region.rows).map(|p| region.start + p * region.step);
        if accumulate {
            if !rows.clone().all(|a| space.clean(a, a + run_bytes)) {
                return None;
            }
        } else {
            for a in rows {
                space.mark(a, a + run_bytes);
                if precise {
                    space.shade(a, a + run_bytes, None);
                }
            }
        }
        Some(region)
    }

    /// Queues a matmul into the PSUM rows of `v`, to be summed on rayon's
    /// pool (`deferred`), when they are rows `psum_region` accepts: settles
    /// the pending regions they overlap unless the matmul continues the
    /// chain of exactly these rows, and marks them as `psum_region` does.
    /// Hands the operands back otherwise, for the caller to compute them
    /// (after `settle_view`).
    pub fn defer_matmul(
        &mut self,
        v: &View,
        accumulate: bool,
        operands: Operands,
    ) -> Result<(), Operands> {
        let Some(rows) = v.psum_rows() else {
            return Err(operands);
        };
        if !(accumulate && self.deferred.continues(&rows)) {
            self.settle_touch(&Touch {
                space: rows.space,
                lo: rows.start,
                hi: rows.start + rows.row_bytes(),
                step: rows.step,
                rows: rows.rows,
            });
        }
        let Some(region) = self.psum_region(v, accumulate) else {
            return Err(operands);
        };
        if accumulate && self.deferred.continues(&region) {
            return self.deferred.issue(region, Start::Continue, operands);
        }
        let mut sum = self.deferred.spare();
        if !accumulate {
            return self.deferred.issue(region, Start::Zeros(sum), operands);
        }
        let data = &self.space(region.space).data;
        for p in 0..region.rows {
            let a = region.start + p * region.step;
            numerics::decode(region.dtype, &data[a..a + region.row_bytes()], &mut sum);
        }
        self.deferred.issue(region, Start::Values(sum), operands)
    }

    /// Whether a matmul of `macs` multiply-adds is queued for rayon's pool
    /// (`deferred`).
    pub fn defers(&self, macs: usize) -> bool {
        self.deferred.takes(macs)
    }

    /// Starts or stops queueing large matmuls for rayon's pool
    /// (`deferred`; `SimConfig::matmul_worker`). Only before the first.
    pub fn set_matmul_worker(&mut self, on: bool) {
        assert!(
            self.deferred.is_idle(),
            "invariant broken: the matmul worker is chosen before the run"
        );
        self.deferred = Deferred::new(on);
    }

    /// Whether the rows of `v` are exactly those of a pending chain of
    /// deferred matmuls, which an accumulating matmul into `v` continues.
    pub fn continues_chain(&self, v: &View) -> bool {
        v.psum_rows().is_some_and(|r| self.deferred.continues(&r))
    }

    /// Whether every deferred matmul is settled.
    pub fn nothing_deferred(&self) -> bool {
        self.deferred.is_idle()
    }

    /// Settles the deferred matmuls whose rows overlap the bytes `v`
    /// names (`deferred`), before they are read or written.
    pub fn settle_view(&mut self, v: &View) {
        if self.deferred.is_idle() || !matches!(v.space, SpaceId::Psum(_)) || v.elements() == 0 {
            return;
        }
        // Checked arithmetic: a view resolved without bounds checks
        // (`view_unchecked`) may lie anywhere; one whose bytes cannot be
        // named settles everything.
        let (lo, hi) = v.row_span();
        let byte = |base: i64, offset: i64| usize::try_from(base.checked_add(offset)?).ok();
        let rows = (v.row_addrs.is_none() && v.row_step > 0)
            .then(|| {
                Some(Touch {
                    space: v.space,
                    lo: byte(v.row_base, lo)?,
                    hi: byte(v.row_base, hi)?,
                    step: usize::try_from(v.row_step).ok()?,
                    rows: v.rows,
                })
            })
            .flatten();
        let hull = || {
            let (first, last) = (v.row_addr(0), v.row_addr(v.rows - 1));
            Some(Touch {
                space: v.space,
                lo: byte(first.min(last), lo)?,
                hi: byte(first.max(last), hi)?,
                step: 0,
                rows: 1,
            })
        };
        match rows.or_else(hull) {
            Some(t) => self.settle_touch(&t),
            None => self.settle_all(),
        }
    }

    /// Settles every deferred matmul.
    pub fn settle_all(&mut self) {
        if !self.deferred.is_idle() {
            let sums = self.deferred.settle(None);
            self.write_sums(sums);
        }
    }

    fn settle_touch(&mut self, touch: &Touch) {
        if self.deferred.overlaps(touch) {
            let sums = self.deferred.settle(Some(touch));
            self.write_sums(sums);
        }
    }

    /// Writes settled sums into their rows, as `psum_in_place` leaves
    /// them.
    fn write_sums(&mut self, sums: Vec<(Region, Vec<f32>)>) {
        let mut bytes = Vec::new();
        for (region, sum) in sums {
            let row_bytes = region.row_bytes();
            let space = self.space_mut(region.space);
            for (p, values) in sum.chunks_exact(region.cols.max(1)).enumerate() {
                let a = region.start + p * region.step;
                let row = space.bytes_mut(a, a + row_bytes);
                if region.dtype == DType::F32 {
                    for (b, x) in row.chunks_exact_mut(4).zip(values) {
                        b.copy_from_slice(&x.to_le_bytes());
                    }
                } else {
                    bytes.clear();
                    numerics::encode(region.dtype, values, &mut bytes);
                    row.copy_from_slice(&bytes);
                }
            }
            self.deferred.recycle(sum);
        }
    }

    /// Writes `values` (row-major, four per element for packed x4 dtypes),
    /// rounding to the view's dtype.
    pub fn write_f32(&mut self, v: &View, values: &[f32]) -> FResult<()> {
        if values.len() != v.elements() * numerics::lanes(v.dtype) {
            return Err(Fault::bad(format!(
                "`{}` has {} values but the instruction produced {}",
                v.field,
                v.elements() * numerics::lanes(v.dtype),
                values.len()
            )));
        }
        let mut raw = Vec::with_capacity(v.elements() * v.size);
        numerics::encode(v.dtype, values, &mut raw);
        self.write_raw(v, &raw)
    }

    /// The raw bits of every element, zero-extended to `u32`, row-major.
    pub fn read_bits(&mut self, v: &View) -> FResult<Vec<u32>> {
        let mut raw = Vec::new();
        self.read_raw(v, &mut raw)?;
        Ok(raw.chunks_exact(v.size).map(bits_of).collect())
    }

    /// Writes raw bits, truncated to the element size.
    pub fn write_bits(&mut self, v: &View, bits: &[u32]) -> FResult<()> {
        let mut raw = Vec::with_capacity(bits.len() * v.size);
        for &b in bits {
            raw.extend_from_slice(&b.to_le_bytes()[..v.size.min(4)]);
        }
        self.write_raw(v, &raw)
    }
}

impl MemoryState {
    /// Whether every byte `v` names is written and defined, so reading it
    /// records nothing and cannot fault under any poison policy.
    pub fn is_clean(&self, v: &View) -> bool {
        let space = self.space(v.space);
        if space.all_written && space.undef.is_empty() {
            return true;
        }
        if let Some(bits) = RowBits::of(v) {
            return bits.all(|piece| match piece {
                Piece::Words(a, b) => {
                    // Whole 512-byte groups by their `full` bits.
                    (space.all_written || space.all_marked(a * 64, b * 64))
                        && space
                            .undef
                            .get(a..b)
                            .is_none_or(|u| u.iter().all(|&w| w == 0))
                }
                Piece::Part(w, m) => {
                    space.init_word(w) & m == m && space.undef.get(w).is_none_or(|u| u & m == 0)
                }
            });
        }
        every_run(v, |a, b| space.clean(a, b))
    }
}

/// What the native tier (`jit`) needs of the memories: it moves the data
/// itself and leaves the bookkeeping (written bits, definedness, HBM
/// traffic) to these functions, which do exactly what `read_raw` and
/// `write_raw` do for data that is written and defined.
#[cfg(feature = "jit")]
impl MemoryState {
    /// The start and length of the bytes of `dst` (unshared first, as a
    /// write does) and of each of `srcs` (at most `NATIVE_SOURCES`; the
    /// entries after them are null and empty), for the native tier.
    pub fn native_spaces(&mut self, dst: SpaceId, srcs: &[SpaceId]) -> NativeSpaces {
        assert!(
            srcs.len() <= NATIVE_SOURCES,
            "a native loop reads at most {NATIVE_SOURCES} sources, not {}",
            srcs.len()
        );
        let data = self.space_mut(dst).data.make_mut();
        let dst_ptr = data.as_mut_ptr();
        let dst_len = data.len();
        let mut out = [(std::ptr::null(), 0); NATIVE_SOURCES];
        for (o, &s) in out.iter_mut().zip(srcs) {
            *o = if s == dst {
                (dst_ptr.cast_const(), dst_len)
            } else {
                let data = &self.space(s).data;
                (data.as_ptr(), data.len())
            };
        }
        NativeSpaces {
            dst: (dst_ptr, dst_len),
            srcs: out,
        }
    }

    /// The bookkeeping of `write_raw` after the native tier wrote every
    /// element of `v` from defined data: written bits, definedness, HBM
    /// traffic.
    pub fn wrote(&mut self, v: &View) {
        let run_bytes = v.run_len * v.size;
        let precise = self.precise();
        let space = self.space_mut(v.space);
        space.stamp_view(v);
        if let Some(bits) = RowBits::of(v) {
            let shade = precise && !space.undef.is_empty();
            // Written bits stay all set (and need no dirty blocks) while
            // the space is `all_written`.
            let marks = !space.all_written;
            for piece in bits.pieces() {
                let (a, b) = match piece {
                    Piece::Words(a, b) => (a, b),
                    Piece::Part(w, _) => (w, w + 1),
                };
                // Words in full groups (a tile rewritten) are all set.
                let marks = marks && !space.groups_full(a * 64, b * 64);
                let whole = match piece {
                    Piece::Words(a, b) => {
                        if marks {
                            space.init[a..b].fill(u64::MAX);
                        }
                        if shade {
                            space.undef[a..b].fill(0);
                        }
                        true
                    }
                    Piece::Part(w, m) => {
                        if marks {
                            space.init[w] |= m;
                        }
                        if shade {
                            space.undef[w] &= !m;
                        }
                        false
                    }
                };
                if marks {
                    space.marked(a, b, whole);
                }
            }
        } else {
            for p in 0..v.rows {
                let base = v.row_addr(p);
                for &r in &v.runs {
                    let a = (base + r) as usize;
                    space.mark(a, a + run_bytes);
                    if precise {
                        space.shade(a, a + run_bytes, None);
                    }
                }
            }
        }
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_written += (v.elements() * v.size) as u64;
        }
    }

    /// Whether every byte of `v` was written, defined or not.
    pub fn is_written(&self, v: &View) -> bool {
        let space = self.space(v.space);
        if space.all_written {
            return true;
        }
        every_run(v, |a, b| space.all_marked(a, b))
    }

    /// Records the definedness of `v`'s elements as `read_raw` records it
    /// (the same per-element flags and first origin), for a view whose
    /// bytes are all written (`is_written`), without reading or counting
    /// them: the native loop reads the bytes itself, the very bytes
    /// `read_raw` gives for written elements, defined or not.
    pub fn read_taint(&mut self, v: &View) {
        // Every byte is written, so the walk meets no never-written
        // element and cannot fault.
        let walked = self.walk_read(v, None);
        debug_assert!(
            walked.is_ok(),
            "invariant broken: `read_taint` of a view with never-written bytes"
        );
    }

    /// Shades the elements of `v`, just written by the native loop
    /// (`wrote`), as `write_raw` shades what it writes: each undefined,
    /// with the instruction's origin, where the instruction's reads so
    /// far reach it under its rule, defined otherwise.
    pub fn shade_written(&mut self, v: &View) {
        if !self.precise() || self.taint.is_clean() {
            return;
        }
        let (undef, o) = self.shadow_of(v);
        let space = self.space_mut(v.space);
        for (a, flags) in run_starts(v).zip(undef.chunks_exact(v.run_len.max(1))) {
            shade_run(space, a, v.size, flags, o);
        }
    }
}

/// The written and undefined bits of a view's bytes as pieces of their
/// words: row 0's, computed once, moved by whole words per row. Only for
/// a view whose rows are all row 0 moved by a multiple of 64 bytes (no
/// per-row addresses), as on-chip rows are.
struct RowBits {
    /// Row 0's pieces (in run order; a word may be named more than once).
    row: Vec<Piece>,
    /// Words between rows.
    step: usize,
    rows: usize,
}

/// Words of a [`RowBits`] row: every bit of words `a..b`, or the bits
/// `mask` of one word.
#[derive(Clone, Copy)]
enum Piece {
    Words(usize, usize),
    Part(usize, u64),
}

impl RowBits {
    fn of(v: &View) -> Option<RowBits> {
        let step = if v.rows <= 1 { 0 } else { v.row_step };
        if v.row_addrs.is_some() || step < 0 || step % 64 != 0 {
            return None;
        }
        let run_bytes = v.run_len * v.size;
        let mut row: Vec<Piece> = Vec::new();
        for &r in &v.runs {
            let start = usize::try_from(v.row_base.checked_add(r)?).ok()?;
            let end = start + run_bytes;
            let mut i = start;
            while i < end {
                let w = i / 64;
                let hi = (end - w * 64).min(64);
                RowBits::push(&mut row, w, bits_mask(i % 64, hi));
                i = w * 64 + hi;
            }
        }
        Some(RowBits {
            row,
            step: (step / 64) as usize,
            rows: v.rows,
        })
    }

    /// Adds bits `m` of word `w` to `row`, joining it with the last piece
    /// where they meet.
    fn push(row: &mut Vec<Piece>, w: usize, m: u64) {
        match row.last_mut() {
            Some(Piece::Part(last, bits)) if *last == w => {
                *bits |= m;
                if *bits == u64::MAX {
                    row.pop();
                    RowBits::push(row, w, u64::MAX);
                }
            }
            Some(Piece::Words(_, b)) if *b == w + 1 => {}
            Some(Piece::Words(_, b)) if *b == w && m == u64::MAX => *b += 1,
            _ if m == u64::MAX => row.push(Piece::Words(w, w + 1)),
            _ => row.push(Piece::Part(w, m)),
        }
    }

    /// Whether `ok` holds for every row's pieces, row by row: what
    /// `pieces().all(ok)` gives, as two plain loops the compiler inlines
    /// `ok` into (through `flat_map` it stayed a call per piece, a tenth
    /// of a run of strided fp16 matmul operands, one piece per element).
    fn all(&self, mut ok: impl FnMut(Piece) -> bool) -> bool {
        for p in 0..self.rows {
            let off = p * self.step;
            for &piece in &self.row {
                let moved = match piece {
                    Piece::Words(a, b) => Piece::Words(a + off, b + off),
                    Piece::Part(w, m) => Piece::Part(w + off, m),
                };
                if !ok(moved) {
                    return false;
                }
            }
        }
        true
    }

    /// Every row's pieces, row by row (the native tier's `wrote`).
    #[cfg(feature = "jit")]
    fn pieces(&self) -> impl Iterator<Item = Piece> + '_ {
        (0..self.rows).flat_map(move |p| {
            let off = p * self.step;
            self.row.iter().map(move |&piece| match piece {
                Piece::Words(a, b) => Piece::Words(a + off, b + off),
                Piece::Part(w, m) => Piece::Part(w + off, m),
            })
        })
    }
}

#[cfg(all(test, feature = "jit"))]
impl MemoryState {
    /// The first difference between two memory states of the same program
    /// in bytes, written bits, definedness, origins or HBM counters (what
    /// an instruction may change), for comparing the tiers.
    pub fn first_difference(&self, other: &MemoryState) -> Option<String> {
        if (self.hbm_read, self.hbm_written) != (other.hbm_read, other.hbm_written) {
            return Some(format!(
                "HBM traffic {:?} vs {:?}",
                (self.hbm_read, self.hbm_written),
                (other.hbm_read, other.hbm_written)
            ));
        }
        fn named(m: &MemoryState) -> Vec<(String, &Space)> {
            let kinds = [("sbuf", &m.sbuf), ("psum", &m.psum), ("hbm", &m.hbm)];
            kinds
                .into_iter()
                .flat_map(|(kind, v)| {
                    v.iter()
                        .enumerate()
                        .map(move |(i, s)| (format!("{kind}{i}"), s))
                })
                .collect()
        }
        for ((name, a), (_, b)) in named(self).into_iter().zip(named(other)) {
            if a.words() != b.words() || (0..a.words()).any(|w| a.init_word(w) != b.init_word(w)) {
                return Some(format!("{name}: written bits differ"));
            }
            // Never-written bytes are never observed (and recycled memory
            // holds whatever it held): compare the written ones.
            let written = |i: usize| a.init_word(i / 64) & (1 << (i % 64)) != 0;
            let differ = a.data.iter().zip(b.data.iter()).enumerate();
            if a.data[..] != b.data[..]
                && let Some((i, _)) = differ
                    .filter(|(_, (x, y))| x != y)
                    .find(|&(i, _)| written(i))
            {
                return Some(format!("{name} byte {i}: {} vs {}", a.data[i], b.data[i]));
            }
            let undef = |s: &Space| s.undef.iter().any(|&w| w != 0);
            if undef(a) != undef(b) || (undef(a) && (a.undef != b.undef || a.origin != b.origin)) {
                return Some(format!("{name}: definedness differs"));
            }
        }
        None
    }
}

/// The most sources one native loop reads (`NativeSpaces::srcs`).
#[cfg(feature = "jit")]
pub(crate) const NATIVE_SOURCES: usize = 2;

/// Raw starts and lengths of the memories one native instruction touches
/// (`MemoryState::native_spaces`); valid until the memories are next used.
#[cfg(feature = "jit")]
pub(crate) struct NativeSpaces {
    pub dst: (*mut u8, usize),
    pub srcs: [(*const u8, usize); NATIVE_SOURCES],
}

impl View {
    /// The f32 or bf16 PSUM rows `self` names when each row is one
    /// contiguous run of its own and rows do not overlap (what a matmul
    /// may add into on rayon's pool, `MemoryState::psum_region`; in place
    /// when f32, `psum_in_place`).
    pub fn psum_rows(&self) -> Option<Region> {
        let run_bytes = self.run_len * self.size;
        let step = usize::try_from(self.row_step).ok()?;
        let start = usize::try_from(self.row_base).ok()?;
        let simple = matches!(self.space, SpaceId::Psum(_))
            && matches!(self.dtype, DType::F32 | DType::BF16)
            && self.row_addrs.is_none()
            && self.runs == [0]
            && self.rows > 0
            && step >= run_bytes;
        simple.then_some(Region {
            space: self.space,
            dtype: self.dtype,
            start,
            step,
            rows: self.rows,
            cols: self.run_len,
        })
    }

    /// The lowest byte address `v` names and one past the highest (an
    /// empty range for no elements). Only the native tier asks.
    #[cfg(feature = "jit")]
    pub fn span(&self) -> (i64, i64) {
        if self.elements() == 0 {
            return (0, 0);
        }
        let first = self.row_addr(0);
        let last = self.row_addr(self.rows - 1);
        let (lo, hi) = self.row_span();
        (first.min(last) + lo, first.max(last) + hi)
    }

    /// The lowest byte offset from a row's address that a row names and
    /// one past the highest.
    pub fn row_span(&self) -> (i64, i64) {
        let lo = self.runs.iter().copied().min().unwrap_or(0);
        let hi = self.runs.iter().copied().max().unwrap_or(0);
        (lo, hi + (self.run_len * self.size) as i64)
    }
}

/// Little-endian bytes (at most 4) as a zero-extended `u32`.
pub(crate) fn bits_of(bytes: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = bytes.len().min(4);
    b[..n].copy_from_slice(&bytes[..n]);
    u32::from_le_bytes(b)
}

/// The contiguous runs of one row: elements per run and each run's byte
/// offset, in row-major order.
fn runs_of(ap: &AccessPattern, size: usize) -> (usize, Vec<i64>) {
    if ap.dims.iter().any(|d| d.count == 0) {
        return (1, Vec::new());
    }
    let mut run_len: usize = 1;
    let mut k = ap.dims.len();
    while k > 0 {
        let d = ap.dims[k - 1];
        if d.count <= 1 || d.stride == run_len as i64 {
            run_len *= d.count as usize;
            k -= 1;
        } else {
            break;
        }
    }
    let outer = &ap.dims[..k];
    let n: usize = outer.iter().map(|d| d.count as usize).product();
    let mut runs = Vec::with_capacity(n);
    let mut idx = vec![0u32; outer.len()];
    for _ in 0..n {
        let off: i64 = outer
            .iter()
            .zip(&idx)
            .map(|(d, &i)| d.stride.saturating_mul(i64::from(i)))
            .fold(0i64, i64::saturating_add);
        runs.push(off.saturating_mul(size as i64));
        // Advance the multi-index, innermost first.
        for j in (0..outer.len()).rev() {
            idx[j] += 1;
            if idx[j] < outer[j].count {
                break;
            }
            idx[j] = 0;
        }
    }
    (run_len, runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nkic_isa::{Dim, Target};

    #[test]
    fn runs_merge_contiguous_dims() {
        let ap = AccessPattern::sbuf(0, 1, 0, &[Dim::new(8, 4), Dim::new(1, 8)], DType::F32);
        assert_eq!(runs_of(&ap, 4), (32, vec![0]));
        let ap = AccessPattern::sbuf(0, 1, 0, &[Dim::new(16, 2), Dim::new(1, 8)], DType::BF16);
        assert_eq!(runs_of(&ap, 2), (8, vec![0, 32]));
        let ap = AccessPattern::sbuf(0, 1, 0, &[Dim::new(0, 3)], DType::F32);
        assert_eq!(runs_of(&ap, 4), (1, vec![0, 0, 0]));
        let ap = AccessPattern::sbuf(0, 1, 0, &[Dim::new(-1, 3)], DType::F32);
        assert_eq!(runs_of(&ap, 4), (1, vec![0, -4, -8]));
        let ap = AccessPattern::sbuf(0, 1, 0, &[], DType::F32);
        assert_eq!(runs_of(&ap, 4), (1, vec![0]));
    }

    #[test]
    fn init_bits_track_bytes() {
        let mut s = Space::new(300, Pages::Base);
        assert_eq!(s.first_uninit(0, 300), Some(0));
        s.mark(3, 200);
        assert_eq!(s.first_uninit(3, 200), None);
        assert_eq!(s.first_uninit(0, 4), Some(0));
        assert_eq!(s.first_uninit(150, 201), Some(200));
        s.mark(0, 300);
        assert_eq!(s.first_uninit(0, 300), None);
    }

    /// Over ranges long enough to be checked through `full` first,
    /// `first_uninit` still finds the first hole, wherever it lies in a
    /// group of words, and nothing where every byte is written.
    #[test]
    fn long_ranges_find_the_first_hole() {
        let len = 64 << 10;
        for hole in [0, 1, 511, 512, 4095, 4096, 4097, 30_001, len - 1] {
            let mut s = Space::new(len, Pages::Base);
            s.mark(0, hole);
            s.mark(hole + 1, len);
            assert_eq!(s.first_uninit(0, len), Some(hole), "hole {hole}");
            assert_eq!(s.first_uninit(hole / 2, len), Some(hole), "hole {hole}");
            assert_eq!(s.first_uninit(hole + 1, len), None, "hole {hole}");
            s.mark(hole, hole + 1);
            assert_eq!(s.first_uninit(0, len), None, "hole {hole} written");
        }
    }

    /// A write scattered finer than the runs an output keeps (every other
    /// element of 64 KiB, then a gap, then every third) has the fill
    /// written into its bytes, those of the runs found before the limit
    /// and after it alike: the same bytes as element-wise poisoning.
    #[test]
    fn a_scattered_output_is_filled_in_place() {
        let len = 96 << 10;
        let mut s = Space::new(len, Pages::Base);
        for e in (0..(64 << 10) / 4).step_by(2) {
            s.mark(4 * e, 4 * e + 4);
        }
        for e in ((80 << 10) / 4..len / 4).step_by(3) {
            s.mark(4 * e, 4 * e + 4);
        }
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let want: Vec<u8> = data
            .chunks(4)
            .enumerate()
            .flat_map(|(e, c)| match s.first_uninit(4 * e, 4 * e + 4) {
                Some(_) => f32::NAN.to_le_bytes().to_vec(),
                None => c.to_vec(),
            })
            .collect();
        s.data = Data::Own(data);
        let mut mem = MemoryState::new(&Program::new(Target::Trn3), Poison::Nan);
        mem.hbm.push(s);
        let out = mem.take_output(0, DType::F32);
        assert_eq!(out.unwritten_bytes(), 0, "filled, no runs kept");
        assert!(out == want);
    }

    proptest::proptest! {
        /// `unwritten_runs` (whole untouched blocks, full blocks skipped,
        /// the rest a word at a time) names exactly the bytes
        /// `first_uninit` finds never written, in order, over a memory of
        /// several dirty blocks, after a recycle too; the output
        /// `take_output` makes of them reads as poison exactly there.
        #[test]
        fn unwritten_runs_are_the_never_written_bytes(
            marks in proptest::collection::vec((0usize..200_000, 0usize..40_000), 0..6),
            later in proptest::collection::vec((0usize..200_000, 0usize..3_000), 0..3),
            len in 150_000usize..200_001,
        ) {
            let mut s = Space::new(len, Pages::Base);
            for &(a, n) in &marks {
                s.mark(a.min(len), (a + n).min(len));
            }
            s.recycle();
            for (a, n) in marks.into_iter().chain(later) {
                s.mark(a.min(len), (a + n).min(len));
            }
            for limit in [len, len - 7, 40_000] {
                let mut got = vec![false; limit];
                let mut at = 0;
                s.unwritten_runs(limit, &mut |a, b| {
                    assert!(a >= at && a < b && b <= limit, "{a}..{b} after {at}");
                    got[a..b].fill(true);
                    at = b;
                });
                let want: Vec<bool> = (0..limit).map(|b| s.first_uninit(b, b + 1).is_some()).collect();
                proptest::prop_assert!(got == want, "limit {}", limit);
            }
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            s.data = Data::Own(data.clone());
            let mut mem = MemoryState::new(&Program::new(Target::Trn3), Poison::Nan);
            mem.hbm.push(s);
            let nan = f32::NAN.to_le_bytes();
            let want: Vec<u8> = data
                .chunks(4)
                .enumerate()
                .flat_map(|(e, c)| {
                    let unwritten = mem.hbm[0].first_uninit(4 * e, 4 * e + c.len()).is_some();
                    if unwritten { nan[..c.len()].to_vec() } else { c.to_vec() }
                })
                .collect();
            proptest::prop_assert!(mem.take_output(0, DType::F32) == want);
        }

        /// `clean` (a word at a time, with an inline one-word case) says
        /// what `first_uninit` and `first_undef` (a bit at a time) say.
        #[test]
        fn clean_agrees_with_the_bit_searches(
            marks in proptest::collection::vec((0usize..700, 0usize..90), 0..6),
            shades in proptest::collection::vec((0usize..700, 0usize..90), 0..3),
            ranges in proptest::collection::vec((0usize..790, 0usize..200), 1..40),
        ) {
            let mut s = Space::new(800, Pages::Huge);
            for (a, n) in marks {
                s.mark(a, a + n);
            }
            for (a, n) in shades {
                s.shade(a, a + n, Some(1));
            }
            for (a, n) in ranges {
                let e = (a + n).min(800);
                let want = s.first_uninit(a, e).is_none() && s.first_undef(a, e).is_none();
                proptest::prop_assert_eq!(s.clean(a, e), want, "{}..{}", a, e);
            }
            // Strided elements (some straddling a word), all at once and
            // one by one; then with every byte written (the shades left).
            let mut written = Space::new(800, Pages::Huge);
            written.mark(0, 800);
            written.undef.clone_from(&s.undef);
            let cases = [&s, &written]
                .into_iter()
                .flat_map(|s| [1usize, 2, 4].map(|n| (s, n)));
            for (s, size) in cases {
                for stride in [size, 3 * size, 48, 70] {
                    for base in [0i64, 1, 63, 130] {
                        let runs: Vec<i64> = (0..(700 - base as usize) / stride)
                            .map(|i| (i * stride) as i64)
                            .collect();
                        let each = runs.iter().all(|&r| {
                            let a = (base + r) as usize;
                            s.clean(a, a + size)
                        });
                        proptest::prop_assert_eq!(s.elements_clean(base, &runs, size), each);
                    }
                }
            }
        }

        /// Over ranges spanning many groups of `full`, before and after a
        /// recycle, `clean` says what `first_uninit` says, and `full`
        /// holds exactly the groups whose written bits are all set.
        #[test]
        fn the_full_summary_follows_the_written_bits(
            marks in proptest::collection::vec((0usize..70_000, 0usize..9_000), 0..12),
            again in proptest::collection::vec((0usize..70_000, 0usize..9_000), 0..4),
            ranges in proptest::collection::vec((0usize..70_000, 0usize..20_000), 1..30),
        ) {
            const LEN: usize = 72_000;
            let mut s = Space::new(LEN, Pages::Base);
            let check = |s: &Space| -> Result<(), proptest::test_runner::TestCaseError> {
                for &(a, n) in &ranges {
                    let e = (a + n).min(LEN);
                    let want = s.first_uninit(a, e).is_none();
                    proptest::prop_assert_eq!(s.clean(a, e), want, "{}..{}", a, e);
                }
                for (g, words) in s.init.chunks(FULL_WORDS).enumerate() {
                    let all = words.len() == FULL_WORDS && words.iter().all(|&w| w == u64::MAX);
                    let bit = s.full[g / 64] >> (g % 64) & 1 == 1;
                    proptest::prop_assert_eq!(bit, all, "group {}", g);
                }
                Ok(())
            };
            for &(a, n) in &marks {
                s.mark(a, (a + n).min(LEN));
            }
            check(&s)?;
            s.recycle();
            check(&s)?;
            for &(a, n) in &again {
                s.mark(a, (a + n).min(LEN));
            }
            check(&s)?;
        }
    }

    /// The native tier's `wrote` keeps `full` exact: whole word runs and
    /// partial words, at offsets that do and do not start a group.
    #[cfg(feature = "jit")]
    #[test]
    fn wrote_keeps_the_full_summary_exact() {
        let p = Program::new(Target::Trn3);
        let mut m = MemoryState::new(&p, Poison::Precise);
        for (offset, elems) in [(0u64, 512u32), (3000, 200), (4096, 129), (8192 + 4, 1000)] {
            let ap = AccessPattern::sbuf(0, 128, offset, &[Dim::new(1, elems)], DType::F32);
            let v = m.view(&ap, &[0; 64], "dst", true).unwrap();
            m.wrote(&v);
        }
        let s = &m.sbuf[0];
        for (g, words) in s.init.chunks(FULL_WORDS).enumerate() {
            let all = words.len() == FULL_WORDS && words.iter().all(|&w| w == u64::MAX);
            assert_eq!(s.full[g / 64] >> (g % 64) & 1 == 1, all, "group {g}");
        }
        assert!(s.full.iter().any(|&w| w != 0), "some group is full");
    }

    /// A strided read of one element per run takes the gather fast path on
    /// rows whose elements are all written and falls back to element by
    /// element on rows with a never-written one, with the same bytes.
    #[test]
    fn strided_reads_gather_written_rows_and_poison_the_rest() {
        let p = Program::new(Target::Trn3);
        let mut m = MemoryState::new(&p, Poison::Precise);
        // Row 0: elements 0, 2, 4, 6 written; row 1: 0, 2, 6 (4 never).
        let every_other = AccessPattern::sbuf(0, 1, 0, &[Dim::new(2, 4)], DType::BF16);
        let v = m.view(&every_other, &[0; 64], "dst", true).unwrap();
        m.write_raw(&v, &[1, 0, 2, 0, 3, 0, 4, 0]).unwrap();
        for (i, x) in [(0u8, 5u8), (2, 6), (6, 8)] {
            let one = AccessPattern::sbuf(1, 1, u64::from(i) * 2, &[], DType::BF16);
            let v = m.view(&one, &[0; 64], "dst", true).unwrap();
            m.write_raw(&v, &[x, 0]).unwrap();
        }
        let rows = AccessPattern::sbuf(0, 2, 0, &[Dim::new(2, 4)], DType::BF16);
        let v = m.view(&rows, &[0; 64], "src", false).unwrap();
        let mut out = Vec::new();
        m.read_raw(&v, &mut out).unwrap();
        let nan = m.poison_bytes(DType::BF16);
        let mut want = vec![1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0];
        want.extend_from_slice(&nan);
        want.extend_from_slice(&[8, 0]);
        assert_eq!(out, want);
        // The never-written element is reported, the gathered rows not.
        assert_eq!(m.taint.reads.len(), 1);
    }

    /// `read_f32` decodes rows that are one clean run each straight from
    /// memory, and gives what decoding `read_raw`'s bytes gives on those
    /// and on rows with a never-written element (the general path).
    #[test]
    fn whole_row_reads_decode_as_the_raw_bytes_do() {
        let p = Program::new(Target::Trn3);
        let mut m = MemoryState::new(&p, Poison::Precise);
        // Rows of 256 bf16 values (512 bytes, at least WHOLE_ROW_MIN_BYTES),
        // and of 4 (too short: the copying path).
        let tile =
            |rows: u32, f: u32| AccessPattern::sbuf(0, rows, 0, &[Dim::new(1, f)], DType::BF16);
        let v = m.view(&tile(2, 256), &[0; 64], "dst", true).unwrap();
        let bytes: Vec<u8> = (0..2 * 512).map(|b| (b * 89 % 253) as u8).collect();
        m.write_raw(&v, &bytes).unwrap();
        for (rows, f) in [(2, 256), (3, 256), (2, 4)] {
            let v = m.view(&tile(rows, f), &[0; 64], "src", false).unwrap();
            let clean = m.read_f32_whole_rows(&v);
            assert_eq!(clean.is_some(), (rows, f) == (2, 256));
            let mut raw = Vec::new();
            m.read_raw(&v, &mut raw).unwrap();
            let mut want = Vec::new();
            numerics::decode(DType::BF16, &raw, &mut want);
            let got = m.read_f32(&v).unwrap();
            let bits = |x: &[f32]| x.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want));
            if let Some(clean) = clean {
                assert_eq!(bits(&clean), bits(&want));
            }
        }
    }

    /// An input's space holds no written bits while it is all written;
    /// recycling it makes every byte never-written, as for any space.
    #[test]
    fn an_input_space_is_written_without_bits_until_recycled() {
        let mut s = Space::initialised(Bytes::from(vec![3u8; 1000]));
        assert!(s.init.is_empty());
        assert!(s.clean(0, 1000) && s.first_uninit(0, 1000).is_none());
        assert_eq!(s.init_word(15), u64::MAX);
        s.mark(10, 20);
        assert!(s.init.is_empty());
        s.recycle();
        assert_eq!(s.init.len(), 16);
        assert_eq!(s.first_uninit(0, 1000), Some(0));
        s.mark(100, 300);
        assert!(s.clean(100, 300) && !s.clean(99, 300) && !s.clean(100, 301));
        assert_eq!(s.first_uninit(100, 1000), Some(300));
    }

    #[test]
    fn a_recycled_on_chip_memory_is_never_written_again() {
        let p = Program::new(Target::Trn3);
        let sbuf = AccessPattern::sbuf(0, 128, 100_000, &[Dim::new(1, 300)], DType::F32);
        let psum = AccessPattern::psum(0, 128, 2_000, &[Dim::new(1, 100)], DType::F32);
        {
            let mut m = MemoryState::new(&p, Poison::Error);
            for (ap, n) in [(&sbuf, 300), (&psum, 100)] {
                let v = m.view(ap, &[0; 64], "dst", true).unwrap();
                m.write_raw(&v, &vec![7; 128 * n * 4]).unwrap();
            }
            assert!(m.sbuf[0].init.iter().any(|&w| w != 0));
        }
        assert_eq!(ON_CHIP.with(|pool| pool.borrow().len()), 2);
        let mut m = MemoryState::new(&p, Poison::Error);
        assert_eq!(ON_CHIP.with(|pool| pool.borrow().len()), 0);
        for space in m.sbuf.iter().chain(&m.psum) {
            assert!(space.init.iter().all(|&w| w == 0));
            assert!(space.dirty.iter().all(|&w| w == 0));
        }
        let v = m.view(&sbuf, &[0; 64], "src", false).unwrap();
        let err = m.read_raw(&v, &mut Vec::new()).unwrap_err();
        assert_eq!(err.kind, SimErrorKind::UninitialisedRead);
    }

    #[test]
    fn a_pattern_of_no_partitions_and_huge_rows_is_refused() {
        // Zero partitions make the element count 0, but a row of 2^32
        // elements must still not be materialised.
        let p = Program::new(Target::Trn3);
        let m = MemoryState::new(&p, Poison::Error);
        let ap = AccessPattern::sbuf(
            0,
            0,
            0,
            &[Dim::new(7, 65_536), Dim::new(3, 65_536)],
            DType::F32,
        );
        let err = m.view(&ap, &[0; 64], "src", false).unwrap_err();
        assert_eq!(err.kind, SimErrorKind::BadProgram);
    }

    #[test]
    fn bounds_are_checked() {
        let p = Program::new(Target::Trn3);
        let m = MemoryState::new(&p, Poison::Error);
        let ap = AccessPattern::sbuf(120, 16, 0, &[Dim::new(1, 4)], DType::F32);
        let err = m.view(&ap, &[0; 64], "src", false).unwrap_err();
        assert_eq!(err.kind, SimErrorKind::OutOfBounds);
        assert_eq!(
            err.message,
            "out-of-bounds read of sbuf partitions 120..136 (limit 128) through `src`: index 128 is out of bounds for axis 0 with size 128"
        );
        let facts = err.oob.expect("structured facts");
        assert_eq!(
            (
                facts.tensor.as_str(),
                &facts.shape[..],
                facts.axis,
                facts.index
            ),
            ("sbuf", &[128, 61_438][..], 0, 128)
        );
        // Row 8 of the access is partition 128; its first element.
        assert_eq!((facts.row, facts.flat_offset), (8, 128 * 61_438));
        let ap = AccessPattern::psum(0, 1, 16_380, &[Dim::new(1, 2)], DType::F32);
        let err = m.view(&ap, &[0; 64], "dst", true).unwrap_err();
        assert_eq!(
            err.message,
            "out-of-bounds write of psum bytes 16380..16388 of each partition (limit 16384) through `dst`: index 4096 is out of bounds for axis 1 with size 4096"
        );
        let facts = err.oob.expect("structured facts");
        assert_eq!(
            (facts.field, facts.row, facts.flat_offset),
            ("dst", 0, 4096)
        );
    }
}
