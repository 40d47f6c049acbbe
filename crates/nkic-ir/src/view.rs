//! Views: strided windows onto a storage, the operands of every op.
//!
//! # Addressing
//!
//! A view has a dtype (normally its storage's; another one for a
//! reinterpreting view), an element `offset` and up to [`MAX_VIEW_DIMS`]
//! `[stride, count]` dims, outermost first, all counted in elements of the
//! *view's* dtype. The storage is seen as one flat byte array (on chip: the
//! partitions' rows laid end to end, `bytes_per_partition` apart). Element
//! `(i0, …, in)` of the view is at byte
//!
//! ```text
//! size · (offset + dyn + Σ_k stride_k · i_k)          size = dtype.size()
//! ```
//!
//! where `dyn = reg · scale` for a view with a [`DynOffset`] (the register
//! is read when the op runs). For SBUF and PSUM storages `dims[0]` is the
//! partition dim: its stride equals the storage's elements per partition
//! (in view elements), so the view covers partitions
//! `[start, start + dims[0].count)` and every partition accesses the same
//! bytes within its row; the remaining (at most four) dims are free dims
//! and stay inside one partition row. HBM views may have any pattern.
//!
//! A view may also be indirect ([`Indirection`]): its rows or columns are
//! chosen at run time by an index tensor. Dependency analysis then treats
//! the whole storage as touched.
//!
//! # Overlap
//!
//! [`overlap`] decides whether two views can touch a common byte. It first
//! compares storages, partition ranges and byte bounding boxes; when these
//! intersect it enumerates both views' contiguous byte runs (up to
//! [`EXACT_RUN_LIMIT`] per view) and intersects them exactly. Dynamic and
//! indirect views, and views with too many runs, answer
//! [`Overlap::MayOverlap`].

use nkic_isa::DType;

use crate::arena::Handle;
use crate::kernel::{Kernel, RegHandle, Storage, saturating_product};

/// The maximum number of `[stride, count]` dims of a view (partition dim
/// included for on-chip views).
pub const MAX_VIEW_DIMS: usize = 5;

/// The number of contiguous runs per view beyond which [`overlap`] stops
/// being exact and answers [`Overlap::MayOverlap`].
pub const EXACT_RUN_LIMIT: u64 = 1 << 16;

/// One dim of a view: `count` elements `stride` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ViewDim {
    pub stride: i64,
    pub count: u64,
}

impl ViewDim {
    pub fn new(stride: i64, count: u64) -> ViewDim {
        ViewDim { stride, count }
    }
}

/// A run-time element offset `reg · scale` (`.ap(scalar_offset=reg)`,
/// `nl.ds(reg, n)` starts, dynamic `select`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DynOffset {
    pub reg: RegHandle,
    /// View elements per unit of the register; may be negative.
    pub scale: i64,
}

/// A view whose rows or columns are chosen at run time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Indirection {
    /// `.ap(vector_offset=index, indirect_dim=0)` / `vector_select` on an
    /// HBM view: row `w` starts at `offset + index[w] · dims[0].stride`.
    Rows { index: Box<View> },
    /// `.indirect(index, num_elem)` (v4 tensor indirection) on an on-chip
    /// view: free position `i` is taken from `index[i % G, i / G]`.
    Columns { index: Box<View> },
}

impl Indirection {
    /// The index tensor.
    pub fn index(&self) -> &View {
        match self {
            Indirection::Rows { index } | Indirection::Columns { index } => index,
        }
    }

    /// The spelling in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            Indirection::Rows { .. } => "vector_offset",
            Indirection::Columns { .. } => "indirect",
        }
    }
}

/// A strided view of a storage; see the module doc for the addressing rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct View {
    pub storage: Handle<Storage>,
    pub dtype: DType,
    /// Element offset (in view elements) of element `(0, …, 0)`.
    pub offset: i64,
    pub dims: Vec<ViewDim>,
    pub dyn_offset: Option<DynOffset>,
    pub indirect: Option<Indirection>,
}

/// What [`overlap`] can say about two views.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Overlap {
    /// No byte is touched by both.
    Disjoint,
    /// Some byte is certainly touched by both.
    Overlapping,
    /// They may share bytes (dynamic addressing or too many runs to check).
    MayOverlap,
}

impl Overlap {
    /// True unless the views are proven disjoint: what a dependency graph needs.
    pub fn may_touch(self) -> bool {
        self != Overlap::Disjoint
    }
}

/// The bytes a view touches, resolved against its storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Partitions touched (`0..1` for HBM).
    pub partitions: std::ops::Range<u64>,
    /// Byte offset of element `(0, …)` within the partition row (on chip)
    /// or the storage (HBM), without the dynamic offset.
    pub base: i64,
    /// The dims that address bytes within a row: the free dims on chip,
    /// all dims in HBM. Strides in bytes.
    pub byte_dims: Vec<(i64, u64)>,
    /// Bytes per element.
    pub elem_bytes: i64,
    /// True when the view's placement depends on run-time values.
    pub dynamic: bool,
}

impl Footprint {
    /// `[lo, hi)` bounding box of the touched bytes within a row, or `None`
    /// for an empty view.
    pub fn byte_bounds(&self) -> Option<(i64, i64)> {
        if self.byte_dims.iter().any(|&(_, c)| c == 0) || self.partitions.is_empty() {
            return None;
        }
        let (mut lo, mut hi) = (self.base, self.base);
        for &(stride, count) in &self.byte_dims {
            let span = stride.saturating_mul(i64::try_from(count - 1).unwrap_or(i64::MAX));
            if span < 0 {
                lo = lo.saturating_add(span);
            } else {
                hi = hi.saturating_add(span);
            }
        }
        Some((lo, hi.saturating_add(self.elem_bytes)))
    }

    /// The number of contiguous runs after merging dims that continue the
    /// inner run, and the run length in bytes.
    fn run_shape(&self) -> (Vec<(i64, u64)>, i64) {
        let mut run = self.elem_bytes;
        let mut outer: Vec<(i64, u64)> = Vec::new();
        let mut merging = true;
        for &(stride, count) in self.byte_dims.iter().rev() {
            if count == 1 {
                continue;
            }
            if merging && stride == run {
                run = run.saturating_mul(i64::try_from(count).unwrap_or(i64::MAX));
            } else {
                merging = false;
                outer.push((stride, count));
            }
        }
        outer.reverse();
        (outer, run)
    }

    /// The contiguous byte runs `[start, end)` within a row, sorted and
    /// merged; `None` when there are more than `limit` runs.
    pub fn runs(&self, limit: u64) -> Option<Vec<(i64, i64)>> {
        let (outer, run) = self.run_shape();
        let n: u64 = outer
            .iter()
            .try_fold(1u64, |acc, &(_, c)| acc.checked_mul(c))?;
        if n > limit {
            return None;
        }
        if n == 0 {
            return Some(Vec::new());
        }
        // The runs in row-major order of the outer dims (an odometer;
        // `partial[k]` is the start with the dims up to `k` applied), noting
        // whether they come sorted, as they do for positive strides that
        // nest.
        let mut runs: Vec<(i64, i64)> = Vec::with_capacity(n as usize);
        let mut index = vec![0u64; outer.len()];
        let mut partial = vec![self.base; outer.len() + 1];
        let mut sorted = true;
        loop {
            let s = partial[outer.len()];
            if runs.last().is_some_and(|&(last, _)| s < last) {
                sorted = false;
            }
            runs.push((s, s.saturating_add(run)));
            // Advance the innermost dim that has room, resetting the ones
            // inside it.
            let Some(k) = (0..outer.len()).rev().find(|&k| index[k] + 1 < outer[k].1) else {
                break;
            };
            index[k] += 1;
            for j in k..outer.len() {
                if j > k {
                    index[j] = 0;
                }
                let (stride, _) = outer[j];
                partial[j + 1] = partial[j].saturating_add(stride.saturating_mul(index[j] as i64));
            }
        }
        if !sorted {
            runs.sort_unstable();
        }
        // Join in place the runs that overlap or touch.
        let mut kept = 0;
        for r in 0..runs.len() {
            let (s, e) = runs[r];
            if kept > 0 && s <= runs[kept - 1].1 {
                runs[kept - 1].1 = runs[kept - 1].1.max(e);
            } else {
                runs[kept] = (s, e);
                kept += 1;
            }
        }
        runs.truncate(kept);
        runs.shrink_to_fit();
        Some(runs)
    }
}

impl View {
    /// The whole storage `storage` of `st`, as a row-major view.
    pub fn full(storage: Handle<Storage>, st: &Storage) -> View {
        let strides = st.row_major_strides();
        View {
            storage,
            dtype: st.dtype,
            offset: 0,
            dims: st
                .shape
                .iter()
                .zip(strides)
                .map(|(&count, stride)| {
                    ViewDim::new(i64::try_from(stride).unwrap_or(i64::MAX), count)
                })
                .collect(),
            dyn_offset: None,
            indirect: None,
        }
    }

    /// A view from raw parts with no dynamic parts.
    pub fn new(storage: Handle<Storage>, dtype: DType, offset: i64, dims: &[ViewDim]) -> View {
        View {
            storage,
            dtype,
            offset,
            dims: dims.to_vec(),
            dyn_offset: None,
            indirect: None,
        }
    }

    /// The same view with a dynamic offset.
    pub fn with_dyn_offset(mut self, reg: RegHandle, scale: i64) -> View {
        self.dyn_offset = Some(DynOffset { reg, scale });
        self
    }

    /// Slices dim `dim` to the indices `start, start + step, …` below
    /// `stop`. `None` when `dim` does not exist, the range is empty or
    /// leaves the dim, or `step` is 0.
    ///
    /// This and the other view transformations below are pure geometry:
    /// NKI's rules about which dims of an on-chip tensor may be touched are
    /// the specializer's to check.
    pub fn slice(&self, dim: usize, start: u64, stop: u64, step: u64) -> Option<View> {
        let mut v = self.clone();
        v.slice_in_place(dim, start, stop, step).then_some(v)
    }

    /// [`View::slice`] without a copy: false (and `self` unchanged) where
    /// `slice` gives `None`.
    pub fn slice_in_place(&mut self, dim: usize, start: u64, stop: u64, step: u64) -> bool {
        let Some(&d) = self.dims.get(dim) else {
            return false;
        };
        if step == 0 || start >= stop || stop > d.count {
            return false;
        }
        let geometry = || -> Option<(i64, i64)> {
            let offset = self
                .offset
                .checked_add(i64::try_from(start).ok()?.checked_mul(d.stride)?)?;
            Some((offset, d.stride.checked_mul(i64::try_from(step).ok()?)?))
        };
        let Some((offset, stride)) = geometry() else {
            return false;
        };
        self.offset = offset;
        self.dims[dim] = ViewDim::new(stride, (stop - start).div_ceil(step));
        true
    }

    /// Fixes dim `dim` at `index` and removes it.
    pub fn select(&self, dim: usize, index: u64) -> Option<View> {
        let d = *self.dims.get(dim)?;
        if index >= d.count {
            return None;
        }
        let mut v = self.clone();
        v.offset = v
            .offset
            .checked_add(i64::try_from(index).ok()?.checked_mul(d.stride)?)?;
        v.dims.remove(dim);
        Some(v)
    }

    /// Reorders the dims: dim `k` of the result is dim `perm[k]` of `self`.
    /// `None` unless `perm` is a permutation of the dims.
    pub fn permute(&self, perm: &[usize]) -> Option<View> {
        let mut seen = vec![false; self.dims.len()];
        if perm.len() != self.dims.len() {
            return None;
        }
        for &p in perm {
            if std::mem::replace(seen.get_mut(p)?, true) {
                return None;
            }
        }
        let mut v = self.clone();
        v.dims = perm.iter().map(|&p| self.dims[p]).collect();
        Some(v)
    }

    /// Inserts a dim of count 1 at position `dim` (`0..=ndim`).
    pub fn insert_dim(&self, dim: usize) -> Option<View> {
        if dim > self.dims.len() {
            return None;
        }
        let mut v = self.clone();
        v.dims.insert(dim, ViewDim::new(0, 1));
        Some(v)
    }

    /// Stretches dim `dim`, which must have count 1, to `count` elements
    /// that all read the same element (stride 0).
    pub fn broadcast(&self, dim: usize, count: u64) -> Option<View> {
        if self.dims.get(dim)?.count != 1 || count == 0 {
            return None;
        }
        let mut v = self.clone();
        v.dims[dim] = ViewDim::new(0, count);
        Some(v)
    }

    /// Reinterprets the bytes as `dtype`: the last dim must be contiguous
    /// (stride 1); its count scales by the size ratio, and the offset and
    /// the other strides are converted to `dtype` elements. `None` when a
    /// value does not convert exactly, or the view is dynamic.
    pub fn reinterpret(&self, dtype: DType) -> Option<View> {
        if self.is_dynamic() {
            return None;
        }
        let old = i64::from(self.dtype.size());
        let new = i64::from(dtype.size());
        let last = self.dims.last()?;
        if last.stride != 1 && last.count > 1 {
            return None;
        }
        let convert = |x: i64| -> Option<i64> {
            let bytes = x.checked_mul(old)?;
            (bytes % new == 0).then_some(bytes / new)
        };
        let mut v = self.clone();
        v.dtype = dtype;
        v.offset = convert(self.offset)?;
        let n = v.dims.len();
        for d in &mut v.dims[..n - 1] {
            d.stride = convert(d.stride)?;
        }
        let last_count = convert(i64::try_from(last.count).ok()?)?;
        v.dims[n - 1] = ViewDim::new(1, u64::try_from(last_count).ok().filter(|&c| c > 0)?);
        Some(v)
    }

    /// The view's shape (dim counts).
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().map(|d| d.count).collect()
    }

    /// Number of elements.
    pub fn num_elements(&self) -> u64 {
        saturating_product(self.dims.iter().map(|d| d.count))
    }

    /// True when the view's addresses depend on run-time values.
    pub fn is_dynamic(&self) -> bool {
        self.dyn_offset.is_some() || self.indirect.is_some()
    }

    /// Registers the view reads (its dynamic offset and those of its index).
    pub fn registers(&self) -> Vec<RegHandle> {
        let mut regs: Vec<RegHandle> = self.dyn_offset.iter().map(|d| d.reg).collect();
        if let Some(ind) = &self.indirect {
            regs.extend(ind.index().registers());
        }
        regs
    }

    /// The partition count P of an on-chip view (`dims[0].count`); 1 for
    /// a view without dims.
    pub fn partition_count(&self) -> u64 {
        self.dims.first().map_or(1, |d| d.count)
    }

    /// Elements per partition F: the product of the free dim counts (all
    /// dims but the first).
    pub fn free_size(&self) -> u64 {
        saturating_product(self.dims.iter().skip(1).map(|d| d.count))
    }

    /// Bytes each partition moves (F × element size); for HBM views the
    /// first dim plays the partition role.
    pub fn bytes_per_partition(&self) -> u64 {
        self.free_size()
            .saturating_mul(u64::from(self.dtype.size()))
    }

    /// Resolves the view against its storage; `None` when the storage handle
    /// is out of range.
    pub fn footprint(&self, kernel: &Kernel) -> Option<Footprint> {
        let st = kernel.storages.try_get(self.storage)?;
        Some(self.footprint_in(st))
    }

    /// Resolves the view against `st`, which must be its storage.
    pub fn footprint_in(&self, st: &Storage) -> Footprint {
        let size = i64::from(self.dtype.size());
        let base = self.offset.saturating_mul(size);
        let dynamic = self.is_dynamic();
        let scaled = |d: &ViewDim| (d.stride.saturating_mul(size), d.count);
        if st.buffer.is_on_chip() {
            let row = i64::try_from(st.bytes_per_partition())
                .unwrap_or(i64::MAX)
                .max(1);
            let start = base.div_euclid(row);
            let within = base.rem_euclid(row);
            let p = self.partition_count();
            let start = u64::try_from(start).unwrap_or(0);
            Footprint {
                partitions: start..start.saturating_add(p),
                base: within,
                byte_dims: self.dims.iter().skip(1).map(scaled).collect(),
                elem_bytes: size,
                dynamic,
            }
        } else {
            Footprint {
                partitions: 0..1,
                base,
                byte_dims: self.dims.iter().map(scaled).collect(),
                elem_bytes: size,
                dynamic,
            }
        }
    }

    /// The partitions an on-chip view covers; `None` for HBM views or a
    /// dangling storage handle.
    pub fn partition_range(&self, kernel: &Kernel) -> Option<std::ops::Range<u64>> {
        let st = kernel.storages.try_get(self.storage)?;
        st.buffer
            .is_on_chip()
            .then(|| self.footprint_in(st).partitions)
    }
}

/// Decides whether views `a` and `b` of `kernel` can touch a common byte.
pub fn overlap(kernel: &Kernel, a: &View, b: &View) -> Overlap {
    if a.storage != b.storage {
        return Overlap::Disjoint;
    }
    let (Some(fa), Some(fb)) = (a.footprint(kernel), b.footprint(kernel)) else {
        return Overlap::MayOverlap;
    };
    let (Some(ba), Some(bb)) = (fa.byte_bounds(), fb.byte_bounds()) else {
        // An empty view touches nothing.
        return Overlap::Disjoint;
    };
    let on_chip = kernel
        .storages
        .try_get(a.storage)
        .is_some_and(|s| s.buffer.is_on_chip());
    // Dynamic offsets never move an on-chip view across partitions (the
    // verifier keeps them to free dims), so disjoint partition ranges are
    // proof even for dynamic views. Row indirection is HBM only.
    if on_chip
        && (fa.partitions.end <= fb.partitions.start || fb.partitions.end <= fa.partitions.start)
    {
        return Overlap::Disjoint;
    }
    if fa.dynamic || fb.dynamic {
        return Overlap::MayOverlap;
    }
    if ba.1 <= bb.0 || bb.1 <= ba.0 {
        return Overlap::Disjoint;
    }
    let (Some(ra), Some(rb)) = (fa.runs(EXACT_RUN_LIMIT), fb.runs(EXACT_RUN_LIMIT)) else {
        return Overlap::MayOverlap;
    };
    let (mut i, mut j) = (0, 0);
    while i < ra.len() && j < rb.len() {
        let (sa, ea) = ra[i];
        let (sb, eb) = rb[j];
        if sa < eb && sb < ea {
            return Overlap::Overlapping;
        }
        if ea <= eb {
            i += 1;
        } else {
            j += 1;
        }
    }
    Overlap::Disjoint
}
