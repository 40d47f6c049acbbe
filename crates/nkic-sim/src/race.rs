//! The race detector (on unless `SimConfig::race_check` is turned off).
//!
//! Two accesses to the same bytes from different queues, at least one a
//! write, race unless a chain of semaphores orders them. Queues of all the
//! cores of a launch are numbered together; HBM arguments are the same
//! bytes on every core, and a `core_barrier` joins the clocks its paired
//! barriers carried when they arrived (`snapshot`, `join`). Happens-before is
//! tracked with vector clocks: every executed instruction ticks its queue's
//! clock; a signal records the signalling queue's clock; an instruction
//! that waits for `sem >= v` joins the clocks of the first `v` increments
//! of `sem` in time order (the ones that make the wait hold). An earlier
//! access by queue `r` at epoch `e` happens before the current instruction
//! of queue `q` exactly when `clock[q][r] >= e`.
//!
//! Accesses are kept in a log of exact byte regions (the merged contiguous
//! runs of each operand, per partition range on chip) and checked on every
//! instruction; an entry is dropped once every unfinished queue is ordered
//! after it, or when a newer access of its queue covers the same region.
//! The log is kept per queue in epoch order, so a check skips the entries
//! of each queue that happen before the instruction by stepping forward
//! from where the same queue's last check stopped (`QueueLog::unordered_from`),
//! looks the others up by the 4 KiB pages their bytes touch
//! (`QueueLog`), and conflicts are taken in the order the accesses were
//! logged. The rows of the indirect side of `dma_gather`/`dma_scatter`
//! are known only from the index values and are not checked; a
//! `tensor_copy_predicated` counts as writing its whole `dst`; the `data`
//! operand of a `core_barrier` is no access; an MX scale operand is only
//! the scale rows the instruction touches (`footprint`).
//!
//! Two cores of a launch storing the same bytes to the same place without
//! ordering (an LNC kernel's unsharded path: both cores compute the whole
//! result and both store it) is accepted when the later store leaves the
//! bytes unchanged. Such a pair of stores is *mirrored*: a core that reads
//! those bytes after its own store (an intra-core order the detector
//! checks like any other) reads the same value whenever the other core's
//! store lands, so a read of one core against the other core's mirrored
//! store is not a race. Likewise a store of one core against an unordered
//! read of the other is accepted when it leaves the bytes unchanged (the
//! read saw the same value either way).
//!
//! Any other read of bytes the other core stores without ordering reads a
//! value that depends on timing: the bytes before the store or after it.
//! With `Poison::Precise` such a read is not an error by itself: the
//! machine records it (`Checked::racy`) and runs the launch a second time
//! in the same order with each such read seeing the other side of its
//! store (`machine::simulate`). The race is an error only if that changes
//! an output or faults (or the other side was never written); otherwise
//! it is a warning (`RunResult::races`): an LNC kernel updating a cache
//! slot the other core reads but masks out. Every other conflict between
//! the cores (two stores of different bytes), every conflict within one
//! core, and every cross-core read with another poison policy, is a
//! race. A `dma_copy` whose source and destination
//! are the same access pattern (the "HBM fence" `dma_copy(dst=t, src=t)`
//! of LNC kernels, which waits for the core's earlier writes of `t`)
//! writes back the bytes it reads: its read is not a separate access, and
//! its write is a store of unchanged bytes, accepted against the other
//! core's unordered identical stores as above. (A self-copy racing with a
//! store of the other core to bytes this core never wrote could, on the
//! hardware, write an older value back; that case is not detected.)

use nkic_isa::insn;
use std::collections::HashMap;
use std::hash::BuildHasher;

use nkic_isa::hash::FastBuild;
use nkic_isa::{Layout, Op, Queue, Role, intervals};

use crate::footprint::operand_views;
use crate::memory::{SpaceId, View};

/// One instruction operand's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    space: SpaceId,
    /// Partition range on chip; `(0, 1)` in HBM.
    parts: (usize, usize),
    /// Sorted, disjoint byte intervals: per partition on chip, in the
    /// tensor in HBM.
    intervals: Vec<(i64, i64)>,
}

/// More intervals than this are replaced by their hull (conservative: two
/// cores storing interleaved halves would race). 2^20 intervals is 16 MiB;
/// an LNC=2 RoPE over 8192 positions of 128 values stores 2^19 runs per core.
const MAX_INTERVALS: usize = 1 << 20;

impl Region {
    pub fn of(v: &View) -> Option<Region> {
        if v.elements() == 0 {
            return None;
        }
        let run_bytes = (v.run_len * v.size) as i64;
        // Each HBM row at its own address; on chip one base for every
        // partition (the bytes are per partition).
        let (parts, bases) = match v.space {
            SpaceId::Hbm(_) => ((0, 1), v.rows),
            _ => ((v.part_start, v.part_start + v.rows), 1),
        };
        let base = |p: usize| match v.space {
            SpaceId::Hbm(_) => v.row_addr(p),
            _ => v.row_base.saturating_sub(v.part_start as i64 * v.row_step),
        };
        let count = bases.saturating_mul(v.runs.len());
        let intervals = if count > MAX_INTERVALS {
            let lo = (0..bases).map(base).min()? + v.runs.iter().min()?;
            let hi = (0..bases).map(base).max()? + v.runs.iter().max()? + run_bytes;
            vec![(lo, hi)]
        } else {
            let mut intervals = Vec::with_capacity(count);
            for b in (0..bases).map(base) {
                for &r in &v.runs {
                    let s = b.saturating_add(r);
                    intervals.push((s, s.saturating_add(run_bytes)));
                }
            }
            intervals.sort_unstable();
            intervals::join_in_place(&mut intervals);
            intervals.shrink_to_fit();
            intervals
        };
        Some(Region {
            space: v.space,
            parts,
            intervals,
        })
    }

    /// The first and last byte (exclusive) of the intervals.
    fn hull(&self) -> (i64, i64) {
        match (self.intervals.first(), self.intervals.last()) {
            (Some(first), Some(last)) => (first.0, last.1),
            _ => (0, 0),
        }
    }

    /// The `PAGE_BYTES` pages the hull touches, or `None` when they are
    /// more than `MAX_PAGES` (`QueueLog::pages`).
    fn pages(&self) -> Option<std::ops::Range<i64>> {
        let (lo, hi) = self.hull();
        let pages = lo.div_euclid(PAGE_BYTES)..(hi - 1).div_euclid(PAGE_BYTES) + 1;
        (hi > lo && pages.end - pages.start <= MAX_PAGES).then_some(pages)
    }
}

impl Region {
    /// The bytes both regions cover (empty intervals when none).
    pub fn intersection(&self, other: &Region) -> Region {
        let parts = (
            self.parts.0.max(other.parts.0),
            self.parts.1.min(other.parts.1),
        );
        let intervals = if self.space == other.space && parts.0 < parts.1 {
            intervals::intersect(&self.intervals, &other.intervals)
        } else {
            Vec::new()
        };
        Region {
            space: self.space,
            parts,
            intervals,
        }
    }

    /// A hash of the region's memory, partitions, interval count and
    /// first and last intervals: equal regions have equal keys.
    fn key(&self) -> u64 {
        FastBuild::default().hash_one((
            self.space,
            self.parts,
            self.intervals.len(),
            self.intervals.first(),
            self.intervals.last(),
        ))
    }

    /// The memory, partition range and sorted byte intervals (per
    /// partition on chip, in the tensor in HBM).
    pub fn parts(&self) -> (SpaceId, (usize, usize), &[(i64, i64)]) {
        (self.space, self.parts, &self.intervals)
    }
}

/// One logged access.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    pub queue: usize,
    pub queue_name: Queue,
    pub index: usize,
    pub field: &'static str,
    pub write: bool,
    pub region: Region,
    epoch: u32,
    /// A store another core mirrored (module doc): the same region, stored
    /// unordered with byte-identical data.
    mirrored: bool,
    /// When it was logged, over all queues (set when it enters the log).
    seq: u64,
}

/// What the candidate scan of `Races::check` tests of a logged access
/// before it reads the access itself: whether it is superseded, whether
/// it writes, and its memory, partitions and byte hull. A check passes
/// over many entries that cannot conflict (in the 8K `attention_bwd`
/// row, every one of the 500 million it looked at: reads of what it
/// reads, other tiles of a page); at 48 bytes against an `Access`'s 104,
/// fewer of them miss the cache.
#[derive(Clone, Copy, Debug)]
struct Brief {
    space: SpaceId,
    parts: (usize, usize),
    hull: (i64, i64),
    write: bool,
    /// Superseded by a newer access of its queue (`QueueLog`).
    dead: bool,
}

impl Brief {
    /// The brief of an access of `region`, live.
    fn of(region: &Region, write: bool) -> Brief {
        Brief {
            space: region.space,
            parts: region.parts,
            hull: region.hull(),
            write,
            dead: false,
        }
    }

    /// False when the two accesses certainly share no byte: another
    /// memory, disjoint partitions or disjoint hulls. Otherwise their
    /// regions' intervals decide (`intervals::meet`).
    fn may_meet(&self, other: &Brief) -> bool {
        self.space == other.space
            && intervals::overlap(self.parts, other.parts)
            && intervals::overlap(self.hull, other.hull)
    }
}

/// One queue's logged accesses in epoch order. A superseded entry is
/// marked dead and found through `by_region` (positions of live entries
/// by `Region::key`); dead entries are dropped once they are half the log.
///
/// `pages` indexes the entries by the `PAGE_BYTES` pages their byte hull
/// touches (per memory), so that a check looks only at the entries that
/// share a page with the access; an entry touching more than `MAX_PAGES`
/// pages is in `wide`, which every check scans. Each list is kept twice,
/// all entries and the writes alone (`Lists`): a read can only conflict
/// with a write, and in the 8K `attention_bwd` row 43 % of the entries a
/// check looked at were reads of what a read reads. The lists hold
/// positions in increasing order (entries are only appended between
/// rebuilds), so the entries a checking queue is already ordered after
/// are skipped with one binary search per list. The index exists only
/// while the log holds more than `SCAN_MAX` entries (`indexed`), the only
/// logs a check looks up by page, so short logs (most queues of most
/// kernels) pay nothing for it.
///
/// `last` holds, per memory, the position of the log's latest entry and
/// of its latest write there (dead ones included), so a check passes over
/// a log with nothing after its unordered start in the access's memory
/// (nothing it could meet) without looking at any entry: most queues of
/// a launch touch a few memories (the other core's queues none of this
/// core's SBUF and PSUM), and in the 2K `attention_bwd` row of the
/// library the scan of short logs was 23 million entries of which 116
/// were in the access's memory and partitions (race checks 0.28 → 0.17 s).
#[derive(Clone, Debug, Default)]
struct QueueLog {
    entries: Vec<Access>,
    /// `Brief::of` each entry, kept alongside.
    briefs: Vec<Brief>,
    /// Each entry's epoch, kept alongside: `unordered_from` searches
    /// them, sixteen to a cache line where an `Access` takes two lines.
    epochs: Vec<u32>,
    by_region: HashMap<u64, Vec<usize>, FastBuild>,
    dead: usize,
    pages: HashMap<(SpaceId, i64), Lists, FastBuild>,
    wide: Lists,
    last: Vec<Last>,
}

/// A log's latest entry in one memory, and its latest write there.
#[derive(Clone, Copy, Debug)]
struct Last {
    space: SpaceId,
    any: usize,
    write: Option<usize>,
}

/// The entries of one page (or the wide entries): every one, and the
/// writes among them.
#[derive(Clone, Debug, Default)]
struct Lists {
    all: Vec<Slot>,
    writes: Vec<Slot>,
}

/// An entry's position in its log, with a copy of its brief (whose
/// `dead` is not kept up to date): a check filters a page's entries by
/// their memory, partitions and hull reading the list alone. In the 8K
/// `attention_bwd` row no entry found through a page passes that filter,
/// and looking each one's brief up was a quarter of the race checks'
/// time, in cache misses.
#[derive(Clone, Copy, Debug)]
struct Slot {
    k: usize,
    brief: Brief,
}

impl Lists {
    fn push(&mut self, k: usize, brief: Brief) {
        let slot = Slot { k, brief };
        self.all.push(slot);
        if brief.write {
            self.writes.push(slot);
        }
    }

    /// The entries a check of a write (`write`) or of a read may conflict
    /// with.
    fn for_access(&self, write: bool) -> &[Slot] {
        if write { &self.all } else { &self.writes }
    }
}

impl QueueLog {
    /// The position of the first entry whose epoch is after `clock`
    /// (`partition_point`), searched forward from `cursor` when every
    /// entry before it is ordered, and left in `cursor` for the next call.
    ///
    /// The cursor is where the last check of the same queue that searched
    /// this log (one `last` did not pass it over for) found its unordered
    /// entries to begin: the entries are in epoch order and a queue's view
    /// of another's clock only grows, so the next start is almost always
    /// at or just after it, found in a few steps instead of a binary
    /// search of the whole log (two fifths of the race checks of an
    /// attention backward pass, in cache misses). Sorted epochs make "the
    /// entry before it is ordered" enough for the cursor to be a lower
    /// bound, whatever happened since (appends, a rebuild by `retain`, a
    /// clock that did not grow, checks that passed the log over);
    /// otherwise the whole log is searched.
    fn unordered_from(&self, clock: u32, cursor: &mut usize) -> usize {
        let epochs = &self.epochs;
        debug_assert_eq!(epochs.len(), self.entries.len(), "an epoch per entry");
        // Most checks find every entry of most logs ordered.
        if epochs.last().is_none_or(|&e| e <= clock) {
            *cursor = epochs.len();
            return epochs.len();
        }
        let ordered = |k: usize| epochs[k] <= clock;
        let start = *cursor;
        let valid = start <= epochs.len() && (start == 0 || ordered(start - 1));
        let from = if valid {
            // Gallop forward from `start`, then search the last step.
            let mut step = 1;
            let mut lo = start;
            while lo + step <= epochs.len() && ordered(lo + step - 1) {
                lo += step;
                step *= 2;
            }
            let hi = (lo + step).min(epochs.len());
            lo + epochs[lo..hi].partition_point(|&e| e <= clock)
        } else {
            epochs.partition_point(|&e| e <= clock)
        };
        *cursor = from;
        from
    }
}

/// The page size of `QueueLog::pages`: a few pages per SBUF tile row.
const PAGE_BYTES: i64 = 4096;

/// Entries whose hull spans more pages than this go to `QueueLog::wide`
/// (and an access this wide scans the log instead of the index).
const MAX_PAGES: i64 = 64;

/// Below this many unordered entries a check scans them instead of
/// looking them up by page.
const SCAN_MAX: usize = 32;

impl QueueLog {
    /// Notes entry `k` of `space` (a write or not) in `last`.
    fn note_last(&mut self, k: usize, space: SpaceId, write: bool) {
        let write = write.then_some(k);
        match self.last.iter_mut().find(|l| l.space == space) {
            Some(l) => {
                l.any = k;
                l.write = write.or(l.write);
            }
            None => self.last.push(Last {
                space,
                any: k,
                write,
            }),
        }
    }

    /// The position of the latest entry in `space` an access there (a
    /// write or a read) may conflict with: any entry for a write, a
    /// write for a read.
    fn last_in(&self, space: SpaceId, write: bool) -> Option<usize> {
        let last = self.last.iter().find(|l| l.space == space)?;
        if write { Some(last.any) } else { last.write }
    }

    fn push(&mut self, a: Access) {
        let k = self.entries.len();
        self.note_last(k, a.region.space, a.write);
        self.by_region.entry(a.region.key()).or_default().push(k);
        if self.indexed() {
            self.index(k, &a.region, a.write);
        }
        self.briefs.push(Brief::of(&a.region, a.write));
        self.epochs.push(a.epoch);
        self.entries.push(a);
        if self.entries.len() == SCAN_MAX + 1 {
            self.build_index();
        }
    }

    /// Whether `pages` and `wide` index the entries: exactly while there
    /// are more than `SCAN_MAX` of them (`push` builds the index as the
    /// log passes that length, `retain` drops or rebuilds it).
    fn indexed(&self) -> bool {
        self.entries.len() > SCAN_MAX
    }

    /// Indexes every entry by page (`pages`, `wide`).
    fn build_index(&mut self) {
        self.pages.clear();
        self.wide = Lists::default();
        let entries = std::mem::take(&mut self.entries);
        for (k, e) in entries.iter().enumerate() {
            self.index(k, &e.region, e.write);
        }
        self.entries = entries;
    }

    /// Adds entry `k` (with region `region`, a write or not) to the page
    /// index.
    fn index(&mut self, k: usize, region: &Region, write: bool) {
        let brief = Brief::of(region, write);
        match region.pages() {
            Some(pages) => {
                for page in pages {
                    let lists = self.pages.entry((region.space, page)).or_default();
                    lists.push(k, brief);
                }
            }
            None => self.wide.push(k, brief),
        }
    }

    /// Keeps the live entries `keep` accepts; returns how many live
    /// entries it dropped.
    fn retain(&mut self, mut keep: impl FnMut(&Access) -> bool) -> usize {
        let before = self.entries.len() - self.dead;
        let kept: Vec<bool> = (self.entries.iter().zip(&self.briefs))
            .map(|(e, b)| !b.dead && keep(e))
            .collect();
        let mut keeps = kept.iter();
        self.entries.retain(|_| keeps.next() == Some(&true));
        let mut keeps = kept.iter();
        self.briefs.retain(|_| keeps.next() == Some(&true));
        let mut keeps = kept.iter();
        self.epochs.retain(|_| keeps.next() == Some(&true));
        self.dead = 0;
        self.by_region.clear();
        self.last.clear();
        for k in 0..self.entries.len() {
            let e = &self.entries[k];
            self.by_region.entry(e.region.key()).or_default().push(k);
            let (space, write) = (e.region.space, e.write);
            self.note_last(k, space, write);
        }
        self.pages.clear();
        self.wide = Lists::default();
        if self.indexed() {
            self.build_index();
        }
        before - self.entries.len()
    }

    /// Sets `found` to the positions, from `from` on and in increasing
    /// order, of the entries that may conflict with an access of `region`
    /// (a write or not): a superset of the entries that overlap it (dead
    /// ones included), all of them or the writes among them; through the
    /// page index, only those whose brief may meet the access's.
    fn candidates(&self, from: usize, region: &Region, write: bool, found: &mut Vec<usize>) {
        found.clear();
        let pages = if self.entries.len() - from <= SCAN_MAX {
            None
        } else {
            region.pages()
        };
        let Some(pages) = pages else {
            found.extend(from..self.entries.len());
            return;
        };
        let probe = Brief::of(region, write);
        let lists = std::iter::once(&self.wide)
            .chain(pages.filter_map(|page| self.pages.get(&(region.space, page))));
        for list in lists.map(|l| l.for_access(write)) {
            let start = list.partition_point(|s| s.k < from);
            let meeting = list[start..].iter().filter(|s| s.brief.may_meet(&probe));
            found.extend(meeting.map(|s| s.k));
        }
        found.sort_unstable();
        found.dedup();
    }

    /// Marks dead the live entries that `a` supersedes; returns how many.
    fn supersede(&mut self, a: &Access, supersedes: impl Fn(&Access, &Access) -> bool) -> usize {
        let Some(list) = self.by_region.get_mut(&a.region.key()) else {
            return 0;
        };
        let (entries, briefs) = (&self.entries, &mut self.briefs);
        let before = list.len();
        list.retain(|&k| {
            let gone = supersedes(a, &entries[k]);
            briefs[k].dead |= gone;
            !gone
        });
        let n = before - list.len();
        self.dead += n;
        n
    }
}

/// The increments of one semaphore in time order (parallel to the
/// machine's increment times): each one's time, the signalling queue's
/// clock, and the join of the clocks of every increment up to and
/// including it, so that a wait for the first `v` increments joins one
/// clock. Clocks are stored flat, one queue count of entries each, so an
/// increment costs no allocation of its own.
#[derive(Clone, Debug, Default)]
struct SemClocks {
    times: Vec<u64>,
    clocks: Vec<u32>,
    prefixes: Vec<u32>,
}

/// The sanitizer's state.
pub(crate) struct Races {
    clocks: Vec<Vec<u32>>,
    /// Per semaphore: the clocks of its increments.
    sem_clocks: Vec<SemClocks>,
    /// Per queue: its logged accesses in epoch order.
    logs: Vec<QueueLog>,
    /// Per checking queue `q` and logged queue `r`, at `q · queues + r`:
    /// where `r`'s unordered entries began at `q`'s last check
    /// (`QueueLog::unordered_from`).
    cursors: Vec<usize>,
    /// Live entries in all logs.
    logged: usize,
    /// The `seq` of the next logged access.
    next_seq: u64,
    prune_at: usize,
}

impl Races {
    pub fn new(queues: usize, semaphores: usize) -> Races {
        Races {
            clocks: vec![vec![0; queues]; queues],
            sem_clocks: vec![SemClocks::default(); semaphores],
            logs: vec![QueueLog::default(); queues],
            cursors: vec![0; queues * queues],
            logged: 0,
            next_seq: 0,
            prune_at: 1024,
        }
    }

    /// Starts an instruction of queue `q` that waits for the first `need`
    /// increments of each listed semaphore.
    pub fn begin(&mut self, q: usize, waits: &[(usize, usize)]) {
        let clock = &mut self.clocks[q];
        for prefix in wait_prefixes(&self.sem_clocks, clock.len(), waits) {
            join(clock, prefix);
        }
        clock[q] += 1;
    }

    /// `n` instructions of queue `q` that wait for nothing and access no
    /// memory (`idle`): what `begin` does for each of them.
    pub fn tick(&mut self, q: usize, n: u64) {
        let own = &mut self.clocks[q][q];
        *own = own.wrapping_add(n as u32);
    }

    /// Queue `q`'s clock joined with the increments an instruction that
    /// waits for `waits` relies on, without starting it: what a
    /// `core_barrier` carries to the other cores when it arrives.
    pub fn snapshot(&self, q: usize, waits: &[(usize, usize)]) -> Vec<u32> {
        let mut clock = self.clocks[q].clone();
        for prefix in wait_prefixes(&self.sem_clocks, clock.len(), waits) {
            join(&mut clock, prefix);
        }
        clock
    }

    /// Orders everything `clock` covers before queue `q`'s next
    /// instruction (a `core_barrier` completing after its peers arrived).
    pub fn join(&mut self, q: usize, clock: &[u32]) {
        join(&mut self.clocks[q], clock);
    }

    /// The operands of `op` as accesses of queue `q` (registers from the
    /// queue before the instruction runs).
    pub fn accesses(
        &self,
        q: usize,
        queue: Queue,
        index: usize,
        op: &Op,
        view: impl Fn(&nkic_isa::AccessPattern, &'static str) -> Option<View>,
    ) -> Vec<Access> {
        let mut out = Vec::new();
        // A barrier's `data` only names what it synchronises; the barrier
        // moves no bytes.
        if matches!(op, Op::CoreBarrier(_)) {
            return out;
        }
        let self_copy = matches!(
            op,
            Op::DmaCopy(insn::DmaCopy { dst, src, accumulate: false, .. }) if dst == src
        );
        for o in operand_views(op, view) {
            let (field, role, v) = (o.field, o.role, o.view);
            let indirect = matches!(o.layout, Layout::IndexedBy(_));
            if indirect || (self_copy && role == Role::Read) {
                continue;
            }
            let Some(region) = Region::of(&v) else {
                continue;
            };
            out.push(Access {
                queue: q,
                queue_name: queue,
                index,
                field,
                write: role == Role::Write,
                region,
                epoch: self.clocks[q][q],
                mirrored: false,
                seq: 0,
            });
        }
        out
    }

    /// Checks `accesses` against the log and adds them; returns the first
    /// conflict. A conflict between a write and an earlier access of a
    /// queue for which `other_core` holds is not returned as an error but
    /// in `Checked::stores`: the caller accepts it when the write stores
    /// the bytes that are already there (two cores storing identical
    /// data), and a read against another core's mirrored store is no
    /// conflict (module doc). With `tolerate`, a read of bytes another
    /// core stores without ordering is returned in `Checked::racy`.
    pub fn check(
        &mut self,
        mut accesses: Vec<Access>,
        other_core: impl Fn(usize) -> bool,
        tolerate: bool,
    ) -> Result<Checked, Conflict> {
        let mut checked = Checked::default();
        // The unordered overlapping entries of other queues, in log order.
        let mut found: Vec<(u64, usize, usize)> = Vec::new();
        let mut candidates: Vec<usize> = Vec::new();
        let queues = self.logs.len();
        for a in &mut accesses {
            let brief = Brief::of(&a.region, a.write);
            let clock = &self.clocks[a.queue];
            found.clear();
            for (r, log) in self.logs.iter().enumerate() {
                if r == a.queue {
                    continue;
                }
                // Nothing in the access's memory it could meet (`last`).
                let Some(last) = log.last_in(a.region.space, a.write) else {
                    continue;
                };
                let from = log.unordered_from(clock[r], &mut self.cursors[a.queue * queues + r]);
                if last < from {
                    continue;
                }
                log.candidates(from, &a.region, a.write, &mut candidates);
                for &k in &candidates {
                    let b = &log.briefs[k];
                    if b.dead || !(b.write || a.write) || !b.may_meet(&brief) {
                        continue;
                    }
                    let e = &log.entries[k];
                    if intervals::meet(&e.region.intervals, &a.region.intervals) {
                        found.push((e.seq, r, k));
                    }
                }
            }
            found.sort_unstable();
            // The first unordered conflict that is not accepted is the
            // error; the accepted ones are reported back.
            for &(_, r, k) in &found {
                let e = &mut self.logs[r].entries[k];
                if !a.write && e.mirrored && other_core(e.queue) {
                    continue;
                }
                let other = other_core(e.queue);
                let conflict = Conflict {
                    earlier_q: e.queue,
                    field: a.field,
                    write: a.write,
                    earlier_queue: e.queue_name,
                    earlier_index: e.index,
                    earlier_field: e.field,
                    earlier_write: e.write,
                    reader: if a.write {
                        (e.queue, e.epoch)
                    } else {
                        (a.queue, a.epoch)
                    },
                    writer: if a.write {
                        (a.queue, a.epoch)
                    } else {
                        (e.queue, e.epoch)
                    },
                    overlap: if other && !(e.write && a.write) {
                        Some(Box::new(e.region.intersection(&a.region)))
                    } else {
                        None
                    },
                };
                if !a.write && other && tolerate {
                    checked.racy.push(conflict);
                    continue;
                }
                if !(a.write && other) {
                    return Err(conflict);
                }
                // Tentatively mirrored: if the caller finds the store
                // changed the bytes, the run ends with this conflict.
                if e.write && e.region == a.region {
                    e.mirrored = true;
                    a.mirrored = true;
                }
                checked.stores.push(conflict);
            }
        }
        // A newer access of the same queue to the same region supersedes an
        // older one (a write supersedes a read): any queue not ordered after
        // the old epoch is not ordered after the new one either. This keeps
        // the log at one entry per region in loops that reuse tiles. One
        // pass over the log for all of the instruction's accesses; among
        // them, a later one supersedes an earlier one the same way.
        let supersedes = |a: &Access, e: &Access| {
            e.queue == a.queue && (a.write || !e.write) && e.region == a.region
        };
        let Some(q) = accesses.first().map(|a| a.queue) else {
            return Ok(checked);
        };
        let log = &mut self.logs[q];
        for a in &accesses {
            self.logged -= log.supersede(a, supersedes);
        }
        if log.dead > 64 && 2 * log.dead > log.entries.len() {
            log.retain(|_| true);
        }
        let kept: Vec<bool> = (0..accesses.len())
            .map(|i| {
                !accesses[i + 1..]
                    .iter()
                    .any(|later| supersedes(later, &accesses[i]))
            })
            .collect();
        for (mut a, keep) in accesses.into_iter().zip(kept) {
            if keep {
                a.seq = self.next_seq;
                self.next_seq += 1;
                self.logged += 1;
                self.logs[a.queue].push(a);
            }
        }
        Ok(checked)
    }

    /// The current epoch of queue `q` (its instructions started so far):
    /// with the queue, the position of one execution in a run, the same in
    /// every run of the same launch in the same step order.
    pub fn epoch(&self, q: usize) -> u32 {
        self.clocks[q][q]
    }

    /// Records an increment of `sem` by queue `q` completing at `time`.
    pub fn signal(&mut self, q: usize, sem: usize, time: u64) {
        let list = &mut self.sem_clocks[sem];
        let clock = &self.clocks[q];
        let width = clock.len();
        let at = if list.times.last().is_none_or(|&t| t <= time) {
            list.times.len()
        } else {
            list.times.partition_point(|&t| t <= time)
        };
        list.times.insert(at, time);
        list.clocks
            .splice(at * width..at * width, clock.iter().copied());
        list.prefixes
            .splice(at * width..at * width, clock.iter().copied());
        // Recompute the running joins from the new entry on (usually it is
        // the last one).
        for i in at..list.times.len() {
            for k in 0..width {
                let own = list.clocks[i * width + k];
                let before = if i > 0 {
                    list.prefixes[(i - 1) * width + k]
                } else {
                    0
                };
                list.prefixes[i * width + k] = own.max(before);
            }
        }
    }

    /// Drops log entries every unfinished queue is ordered after.
    pub fn prune(&mut self, finished: &[bool]) {
        if self.logged < self.prune_at {
            return;
        }
        let clocks = &self.clocks;
        self.logged = 0;
        for log in &mut self.logs {
            log.retain(|e| {
                clocks
                    .iter()
                    .enumerate()
                    .any(|(p, c)| p != e.queue && !finished[p] && c[e.queue] < e.epoch)
            });
            self.logged += log.entries.len();
        }
        self.prune_at = (2 * self.logged).max(1024);
    }
}

/// `mine = max(mine, theirs)` element by element.
/// The joined clocks (each `width` entries) of the increments that waits
/// for the first `need` increments of each listed semaphore rely on.
fn wait_prefixes<'a>(
    sem_clocks: &'a [SemClocks],
    width: usize,
    waits: &'a [(usize, usize)],
) -> impl Iterator<Item = &'a [u32]> {
    waits.iter().filter_map(move |&(sem, need)| {
        let list = &sem_clocks[sem];
        let i = need.checked_sub(1)?.min(list.times.len().checked_sub(1)?);
        Some(&list.prefixes[i * width..(i + 1) * width])
    })
}

fn join(mine: &mut [u32], theirs: &[u32]) {
    for (m, t) in mine.iter_mut().zip(theirs) {
        *m = (*m).max(*t);
    }
}

/// What `Races::check` accepted or tolerated.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Stores conflicting with another core's earlier unordered access:
    /// accepted if the store leaves the bytes unchanged.
    pub stores: Vec<Conflict>,
    /// Reads of bytes another core stores without ordering (`tolerate`).
    pub racy: Vec<Conflict>,
}

/// Two unordered accesses: the current instruction's operand and the
/// earlier instruction's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The earlier access's queue index in the run (over all cores).
    pub earlier_q: usize,
    pub field: &'static str,
    pub write: bool,
    pub earlier_queue: Queue,
    pub earlier_index: usize,
    pub earlier_field: &'static str,
    pub earlier_write: bool,
    /// The read's queue and epoch (`Races::epoch`) when one side reads.
    pub reader: (usize, u32),
    /// The store's queue and epoch.
    pub writer: (usize, u32),
    /// Between the cores, when one side reads: the bytes both touch.
    pub overlap: Option<Box<Region>>,
}

impl Conflict {
    /// The fault message; `earlier` is the earlier instruction, located
    /// (the current one is appended by `SimError`'s `Display`).
    /// In a multi-core launch (`multi`) a `core_barrier` may order them too.
    pub fn message(&self, earlier: &crate::error::Site, multi: bool) -> String {
        let verb = |w: bool| if w { "writes" } else { "reads" };
        let order = if multi {
            "no semaphore or core barrier"
        } else {
            "no semaphore"
        };
        format!(
            "data race: `{}` {} bytes that {earlier} {} through `{}`, and {order} orders the two",
            self.field,
            if self.write { "overwrites" } else { "reads" },
            verb(self.earlier_write),
            self.earlier_field
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queue `q`'s next write (or read) of SBUF bytes `lo..hi` of every
    /// partition, as an access.
    fn access(races: &mut Races, q: usize, write: bool, lo: i64, hi: i64) -> Access {
        races.begin(q, &[]);
        Access {
            queue: q,
            queue_name: Queue::Dma(q as u8),
            index: races.epoch(q) as usize - 1,
            field: "dst",
            write,
            region: Region {
                space: SpaceId::Sbuf(0),
                parts: (0, 128),
                intervals: vec![(lo, hi)],
            },
            epoch: races.epoch(q),
            mirrored: false,
            seq: 0,
        }
    }

    /// The cursor search gives `partition_point`'s answer whatever the
    /// clocks do: growing by small and large steps, staying, and going
    /// back (which the machine never does, but a stale cursor must not
    /// decide), across appends and rebuilds.
    #[test]
    fn cursor_search_matches_the_binary_search() {
        let mut log = QueueLog::default();
        let mut cursor = 0;
        let mut races = Races::new(1, 0);
        let mut x = 12345u32;
        let mut clock = 0u32;
        for i in 0..3000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            // Several entries per epoch now and then.
            if !x.is_multiple_of(3) {
                races.begin(0, &[]);
            }
            log.push(access(&mut races, 0, x.is_multiple_of(2), 0, 64));
            // Inside the logged epochs, so that the answer moves.
            let newest = races.epoch(0);
            clock = match (x >> 8) % 10 {
                0 => clock.saturating_sub(x >> 20 & 63),
                1 => newest,
                2 | 3 => clock,
                _ => newest.min(clock + (x >> 16 & 3)),
            };
            if i % 700 == 699 {
                log.retain(|e| e.epoch % 3 != 0);
            }
            let want = log.entries.partition_point(|e| e.epoch <= clock);
            assert_eq!(log.unordered_from(clock, &mut cursor), want, "step {i}");
        }
    }

    /// The index of the earlier access a check of queue `q` writing
    /// `lo..hi` conflicts with, if any.
    fn conflict(races: &mut Races, q: usize, lo: i64, hi: i64) -> Option<usize> {
        conflict_of(races, q, true, lo, hi)
    }

    /// The same for a write (`write`) or a read.
    fn conflict_of(races: &mut Races, q: usize, write: bool, lo: i64, hi: i64) -> Option<usize> {
        let a = access(races, q, write, lo, hi);
        races
            .check(vec![a], |_| false, false)
            .err()
            .map(|c| c.earlier_index)
    }

    /// With more unordered entries than `SCAN_MAX`, a check looks them up
    /// by page; it finds the same conflicts as the scan: the first logged
    /// of the entries that overlap, whether they share one page with the
    /// access or span more than `MAX_PAGES` pages (`wide`), and none for
    /// bytes next to the logged ones.
    #[test]
    fn the_page_index_finds_what_the_scan_finds() {
        let mut races = Races::new(2, 0);
        // Queue 0 writes 100 disjoint 1000-byte rows, 24 pages in all,
        // then reads one span of 100 pages far above them.
        for i in 0..100 {
            let a = access(&mut races, 0, true, i * 1000, i * 1000 + 1000);
            races.check(vec![a], |_| false, false).expect("one queue");
        }
        let wide = access(&mut races, 0, false, 1 << 20, (1 << 20) + 100 * PAGE_BYTES);
        races
            .check(vec![wide], |_| false, false)
            .expect("one queue");
        assert!(races.logs[0].entries.len() > SCAN_MAX);
        let wide: Vec<usize> = races.logs[0].wide.all.iter().map(|s| s.k).collect();
        assert_eq!(wide, vec![100]);
        assert!(races.logs[0].wide.writes.is_empty());
        // Bytes 57_000..57_001 are row 57's; 57_500..58_500 rows 57 and 58
        // (57 logged first); the wide read and a row race with a write.
        assert_eq!(conflict(&mut races, 1, 57_000, 57_001), Some(57));
        // Row 0 was logged before the index was built (at SCAN_MAX + 1).
        assert_eq!(conflict(&mut races, 1, 500, 501), Some(0));
        assert_eq!(conflict(&mut races, 1, 57_500, 58_500), Some(57));
        assert_eq!(
            conflict(&mut races, 1, (1 << 20) + 5000, (1 << 20) + 5001),
            Some(100)
        );
        assert_eq!(conflict(&mut races, 1, 0, 2 << 20), Some(0));
        // Bytes beside every logged access: no conflict.
        assert_eq!(conflict(&mut races, 1, 100_000, 1 << 20), None);
        // A read conflicts with the writes it meets (looked up in the
        // pages' lists of writes), not with the wide read.
        assert_eq!(conflict_of(&mut races, 1, false, 57_500, 58_500), Some(57));
        assert_eq!(conflict_of(&mut races, 1, false, 0, 2 << 20), Some(0));
        let wide_read = ((1 << 20) + 5000, (1 << 20) + 5001);
        assert_eq!(
            conflict_of(&mut races, 1, false, wide_read.0, wide_read.1),
            None
        );
    }

    /// A check passes over a log with no entry it could meet in the
    /// access's memory after the unordered start (`QueueLog::last`), and
    /// still finds the conflicts of every other log: a write meets a read
    /// logged after the last write of the memory the checking queue is
    /// unordered with, a read meets only writes, and a log with nothing in
    /// the memory is passed over.
    #[test]
    fn checks_pass_over_logs_with_nothing_in_the_memory() {
        let mut races = Races::new(4, 1);
        let in_psum = |races: &mut Races, q, write, lo, hi| {
            let mut a = access(races, q, write, lo, hi);
            a.region.space = SpaceId::Psum(0);
            a
        };
        // Queue 0 writes SBUF bytes 0..100 (entry 0) and signals, then
        // reads PSUM and SBUF elsewhere (entries 1 to 39); queue 1 only
        // touches PSUM.
        let w = access(&mut races, 0, true, 0, 100);
        races.check(vec![w], |_| false, false).expect("first");
        races.signal(0, 0, 0);
        for i in 1..40 {
            let r = if i % 2 == 0 {
                in_psum(&mut races, 0, false, i * 100, i * 100 + 100)
            } else {
                access(&mut races, 0, false, i * 100, i * 100 + 100)
            };
            races.check(vec![r], |_| false, false).expect("reads");
        }
        let p = in_psum(&mut races, 1, true, 0, 100);
        races
            .check(vec![p], |_| false, false)
            .expect("another memory");
        let logs = &races.logs;
        assert_eq!(logs[0].last_in(SpaceId::Sbuf(0), false), Some(0));
        assert_eq!(logs[0].last_in(SpaceId::Sbuf(0), true), Some(39));
        assert_eq!(logs[1].last_in(SpaceId::Sbuf(0), true), None);
        // Queue 2, unordered with everything: its read of SBUF 50..60
        // meets queue 0's write, not queue 1's PSUM write.
        assert_eq!(conflict_of(&mut races, 2, false, 50, 60), Some(0));
        // Queue 3 is ordered after queue 0's write (entry 0) only: its
        // write meets the read of bytes 300..400 (entry 3), logged after
        // queue 0's last SBUF write; a read of them meets nothing.
        races.begin(3, &[(0, 1)]);
        assert_eq!(conflict_of(&mut races, 3, false, 50, 60), None);
        assert_eq!(conflict_of(&mut races, 3, false, 350, 351), None);
        assert_eq!(conflict(&mut races, 3, 350, 351), Some(3));
    }

    /// After a prune drops the entries every queue is ordered after, a
    /// check still skips exactly the entries the checking queue is
    /// ordered after (some of them kept for another queue) and finds the
    /// first unordered one that overlaps.
    #[test]
    fn checks_after_a_prune_see_the_kept_entries() {
        let mut races = Races::new(3, 2);
        // Queue 0 writes 2000 disjoint rows, signalling semaphore 1 after
        // the first 1000 and semaphore 0 after the first 1500.
        for i in 0..2000 {
            match i {
                1000 => races.signal(0, 1, 0),
                1500 => races.signal(0, 0, 0),
                _ => {}
            }
            let a = access(&mut races, 0, true, i * 100, i * 100 + 100);
            races.check(vec![a], |_| false, false).expect("one queue");
        }
        // Queue 1 is ordered after the first 1500 rows, queue 2 after the
        // first 1000, which the prune drops.
        races.begin(1, &[(0, 1)]);
        races.begin(2, &[(1, 1)]);
        races.prune(&[false; 3]);
        assert_eq!(races.logs[0].entries.len(), 1000);
        assert_eq!(conflict(&mut races, 1, 120_000, 120_001), None);
        assert_eq!(conflict(&mut races, 1, 170_000, 170_001), Some(1700));
        assert_eq!(conflict(&mut races, 2, 120_000, 120_001), Some(1200));
        assert_eq!(conflict(&mut races, 2, 99_950, 100_050), Some(1000));
    }
}
