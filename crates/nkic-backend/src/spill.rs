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
//! Each round looks at every memory that overflowed, at the position
//! where first-fit placement failed ([`alloc::Overflow`]). A storage alive
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

use crate::alloc::{self, AllocError, MAX_OVERFLOW_SITES, Overflow};
use crate::codes;
use crate::collect::{self, Unit, storage_label};

/// An SBUF spill frees `1 / SBUF_HEADROOM` of the capacity beyond the
/// overflow (module doc, "Choosing what to spill").
pub const SBUF_HEADROOM: u64 = 8;

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
    let mut victims = choose(unit, &error.overflows, &pieces);
    loop {
        if victims.is_empty() {
            return Err(error.diags);
        }
        for (inst, handle) in victims {
            let (record, made) = spill_storage(&mut kernels[inst], inst, handle);
            log.push(record);
            pieces.extend(made.into_iter().map(|h| (inst, h)));
        }
        let unit = collect::collect(&kernels, sources)?;
        victims = match alloc::allocate_detailed(&unit, sources) {
            Ok(_) => break,
            Err(e) if e.overflows.is_empty() => return Err(e.diags),
            Err(e) => choose(&unit, &e.overflows, &pieces),
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
    let mut out = kernels.to_vec();
    for (id, positions) in &uses {
        if positions.len() > 1 && spillable(&unit, &pinned, *id) {
            let s = &unit.storages[*id];
            let _ = spill_storage(&mut out[s.inst], s.inst, s.handle);
        }
    }
    Ok(out)
}

/// Per global storage, the positions of the ops that touch it, and the
/// storages that may not be spilled because of how they are used (inside
/// a dynamic loop, through a dynamic offset or an indirection of their
/// own).
fn uses_of(unit: &Unit<'_>) -> (BTreeMap<usize, Vec<u32>>, BTreeSet<usize>) {
    let mut uses: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
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
            uses.entry(id).or_default().push(info.pos);
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

/// The storages to spill for `overflows`, as `(instance, handle)`; see
/// the module doc.
fn choose(
    unit: &Unit<'_>,
    overflows: &[Overflow],
    pieces: &BTreeSet<(usize, Handle<Storage>)>,
) -> Vec<(usize, Handle<Storage>)> {
    let (uses, pinned) = uses_of(unit);
    let mut out = Vec::new();
    for o in overflows {
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
        let mut ranked: Vec<(u128, usize, u64)> = o
            .alive
            .iter()
            .filter_map(|&(id, size)| {
                let s = &unit.storages[id];
                if s.st.buffer != o.buffer
                    || !spillable(unit, &pinned, id)
                    || pieces.contains(&(s.inst, s.handle))
                {
                    return None;
                }
                let positions = uses.get(&id)?;
                let before = positions.iter().filter(|&&p| p < o.at).max()?;
                let after = positions.iter().filter(|&&p| p > o.at).min()?;
                if positions.contains(&o.at) {
                    return None;
                }
                Some((u128::from(size) * u128::from(after - before), id, size))
            })
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut freed = 0u64;
        for (_, id, size) in ranked {
            if freed >= need {
                break;
            }
            freed += size;
            let s = &unit.storages[id];
            out.push((s.inst, s.handle));
        }
    }
    out
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

/// Spills storage `s` of `kernel` (instance `inst`); see the module doc.
/// Returns what was done and the pieces made.
fn spill_storage(
    kernel: &mut Kernel,
    inst: usize,
    s: Handle<Storage>,
) -> (Record, Vec<Handle<Storage>>) {
    let st = kernel.storages[s].clone();
    let loc = kernel.spans.storages.get(s).copied();
    // The top-level ops touching `s`, with their places in the body.
    let order: Vec<(usize, Handle<Op>)> = kernel
        .body
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            Item::Op(h)
                if kernel.ops[*h]
                    .accesses()
                    .iter()
                    .any(|a| a.view.storage == s) =>
            {
                Some((i, *h))
            }
            _ => None,
        })
        .collect();
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
    let spill_buffer = if st.buffer == Buffer::Psum {
        Buffer::Sbuf
    } else {
        Buffer::PrivateHbm
    };
    let reads: Vec<Vec<View>> = (0..n)
        .map(|j| reads_of(&kernel.ops[order[j].1], s, accumulating[j]))
        .collect();
    let writes: Vec<Vec<View>> = (0..n)
        .map(|j| writes_of(&kernel.ops[order[j].1], s))
        .collect();
    if let Some(load) = reloadable(kernel, s, &order, &writes) {
        return rematerialize(kernel, inst, s, &order, &groups, &load);
    }
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
        ..st.clone()
    });
    if let Some(loc) = loc {
        kernel.spans.storages.insert(home, loc);
    }
    let mut record = Record::new(inst, s, &st);
    let mut before: BTreeMap<usize, Vec<Handle<Op>>> = BTreeMap::new();
    let mut after: BTreeMap<usize, Vec<Handle<Op>>> = BTreeMap::new();
    let mut pieces = Vec::with_capacity(groups.len());
    for &(first, last) in &groups {
        let piece = new_piece(kernel, &st, loc);
        pieces.push(piece);
        let written_before = writes[..first].iter().any(|w| !w.is_empty());
        let read_after = reads[last + 1..].iter().any(|r| !r.is_empty());
        let mut copies = Vec::new();
        if written_before {
            for view in distinct(reads[first..=last].iter().flatten()) {
                copies.push((true, moved(&view, piece), moved(&view, home)));
            }
        }
        if read_after {
            for view in distinct(writes[first..=last].iter().flatten()) {
                copies.push((false, moved(&view, home), moved(&view, piece)));
            }
        }
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
    splice(kernel, before, after, None);
    (record, pieces)
}

/// The load that defines SBUF storage `s` when it can simply be done
/// again instead of storing `s` to HBM: `s`'s only write is its first op
/// (of `order`, the top-level ops touching it, with their `writes`), a
/// plain `dma_copy` from an HBM view of a kernel input that no op of the
/// kernel writes, with no dynamic offset or indirection. Such a value
/// never changes, so loading it again later gives the same bytes.
fn reloadable(
    kernel: &Kernel,
    s: Handle<Storage>,
    order: &[(usize, Handle<Op>)],
    writes: &[Vec<View>],
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
    let written = kernel
        .ops
        .iter()
        .any(|(_, op)| op.write_set().iter().any(|v| v.storage == src.storage));
    (dst.storage == s
        && !kernel.storages[src.storage].buffer.is_on_chip()
        && src.dyn_offset.is_none()
        && src.indirect.is_none()
        && input
        && !written)
        .then(|| kind.clone())
}

/// Spills SBUF storage `s`, whose value is `load` ([`reloadable`]), by
/// loading it again: the original load moves to just before the first
/// group that reads `s` (`groups` of `order`, as in [`spill_storage`]),
/// and every later group gets a copy of it; each group uses its own
/// piece, and nothing is stored.
fn rematerialize(
    kernel: &mut Kernel,
    inst: usize,
    s: Handle<Storage>,
    order: &[(usize, Handle<Op>)],
    groups: &[(usize, usize)],
    load: &OpKind,
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
    splice(kernel, before, BTreeMap::new(), Some(original.0));
    (record, pieces)
}

/// Rebuilds `kernel`'s top-level body with the ops of `before[i]` and
/// `after[i]` around item `i`, leaving out item `skip`.
fn splice(
    kernel: &mut Kernel,
    mut before: BTreeMap<usize, Vec<Handle<Op>>>,
    mut after: BTreeMap<usize, Vec<Handle<Op>>>,
    skip: Option<usize>,
) {
    let old = std::mem::take(&mut kernel.body);
    for (i, item) in old.into_iter().enumerate() {
        if let Some(ops) = before.remove(&i) {
            kernel.body.extend(ops.into_iter().map(Item::Op));
        }
        if skip != Some(i) {
            kernel.body.push(item);
        }
        if let Some(ops) = after.remove(&i) {
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
