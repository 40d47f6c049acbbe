//! The dependency graph over the ops in source order.
//!
//! An edge `i → j` (`i` before `j` in source order) says `j` may not start
//! before `i` has completed. Edges come from:
//!
//! * **memory** after allocation: true (write → read), anti (read → write)
//!   and output (write → write) dependencies between accesses that may
//!   touch a common byte. Accesses are compared by their absolute
//!   footprint (memory, partition range, per-partition byte runs at the
//!   placed address), so two different storages that the allocator gave
//!   the same bytes conflict exactly like two views of one storage. PSUM
//!   accumulation chains are output dependencies on the accumulated bytes
//!   and stay in source order;
//! * **engine state**: ops sharing an accumulator or random generator,
//!   and `core_barrier`s and `sendrecv`s (which pair with the other
//!   core's by program order), keep their order (`OpKind::engine_state`);
//! * **explicit edges**: `depends_on` and consecutive members of a
//!   `no_reorder` group;
//! * under [`Schedule::Sequential`], every op on its predecessor in source
//!   order.
//!
//! With [`Edges::Reduced`] (the static path) an edge that follows from
//! two others through a later write covering the earlier access is left
//! out, which keeps the graph and its construction linear for ops that
//! rewrite one tile again and again. A write that may touch any byte of
//! its box (an indirect scatter, a run-time offset) counts as covering
//! what lies in that box ([`Access::subsumes`]): every later access of
//! those bytes depends on it, so a chain of scatters into one tensor is
//! linear too. The other way round, an access is compared only with the
//! accesses since the latest write that certainly covers it (among the
//! last [`SHADOW_LOOKBACK`] of its first page): the ones before that write
//! overlap it and are ordered before the access through it, so a tile
//! read many times and then rewritten piece by piece costs one edge per
//! read for the first write of each piece, not for every write. The top level of the dynamic path uses
//! [`Edges::ReducedBy`]: only an op that runs exactly once (not in a
//! dynamic loop, which may run zero times) counts as covering.
//!
//! An indirect (gather/scatter) view, or one with a run-time offset,
//! counts as touching its whole storage.
//! Runs are compared exactly up to [`RUN_LIMIT`] contiguous runs per
//! access; beyond that the bounding boxes decide (conservatively).

use std::collections::{BTreeMap, BTreeSet};

use nkic_ir::{Handle, Op, Placement, View};

use nkic_diag::Diagnostic;

use crate::Schedule;
use crate::alloc::Layout;
use crate::codes;
use crate::collect::Unit;

/// The number of contiguous runs per access beyond which overlap is
/// decided by bounding boxes.
pub const RUN_LIMIT: u64 = 4096;

/// A memory of the machine: on-chip buffers are one space each, every HBM
/// tensor is its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Sbuf,
    Psum,
    Hbm(u32),
}

/// One access at its placed address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub resource: Resource,
    /// Partitions `[start, end)` (`0..1` in HBM).
    pub partitions: (u64, u64),
    /// Bytes `[lo, hi)` within a partition row (or the HBM tensor).
    pub bounds: (i64, i64),
    /// Sorted, merged contiguous runs; `None` beyond [`RUN_LIMIT`], for a
    /// view that may touch its whole storage (indirect or run-time
    /// offsets), and for a read of a memory that no op of the graph writes
    /// (nothing compares it with anything).
    pub runs: Option<Vec<(i64, i64)>>,
    pub write: bool,
}

impl Access {
    /// True when the two accesses certainly touch a common byte: both
    /// have exact runs (no bounding-box or whole-storage approximation)
    /// and they overlap.
    pub fn certainly_overlaps(&self, other: &Access) -> bool {
        self.runs.is_some() && other.runs.is_some() && self.overlaps(other)
    }

    /// True when `self` is a write with exact runs that certainly covers
    /// every byte `other` may touch: the same memory, every partition of
    /// `other`, and (per partition row) every byte of `other`'s runs, or of
    /// its bounding box when it has none.
    pub fn covers(&self, other: &Access) -> bool {
        let Some(mine) = &self.runs else {
            return false;
        };
        if !self.write
            || self.resource != other.resource
            || other.partitions.0 < self.partitions.0
            || self.partitions.1 < other.partitions.1
        {
            return false;
        }
        let bounds = [other.bounds];
        let theirs: &[(i64, i64)] = other.runs.as_deref().unwrap_or(&bounds);
        // Both lists are sorted and `mine` is merged (adjacent runs joined),
        // so each of `theirs` must lie inside one of `mine`.
        let mut i = 0;
        for &(s, e) in theirs {
            if s >= e {
                continue;
            }
            while i < mine.len() && mine[i].1 <= s {
                i += 1;
            }
            match mine.get(i) {
                Some(&(ms, me)) if ms <= s && e <= me => {}
                _ => return false,
            }
        }
        true
    }

    /// True when `self` is a write that every access overlapping `other`
    /// overlaps too, so that an edge from `other` to a later access
    /// follows from the edges through `self`: `self` [covers](Self::covers)
    /// `other`, or it has no exact runs (a bounding box, or a whole
    /// storage for an indirect or run-time offset) and its box holds the
    /// bytes `other` may touch.
    pub fn subsumes(&self, other: &Access) -> bool {
        if self.covers(other) {
            return true;
        }
        self.write
            && self.runs.is_none()
            && self.resource == other.resource
            && (other.runs.is_none() || other.solid())
            && self.partitions.0 <= other.partitions.0
            && other.partitions.1 <= self.partitions.1
            && self.bounds.0 <= other.bounds.0
            && other.bounds.1 <= self.bounds.1
    }

    /// True when the two accesses may touch a common byte.
    pub fn overlaps(&self, other: &Access) -> bool {
        if self.resource != other.resource
            || !nkic_isa::intervals::overlap(self.partitions, other.partitions)
            || !nkic_isa::intervals::overlap(self.bounds, other.bounds)
        {
            return false;
        }
        let (Some(a), Some(b)) = (&self.runs, &other.runs) else {
            return true;
        };
        nkic_isa::intervals::meet(a, b)
    }

    /// True when the access's runs (or, without runs, its bounds) are
    /// inside its bounds and touch at least one byte: then an access whose
    /// bounds miss its bounds neither overlaps it nor is covered by it, nor
    /// covers it.
    fn solid(&self) -> bool {
        let (lo, hi) = self.bounds;
        lo < hi
            && self.runs.as_ref().is_none_or(|runs| {
                runs.iter().any(|&(s, e)| s < e)
                    && runs.iter().all(|&(s, e)| s >= e || (lo <= s && e <= hi))
            })
    }
}

/// The fewest ops of one job of [`build_range`]'s work on the thread pool
/// (a range [`crate::on_pool`] sends there).
const PARALLEL_CHUNK_OPS: usize = 256;

/// Bytes per page of the access index.
const PAGE_BYTES: i64 = 2048;

/// Accesses spanning more pages than this are kept in the wide list.
const MAX_PAGES: i64 = 256;

/// How many of the latest writes of a page [`Pages::latest_cover`] looks
/// at for one that covers an access.
const SHADOW_LOOKBACK: usize = 32;

/// An index of earlier accesses of one resource by byte page, so that an
/// access is only compared with accesses that can touch its bytes. Each
/// entry carries its access's bounds, so that a visit passes over the
/// (many) accesses of a shared page whose bounds miss the probe's without
/// reading them.
///
/// An access that a later write subsumes ([`Access::subsumes`]) is *retired*:
/// every later access that overlaps it overlaps the covering write too, so
/// its edge follows from the two edges through the write and need not be
/// found again. Retired entries are skipped and dropped when they make up
/// half of the index, so a chain of ops rewriting one tile keeps the index
/// (and the graph) linear in the program's size.
#[derive(Default)]
struct Pages {
    /// Every access.
    all: Vec<Entry>,
    /// Accesses spanning more than `MAX_PAGES` pages.
    wide: Vec<Entry>,
    /// Narrow accesses by page.
    pages: BTreeMap<i64, Vec<Entry>>,
    /// Entries retired since the index was last compacted.
    retired: usize,
}

/// Access `k` of op `op` in a [`Pages`] index, with its bounds when it is
/// [`Access::solid`].
#[derive(Clone, Copy)]
struct Entry {
    op: usize,
    k: usize,
    solid_bounds: Option<(i64, i64)>,
}

impl Entry {
    /// False when both accesses are solid and their bounds are disjoint:
    /// they cannot conflict, and neither covers the other.
    fn may_meet(&self, probe: Option<(i64, i64)>) -> bool {
        match (self.solid_bounds, probe) {
            (Some(bounds), Some(probe)) => nkic_isa::intervals::overlap(bounds, probe),
            _ => true,
        }
    }
}

impl Pages {
    fn range(a: &Access) -> (i64, i64) {
        (
            a.bounds.0.div_euclid(PAGE_BYTES),
            (a.bounds.1 - 1).div_euclid(PAGE_BYTES),
        )
    }

    fn insert(&mut self, a: &Access, op: usize, k: usize) {
        let entry = Entry {
            op,
            k,
            solid_bounds: a.solid().then_some(a.bounds),
        };
        self.all.push(entry);
        let (lo, hi) = Pages::range(a);
        if hi - lo >= MAX_PAGES {
            self.wide.push(entry);
        } else {
            for page in lo..=hi {
                self.pages.entry(page).or_default().push(entry);
            }
        }
    }

    /// Calls `f` with every access of an op numbered `from` or later that
    /// may share a byte with `a` (`Entry::may_meet`) and is not retired
    /// (some more than once).
    fn visit(&self, a: &Access, retired: &Retired, from: usize, f: &mut dyn FnMut(usize, usize)) {
        let probe = a.solid().then_some(a.bounds);
        // Every list is in op order.
        let mut g = |list: &[Entry]| {
            let start = list.partition_point(|e| e.op < from);
            for e in &list[start..] {
                if e.may_meet(probe) && !retired.get(e.op, e.k) {
                    f(e.op, e.k);
                }
            }
        };
        let (lo, hi) = Pages::range(a);
        if hi - lo >= MAX_PAGES {
            g(&self.all);
            return;
        }
        g(&self.wide);
        for (_, list) in self.pages.range(lo..=hi) {
            g(list);
        }
    }

    /// The latest op among the last [`SHADOW_LOOKBACK`] entries of the
    /// lists `a` is in whose access, not retired, certainly covers `a`
    /// (and which `counts`); see [`build_range`].
    fn latest_cover(
        &self,
        a: &Access,
        accesses: &[Vec<Access>],
        retired: &Retired,
        counts: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        let probe = a.solid().then_some(a.bounds);
        let (lo, hi) = Pages::range(a);
        let first = if hi - lo >= MAX_PAGES {
            &self.all
        } else {
            self.pages.get(&lo).map_or(&[][..], Vec::as_slice)
        };
        [&self.wide[..], first]
            .into_iter()
            .filter_map(|list| {
                list.iter().rev().take(SHADOW_LOOKBACK).find(|e| {
                    e.may_meet(probe)
                        && !retired.get(e.op, e.k)
                        && counts(e.op)
                        && accesses[e.op][e.k].covers(a)
                })
            })
            .map(|e| e.op)
            .max()
    }

    /// Counts one newly retired entry and drops the retired entries once
    /// they are half of the index.
    fn retire(&mut self, retired: &Retired) {
        self.retired += 1;
        if self.retired < 64 || 2 * self.retired < self.all.len() {
            return;
        }
        let live = |e: &Entry| !retired.get(e.op, e.k);
        self.all.retain(live);
        self.wide.retain(live);
        self.pages.retain(|_, list| {
            list.retain(live);
            !list.is_empty()
        });
        self.retired = 0;
    }
}

/// Which accesses of [`build_range`]'s ops a later write covers (see
/// [`Pages`]), one flag per access in op order.
struct Retired {
    /// Per op, the number of its first access.
    first: Vec<usize>,
    flags: Vec<bool>,
}

impl Retired {
    /// No access retired, for ops with `accesses`.
    fn new(accesses: &[Vec<Access>]) -> Retired {
        let mut next = 0;
        let first = accesses
            .iter()
            .map(|list| {
                let at = next;
                next += list.len();
                at
            })
            .collect();
        Retired {
            first,
            flags: vec![false; next],
        }
    }

    /// The number of access `k` of op `op`, counting every op's accesses
    /// in order.
    fn id(&self, op: usize, k: usize) -> usize {
        self.first[op] + k
    }

    fn get(&self, op: usize, k: usize) -> bool {
        self.flags[self.id(op, k)]
    }

    /// Retires access `k` of op `op`; false when it already was.
    fn set(&mut self, op: usize, k: usize) -> bool {
        let id = self.id(op, k);
        !std::mem::replace(&mut self.flags[id], true)
    }
}

/// The dependency graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// Predecessors of each op, sorted and unique.
    pub preds: Vec<Vec<usize>>,
    /// Successors of each op, sorted and unique.
    pub succs: Vec<Vec<usize>>,
    /// The placed accesses of each op.
    pub accesses: Vec<Vec<Access>>,
}

/// The memory `view` (a view of instance `inst`) lies in, once placed,
/// with its placement.
fn placed(
    unit: &Unit<'_>,
    layout: &Layout,
    inst: usize,
    view: &View,
) -> Option<(Resource, Placement)> {
    let placement = layout.placements[unit.sid(inst, view.storage)]?;
    let resource = match placement {
        Placement::OnChip { .. }
            if unit.kernels[inst].storages[view.storage].buffer == nkic_ir::Buffer::Psum =>
        {
            Resource::Psum
        }
        Placement::OnChip { .. } => Resource::Sbuf,
        Placement::Hbm { tensor, .. } => Resource::Hbm(tensor.0),
    };
    Some((resource, placement))
}

/// The placed access of `view` (a view of instance `inst`). A read of a
/// memory not in `written` (no op of the graph writes it) gets no runs.
fn access(
    unit: &Unit<'_>,
    layout: &Layout,
    inst: usize,
    view: &View,
    write: bool,
    written: &BTreeSet<Resource>,
) -> Option<Access> {
    let st = &unit.kernels[inst].storages[view.storage];
    let fp = view.footprint_in(st);
    let (mut lo, mut hi) = fp.byte_bounds()?;
    // An indirect view or one with a run-time offset may touch any row:
    // the whole storage.
    let whole = view.is_dynamic();
    let mut partitions = fp.partitions.clone();
    if whole {
        lo = 0;
        hi = i64::try_from(st.bytes_per_partition()).unwrap_or(i64::MAX);
        partitions = 0..st.partitions();
    }
    let (resource, placement) = placed(unit, layout, inst, view)?;
    let (parts, shift) = match placement {
        Placement::OnChip { partition, byte } => {
            let p = u64::from(partition);
            (
                (partitions.start + p, partitions.end + p),
                i64::try_from(byte).unwrap_or(i64::MAX),
            )
        }
        Placement::Hbm { byte, .. } => ((0, 1), i64::try_from(byte).unwrap_or(i64::MAX)),
    };
    // Worked out only where they can be compared: not for a whole
    // storage, nor for a read that no write meets.
    let exact = !whole && (write || written.contains(&resource));
    let runs = exact.then(|| fp.runs(RUN_LIMIT)).flatten().map(|rs| {
        rs.into_iter()
            .map(|(s, e)| (s.saturating_add(shift), e.saturating_add(shift)))
            .collect()
    });
    Some(Access {
        resource,
        partitions: parts,
        bounds: (lo.saturating_add(shift), hi.saturating_add(shift)),
        runs,
        write,
    })
}

/// Which edges [`build`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edges<'a> {
    /// Every pair of conflicting accesses is an edge.
    All,
    /// Edges implied by two others through a covering write are left out
    /// (see `Pages`): the static scheduler and the semaphore insertion
    /// give the same result with or without them, and a chain of ops on
    /// one tile then has a linear number of edges instead of a quadratic
    /// one.
    Reduced,
    /// [`Edges::Reduced`] where only the ops marked `true` cover: an op
    /// that may run zero times (in a dynamic loop) implies nothing.
    ReducedBy(&'a [bool]),
    /// Only conflicts between a read and a write of HBM: what
    /// [`instance_warnings`] looks at. The instances of a grid that all
    /// store the same output bytes would otherwise have an output
    /// dependency between every pair of them.
    HbmReadWrite,
}

/// Builds the graph; see the module doc.
pub fn build(unit: &Unit<'_>, layout: &Layout, schedule: Schedule, edges: Edges<'_>) -> Graph {
    build_range(unit, layout, schedule, edges, 0..unit.ops.len())
}

/// The graph of the ops in `ops` alone, numbered from `ops.start`: between
/// two of them exactly the edges of [`build`]'s graph (with [`Edges::All`];
/// the reduced graph leaves out edges through covering writes that may lie
/// outside the range), and no edge from an op outside.
pub fn build_range(
    unit: &Unit<'_>,
    layout: &Layout,
    schedule: Schedule,
    edges: Edges<'_>,
    ops: std::ops::Range<usize>,
) -> Graph {
    let n = ops.len();
    let first = ops.start;
    let ops = &unit.ops[ops];
    // The resources some op of the range writes. A read of any other
    // resource (an input tensor) conflicts with nothing: it is neither
    // indexed below (a tiled kernel's loads of strided input windows would
    // each fill a hundred pages' lists) nor given runs (one per row of
    // such a window), and nothing else looks at its runs.
    let mut written: BTreeSet<Resource> = BTreeSet::new();
    for info in ops {
        info.op.kind.for_each_field(&mut |_, role, value| {
            if role == nkic_ir::Role::Write
                && let Some(view) = value.view()
                && let Some((r, _)) = placed(unit, layout, info.inst, view)
            {
                written.insert(r);
            }
        });
    }
    let accesses_of = |info: &crate::collect::OpInfo<'_>| -> Vec<Access> {
        info.op
            .accesses()
            .into_iter()
            .filter_map(|a| {
                let write = a.role == nkic_ir::Role::Write;
                access(unit, layout, info.inst, a.view, write, &written)
            })
            .collect()
    };
    // Each op's accesses are its own: a large range works them out on
    // the pool (beside `lower`, which [`crate::back_half`] runs at the
    // same time).
    let accesses: Vec<Vec<Access>> = if crate::on_pool(n) {
        use rayon::prelude::*;
        ops.par_iter()
            .with_min_len(PARALLEL_CHUNK_OPS)
            .map(accesses_of)
            .collect()
    } else {
        ops.iter().map(accesses_of).collect()
    };
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    // Per resource, the index of its reads and of its writes: a read only
    // conflicts with writes, so it never walks the (often many) earlier
    // reads of the same bytes.
    let mut index: BTreeMap<Resource, [Pages; 2]> = BTreeMap::new();
    // `seen[i] == j + 1` when op `i` is already a predecessor of op `j`.
    let mut seen = vec![0usize; n];
    let mut retired = Retired::new(&accesses);
    // `probed[retired.id(i, k)] == probe` when access `k` of op `i` was
    // already compared with the access numbered `probe`: a visit meets an
    // access once for each page the two share.
    let mut probed = vec![0usize; retired.flags.len()];
    let mut probe = 0usize;
    let mut covered: Vec<(usize, usize)> = Vec::new();
    let hbm_read_write = edges == Edges::HbmReadWrite;
    let reduced = matches!(edges, Edges::Reduced | Edges::ReducedBy(_));
    // Whether op `i`'s writes count as covering what they overwrite.
    let counts = |i: usize| match edges {
        Edges::Reduced => true,
        Edges::ReducedBy(runs_once) => runs_once[first + i],
        Edges::All | Edges::HbmReadWrite => false,
    };
    for j in 0..n {
        let covering = counts(j);
        for b in &accesses[j] {
            if hbm_read_write && !matches!(b.resource, Resource::Hbm(_)) {
                continue;
            }
            let Some([reads, writes]) = index.get(&b.resource) else {
                continue;
            };
            // What `b` may conflict with (only the other kind when just
            // read-write pairs count).
            let sides: &[&Pages] = match (b.write, hbm_read_write) {
                (false, _) => &[writes],
                (true, true) => &[reads],
                (true, false) => &[reads, writes],
            };
            // The accesses before the latest write that covers `b` are
            // ordered before `b` through that write.
            let from = if reduced {
                writes
                    .latest_cover(b, &accesses, &retired, &counts)
                    .unwrap_or(0)
            } else {
                0
            };
            probe += 1;
            for pages in sides {
                pages.visit(b, &retired, from, &mut |i, ai| {
                    let id = retired.id(i, ai);
                    if probed[id] == probe {
                        return;
                    }
                    probed[id] = probe;
                    let a = &accesses[i][ai];
                    if covering && b.subsumes(a) {
                        covered.push((i, ai));
                    }
                    if seen[i] == j + 1 || (hbm_read_write && a.write == b.write) {
                        return;
                    }
                    if (a.write || b.write) && a.overlaps(b) {
                        seen[i] = j + 1;
                        preds[j].push(i);
                    }
                });
            }
        }
        for (i, ai) in covered.drain(..) {
            if retired.set(i, ai) {
                let a = &accesses[i][ai];
                if let Some(side) = index.get_mut(&a.resource) {
                    side[usize::from(a.write)].retire(&retired);
                }
            }
        }
        for (ai, b) in accesses[j].iter().enumerate() {
            if hbm_read_write && !matches!(b.resource, Resource::Hbm(_)) {
                continue;
            }
            if !b.write && !written.contains(&b.resource) {
                continue;
            }
            index.entry(b.resource).or_default()[usize::from(b.write)].insert(b, j, ai);
        }
    }
    // Engine state, explicit edges and no_reorder groups.
    let mut last_state = BTreeMap::new();
    let mut last_group = BTreeMap::new();
    let mut index_of: BTreeMap<(usize, Handle<Op>), usize> = BTreeMap::new();
    for (j, info) in ops.iter().enumerate() {
        index_of.insert((info.inst, info.handle), j);
        for state in info.op.kind.engine_state(info.op.engine) {
            if let Some(i) = last_state.insert(state, j) {
                preds[j].push(i);
            }
        }
        if let Some(g) = info.op.no_reorder
            && let Some(i) = last_group.insert((info.inst, g), j)
        {
            preds[j].push(i);
        }
        for &d in &info.op.depends_on {
            if let Some(&i) = index_of.get(&(info.inst, d)) {
                preds[j].push(i);
            }
        }
        if schedule == Schedule::Sequential && j > 0 {
            preds[j].push(j - 1);
        }
    }
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (j, p) in preds.iter_mut().enumerate() {
        p.sort_unstable();
        p.dedup();
        for &i in p.iter() {
            succs[i].push(j);
        }
    }
    Graph {
        preds,
        succs,
        accesses,
    }
}

/// Warns about grid instances compiled into one program that depend on
/// each other through HBM: an op of one instance that reads bytes of an
/// HBM tensor that an op of another instance certainly writes
/// ([`codes::INSTANCE_RACE`], a warning, one per tensor). The program runs
/// them in instance order, as NKI's legacy serial grids did, but under
/// LNC=2 the same kernel races. Two instances writing the same bytes are
/// not reported: libraries store identical results from several
/// instances on purpose. A `core_barrier`'s `data` moves nothing and does
/// not count. NKI runs the instances of a grid in no defined order (under
/// LNC=2 on two cores at once, where the simulator's race detector
/// reports the same pair); compiled for one core they run one after
/// another, which would silently make the first instance's writes visible
/// to the second. Accesses compared only by bounding boxes, or touching a
/// whole storage (indirect or run-time offsets), never count, so the check
/// has no false positives.
pub fn instance_warnings(unit: &Unit<'_>, layout: &Layout, graph: &Graph) -> Vec<Diagnostic> {
    let mut reported: Vec<u32> = Vec::new();
    let mut diags = Vec::new();
    for (j, preds) in graph.preds.iter().enumerate() {
        for &i in preds {
            let (a, b) = (&unit.ops[i], &unit.ops[j]);
            let barrier = |o: &crate::collect::OpInfo<'_>| {
                matches!(o.op.kind, nkic_ir::OpKind::CoreBarrier { .. })
            };
            if a.inst == b.inst || barrier(a) || barrier(b) {
                continue;
            }
            let conflict = graph.accesses[i].iter().find_map(|x| {
                graph.accesses[j].iter().find_map(|y| match x.resource {
                    Resource::Hbm(t)
                        if x.write != y.write
                            && x.certainly_overlaps(y)
                            && !reported.contains(&t) =>
                    {
                        Some((t, x.write, y.write))
                    }
                    _ => None,
                })
            });
            let Some((t, first_writes, second_writes)) = conflict else {
                continue;
            };
            reported.push(t);
            let name = layout
                .hbm
                .get(t as usize)
                .map_or_else(|| format!("tensor {t}"), |h| format!("`{}`", h.name));
            let id = |inst: usize| {
                let ids: Vec<String> = unit.kernels[inst]
                    .program_id
                    .iter()
                    .map(u32::to_string)
                    .collect();
                if ids.len() == 1 {
                    ids.join("")
                } else {
                    format!("({})", ids.join(", "))
                }
            };
            let (first, second) = (id(a.inst), id(b.inst));
            let verb = |w: bool| if w { "writes" } else { "reads" };
            let mut d = warning_at(
                codes::INSTANCE_RACE,
                format!(
                    "grid instances {first} and {second} both access bytes of {name}, and {} them",
                    if second_writes {
                        format!("instance {second} writes")
                    } else {
                        format!("instance {first} writes")
                    }
                ),
                b.loc,
                format!("instance {second} {} here", verb(second_writes)),
            );
            if let Some(loc) = a.loc {
                d = d.with_secondary(
                    loc.file,
                    loc.span,
                    format!("instance {first} {} here", verb(first_writes)),
                );
            }
            diags.push(
                d.with_note(
                    "instances of a grid that is not an LNC=2 launch run one after another in instance order; under LNC=2 this is a race",
                )
                .with_help(format!(
                    "give each instance its own part of {name}, or do the dependent step in one instance"
                )),
            );
        }
    }
    diags
}

/// A warning with a primary label at `loc` when there is one.
fn warning_at(
    code: &'static str,
    message: String,
    loc: Option<nkic_ir::SrcLoc>,
    label: String,
) -> Diagnostic {
    let d = Diagnostic::warning(code, message);
    match loc {
        Some(loc) => d.with_primary(loc.file, loc.span, label),
        None => d,
    }
}
