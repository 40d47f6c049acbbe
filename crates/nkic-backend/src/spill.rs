//! Spilling: what the backend does when the on-chip tensors do not fit.
//!
//! When [`alloc`](crate::alloc) fails with E0901 (SBUF) or E0902 (PSUM)
//! even with slack 0, the backend rewrites the kernels (copies of them:
//! the IR it was given is not changed) so that some on-chip storages live
//! in short pieces, and allocates again; it repeats until the allocation
//! succeeds, or reports the original error when nothing more can be
//! spilled. `BackendConfig::no_spill` (`nkic --no-spill`) turns spilling
//! off and keeps the error.
//!
//! # Choosing what to spill
//!
//! Each round looks at every memory that overflowed, at each position
//! where first-fit placement fails ([`alloc::Overflow`]). A storage alive
//! there can be spilled when no op uses it at that position (it is waiting
//! between two uses), it was placed by the compiler (no `address=`), it is
//! not allocated in a dynamic loop, every op that touches it is outside
//! dynamic loops, and no view of it has a dynamic offset or an indirection
//! of its own. The candidates are ranked by *bytes per partition × the
//! length of the idle gap around the position* (the positions between the
//! last use before it and the next use after it): a large tensor that
//! waits long frees the most memory for the fewest spill copies. The
//! highest ranked are spilled until the bytes they free at the position
//! cover the overflow (the bytes alive beyond the capacity, or the size of
//! the storage that did not fit when fragmentation was the cause), and in
//! SBUF an eighth of the capacity more ([`SBUF_HEADROOM`]): a spill
//! reload is a DMA of about 2 µs, and with SBUF filled to the last byte
//! every reload would reuse the bytes the previous piece just freed and
//! wait for its reader, so the TensorE of the kernel-optimization guide's
//! v4 matmul would idle half the time (933 µs instead of 498 µs for 2 × 1
//! of its blocks; a sixteenth gave 543 µs, a quarter 521 µs). The
//! pieces spilling makes (below) are never spilled again, so every round
//! spills at least one storage of the kernel as written (or the SBUF copy
//! of a spilled PSUM storage) and the rounds end.
//!
//! One round finds every overflow position of a memory in one first-fit
//! pass ([`alloc::relieve_overflows`]): after choosing at one position it
//! goes on as if the chosen storages were spilled (their bytes free after
//! their last use before the position, taken again for one position at
//! each later use, as the pieces below are) and chooses again wherever
//! placement fails next. So a kernel that overflows at many positions (the
//! guide's v4 matmul at its published shape: once per block, 128 blocks)
//! is spilled in a few rounds, not one round per position, and where that
//! model of the spilled kernel holds it chooses what one position per
//! round would. Then every chosen storage is spilled, each kernel's body
//! rebuilt once, and the kernels collected and allocated again; an
//! allocation that still fails (a PSUM spill's SBUF copies, the stores of
//! an SBUF spill, fragmentation) starts another round.
//!
//! # How a storage is spilled
//!
//! The ops that touch a spilled storage `s` (in program order) are cut into
//! *groups*; each group gets its own fresh *piece*: a storage of `s`'s
//! shape and dtype that the group's ops use instead of `s`. Before a group,
//! every view of `s` that the group reads is *reloaded* into the piece
//! from the spill storage, when an earlier group wrote `s`; after a group,
//! every view it writes is *stored* from the piece to the spill storage,
//! when a later group reads `s`. Reloads and stores copy exactly the
//! operand's view (the same offset and pattern on both sides; a stride-0
//! broadcast dim is copied once), so definedness and every byte are as in
//! the unspilled program, and the spill storage always holds the latest
//! value of every byte of `s` written so far. Reads of an op's destination
//! count as reads: a `dma_copy` with `accumulate`, `tensor_copy_predicated`
//! and an accumulating matmul.
//!
//! * **SBUF** storages spill to an internal HBM tensor (`<name>_spill`, a
//!   `.hbm` tensor of the program) through ordinary `dma_copy`
//!   instructions, which the scheduler places on DMA queues and the
//!   simulator times like any DMA (they show in the profile and
//!   timeline). Every op is its own group.
//! * **PSUM** storages spill to an SBUF tensor (`<name>_spill`) through
//!   `tensor_copy` instructions, because DMA never touches PSUM. A matmul
//!   accumulation group is never split: a matmul that accumulates (its
//!   `accumulate`, or the backend's rule for one left open: the latest
//!   earlier write of overlapping bytes was a matmul) is in the same group
//!   as that earlier write and everything between, so an accumulation
//!   stays in one PSUM piece from its first matmul to its last, and
//!   spills happen only between accumulation groups. The SBUF copy is an
//!   ordinary SBUF tensor: when SBUF then overflows, it may be spilled to
//!   HBM in turn.
//!
//! * An SBUF storage whose value is **loaded from a kernel input** (its
//!   only write is its first op, a plain `dma_copy` from an input HBM
//!   tensor that no op writes) is not stored at all: it is
//!   *rematerialized*. The load itself moves to just before the first op
//!   that reads the storage, and each later reading op gets a copy of the
//!   load into its own piece, so the spill costs one load per extra use
//!   and no store (as register allocators rematerialize a constant
//!   instead of spilling it). This is what lets the kernel-optimization
//!   guide's v4 matmul, whose loaded tiles add up to 320 KiB per
//!   partition, keep its TensorE busy.
//!
//! Spill instructions carry the spilled tensor's allocation site in the
//! line table and the static loop iteration of the op they serve.
//!
//! # Report
//!
//! A compile that spilled gets one warning E0906 per memory, naming the
//! spilled tensors by allocation site (like E0901's notes) and the cost:
//! the number of spill instructions (stores and reloads) and the bytes
//! they move.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::{
    ArgKind, Buffer, Handle, Item, Kernel, LoopCtx, Op, OpKind, Role, SrcLoc, Storage, View,
    overlap,
};

use crate::alloc::{self, AllocError, MAX_OVERFLOW_SITES, Overflow, Relief};
use crate::codes;
use crate::collect::{self, Unit, storage_label};

/// An SBUF spill frees `1 / SBUF_HEADROOM` of the capacity beyond the
/// overflow (module doc, "Choosing what to spill").
pub const SBUF_HEADROOM: u64 = 8;

/// Per global storage, the ops that touch it ([`uses_of`]).
type Uses = BTreeMap<usize, Vec<(u32, Handle<Op>)>>;

/// Spilled copies of a unit's kernels and the E0906 warnings.
#[derive(Clone, Debug)]
pub struct Spilled {
    pub kernels: Vec<Kernel>,
    pub warnings: Vec<Diagnostic>,
}

/// Kernels that fit (borrowed when no spilling was needed) and the E0906
/// warnings of spilling them.
pub type Fitted<'k> = (Cow<'k, [Kernel]>, Vec<Diagnostic>);

/// The kernels as the backend compiles them: `kernels` themselves when
/// their on-chip storages fit, spilled copies otherwise (unless
/// `no_spill`), with the E0906 warnings. Errors are those of collecting
/// and allocating (the original E0901/E0902 when spilling does not help).
pub fn fit<'k>(
    kernels: &'k [Kernel],
    sources: &SourceMap,
    no_spill: bool,
) -> Result<Fitted<'k>, Vec<Diagnostic>> {
    let unit = collect::collect(kernels, sources)?;
    match alloc::allocate_detailed(&unit, sources) {
        Ok(_) => Ok((Cow::Borrowed(kernels), Vec::new())),
        Err(e) if no_spill || e.overflows.is_empty() => Err(e.diags),
        Err(e) => spill(&unit, e, sources).map(|s| (Cow::Owned(s.kernels), s.warnings)),
    }
}

/// Spills storages of `unit`, whose allocation failed with `error`, until
/// the allocation succeeds; see the module doc. Returns `error`'s
/// diagnostics when no storage can be spilled, or some other error when
/// the spilled kernels do not collect or allocate.
pub fn spill(
    unit: &Unit<'_>,
    error: AllocError,
    sources: &SourceMap,
) -> Result<Spilled, Vec<Diagnostic>> {
    let mut kernels = unit.kernels.to_vec();
    let mut log = Vec::new();
    // The pieces spilling made: never spilled again, so every round spills
    // a storage of the kernel as written (or a PSUM storage's SBUF copy)
    // and the loop ends.
    let mut pieces: BTreeSet<(usize, Handle<Storage>)> = BTreeSet::new();
    let mut victims = choose(unit, &error.overflows, &pieces, sources);
    loop {
        if victims.is_empty() {
            return Err(error.diags);
        }
        for (record, made) in spill_all(&mut kernels, &victims) {
            pieces.extend(made.into_iter().map(|h| (record.inst, h)));
            log.push(record);
        }
        let unit = collect::collect(&kernels, sources)?;
        victims = match alloc::allocate_detailed(&unit, sources) {
            Ok(_) => break,
            Err(e) if e.overflows.is_empty() => return Err(e.diags),
            Err(e) => choose(&unit, &e.overflows, &pieces, sources),
        };
    }
    let warnings = [Buffer::Sbuf, Buffer::Psum]
        .into_iter()
        .filter_map(|b| warning(&kernels, &log, b, sources))
        .collect();
    Ok(Spilled { kernels, warnings })
}

/// What spilling one storage did.
#[derive(Clone, Debug)]
struct Record {
    inst: usize,
    handle: Handle<Storage>,
    buffer: Buffer,
    bytes_per_partition: u64,
    stores: usize,
    reloads: usize,
    /// Bytes the stores and reloads move (all partitions).
    bytes: u64,
}

/// How the ops touching a spilled storage are cut ([`cut`]).
#[derive(Clone, Debug)]
struct Cut {
    /// The groups, as first and last index into the ops.
    groups: Vec<(usize, usize)>,
    /// Per op, the views of the storage it reads (its destination too
    /// when it accumulates into it).
    reads: Vec<Vec<View>>,
    /// Per op, the views of the storage it writes.
    writes: Vec<Vec<View>>,
}

/// The copies spilling adds to a kernel's top-level body, by the place in
/// the body (before spilling) of the item they go before or after, and
/// the items that move ([`splice`]).
#[derive(Clone, Debug, Default)]
struct Edits {
    before: BTreeMap<usize, Vec<Handle<Op>>>,
    after: BTreeMap<usize, Vec<Handle<Op>>>,
    skip: BTreeSet<usize>,
}

impl Record {
    /// Nothing done yet to storage `handle` (`st`) of instance `inst`.
    fn new(inst: usize, handle: Handle<Storage>, st: &Storage) -> Record {
        Record {
            inst,
            handle,
            buffer: st.buffer,
            bytes_per_partition: st.bytes_per_partition(),
            stores: 0,
            reloads: 0,
            bytes: 0,
        }
    }
}

/// Spills every on-chip storage of `kernels` that the spiller could spill
/// and that more than one op uses, whether or not it fits: a test hook
/// (the simulated results must not change). Applied twice, it also spills
/// the SBUF copies of spilled PSUM storages to HBM.
#[doc(hidden)]
pub fn spill_everything(
    kernels: &[Kernel],
    sources: &SourceMap,
) -> Result<Vec<Kernel>, Vec<Diagnostic>> {
    let unit = collect::collect(kernels, sources)?;
    let (uses, pinned) = uses_of(&unit);
    let victims: Vec<(usize, Handle<Storage>)> = uses
        .iter()
        .filter(|&(&id, positions)| positions.len() > 1 && spillable(&unit, &pinned, id))
        .map(|(&id, _)| (unit.storages[id].inst, unit.storages[id].handle))
        .collect();
    let mut out = kernels.to_vec();
    spill_all(&mut out, &victims);
    Ok(out)
}

/// Per global storage, the ops that touch it with their positions (an op
/// once per access), and the storages that may not be spilled because of
/// how they are used (inside a dynamic loop, through a dynamic offset or
/// an indirection of their own).
fn uses_of(unit: &Unit<'_>) -> (Uses, BTreeSet<usize>) {
    let mut uses: Uses = BTreeMap::new();
    let mut pinned: BTreeSet<usize> = BTreeSet::new();
    let top: Vec<BTreeSet<Handle<Op>>> = unit
        .kernels
        .iter()
        .map(|k| {
            k.body
                .iter()
                .filter_map(|item| match item {
                    Item::Op(h) => Some(*h),
                    Item::Loop(_) => None,
                })
                .collect()
        })
        .collect();
    for info in &unit.ops {
        let nested = !top[info.inst].contains(&info.handle);
        for access in info.op.accesses() {
            let id = unit.sid(info.inst, access.view.storage);
            uses.entry(id).or_default().push((info.pos, info.handle));
            let own_indirection = !access.is_index && access.view.indirect.is_some();
            if nested || access.view.dyn_offset.is_some() || own_indirection {
                pinned.insert(id);
            }
        }
    }
    (uses, pinned)
}

/// True when global storage `id` is an on-chip storage the spiller may
/// spill (module doc), whatever its uses.
fn spillable(unit: &Unit<'_>, pinned: &BTreeSet<usize>, id: usize) -> bool {
    let st = unit.storages[id].st;
    st.buffer.is_on_chip() && st.address.is_none() && st.scope.is_none() && !pinned.contains(&id)
}

/// The storages to spill for `overflows` (the first of each memory that
/// overflowed), as `(instance, handle)`: the choices at every overflow of
/// that memory, found in one first-fit pass
/// ([`alloc::relieve_overflows`]); see the module doc.
fn choose(
    unit: &Unit<'_>,
    overflows: &[Overflow],
    pieces: &BTreeSet<(usize, Handle<Storage>)>,
    sources: &SourceMap,
) -> Vec<(usize, Handle<Storage>)> {
    let (uses, pinned) = uses_of(unit);
    let written: Vec<BTreeSet<Handle<Storage>>> =
        unit.kernels.iter().map(written_storages).collect();
    let mut shifts = Shifts::default();
    let mut out = Vec::new();
    for o in overflows {
        let mut chosen: BTreeSet<usize> = BTreeSet::new();
        alloc::relieve_overflows(unit, sources, o.buffer, &mut |at| {
            let reliefs = choose_at(unit, &uses, &pinned, at, pieces, &chosen, &shifts);
            for r in &reliefs {
                chosen.insert(r.id);
                let s = &unit.storages[r.id];
                let mut order: Vec<(usize, Handle<Op>)> =
                    uses[&r.id].iter().map(|&(p, h)| (p as usize, h)).collect();
                order.dedup();
                shifts.add(&unit.kernels[s.inst], s.handle, &order, &written[s.inst]);
                out.push((s.inst, s.handle));
            }
            reliefs
        });
    }
    out
}

/// The storages to spill at overflow `o`, with their uses around it: the
/// highest ranked of the storages alive there that may be spilled and are
/// not `pieces` or already `chosen`, until they free the overflow and the
/// headroom; the idle gaps count the copies `shifts` will put in them.
/// See the module doc.
fn choose_at(
    unit: &Unit<'_>,
    uses: &Uses,
    pinned: &BTreeSet<usize>,
    o: &Overflow,
    pieces: &BTreeSet<(usize, Handle<Storage>)>,
    chosen: &BTreeSet<usize>,
    shifts: &Shifts,
) -> Vec<Relief> {
    let total: u64 = o.alive.iter().map(|&(_, size)| size).sum();
    let need = if total > o.capacity {
        total - o.capacity
    } else {
        o.failed_size
    } + if o.buffer == Buffer::Sbuf {
        o.capacity / SBUF_HEADROOM
    } else {
        0
    };
    // A piece comes in just before the ops at `o.at`: those are after it.
    let later = |p: u32| p > o.at || (o.piece && p == o.at);
    let mut ranked: Vec<(u128, usize, u64, u32)> = o
        .alive
        .iter()
        .filter_map(|&(id, size)| {
            let s = &unit.storages[id];
            if s.st.buffer != o.buffer
                || !spillable(unit, pinned, id)
                || pieces.contains(&(s.inst, s.handle))
                || chosen.contains(&id)
            {
                return None;
            }
            let positions = uses.get(&id)?;
            let before = positions.iter().map(|u| u.0).filter(|&p| !later(p)).max()?;
            let after = positions.iter().map(|u| u.0).filter(|&p| later(p)).min()?;
            if before == o.at {
                return None;
            }
            let gap = i64::from(after - before) + shifts.between(before, after);
            Some((
                u128::from(size) * gap.unsigned_abs() as u128,
                id,
                size,
                before,
            ))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut freed = 0u64;
    let mut out = Vec::new();
    for (_, id, size, last) in ranked {
        if freed >= need {
            break;
        }
        freed += size;
        let mut uses: Vec<u32> = uses[&id]
            .iter()
            .map(|u| u.0)
            .filter(|&p| later(p))
            .collect();
        uses.dedup();
        out.push(Relief { id, last, uses });
    }
    out
}

/// The spill copies of the storages chosen so far in a round, in the
/// positions of the kernels before spilling, so that an idle gap counts
/// the positions it will have after spilling (as when each overflow is
/// spilled and the kernel numbered again before the next). A copy before
/// the op at position `p` is at slot `2p`, one after it at `2p + 2`; a
/// load that rematerializing moves away leaves its position.
#[derive(Clone, Debug, Default)]
struct Shifts {
    /// The copies' slots, sorted.
    slots: Vec<u64>,
    /// The positions of the loads moved away, sorted.
    removed: Vec<u32>,
}

impl Shifts {
    /// Adds the copies of spilling storage `s` of `kernel`, touched by the
    /// ops `order` (with their positions); `written` as for
    /// [`spill_storage`].
    fn add(
        &mut self,
        kernel: &Kernel,
        s: Handle<Storage>,
        order: &[(usize, Handle<Op>)],
        written: &BTreeSet<Handle<Storage>>,
    ) {
        let cut = cut(kernel, s, order);
        let slot = |j: usize, after: bool| 2 * order[j].0 as u64 + if after { 2 } else { 0 };
        let mut slots = Vec::new();
        if reloadable(kernel, s, order, &cut.writes, written).is_some() {
            slots.extend(
                cut.groups
                    .iter()
                    .skip(1)
                    .map(|&(first, _)| slot(first, false)),
            );
            let at = self.removed.partition_point(|&r| r as usize <= order[0].0);
            self.removed.insert(at, order[0].0 as u32);
        } else {
            for &(first, last) in &cut.groups {
                for (reload, _) in cut.copies(first, last) {
                    slots.push(if reload {
                        slot(first, false)
                    } else {
                        slot(last, true)
                    });
                }
            }
        }
        for x in slots {
            let at = self.slots.partition_point(|&y| y <= x);
            self.slots.insert(at, x);
        }
    }

    /// The positions spilling adds between the ops at positions `a < b`.
    fn between(&self, a: u32, b: u32) -> i64 {
        let (lo, hi) = (2 * u64::from(a) + 1, 2 * u64::from(b) + 1);
        let slots =
            self.slots.partition_point(|&y| y < hi) - self.slots.partition_point(|&y| y <= lo);
        let removed =
            self.removed.partition_point(|&r| r < b) - self.removed.partition_point(|&r| r <= a);
        slots as i64 - removed as i64
    }
}

/// The views of storage `s` that `op` reads, its destination included
/// when the op reads it too (`accumulate` copies, predicated copies and
/// accumulating matmuls, `accumulating` says which apply).
fn reads_of(op: &Op, s: Handle<Storage>, accumulating: bool) -> Vec<View> {
    let mut out: Vec<View> = op
        .accesses()
        .into_iter()
        .filter(|a| a.role == Role::Read && a.view.storage == s)
        .map(|a| a.view.clone())
        .collect();
    let dst = match &op.kind {
        OpKind::DmaCopy {
            dst,
            accumulate: true,
            ..
        }
        | OpKind::TensorCopyPredicated { dst, .. } => Some(dst),
        OpKind::NcMatmul { dst, .. } | OpKind::NcMatmulMx { dst, .. } if accumulating => Some(dst),
        _ => None,
    };
    out.extend(dst.filter(|d| d.storage == s).cloned());
    out
}

/// The views of storage `s` that `op` writes.
fn writes_of(op: &Op, s: Handle<Storage>) -> Vec<View> {
    op.write_set()
        .into_iter()
        .filter(|v| v.storage == s)
        .cloned()
        .collect()
}

/// Spills the storages `victims` (`(instance, handle)`) of `kernels`;
/// returns what was done to each and the pieces made, in the order of
/// `victims`. Each kernel's body is scanned and rebuilt once for all its
/// victims, with the result of spilling them one at a time in order: the
/// copies one victim adds never touch another, so each victim sees the
/// same ops in the same order, and the copies around an op come out as
/// one at a time would leave them ([`Edits`]).
fn spill_all(
    kernels: &mut [Kernel],
    victims: &[(usize, Handle<Storage>)],
) -> Vec<(Record, Vec<Handle<Storage>>)> {
    let mut out: Vec<Option<(Record, Vec<Handle<Storage>>)>> = vec![None; victims.len()];
    for (inst, kernel) in kernels.iter_mut().enumerate() {
        let mine: Vec<(usize, Handle<Storage>)> = victims
            .iter()
            .enumerate()
            .filter(|(_, v)| v.0 == inst)
            .map(|(k, v)| (k, v.1))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut orders = ops_touching(kernel, &mine.iter().map(|m| m.1).collect());
        let written = written_storages(kernel);
        let mut edits = Edits::default();
        for (k, s) in mine {
            let order = orders.remove(&s).unwrap_or_default();
            out[k] = Some(spill_storage(kernel, inst, s, &order, &written, &mut edits));
        }
        splice(kernel, edits);
    }
    out.into_iter().flatten().collect()
}

/// The storages some op of `kernel` writes.
fn written_storages(kernel: &Kernel) -> BTreeSet<Handle<Storage>> {
    kernel
        .ops
        .iter()
        .flat_map(|(_, op)| op.write_set().into_iter().map(|v| v.storage))
        .collect()
}

/// Per storage of `storages`, the top-level ops of `kernel` touching it,
/// with their places in the body.
fn ops_touching(
    kernel: &Kernel,
    storages: &BTreeSet<Handle<Storage>>,
) -> BTreeMap<Handle<Storage>, Vec<(usize, Handle<Op>)>> {
    let mut out: BTreeMap<Handle<Storage>, Vec<(usize, Handle<Op>)>> = BTreeMap::new();
    for (i, item) in kernel.body.iter().enumerate() {
        let Item::Op(h) = item else { continue };
        let mut touched: Vec<Handle<Storage>> = kernel.ops[*h]
            .accesses()
            .iter()
            .map(|a| a.view.storage)
            .filter(|st| storages.contains(st))
            .collect();
        touched.sort_unstable();
        touched.dedup();
        for st in touched {
            out.entry(st).or_default().push((i, *h));
        }
    }
    out
}

/// Spills storage `s` of `kernel` (instance `inst`), touched by the
/// top-level ops `order` (with their places in the body); `written` are
/// the storages some op of the kernel writes. The copies to add to the
/// body go to `edits`. Returns what was done and the pieces made.
fn spill_storage(
    kernel: &mut Kernel,
    inst: usize,
    s: Handle<Storage>,
    order: &[(usize, Handle<Op>)],
    written: &BTreeSet<Handle<Storage>>,
    edits: &mut Edits,
) -> (Record, Vec<Handle<Storage>>) {
    let st = kernel.storages[s].clone();
    let loc = kernel.spans.storages.get(s).copied();
    let cut = cut(kernel, s, order);
    if let Some(load) = reloadable(kernel, s, order, &cut.writes, written) {
        return rematerialize(kernel, inst, s, order, &cut.groups, &load, edits);
    }
    let spill_buffer = if st.buffer == Buffer::Psum {
        Buffer::Sbuf
    } else {
        Buffer::PrivateHbm
    };
    let base = if st.name.is_empty() {
        format!("t{}", s.index())
    } else {
        st.name.clone()
    };
    let home = kernel.storages.append(Storage {
        name: format!("{base}_spill"),
        buffer: spill_buffer,
        address: None,
        scope: None,
        data: None,
        ..st.clone()
    });
    if let Some(loc) = loc {
        kernel.spans.storages.insert(home, loc);
    }
    let mut record = Record::new(inst, s, &st);
    let mut before: BTreeMap<usize, Vec<Handle<Op>>> = BTreeMap::new();
    let mut after: BTreeMap<usize, Vec<Handle<Op>>> = BTreeMap::new();
    let mut pieces = Vec::with_capacity(cut.groups.len());
    for &(first, last) in &cut.groups {
        let piece = new_piece(kernel, &st, loc);
        pieces.push(piece);
        let copies = cut.copies(first, last).into_iter().map(|(reload, view)| {
            if reload {
                (true, moved(&view, piece), moved(&view, home))
            } else {
                (false, moved(&view, home), moved(&view, piece))
            }
        });
        for (reload, dst, src) in copies {
            let served = order[if reload { first } else { last }];
            let ctx = kernel.ops[served.1].loop_ctx;
            record.bytes += dst.num_elements() * u64::from(dst.dtype.size());
            let kind = if spill_buffer == Buffer::Sbuf {
                OpKind::TensorCopy { dst, src }
            } else {
                OpKind::dma_copy(dst, src)
            };
            let at = loc.or_else(|| kernel.spans.ops.get(served.1).copied());
            let h = new_op(kernel, kind, ctx, at);
            if reload {
                record.reloads += 1;
                before.entry(served.0).or_default().push(h);
            } else {
                record.stores += 1;
                after.entry(served.0).or_default().push(h);
            }
        }
        for &(_, op) in &order[first..=last] {
            kernel.ops[op].retarget(s, piece);
        }
    }
    edits.add(before, after);
    (record, pieces)
}

/// How spilling storage `s` of `kernel` cuts `order`, the top-level ops
/// touching it: into groups (an accumulation group is never split; see
/// the module doc), with the views of `s` each op reads and writes.
fn cut(kernel: &Kernel, s: Handle<Storage>, order: &[(usize, Handle<Op>)]) -> Cut {
    let n = order.len();
    // Which ops accumulate into `s` (matmuls only; see `lower`), and the
    // groups: `start[j]` is the first op of op `j`'s group.
    let mut accumulating = vec![false; n];
    let mut start: Vec<usize> = (0..n).collect();
    for j in 0..n {
        let op = &kernel.ops[order[j].1];
        let (OpKind::NcMatmul {
            dst, accumulate, ..
        }
        | OpKind::NcMatmulMx {
            dst, accumulate, ..
        }) = &op.kind
        else {
            continue;
        };
        if dst.storage != s {
            continue;
        }
        let writer = (0..j).rev().find(|&w| {
            writes_of(&kernel.ops[order[w].1], s)
                .iter()
                .any(|v| overlap(kernel, v, dst).may_touch())
        });
        let follows_matmul = writer.is_some_and(|w| {
            matches!(
                kernel.ops[order[w].1].kind,
                OpKind::NcMatmul { .. } | OpKind::NcMatmulMx { .. }
            )
        });
        accumulating[j] = accumulate.unwrap_or(follows_matmul);
        if accumulating[j]
            && let Some(w) = writer
        {
            let first = start[w];
            for g in start.iter_mut().take(j + 1).skip(w) {
                *g = first;
            }
        }
    }
    // Close the groups: an op after a group's start belongs to it while
    // the starts agree (the merge above keeps groups contiguous).
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for (j, &first) in start.iter().enumerate() {
        match groups.last_mut() {
            Some(g) if first == g.0 => g.1 = j,
            _ => groups.push((j, j)),
        }
    }
    Cut {
        groups,
        reads: (0..n)
            .map(|j| reads_of(&kernel.ops[order[j].1], s, accumulating[j]))
            .collect(),
        writes: (0..n)
            .map(|j| writes_of(&kernel.ops[order[j].1], s))
            .collect(),
    }
}

impl Cut {
    /// The copies around the group of ops `first..=last`: `(true, view)`
    /// reloads `view` before it (when an earlier group wrote the storage),
    /// `(false, view)` stores `view` after it (when a later group reads
    /// it).
    fn copies(&self, first: usize, last: usize) -> Vec<(bool, View)> {
        let mut out = Vec::new();
        if self.writes[..first].iter().any(|w| !w.is_empty()) {
            let reads = distinct(self.reads[first..=last].iter().flatten());
            out.extend(reads.into_iter().map(|v| (true, v)));
        }
        if self.reads[last + 1..].iter().any(|r| !r.is_empty()) {
            let writes = distinct(self.writes[first..=last].iter().flatten());
            out.extend(writes.into_iter().map(|v| (false, v)));
        }
        out
    }
}

/// The load that defines SBUF storage `s` when it can simply be done
/// again instead of storing `s` to HBM: `s`'s only write is its first op
/// (of `order`, the top-level ops touching it, with their `writes`), a
/// plain `dma_copy` from an HBM view of a kernel input that no op of the
/// kernel writes (none of the storages `written`), with no dynamic offset
/// or indirection. Such a value never changes, so loading it again later
/// gives the same bytes.
fn reloadable(
    kernel: &Kernel,
    s: Handle<Storage>,
    order: &[(usize, Handle<Op>)],
    writes: &[Vec<View>],
    written: &BTreeSet<Handle<Storage>>,
) -> Option<OpKind> {
    if kernel.storages[s].buffer != Buffer::Sbuf
        || order.len() < 2
        || writes[0].is_empty()
        || writes[1..].iter().any(|w| !w.is_empty())
    {
        return None;
    }
    let kind = &kernel.ops[order[0].1].kind;
    let OpKind::DmaCopy {
        dst,
        src,
        accumulate: false,
        ..
    } = kind
    else {
        return None;
    };
    let input = kernel
        .args
        .iter()
        .any(|a| a.storage == src.storage && a.kind == ArgKind::Input);
    (dst.storage == s
        && !kernel.storages[src.storage].buffer.is_on_chip()
        && src.dyn_offset.is_none()
        && src.indirect.is_none()
        && input
        && !written.contains(&src.storage))
    .then(|| kind.clone())
}

/// Spills SBUF storage `s`, whose value is `load` ([`reloadable`]), by
/// loading it again: the original load moves to just before the first
/// group that reads `s` (`groups` of `order`, as in [`spill_storage`]),
/// and every later group gets a copy of it; each group uses its own
/// piece, and nothing is stored. The moves go to `edits`.
fn rematerialize(
    kernel: &mut Kernel,
    inst: usize,
    s: Handle<Storage>,
    order: &[(usize, Handle<Op>)],
    groups: &[(usize, usize)],
    load: &OpKind,
    edits: &mut Edits,
) -> (Record, Vec<Handle<Storage>>) {
    let st = kernel.storages[s].clone();
    let loc = kernel.spans.storages.get(s).copied();
    let mut record = Record::new(inst, s, &st);
    let original = order[0];
    let mut before: BTreeMap<usize, Vec<Handle<Op>>> = BTreeMap::new();
    let mut pieces = Vec::with_capacity(groups.len());
    // The load is alone in the first group: no other op writes `s`.
    for &(first, last) in groups.iter().skip(1) {
        let piece = new_piece(kernel, &st, loc);
        pieces.push(piece);
        let served = order[first];
        let h = if pieces.len() == 1 {
            original.1
        } else {
            record.reloads += 1;
            if let OpKind::DmaCopy { dst, .. } = load {
                record.bytes += dst.num_elements() * u64::from(dst.dtype.size());
            }
            let ctx = kernel.ops[served.1].loop_ctx;
            let at = kernel.spans.ops.get(original.1).copied();
            new_op(kernel, load.clone(), ctx, at)
        };
        kernel.ops[h].retarget(s, piece);
        before.entry(served.0).or_default().push(h);
        for &(_, op) in &order[first..=last] {
            kernel.ops[op].retarget(s, piece);
        }
    }
    edits.add(before, BTreeMap::new());
    edits.skip.insert(original.0);
    (record, pieces)
}

impl Edits {
    /// Adds one spilled storage's copies: `before[i]` go before item `i`
    /// after those of the storages spilled earlier, and `after[i]` right
    /// after item `i`, before those of the storages spilled earlier (where
    /// spilling one storage at a time, each rebuilding the body, puts
    /// them).
    fn add(
        &mut self,
        before: BTreeMap<usize, Vec<Handle<Op>>>,
        after: BTreeMap<usize, Vec<Handle<Op>>>,
    ) {
        for (i, ops) in before {
            self.before.entry(i).or_default().extend(ops);
        }
        for (i, ops) in after {
            self.after.entry(i).or_default().splice(0..0, ops);
        }
    }
}

/// Rebuilds `kernel`'s top-level body with the ops of `edits.before[i]`
/// and `edits.after[i]` around item `i`, leaving out the items
/// `edits.skip`.
fn splice(kernel: &mut Kernel, mut edits: Edits) {
    let old = std::mem::take(&mut kernel.body);
    for (i, item) in old.into_iter().enumerate() {
        if let Some(ops) = edits.before.remove(&i) {
            kernel.body.extend(ops.into_iter().map(Item::Op));
        }
        if !edits.skip.contains(&i) {
            kernel.body.push(item);
        }
        if let Some(ops) = edits.after.remove(&i) {
            kernel.body.extend(ops.into_iter().map(Item::Op));
        }
    }
}

/// `views` without repeats, in first-seen order.
fn distinct<'a>(views: impl Iterator<Item = &'a View>) -> Vec<View> {
    let mut out: Vec<View> = Vec::new();
    for v in views {
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

/// `view` on storage `to`, with stride-0 (broadcast) dims reduced to one
/// element so a copy moves each element once.
fn moved(view: &View, to: Handle<Storage>) -> View {
    let mut v = view.clone();
    v.storage = to;
    for d in &mut v.dims {
        if d.stride == 0 {
            d.count = 1;
        }
    }
    v
}

/// Appends a piece of a spilled storage `st` allocated at `loc`.
fn new_piece(kernel: &mut Kernel, st: &Storage, loc: Option<SrcLoc>) -> Handle<Storage> {
    let piece = kernel.storages.append(Storage {
        address: None,
        ..st.clone()
    });
    if let Some(loc) = loc {
        kernel.spans.storages.insert(piece, loc);
    }
    piece
}

/// Appends a spill op (not yet in the body).
fn new_op(kernel: &mut Kernel, kind: OpKind, ctx: LoopCtx, loc: Option<SrcLoc>) -> Handle<Op> {
    let h = kernel.ops.append(Op {
        loop_ctx: ctx,
        ..Op::new(kind)
    });
    if let Some(loc) = loc {
        kernel.spans.ops.insert(h, loc);
    }
    h
}

/// The E0906 warning for the storages of `buffer` that were spilled.
fn warning(
    kernels: &[Kernel],
    log: &[Record],
    buffer: Buffer,
    sources: &SourceMap,
) -> Option<Diagnostic> {
    let records: Vec<&Record> = log.iter().filter(|r| r.buffer == buffer).collect();
    let first = records.first()?;
    let stores: usize = records.iter().map(|r| r.stores).sum();
    let reloads: usize = records.iter().map(|r| r.reloads).sum();
    let bytes: u64 = records.iter().map(|r| r.bytes).sum();
    let n = records.len();
    let (to, what) = if buffer == Buffer::Psum {
        ("SBUF", "`tensor_copy` instructions")
    } else {
        ("HBM", "DMA instructions")
    };
    let message = format!(
        "{n} {buffer} tensor{} did not fit and {} spilled to {to}: {} {what} ({stores} stores, {reloads} reloads) move {bytes} bytes",
        if n == 1 { "" } else { "s" },
        if n == 1 { "was" } else { "were" },
        stores + reloads,
    );
    let loc = kernels[first.inst]
        .spans
        .storages
        .get(first.handle)
        .copied();
    let mut d = Diagnostic::warning(codes::SPILLED, message);
    if let Some(loc) = loc {
        d = d.with_primary(loc.file, loc.span, format!("spilled to {to}"));
    }
    // One note per allocation site, as E0901 lists the tensors at the peak.
    let mut sites: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in &records {
        let label = storage_label(&kernels[r.inst], r.handle, sources);
        match sites.iter_mut().find(|(l, _)| *l == label) {
            Some((_, group)) => group.push(r),
            None => sites.push((label, vec![r])),
        }
    }
    let shown = if sites.len() > MAX_OVERFLOW_SITES + 1 {
        MAX_OVERFLOW_SITES
    } else {
        sites.len()
    };
    for (label, group) in &sites[..shown] {
        let copies: usize = group.iter().map(|r| r.stores + r.reloads).sum();
        let moved: u64 = group.iter().map(|r| r.bytes).sum();
        let size = group[0].bytes_per_partition;
        let tensors = if group.len() == 1 {
            format!("{size} bytes per partition")
        } else {
            format!("{} tensors of {size} bytes per partition", group.len())
        };
        d = d.with_note(format!(
            "spilled: {label} ({tensors}; {copies} spill instructions move {moved} bytes)"
        ));
    }
    if sites.len() > shown {
        d = d.with_note(format!("and {} more allocation sites", sites.len() - shown));
    }
    Some(d.with_help(
        "spill copies cost time (they are simulated like any copy and show in the profile): use smaller tiles or end tensors' lifetimes sooner to avoid them; `--no-spill` makes this the overflow error instead",
    ))
}
