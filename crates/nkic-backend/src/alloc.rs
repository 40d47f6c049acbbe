//! Memory allocation: an address for every storage.
//!
//! # On chip
//!
//! Every SBUF/PSUM storage that an op touches gets a placement: its first
//! partition (0 unless the kernel gave `address=`) and one byte offset used
//! in every partition it covers. Two storages may share bytes only when
//! their live ranges ([`nkic_ir::live_ranges`]) or their partition ranges
//! are disjoint. Offsets are 4-byte aligned in both memories. In PSUM a
//! storage of at most one bank (2 KiB per partition) never crosses a bank
//! boundary, so an accumulation group stays in one bank, and a larger one
//! starts on a bank boundary.
//!
//! **Multi-buffering.** Tiles of different loop iterations are distinct
//! storages with disjoint live ranges, so a tight allocation would give
//! them the same bytes and the resulting anti-dependencies would serialise
//! the iterations. The allocator therefore first tries to keep every
//! storage's bytes unused for a *slack* of positions after its last use:
//! slack = the whole program (no reuse at all), then half of it, a quarter,
//! …, and finally 0. The first slack that fits wins, so as many iterations
//! as capacity allows get their own buffers and the scheduler can overlap
//! the loads of iteration `i + 1` with the compute of iteration `i`.
//! Iterations that depend on each other (a `sequential_range` carrying a
//! value) stay ordered by their data dependencies whatever the buffers.
//!
//! **PE tiling.** A matmul with `tile_position = [row, col]` needs its
//! inputs to start on partition `row` and its result on partition `col`;
//! a tile the compiler places starts on the partition that makes that so
//! (unless two such matmuls disagree, or it would not fit).
//!
//! Storages are placed first-fit in order of their first use (larger
//! first on ties), after the manual placements, which are fixed and
//! checked for overlap among themselves (E0903) and for range (E0904).
//!
//! **Partition halves.** When slack 0 does not fit either, one more pass
//! lets a tile of at most 64 partitions that does not fit at its first
//! partition take another that the start-partition rule allows
//! ([`shifted_starts`]; never a tile whose start is tied to another
//! operand's, [`pinned_storages`]), so two `(64, N)` tiles too wide to
//! share partitions sit on the two halves. A
//! kernel that does not fit even then gets E0901 (SBUF) or E0902
//! (PSUM), naming the tensors alive at the peak and the overflow in bytes
//! per partition; tensors of one allocation site (the blocks of a legacy
//! tensor, the tiles of unrolled iterations) are one line, and only the
//! [`MAX_OVERFLOW_SITES`] largest sites are listed.
//!
//! **Spilling.** An overflow also comes back as an [`Overflow`] (where
//! placement failed and what was alive there; [`allocate_detailed`]).
//! Unless `BackendConfig::no_spill`, the backend then spills instead of
//! failing ([`spill`](crate::spill)): at every position where placement
//! fails (found in one pass, [`relieve_overflows`]) it picks the largest
//! storages that wait longest around that position, splits each one's
//! life into short pieces around its uses with copies to and from a spill
//! tensor (SBUF to HBM by DMA, PSUM to SBUF by `tensor_copy`, never inside
//! a matmul accumulation group; a tile loaded from a kernel input is
//! loaded again instead), and allocates again, until the kernel fits or
//! nothing more can be spilled; only then is E0901/E0902 the result.
//!
//! # HBM
//!
//! Arguments become the program's `.arg` tensors in parameter order, then
//! returned tensors that are not arguments as `output`s, then every other
//! HBM storage an op touches as an internal `.hbm` tensor. An internal
//! `nl.shared_hbm` allocation is one storage for all instances of the
//! program (see [`collect`](crate::collect)) and a `shared` tensor, which
//! the cores of an LNC=2 launch share by name (both cores compile the same
//! kernel, so they name it alike). A storage with data (a constant) is a
//! tensor with that data. Names are the
//! storages' names where they are unique identifiers, otherwise
//! `<name>_<n>` or `t<n>`; an unnamed returned tensor is `out<k>` after its
//! return index `k`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::{ArgKind, Buffer, LiveRange, OpKind, Placement};
use nkic_isa::{Engine, HbmTensor, TensorId, TensorKind};

use crate::codes;
use crate::collect::{Unit, diag_at};

mod free;

use free::FreeRuns;

/// On-chip offsets are multiples of this many bytes.
pub const ALIGN: u64 = 4;

/// The most allocation sites an overflow diagnostic lists (the largest;
/// all of them when only one more would be left out).
pub const MAX_OVERFLOW_SITES: usize = 8;

/// The result of allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The placement of each global storage; `None` for storages no op uses.
    pub placements: Vec<Option<Placement>>,
    /// The program's HBM tensors, in declaration order (a constant's with
    /// its data).
    pub hbm: Vec<HbmTensor>,
    /// The slack (in program positions) the on-chip allocation achieved,
    /// per memory: SBUF, PSUM.
    pub slack: [u32; 2],
}

/// A placed storage: global index, first partition, byte offset.
type Placed = (usize, u64, u64);

/// A memory that could not be placed: its diagnostics, and the overflow
/// when that was the reason.
type PlaceError = (Vec<Diagnostic>, Option<Overflow>);

/// The state of one first-fit pass: the items placed so far, by index
/// into the pass's items, with their offsets.
///
/// The placed items still alive are `active`, in two groups. Those that
/// start on partition 0 and take bytes ([`INDEXED`]) all overlap one
/// another's partitions, so they conflict with every such item that comes
/// later while they live: `free` holds their bytes, and finding room
/// among them takes `O(log n)` steps however many are alive. The others
/// ([`SCANNED`]: PE-tiled tiles, empty ones) are compared one by one, as
/// is every item against the manual placements.
#[derive(Clone, Debug)]
struct Placer {
    mem: Memory,
    /// Item, first partition, byte offset.
    placed: Vec<(usize, u64, u64)>,
    manual: Vec<(usize, u64)>,
    active: [Vec<Active>; 2],
    /// Where each active item is in `active`: group and index, by item.
    slot: Vec<Option<(usize, usize)>>,
    /// When the active items' lives end (`live.last`, item), earliest
    /// first; an entry whose item has left or been [relived](Self::relive)
    /// since is skipped.
    ends: BinaryHeap<Reverse<(u32, usize)>>,
    /// The bytes of the [`INDEXED`] active items, in [`ALIGN`]-byte slots.
    free: FreeRuns,
    busy: Vec<(u64, u64)>,
    /// `busy` joined, for [`fit`].
    merged: Vec<(u64, u64)>,
}

/// The group of [`Placer::active`] whose bytes [`Placer::free`] holds.
const INDEXED: usize = 0;
/// The group of [`Placer::active`] compared item by item.
const SCANNED: usize = 1;

/// A placed item in [`Placer::active`], with the facts the placement of
/// later items compares (copied from its [`Item`], so a scan over the
/// active items reads one array).
#[derive(Clone, Copy, Debug)]
struct Active {
    off: u64,
    /// `off` plus the item's size.
    end: u64,
    live: LiveRange,
    partitions: (u64, u64),
    k: usize,
}

/// One on-chip storage to place.
#[derive(Clone, Debug)]
struct Item {
    id: usize,
    live: LiveRange,
    partitions: (u64, u64),
    size: u64,
    manual: Option<u64>,
    /// The other first partitions it may take when it does not fit at
    /// its own ([`shifted_starts`]).
    shifts: &'static [u64],
}

/// The geometry of one on-chip memory.
#[derive(Clone, Copy, Debug)]
struct Memory {
    buffer: Buffer,
    capacity: u64,
    partitions: u64,
    bank: Option<u64>,
}

/// Where a memory overflowed: the allocation of one memory that failed
/// even with slack 0, for the [`spill`](crate::spill) pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overflow {
    pub buffer: Buffer,
    /// The usable bytes per partition.
    pub capacity: u64,
    /// The position where first-fit placement failed: the first use of
    /// the storage that did not fit.
    pub at: u32,
    /// The bytes per partition of the storage that did not fit.
    pub failed_size: u64,
    /// The storages alive at `at` (global index, bytes per partition),
    /// the one that did not fit included.
    pub alive: Vec<(usize, u64)>,
    /// True when the storage that did not fit is a piece of
    /// [`relieve_overflows`]: it comes in just before the ops at `at`, so
    /// the overflow is between `at - 1` and `at`, and the storages those
    /// ops use first are not alive yet.
    pub piece: bool,
}

/// A failed allocation: its diagnostics, and the memories that overflowed
/// (empty when some other error, E0903–E0905, occurred).
#[derive(Clone, Debug)]
pub struct AllocError {
    pub diags: Vec<Diagnostic>,
    pub overflows: Vec<Overflow>,
}

/// A storage the [`spill`](crate::spill) pass frees at an overflow of
/// [`relieve_overflows`]: spilled, it needs its bytes only up to its last
/// use before the overflow and then again at each of its later uses, one
/// position each (the piece a spill reload or rematerialized load brings
/// in just before the use).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relief {
    /// The global storage index.
    pub id: usize,
    /// Its last use before the overflow.
    pub last: u32,
    /// Its uses after the overflow.
    pub uses: Vec<u32>,
}

/// Places every storage of `unit`; see the module doc.
pub fn allocate(unit: &Unit<'_>, sources: &SourceMap) -> Result<Layout, Vec<Diagnostic>> {
    allocate_detailed(unit, sources).map_err(|e| e.diags)
}

/// [`allocate`], with the overflows described for spilling.
pub fn allocate_detailed(unit: &Unit<'_>, sources: &SourceMap) -> Result<Layout, AllocError> {
    let mut layout = Layout {
        placements: vec![None; unit.storages.len()],
        hbm: Vec::new(),
        slack: [0, 0],
    };
    place_hbm(unit, &mut layout);
    let len = unit
        .storages
        .iter()
        .filter_map(|s| s.live.map(|r| r.last + 1))
        .max()
        .unwrap_or(0);
    let required = tile_partitions(unit);
    let mut diags = Vec::new();
    let mut overflows = Vec::new();
    let mut other = false;
    // SBUF and PSUM are placed independently: a large unit places them
    // side by side.
    let [sbuf, psum] = memories(unit);
    let place = |mem| place_memory(unit, mem, len, &required, sources);
    let placed = if crate::on_pool(unit.ops.len()) {
        let (s, p) = rayon::join(|| place(sbuf), || place(psum));
        [s, p]
    } else {
        [place(sbuf), place(psum)]
    };
    for (k, result) in placed.into_iter().enumerate() {
        match result {
            Ok((offsets, slack)) => {
                layout.slack[k] = slack;
                for (id, partition, byte) in offsets {
                    layout.placements[id] = Some(Placement::OnChip {
                        partition: u32::try_from(partition).unwrap_or(u32::MAX),
                        byte,
                    });
                }
            }
            Err((d, overflow)) => {
                diags.extend(d);
                match overflow {
                    Some(o) => overflows.push(o),
                    None => other = true,
                }
            }
        }
    }
    if other {
        overflows.clear();
    }
    if diags.is_empty() {
        Ok(layout)
    } else {
        Err(AllocError { diags, overflows })
    }
}

/// Every overflow of `buffer`'s first-fit placement with slack 0, found in
/// one pass: at each position where an item does not fit, `relieve` names
/// the storages to spill there ([`Relief`]), and the pass goes on as if
/// they were spilled (each one alive until its last use before the
/// overflow, then a one-position piece at each later use) and tries the
/// item again; an item that still does not fit is left out. The first
/// overflow `relieve` sees is the one [`allocate_detailed`] reports; the
/// pass ends early when `relieve` frees nothing.
///
/// The pieces are a model, in the unspilled kernel's positions, of what
/// the spiller makes: spill copies sit between two positions, so a piece
/// used at position `p` conflicts exactly with the items alive at `p`, and
/// it is placed before the items first used at `p`, as its reload comes
/// before their ops. The choices are therefore those that spilling one
/// overflow at a time and allocating again would make where the model
/// holds; the spiller still allocates the spilled kernel for real.
pub fn relieve_overflows(
    unit: &Unit<'_>,
    sources: &SourceMap,
    buffer: Buffer,
    relieve: &mut dyn FnMut(&Overflow) -> Vec<Relief>,
) {
    let Some(mem) = memories(unit).into_iter().find(|m| m.buffer == buffer) else {
        return;
    };
    let Ok(mut items) = items_of(unit, mem, &tile_partitions(unit), sources) else {
        return;
    };
    let n_real = items.len();
    let index: BTreeMap<usize, usize> = items.iter().enumerate().map(|(k, i)| (i.id, k)).collect();
    let mut placer = Placer::new(mem);
    // Pieces not placed yet, by position and then in order of creation.
    let mut pieces: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
    let mut skipped: Vec<usize> = Vec::new();
    let mut next = 0;
    loop {
        let k = match ((next < n_real).then(|| &items[next]), pieces.peek()) {
            (Some(item), Some(&Reverse((first, piece))))
                if item.manual.is_none() && first <= item.live.first =>
            {
                pieces.pop();
                piece
            }
            (None, Some(&Reverse((_, piece)))) => {
                pieces.pop();
                piece
            }
            (Some(_), _) => {
                next += 1;
                next - 1
            }
            (None, None) => return,
        };
        if placer.place(&items, k, 0).is_some() {
            continue;
        }
        let at = items[k].live.first;
        let piece = k >= n_real;
        // Alive at `at`: the placed items (those still active, and the
        // manual ones), the items left out, and this one; unless it is a
        // piece, also the items first used at `at`.
        let alive_at = |i: &Item| i.live.first <= at && at <= i.live.last;
        let placed = placer.active.iter().flatten().map(|a| a.k);
        let manual = placer.manual.iter().map(|&(j, _)| j);
        // (The pieces at `at` come before the items: none is pending.)
        let pending = (next..n_real).take_while(|&j| !piece && items[j].live.first == at);
        let mut alive: Vec<usize> = placed
            .chain(manual)
            .chain(skipped.iter().copied())
            .filter(|&j| alive_at(&items[j]))
            .chain(std::iter::once(k))
            .chain(pending)
            .collect();
        alive.sort_unstable();
        alive.dedup();
        let overflow = Overflow {
            buffer,
            capacity: mem.capacity,
            at,
            failed_size: items[k].size,
            alive: alive
                .iter()
                .map(|&j| (items[j].id, items[j].size))
                .collect(),
            piece,
        };
        let reliefs = relieve(&overflow);
        if reliefs.is_empty() {
            return;
        }
        for r in reliefs {
            let Some(&j) = index.get(&r.id) else { continue };
            items[j].live.last = items[j].live.last.min(r.last);
            placer.relive(j, items[j].live);
            let piece = items[j].clone();
            for p in r.uses {
                pieces.push(Reverse((p, items.len())));
                items.push(Item {
                    live: LiveRange { first: p, last: p },
                    manual: None,
                    ..piece.clone()
                });
            }
        }
        if placer.place(&items, k, 0).is_none() {
            skipped.push(k);
        }
    }
}

/// The on-chip memories of `unit`'s target: SBUF, PSUM.
fn memories(unit: &Unit<'_>) -> [Memory; 2] {
    let f = unit.target.figures();
    [
        Memory {
            buffer: Buffer::Sbuf,
            capacity: u64::from(f.sbuf_usable_bytes_per_partition),
            partitions: u64::from(f.sbuf_partitions),
            bank: None,
        },
        Memory {
            buffer: Buffer::Psum,
            capacity: u64::from(f.psum_bytes_per_partition),
            partitions: u64::from(f.sbuf_partitions),
            bank: Some(u64::from(f.psum_bank_bytes)),
        },
    ]
}

/// The first partitions PE tiling requires of compiler-placed on-chip
/// storages: a matmul with `tile_position = [row, col]` reads its
/// stationary and moving operands from partitions starting at `row` and
/// writes its result from partition `col`. Per global storage, the
/// partition its placement must start at so the operand's view starts
/// there, or `None` when two matmuls want different ones.
fn tile_partitions(unit: &Unit<'_>) -> BTreeMap<usize, Option<u64>> {
    let mut out: BTreeMap<usize, Option<u64>> = BTreeMap::new();
    for info in &unit.ops {
        let (dst, inputs, position) = match &info.op.kind {
            OpKind::NcMatmul {
                dst,
                stationary,
                moving,
                tile_position: Some(position),
                ..
            }
            | OpKind::NcMatmulMx {
                dst,
                stationary,
                moving,
                tile_position: Some(position),
                ..
            } => (dst, [stationary, moving], *position),
            _ => continue,
        };
        let kernel = &unit.kernels[info.inst];
        let wants = inputs
            .into_iter()
            .map(|v| (v, u64::from(position[0])))
            .chain(std::iter::once((dst, u64::from(position[1]))));
        for (view, want) in wants {
            let st = &kernel.storages[view.storage];
            if st.buffer.is_hbm() || st.address.is_some() {
                continue;
            }
            let offset = view.footprint_in(st).partitions.start;
            let Some(start) = want.checked_sub(offset) else {
                continue;
            };
            let id = unit.sid(info.inst, view.storage);
            out.entry(id)
                .and_modify(|e| {
                    if *e != Some(start) {
                        *e = None;
                    }
                })
                .or_insert(Some(start));
        }
    }
    out
}

/// The global storages whose first partition is tied to another
/// operand's, so the allocator never [shifts](shifted_starts) them:
/// operands of an instruction that may run on the Tensor engine (its
/// stationary and moving operands share PE rows), of an instruction with
/// an MX scale operand (a scale's quadrant follows its data's:
/// `Layout::MxScaleOf` in the instruction table) and of an op with an
/// indirect or run-time-offset view (an indirect index starts on its
/// data's partition).
fn pinned_storages(unit: &Unit<'_>) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for info in &unit.ops {
        let kind = &info.op.kind;
        let accesses = info.op.accesses();
        let tied = kind.engines().contains(&Engine::Tensor)
            || nkic_isa::Op::layouts_of(kind.mnemonic()).is_some_and(|l| {
                l.iter()
                    .any(|l| matches!(l, nkic_isa::Layout::MxScaleOf(_)))
            })
            || accesses.iter().any(|a| a.view.is_dynamic());
        if tied {
            out.extend(accesses.iter().map(|a| unit.sid(info.inst, a.view.storage)));
        }
    }
    out
}

/// The first partitions other than 0 that a compiler-placed tile of
/// `count` partitions may start at (isa.md §2.1): 64 for 33 to 64
/// partitions, 32, 64 and 96 for up to 32. A tile takes one of them only
/// when it does not fit at 0 with no slack ([`place_memory`]): two
/// `(64, N)` tiles alive together then sit on the two halves of the
/// partitions, as NKI places them, instead of overflowing.
fn shifted_starts(count: u64) -> &'static [u64] {
    match count {
        33..=64 => &[64],
        1..=32 => &[32, 64, 96],
        _ => &[],
    }
}

/// Declares the HBM tensors and places HBM storages at byte 0 of theirs.
fn place_hbm(unit: &Unit<'_>, layout: &mut Layout) {
    let mut order: Vec<(usize, TensorKind)> = unit
        .args
        .iter()
        .map(|&(id, kind)| {
            let kind = match kind {
                ArgKind::Input => TensorKind::Input,
                ArgKind::Output => TensorKind::Output,
                ArgKind::InOut => TensorKind::InOut,
            };
            (id, kind)
        })
        .collect();
    let returned = order.len();
    order.extend(unit.outputs.iter().map(|&id| (id, TensorKind::Output)));
    for (id, s) in unit.storages.iter().enumerate() {
        if s.st.buffer.is_hbm() && s.live.is_some() && !order.iter().any(|&(o, _)| o == id) {
            let kind = if s.st.buffer == Buffer::SharedHbm {
                TensorKind::Shared
            } else {
                TensorKind::Internal
            };
            order.push((id, kind));
        }
    }
    let mut used = BTreeSet::new();
    for (k, (id, kind)) in order.into_iter().enumerate() {
        let st = unit.storages[id].st;
        // Unnamed returned tensors are named after their return index,
        // as `nkic run` names their files (`out0`, `out1`, …).
        let name = if k >= returned && k < returned + unit.outputs.len() && st.name.is_empty() {
            unique_name(
                &format!("out{}", k - returned),
                unit.storages[id].handle.index(),
                &mut used,
            )
        } else {
            unique_name(&st.name, unit.storages[id].handle.index(), &mut used)
        };
        let tensor = TensorId(u32::try_from(layout.hbm.len()).unwrap_or(u32::MAX));
        layout.hbm.push(HbmTensor {
            name,
            dtype: st.dtype,
            shape: st.shape.clone(),
            kind,
            data: st.data.clone(),
        });
        layout.placements[id] = Some(Placement::Hbm { tensor, byte: 0 });
    }
}

/// A unique identifier for a tensor named `name` (storage index `index`).
fn unique_name(name: &str, index: usize, used: &mut BTreeSet<String>) -> String {
    let base = if nkic_isa::text::is_identifier(name) {
        name.to_owned()
    } else {
        let cleaned: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if cleaned.is_empty() || cleaned.starts_with(|c: char| c.is_ascii_digit()) {
            format!("t{index}")
        } else {
            cleaned
        }
    };
    let mut candidate = base.clone();
    let mut n = index;
    while used.contains(&candidate) || !nkic_isa::text::is_identifier(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    used.insert(candidate.clone());
    candidate
}

/// Places the storages of one on-chip memory; returns `(id, partition,
/// byte)` per storage and the slack achieved.
fn place_memory(
    unit: &Unit<'_>,
    mem: Memory,
    len: u32,
    required: &BTreeMap<usize, Option<u64>>,
    sources: &SourceMap,
) -> Result<(Vec<Placed>, u32), PlaceError> {
    let items = items_of(unit, mem, required, sources).map_err(|d| (d, None))?;
    let mut slack = len;
    loop {
        match first_fit(&items, mem, slack, false) {
            Ok(offsets) => return Ok((offsets, slack)),
            Err(failed) if slack == 0 => {
                if let Ok(offsets) = first_fit(&items, mem, 0, true) {
                    return Ok((offsets, 0));
                }
                let at = items[failed].live.first;
                let overflow = Overflow {
                    buffer: mem.buffer,
                    capacity: mem.capacity,
                    at,
                    failed_size: items[failed].size,
                    alive: items
                        .iter()
                        .filter(|i| i.live.first <= at && at <= i.live.last)
                        .map(|i| (i.id, i.size))
                        .collect(),
                    piece: false,
                };
                return Err((
                    vec![overflow_diag(unit, &items, failed, mem, sources)],
                    Some(overflow),
                ));
            }
            Err(_) => slack /= 2,
        }
    }
}

/// The storages of one on-chip memory to place, manual placements first
/// and the others in order of first use (larger first on ties), or the
/// diagnostics of storages that cannot be placed at all.
fn items_of(
    unit: &Unit<'_>,
    mem: Memory,
    required: &BTreeMap<usize, Option<u64>>,
    sources: &SourceMap,
) -> Result<Vec<Item>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut items = Vec::new();
    let pinned = pinned_storages(unit);
    for (id, s) in unit.storages.iter().enumerate() {
        let Some(live) = s.live else { continue };
        if s.st.buffer != mem.buffer {
            continue;
        }
        // A manual placement takes exactly its bytes: kernels that place
        // tensors themselves pack a 2-byte `(P, 1)` bfloat16 column next
        // to the following tensor. The compiler's own placements keep
        // offsets aligned.
        let size = match s.st.address {
            Some(_) => s.st.bytes_per_partition(),
            None => s.st.bytes_per_partition().div_ceil(ALIGN) * ALIGN,
        };
        let p = s.st.partitions();
        let (start, manual) = match s.st.address {
            Some(a) => (u64::from(a.partition), Some(a.byte)),
            None => {
                // PE tiling asks for a first partition; one that does not
                // fit leaves the tile at 0 (the verifier then explains).
                let want = required.get(&id).copied().flatten().unwrap_or(0);
                (if want + p <= mem.partitions { want } else { 0 }, None)
            }
        };
        if p > mem.partitions || size > mem.capacity {
            diags.push(diag_at(
                codes::TENSOR_TOO_LARGE,
                format!(
                    "{} tensor needs {p} partitions of {size} bytes, more than the {} partitions of {} bytes available",
                    mem.buffer, mem.partitions, mem.capacity
                ),
                s.loc,
                "allocated here",
            ));
            continue;
        }
        if let Some(byte) = manual {
            let misaligned = byte % if mem.bank.is_some() { ALIGN } else { 1 } != 0;
            let crosses = mem.bank.is_some_and(|b| {
                if size <= b {
                    byte / b != (byte + size.max(1) - 1) / b
                } else {
                    byte % b != 0
                }
            });
            if start + p > mem.partitions || byte + size > mem.capacity || misaligned || crosses {
                let why = if start + p > mem.partitions {
                    format!(
                        "partitions {start}..{} exceed the {} partitions",
                        start + p,
                        mem.partitions
                    )
                } else if byte + size > mem.capacity {
                    format!(
                        "bytes {byte}..{} exceed the {} bytes per partition",
                        byte + size,
                        mem.capacity
                    )
                } else if misaligned {
                    format!("byte {byte} is not a multiple of {ALIGN}")
                } else {
                    "a PSUM tile must stay inside one 2 KiB bank, or start on a bank boundary"
                        .to_owned()
                };
                diags.push(diag_at(
                    codes::ADDRESS_OUT_OF_RANGE,
                    format!(
                        "manual {} placement of {} is invalid: {why}",
                        mem.buffer,
                        unit.storage_label(id, sources)
                    ),
                    s.loc,
                    "placed here",
                ));
                continue;
            }
        }
        let free_to_move = manual.is_none() && !required.contains_key(&id) && !pinned.contains(&id);
        items.push(Item {
            id,
            live,
            partitions: (start, start + p),
            size,
            manual,
            shifts: if free_to_move { shifted_starts(p) } else { &[] },
        });
    }
    // Manual placements must not overlap while both are alive.
    let manual: Vec<&Item> = items.iter().filter(|i| i.manual.is_some()).collect();
    for (k, j) in overlapping_pairs(&manual) {
        let (a, b) = (manual[k], manual[j]);
        let (Some(x), Some(y)) = (a.manual, b.manual) else {
            continue;
        };
        let sb = &unit.storages[b.id];
        let mut d = diag_at(
            codes::ADDRESS_OVERLAP,
            format!(
                "manually placed {} tensors {} and {} overlap while both are alive",
                mem.buffer,
                unit.storage_label(a.id, sources),
                unit.storage_label(b.id, sources)
            ),
            unit.storages[a.id].loc,
            format!("bytes {x}..{} placed here", x + a.size),
        );
        if let Some(loc) = sb.loc {
            d = d.with_secondary(
                loc.file,
                loc.span,
                format!("bytes {y}..{} placed here", y + b.size),
            );
        }
        diags
            .push(d.with_help("give one of them another `address=`, or let the compiler place it"));
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    items.sort_by_key(|i| {
        (
            i.manual.is_none(),
            i.live.first,
            std::cmp::Reverse(i.size),
            i.id,
        )
    });
    Ok(items)
}

/// The pairs `(k, j)`, `j < k`, of manually placed `items` that are
/// alive together on common partitions and share bytes, in increasing
/// order of `k` then `j` (the order the diagnostics are reported in).
/// A sweep over the items in order of first use compares each only with
/// those still alive: a kernel that places its own tiles (nki-library's
/// stack allocator) has tens of thousands, of which few live at once.
fn overlapping_pairs(items: &[&Item]) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&k| items[k].live.first);
    let mut alive: Vec<usize> = Vec::new();
    let mut pairs = Vec::new();
    for k in order {
        let a = items[k];
        alive.retain(|&j| items[j].live.last >= a.live.first);
        for &j in &alive {
            if manual_overlap(a, items[j]) {
                pairs.push((k.max(j), k.min(j)));
            }
        }
        alive.push(k);
    }
    pairs.sort_unstable();
    pairs
}

/// Whether two manually placed items are alive together on common
/// partitions and share bytes.
fn manual_overlap(a: &Item, b: &Item) -> bool {
    let (Some(x), Some(y)) = (a.manual, b.manual) else {
        return false;
    };
    conflicts(a, b, 0) && x < y + b.size && y < x + a.size
}

/// True when `a` and `b` may not share bytes with `slack` extra positions
/// of life after each one's last use.
fn conflicts(a: &Item, b: &Item, slack: u32) -> bool {
    conflicts_with(a, b.live, b.partitions, slack)
}

/// [`conflicts`] with an item of life `live` on `partitions`.
fn conflicts_with(a: &Item, live: LiveRange, partitions: (u64, u64), slack: u32) -> bool {
    let meet = a.live.first <= live.last.saturating_add(slack)
        && live.first <= a.live.last.saturating_add(slack);
    meet && nkic_isa::intervals::overlap(a.partitions, partitions)
}

/// Places `items` (manual ones first) first-fit, on other partitions
/// where an item does not fit on its own when `shifting`; on failure
/// returns the index of the item that did not fit.
fn first_fit(
    items: &[Item],
    mem: Memory,
    slack: u32,
    shifting: bool,
) -> Result<Vec<Placed>, usize> {
    let mut placer = Placer::new(mem);
    for k in 0..items.len() {
        let placed = if shifting {
            placer.place_shifting(items, k, slack)
        } else {
            placer.place(items, k, slack)
        };
        if placed.is_none() {
            return Err(k);
        }
    }
    Ok(placer
        .placed
        .into_iter()
        .map(|(k, start, off)| (items[k].id, start, off))
        .collect())
}

impl Placer {
    fn new(mem: Memory) -> Placer {
        Placer {
            mem,
            placed: Vec::new(),
            manual: Vec::new(),
            active: [Vec::new(), Vec::new()],
            slot: Vec::new(),
            ends: BinaryHeap::new(),
            free: FreeRuns::new(slots(mem.capacity)),
            busy: Vec::new(),
            merged: Vec::new(),
        }
    }

    /// Item `k`, if active, now lives `live` (its copy in `active` follows
    /// the item).
    fn relive(&mut self, k: usize, live: LiveRange) {
        if let Some(Some((group, i))) = self.slot.get(k).copied() {
            self.active[group][i].live = live;
            self.ends.push(Reverse((live.last, k)));
        }
    }

    /// Places `items[k]` at the lowest offset free of the items placed so
    /// far that it conflicts with, or returns `None` when none is left.
    ///
    /// The items after the manual ones come in order of their first use,
    /// so a placed item whose life (plus `slack`) ends before the current
    /// item's first use conflicts with no later item either: it leaves
    /// `active` for good, and each item is compared only with the items
    /// alive around it (and the manual ones).
    fn place(&mut self, items: &[Item], k: usize, slack: u32) -> Option<u64> {
        self.place_item(items, k, &items[k], slack)
    }

    /// [`place`](Self::place), or when `items[k]` does not fit on its own
    /// partitions, on the first of its [shifts](Item::shifts) where it
    /// does.
    fn place_shifting(&mut self, items: &[Item], k: usize, slack: u32) -> Option<u64> {
        let item = &items[k];
        if let Some(off) = self.place(items, k, slack) {
            return Some(off);
        }
        let count = item.partitions.1 - item.partitions.0;
        item.shifts.iter().find_map(|&start| {
            let moved = Item {
                partitions: (start, start + count),
                ..item.clone()
            };
            self.place_item(items, k, &moved, slack)
        })
    }

    /// Places `item`, which stands for `items[k]` (on its own partitions or
    /// shifted).
    fn place_item(&mut self, items: &[Item], k: usize, item: &Item, slack: u32) -> Option<u64> {
        if let Some(byte) = item.manual {
            self.placed.push((k, item.partitions.0, byte));
            self.manual.push((k, byte));
            return Some(byte);
        }
        while let Some(&Reverse((last, j))) = self.ends.peek() {
            if last.saturating_add(slack) >= item.live.first {
                break;
            }
            self.ends.pop();
            if let Some((group, i)) = self.slot[j]
                && self.active[group][i].live.last == last
            {
                self.leave(j);
            }
        }
        let group = group_of(item);
        // The indexed items conflict with an indexed item while they live,
        // and `free` holds their bytes; any other item compares them all.
        let [indexed, scanned] = &self.active;
        let indexed: &[Active] = if group == INDEXED { &[] } else { indexed };
        self.busy.clear();
        self.busy.extend(
            indexed
                .iter()
                .chain(scanned)
                .filter(|a| conflicts_with(item, a.live, a.partitions, slack))
                .map(|a| (a.off, a.end)),
        );
        self.busy.extend(
            self.manual
                .iter()
                .filter(|&&(j, _)| conflicts(item, &items[j], slack))
                .map(|&(j, off)| (off, off + items[j].size)),
        );
        self.busy.sort_unstable();
        let free = (group == INDEXED).then_some(&self.free);
        let off = fit(&self.busy, &mut self.merged, item.size, self.mem, free)?;
        self.placed.push((k, item.partitions.0, off));
        let placed = Active {
            off,
            end: off + item.size,
            live: item.live,
            partitions: item.partitions,
            k,
        };
        if group == INDEXED {
            self.free.cover((slots(off), slots(placed.end)));
        }
        if self.slot.len() <= k {
            self.slot.resize(k + 1, None);
        }
        self.slot[k] = Some((group, self.active[group].len()));
        self.active[group].push(placed);
        self.ends.push(Reverse((item.live.last, k)));
        Some(off)
    }

    /// Active item `k` leaves `active`.
    fn leave(&mut self, k: usize) {
        let Some((group, i)) = self.slot[k].take() else {
            return;
        };
        let gone = self.active[group].swap_remove(i);
        if let Some(moved) = self.active[group].get(i) {
            self.slot[moved.k] = Some((group, i));
        }
        if group == INDEXED {
            self.free.uncover((slots(gone.off), slots(gone.end)));
        }
    }
}

/// The group of [`Placer::active`] an item belongs in once placed.
fn group_of(item: &Item) -> usize {
    if item.partitions.0 == 0 && item.partitions.1 > 0 && item.size > 0 {
        INDEXED
    } else {
        SCANNED
    }
}

/// The [`ALIGN`]-byte slot of an aligned byte offset.
fn slots(bytes: u64) -> u32 {
    u32::try_from(bytes / ALIGN).unwrap_or(u32::MAX)
}

/// The lowest offset where `size` bytes fit between the sorted `busy`
/// intervals and in the slots `free` leaves (when given; then `size` is
/// a positive multiple of [`ALIGN`]), honouring alignment and PSUM banks.
///
/// Every offset the search skips overlaps a busy interval or a covered
/// slot or breaks the alignment or bank rule, so the answer is the lowest
/// valid offset; the search walks the merged intervals once.
fn fit(
    busy: &[(u64, u64)],
    merged: &mut Vec<(u64, u64)>,
    size: u64,
    mem: Memory,
    free: Option<&FreeRuns>,
) -> Option<u64> {
    nkic_isa::intervals::join_sorted_into(busy.iter().copied(), merged);
    let mut next = 0usize;
    let mut cand = 0u64;
    loop {
        cand = cand.div_ceil(ALIGN) * ALIGN;
        if let Some(bank) = mem.bank {
            if size <= bank {
                if size > 0 && cand / bank != (cand + size - 1) / bank {
                    cand = cand.div_ceil(bank) * bank;
                }
            } else {
                cand = cand.div_ceil(bank) * bank;
            }
        }
        if cand + size > mem.capacity {
            return None;
        }
        while merged.get(next).is_some_and(|&(_, hi)| hi <= cand) {
            next += 1;
        }
        if let Some(&(lo, hi)) = merged.get(next)
            && lo < cand + size.max(1)
        {
            cand = hi;
            continue;
        }
        if let Some(free) = free {
            let at = u64::from(free.find(slots(cand), slots(size))?) * ALIGN;
            if at != cand {
                cand = at;
                continue;
            }
        }
        return Some(cand);
    }
}

/// The E0901/E0902 diagnostic for a memory that overflows.
fn overflow_diag(
    unit: &Unit<'_>,
    items: &[Item],
    failed: usize,
    mem: Memory,
    sources: &SourceMap,
) -> Diagnostic {
    // The peak: the position where the most bytes per partition are alive
    // (positions where some live range starts are the only candidates).
    let mut peak = (0u64, items[failed].live.first);
    for item in items {
        let p = item.live.first;
        let total: u64 = items
            .iter()
            .filter(|i| i.live.first <= p && p <= i.live.last)
            .map(|i| i.size)
            .sum();
        if total > peak.0 {
            peak = (total, p);
        }
    }
    let (total, at) = peak;
    let alive: Vec<&Item> = items
        .iter()
        .filter(|i| i.live.first <= at && at <= i.live.last)
        .collect();
    let code = if mem.buffer == Buffer::Psum {
        codes::PSUM_OVERFLOW
    } else {
        codes::SBUF_OVERFLOW
    };
    let failing = &unit.storages[items[failed].id];
    let message = if total > mem.capacity {
        format!(
            "the kernel's {} tensors do not fit: {total} bytes per partition are alive at the peak, {} more than the {} available",
            mem.buffer,
            total - mem.capacity,
            mem.capacity
        )
    } else {
        format!(
            "the kernel's {} tensors do not fit: {total} bytes per partition are alive at the peak, but no free range of {} bytes is left for {}",
            mem.buffer,
            items[failed].size,
            unit.storage_label(items[failed].id, sources)
        )
    };
    let mut d = diag_at(code, message, failing.loc, "this allocation does not fit");
    // One line per allocation site (the blocks of a legacy tensor, or the
    // tiles of unrolled iterations, share one), the largest
    // `MAX_OVERFLOW_SITES` in order of first use, and a summary of the rest.
    let mut sites: Vec<(String, Vec<&Item>)> = Vec::new();
    for item in &alive {
        let label = unit.storage_label(item.id, sources);
        match sites.iter_mut().find(|(l, _)| *l == label) {
            Some((_, group)) => group.push(item),
            None => sites.push((label, vec![item])),
        }
    }
    let bytes = |group: &[&Item]| group.iter().map(|i| i.size).sum::<u64>();
    let mut by_size: Vec<usize> = (0..sites.len()).collect();
    by_size.sort_by_key(|&k| std::cmp::Reverse(bytes(&sites[k].1)));
    // Leaving out a single site would save no line.
    let limit = if sites.len() > MAX_OVERFLOW_SITES + 1 {
        MAX_OVERFLOW_SITES
    } else {
        sites.len()
    };
    let shown: BTreeSet<usize> = by_size.iter().copied().take(limit).collect();
    for (k, (label, group)) in sites.iter().enumerate() {
        if !shown.contains(&k) {
            continue;
        }
        let total = bytes(group);
        let first = group[0];
        let same_size = group.iter().all(|i| i.size == first.size);
        let amount = match (group.len(), same_size) {
            (1, _) => format!("{total} bytes per partition"),
            (n, true) => format!(
                "{n} tensors × {} bytes = {total} bytes per partition",
                first.size
            ),
            (n, false) => format!("{n} tensors, {total} bytes per partition"),
        };
        d = d.with_note(format!("alive at the peak: {label} ({amount})"));
        let s = &unit.storages[first.id];
        if let Some(loc) = s.loc
            && group.iter().all(|i| i.id != items[failed].id)
        {
            let here = if group.len() == 1 {
                format!("{total} bytes per partition alive here")
            } else {
                format!(
                    "{} tensors, {total} bytes per partition alive here",
                    group.len()
                )
            };
            d = d.with_secondary(loc.file, loc.span, here);
        }
    }
    if sites.len() > shown.len() {
        let rest: Vec<&Item> = sites
            .iter()
            .enumerate()
            .filter(|(k, _)| !shown.contains(k))
            .flat_map(|(_, (_, g))| g.iter().copied())
            .collect();
        d = d.with_note(format!(
            "and {} more allocation sites alive at the peak ({} tensors, {} bytes per partition)",
            sites.len() - shown.len(),
            rest.len(),
            bytes(&rest)
        ));
    }
    let help = if mem.buffer == Buffer::Psum {
        "PSUM holds 8 banks of 2 KiB per partition: use smaller accumulation tiles or copy results out of PSUM sooner"
    } else {
        "use smaller tiles, or allocate tiles inside the loop that uses them so their lifetimes end sooner"
    };
    d.with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn item(first: u32, last: u32, partitions: (u64, u64), byte: u64, size: u64) -> Item {
        Item {
            id: 0,
            live: LiveRange { first, last },
            partitions,
            size,
            manual: Some(byte),
            shifts: &[],
        }
    }

    proptest! {
        /// The sweep finds exactly the pairs the definition names (alive
        /// together on common partitions, sharing bytes), in its order.
        #[test]
        fn overlapping_pairs_are_all_pairs_that_overlap(
            raw in proptest::collection::vec(
                (0u32..40, 0u32..10, 0u64..128, 1u64..64, 0u64..512, 1u64..256),
                0..40,
            )
        ) {
            let items: Vec<Item> = raw
                .iter()
                .map(|&(first, len, p, n, byte, size)| {
                    item(first, first + len, (p, (p + n).min(128)), byte, size)
                })
                .collect();
            let refs: Vec<&Item> = items.iter().collect();
            let mut expected = Vec::new();
            for (k, a) in refs.iter().enumerate() {
                for (j, b) in refs[..k].iter().enumerate() {
                    if manual_overlap(a, b) {
                        expected.push((k, j));
                    }
                }
            }
            prop_assert_eq!(overlapping_pairs(&refs), expected);
        }
    }
}
