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
//! Every byte has an "initialised" bit (a `u64` bitset per memory). Writes
//! set it; reads of a clear bit fault or read poison (`Poison`). Input
//! tensors start initialised, everything else not.
//!
//! An access pattern is resolved once per instruction into a `View`: the
//! address of each partition row plus the byte offsets of the maximal
//! contiguous runs of a row in row-major order (a contiguous row is one
//! run, a broadcast row one run per element). Reads and writes then move
//! whole runs.

use nkic_isa::numerics;
use nkic_isa::{AccessPattern, DType, Memory as MemKind, Program, TensorKind};

use crate::config::Poison;
use crate::error::{FResult, Fault, SimErrorKind};

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

/// One memory: bytes plus their initialised bits.
pub(crate) struct Space {
    pub(crate) data: Vec<u8>,
    init: Vec<u64>,
}

impl Space {
    fn new(len: usize) -> Space {
        Space {
            data: vec![0; len],
            init: vec![0; len.div_ceil(64)],
        }
    }

    fn initialised(bytes: Vec<u8>) -> Space {
        let n = bytes.len();
        Space {
            data: bytes,
            init: vec![u64::MAX; n.div_ceil(64)],
        }
    }

    /// The first byte in `start..end` never written.
    pub(crate) fn first_uninit(&self, start: usize, end: usize) -> Option<usize> {
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
        let mut i = start;
        while i < end {
            let w = i / 64;
            let bit = i % 64;
            let hi = (end - w * 64).min(64);
            self.init[w] |= bits_mask(bit, hi);
            i = w * 64 + hi;
        }
    }
}

/// Bits `lo..hi` of a word (`hi ≤ 64`).
#[inline]
fn bits_mask(lo: usize, hi: usize) -> u64 {
    let upper = if hi >= 64 { u64::MAX } else { (1u64 << hi) - 1 };
    upper & (u64::MAX << lo)
}

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
    partitions: usize,
    sbuf_stride: usize,
    sbuf_limit: usize,
    psum_stride: usize,
    poison: Poison,
    pub hbm_read: u64,
    pub hbm_written: u64,
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
    /// ones.
    pub fn for_cores(cores: &[Program], poison: Poison) -> MemoryState {
        let target = cores.first().map_or(nkic_isa::Target::Trn3, |p| p.target);
        let f = target.figures();
        let partitions = f.sbuf_partitions as usize;
        let mut hbm = Vec::new();
        let mut hbm_names = Vec::new();
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
                        hbm.push(Space::new(usize::try_from(t.bytes()).unwrap_or(0)));
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
                .map(|_| Space::new(partitions * f.sbuf_bytes_per_partition as usize))
                .collect(),
            psum: (0..cores_n)
                .map(|_| Space::new(partitions * f.psum_bytes_per_partition as usize))
                .collect(),
            hbm,
            hbm_map,
            core: 0,
            hbm_names,
            partitions,
            sbuf_stride: f.sbuf_bytes_per_partition as usize,
            sbuf_limit: f.sbuf_usable_bytes_per_partition as usize,
            psum_stride: f.psum_bytes_per_partition as usize,
            poison,
            hbm_read: 0,
            hbm_written: 0,
        }
    }

    /// Sets HBM tensor `index` to `bytes`, all initialised.
    pub fn load_tensor(&mut self, index: usize, bytes: Vec<u8>) {
        if let Some(t) = self.hbm.get_mut(index) {
            *t = Space::initialised(bytes);
        }
    }

    /// The bytes of HBM tensor `index`, with the first never-written byte
    /// if there is one (then the bytes hold poison per the policy).
    pub fn tensor_bytes(&self, index: usize, dtype: DType) -> (Vec<u8>, Option<usize>) {
        let Some(t) = self.hbm.get(index) else {
            return (Vec::new(), None);
        };
        let first = t.first_uninit(0, t.data.len());
        let mut bytes = t.data.clone();
        if first.is_some() {
            let size = dtype.size() as usize;
            let poison = self.poison_bytes(dtype);
            for (e, chunk) in bytes.chunks_mut(size).enumerate() {
                if t.first_uninit(e * size, e * size + chunk.len()).is_some() {
                    chunk.copy_from_slice(&poison[..chunk.len()]);
                }
            }
        }
        (bytes, first)
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
        self.check_bounds(&v, ap, write)?;
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
                let r = regs.get(usize::from(d.reg.0)).copied().ok_or_else(|| {
                    Fault::bad(format!(
                        "`{field}` uses register {} which does not exist",
                        d.reg
                    ))
                })?;
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
                let Some(&global) = self
                    .hbm_map
                    .get(self.core)
                    .and_then(|m| m.get(id.0 as usize))
                else {
                    return Err(Fault::bad(format!(
                        "`{field}` names HBM tensor #{} which does not exist",
                        id.0
                    )));
                };
                if ap.partition_start != 0 {
                    return Err(Fault::bad(format!(
                        "`{field}` on HBM must start at partition 0"
                    )));
                }
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
            Poison::Nan if dtype.is_float() => {
                let mut out = Vec::with_capacity(size);
                numerics::encode(dtype, &vec![f32::NAN; numerics::lanes(dtype)], &mut out);
                out
            }
            _ => vec![0; size],
        }
    }

    fn uninit_fault(&self, v: &View, addr: usize) -> Fault {
        let place = match v.space {
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
        };
        Fault::new(
            SimErrorKind::UninitialisedRead,
            format!(
                "read of uninitialised memory through `{}`: {place} was never written",
                v.field
            ),
        )
    }

    /// Appends the raw bytes of every element of `v`, row-major.
    pub fn read_raw(&mut self, v: &View, out: &mut Vec<u8>) -> FResult<()> {
        let run_bytes = v.run_len * v.size;
        out.reserve(v.elements() * v.size);
        let space = self.space(v.space);
        let mut poison: Option<Vec<u8>> = None;
        for p in 0..v.rows {
            let base = v.row_addr(p);
            for &r in &v.runs {
                let a = (base + r) as usize;
                let e = a + run_bytes;
                match space.first_uninit(a, e) {
                    None => out.extend_from_slice(&space.data[a..e]),
                    Some(bad) => {
                        if self.poison == Poison::Error {
                            return Err(self.uninit_fault(v, bad));
                        }
                        let pb = poison.get_or_insert_with(|| self.poison_bytes(v.dtype));
                        for el in (a..e).step_by(v.size) {
                            if space.first_uninit(el, el + v.size).is_some() {
                                out.extend_from_slice(pb);
                            } else {
                                out.extend_from_slice(&space.data[el..el + v.size]);
                            }
                        }
                    }
                }
            }
        }
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_read += (v.elements() * v.size) as u64;
        }
        Ok(())
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
        match space.first_uninit(a, a + v.size) {
            None => out.extend_from_slice(&space.data[a..a + v.size]),
            Some(bad) => {
                if self.poison == Poison::Error {
                    return Err(self.uninit_fault(v, bad));
                }
                let pb = self.poison_bytes(v.dtype);
                out.extend_from_slice(&pb);
            }
        }
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_read += v.size as u64;
        }
        Ok(())
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
        let space = self.space_mut(v.space);
        let mut k = 0;
        for p in 0..v.rows {
            let base = v.row_addr(p);
            for &r in &v.runs {
                let a = (base + r) as usize;
                space.data[a..a + run_bytes].copy_from_slice(&bytes[k..k + run_bytes]);
                space.mark(a, a + run_bytes);
                k += run_bytes;
            }
        }
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_written += bytes.len() as u64;
        }
        Ok(())
    }

    /// Writes one element's bytes.
    pub fn write_elem(&mut self, v: &View, p: usize, i: usize, bytes: &[u8]) {
        let a = v.addr(p, i) as usize;
        let n = bytes.len().min(v.size);
        let space = self.space_mut(v.space);
        space.data[a..a + n].copy_from_slice(&bytes[..n]);
        space.mark(a, a + n);
        if let SpaceId::Hbm(_) = v.space {
            self.hbm_written += n as u64;
        }
    }

    /// The values of every element of `v` as `f32`, row-major (four per
    /// element for packed x4 dtypes).
    pub fn read_f32(&mut self, v: &View) -> FResult<Vec<f32>> {
        let mut raw = Vec::new();
        self.read_raw(v, &mut raw)?;
        let mut out = Vec::with_capacity(v.elements() * numerics::lanes(v.dtype));
        numerics::decode(v.dtype, &raw, &mut out);
        Ok(out)
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
        let mut s = Space::new(300);
        assert_eq!(s.first_uninit(0, 300), Some(0));
        s.mark(3, 200);
        assert_eq!(s.first_uninit(3, 200), None);
        assert_eq!(s.first_uninit(0, 4), Some(0));
        assert_eq!(s.first_uninit(150, 201), Some(200));
        s.mark(0, 300);
        assert_eq!(s.first_uninit(0, 300), None);
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
            "out-of-bounds read of sbuf partitions 120..136 (limit 128) through `src`"
        );
        let ap = AccessPattern::psum(0, 1, 16_380, &[Dim::new(1, 2)], DType::F32);
        let err = m.view(&ap, &[0; 64], "dst", true).unwrap_err();
        assert_eq!(
            err.message,
            "out-of-bounds write of psum bytes 16380..16388 of each partition (limit 16384) through `dst`"
        );
    }
}
