//! Operands: access patterns over HBM, SBUF and PSUM, scalar operands,
//! immediates and registers.
//!
//! # Memory model
//!
//! * **SBUF** and **PSUM** are arrays of partitions (128 each). Every
//!   partition is its own byte-addressed space: SBUF holds
//!   `sbuf_bytes_per_partition` bytes per partition (an access pattern must
//!   stay below the *usable* size), PSUM 16 KiB (8 banks of 2 KiB).
//! * **HBM** holds the program's tensors (`Program::hbm`); each tensor is its
//!   own byte array of `numel × dtype.size()` bytes, row-major.
//!
//! # Access patterns
//!
//! An `AccessPattern` selects a logical tensor of shape
//! `[partition_count, dims[0].count, …, dims[n-1].count]` (the partition axis
//! first, then up to four free dims, row-major). Element
//! `(p, i0, …, i{n-1})` lives at
//!
//! * on chip: partition `partition_start + p`, byte
//!   `offset + dyn + size · Σ_k i_k · dims[k].stride`;
//! * in HBM: byte `offset + dyn + size · (p · partition_stride + Σ_k i_k · dims[k].stride)`
//!   of the tensor (`partition_start` must be 0),
//!
//! where `size = dtype.size()` and `dyn = reg · scale` when the pattern has a
//! dynamic offset (the register is read from the executing queue when the
//! instruction starts). Strides are in elements and may be 0 (broadcast) or
//! negative. `partition_stride` is meaningful only for HBM and must be 0 on
//! chip. A pattern with no dims has one element per partition.
//!
//! "F" (free size) is the product of the dim counts; most instructions need
//! equal P and equal F across operands and walk the free elements in
//! row-major order, so their free shapes may differ.

use std::fmt;

use crate::dtype::DType;

/// Index of an HBM tensor in `Program::hbm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub u32);

/// A sequencer register, `r0`..`r63`. Each queue has its own register file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u8);

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// The memory an access pattern addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Memory {
    Hbm(TensorId),
    Sbuf,
    Psum,
}

impl Memory {
    /// True for SBUF and PSUM.
    pub fn is_on_chip(self) -> bool {
        !matches!(self, Memory::Hbm(_))
    }
}

/// One free dimension: `count` elements `stride` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    pub stride: i64,
    pub count: u32,
}

impl Dim {
    pub fn new(stride: i64, count: u32) -> Dim {
        Dim { stride, count }
    }
}

/// A runtime byte offset `reg · scale` added to a pattern's offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DynOffset {
    pub reg: Reg,
    /// Bytes per unit of the register (may be negative).
    pub scale: i64,
}

/// The maximum number of free dims of an access pattern.
pub const MAX_DIMS: usize = 4;

/// The largest count of one dim (the hardware descriptor's 16-bit field).
pub const MAX_DIM_COUNT: u32 = 65_535;

/// A strided view of memory; see the module doc for the addressing rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AccessPattern {
    pub mem: Memory,
    pub partition_start: u32,
    pub partition_count: u32,
    /// HBM only: elements between consecutive partition rows.
    pub partition_stride: i64,
    /// Byte offset: within each partition on chip, within the tensor in HBM.
    pub offset: u64,
    pub dyn_offset: Option<DynOffset>,
    /// Up to `MAX_DIMS` free dims, outermost first.
    pub dims: Vec<Dim>,
    pub dtype: DType,
}

impl AccessPattern {
    /// An SBUF pattern.
    pub fn sbuf(start: u32, count: u32, offset: u64, dims: &[Dim], dtype: DType) -> Self {
        AccessPattern {
            mem: Memory::Sbuf,
            partition_start: start,
            partition_count: count,
            partition_stride: 0,
            offset,
            dyn_offset: None,
            dims: dims.to_vec(),
            dtype,
        }
    }

    /// A PSUM pattern.
    pub fn psum(start: u32, count: u32, offset: u64, dims: &[Dim], dtype: DType) -> Self {
        AccessPattern {
            mem: Memory::Psum,
            ..AccessPattern::sbuf(start, count, offset, dims, dtype)
        }
    }

    /// An HBM pattern of `rows` rows `row_stride` elements apart.
    pub fn hbm(
        tensor: TensorId,
        rows: u32,
        row_stride: i64,
        offset: u64,
        dims: &[Dim],
        dtype: DType,
    ) -> Self {
        AccessPattern {
            mem: Memory::Hbm(tensor),
            partition_start: 0,
            partition_count: rows,
            partition_stride: row_stride,
            offset,
            dyn_offset: None,
            dims: dims.to_vec(),
            dtype,
        }
    }

    /// The same pattern with a dynamic offset.
    pub fn with_dyn_offset(mut self, reg: Reg, scale: i64) -> Self {
        self.dyn_offset = Some(DynOffset { reg, scale });
        self
    }

    /// Elements per partition (F): the product of the dim counts
    /// (saturating: absurd patterns from user text must not overflow).
    pub fn free_size(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |acc, d| acc.saturating_mul(u64::from(d.count)))
    }

    /// The same elements in the same row-major order with every dim whose
    /// count is above [`MAX_DIM_COUNT`] split in two (`[c, s]` becomes
    /// `[c / k, s·k][k, s]`, `k` the largest divisor of `c` that fits), as
    /// long as the pattern has room for another dim and the count has such
    /// a divisor. For instructions that read their operands as flat rows
    /// (DMA copies); the verifier still rejects what cannot be split.
    pub fn with_long_dims_split(mut self) -> AccessPattern {
        while self.dims.len() < MAX_DIMS {
            let Some(at) = self.dims.iter().position(|d| d.count > MAX_DIM_COUNT) else {
                break;
            };
            let d = self.dims[at];
            let Some(k) = (1..=MAX_DIM_COUNT)
                .rev()
                .find(|&k| d.count.is_multiple_of(k) && d.count / k <= MAX_DIM_COUNT)
            else {
                break;
            };
            self.dims[at] = Dim::new(d.stride.saturating_mul(i64::from(k)), d.count / k);
            self.dims.insert(at + 1, Dim::new(d.stride, k));
        }
        self
    }

    /// Distinct elements per partition: the free size without the dims of
    /// stride 0 (a broadcast reads the same elements again).
    pub fn distinct_free_size(&self) -> u64 {
        self.dims
            .iter()
            .filter(|d| d.stride != 0)
            .fold(1u64, |acc, d| acc.saturating_mul(u64::from(d.count)))
    }

    /// All elements: P × F.
    pub fn num_elements(&self) -> u64 {
        u64::from(self.partition_count).saturating_mul(self.free_size())
    }

    /// The logical shape `[P, d0, …]`.
    pub fn shape(&self) -> Vec<u64> {
        std::iter::once(u64::from(self.partition_count))
            .chain(self.dims.iter().map(|d| u64::from(d.count)))
            .collect()
    }

    /// Bytes per element.
    pub fn elem_bytes(&self) -> u64 {
        u64::from(self.dtype.size())
    }

    /// The lowest and one-past-highest byte touched by the free dims
    /// relative to `offset` (ignoring the dynamic offset and, for HBM, the
    /// partition stride). `None` when the pattern is empty.
    pub fn free_byte_extent(&self) -> Option<(i64, i64)> {
        if self.dims.iter().any(|d| d.count == 0) || self.partition_count == 0 {
            return None;
        }
        let size = i64::from(self.dtype.size());
        let (mut lo, mut hi) = (0i64, 0i64);
        for d in &self.dims {
            let span = d.stride.saturating_mul(i64::from(d.count) - 1);
            if span < 0 {
                lo = lo.saturating_add(span);
            } else {
                hi = hi.saturating_add(span);
            }
        }
        Some((
            lo.saturating_mul(size),
            hi.saturating_mul(size).saturating_add(size),
        ))
    }

    /// The static byte range `[lo, hi)` the pattern touches: per partition
    /// on chip, within the tensor in HBM. Ignores the dynamic offset.
    /// `None` when the pattern is empty.
    pub fn byte_range(&self) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = self.free_byte_extent()?;
        if let Memory::Hbm(_) = self.mem {
            let size = i64::from(self.dtype.size());
            let span = self
                .partition_stride
                .saturating_mul(i64::from(self.partition_count) - 1)
                .saturating_mul(size);
            if span < 0 {
                lo = lo.saturating_add(span);
            } else {
                hi = hi.saturating_add(span);
            }
        }
        let base = i64::try_from(self.offset).unwrap_or(i64::MAX);
        Some((base.saturating_add(lo), base.saturating_add(hi)))
    }

    /// The innermost dim's stride in bytes (the element size when there are
    /// no dims); used by the stride penalty of the cost model.
    pub fn innermost_stride_bytes(&self) -> u64 {
        match self.dims.last() {
            Some(d) => d.stride.unsigned_abs().saturating_mul(self.elem_bytes()),
            None => self.elem_bytes(),
        }
    }

    /// True when every partition's elements form one contiguous run in
    /// row-major order (each dim's stride equals the product of the inner
    /// counts).
    pub fn is_contiguous(&self) -> bool {
        let mut expect: i64 = 1;
        for d in self.dims.iter().rev() {
            if d.count > 1 && d.stride != expect {
                return false;
            }
            expect = expect.saturating_mul(i64::from(d.count));
        }
        true
    }

    /// The number of maximal contiguous byte runs per partition (row); a DMA
    /// moves each run as one chunk.
    pub fn contiguous_runs_per_partition(&self) -> u64 {
        // Merge dims from the innermost outwards while they stay contiguous.
        let mut run: i64 = 1;
        let mut runs: u64 = 1;
        let mut merging = true;
        for d in self.dims.iter().rev() {
            if merging && (d.count <= 1 || d.stride == run) {
                run = run.saturating_mul(i64::from(d.count));
            } else {
                merging = false;
                runs = runs.saturating_mul(u64::from(d.count));
            }
        }
        runs
    }

    /// Bytes in one partition row.
    pub fn bytes_per_partition(&self) -> u64 {
        self.free_size().saturating_mul(self.elem_bytes())
    }
}

/// A 32-bit float stored by its bits, so NaN payloads survive and equality
/// is bitwise (programs compare equal after a text round trip).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fp32(pub u32);

impl Fp32 {
    pub fn new(value: f32) -> Fp32 {
        Fp32(value.to_bits())
    }

    pub fn get(self) -> f32 {
        f32::from_bits(self.0)
    }

    /// The `.nkasm` spelling: Rust's shortest round-trip form for numbers
    /// (`1.0`, `-0.0`, `1e-7`, `inf`, `-inf`) and `nan:0x7fc00000` (the raw
    /// bits) for NaNs.
    pub fn to_text(self) -> String {
        let v = self.get();
        if v.is_nan() {
            format!("nan:{:#010x}", self.0)
        } else {
            format!("{v:?}")
        }
    }

    /// Parses the spelling of `to_text` (and any other Rust float literal).
    pub fn parse(text: &str) -> Option<Fp32> {
        if let Some(bits) = text.strip_prefix("nan:0x") {
            let bits = u32::from_str_radix(bits, 16).ok()?;
            return f32::from_bits(bits).is_nan().then_some(Fp32(bits));
        }
        // Reject spellings `f32::from_str` accepts but the format does not
        // use, so that every float has a single text form plus plain decimals.
        let lower = text.to_ascii_lowercase();
        if lower.contains("nan") || lower.contains("infinity") || text.starts_with('+') {
            return None;
        }
        text.parse::<f32>().ok().map(Fp32::new)
    }
}

impl fmt::Debug for Fp32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl From<f32> for Fp32 {
    fn from(value: f32) -> Fp32 {
        Fp32::new(value)
    }
}

/// A compile-time immediate of `memset`: an integer for integer dtypes, a
/// float for float dtypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Imm {
    Int(i64),
    Float(Fp32),
}

/// A scalar operand: an fp32 immediate, or a `(P, 1)` vector (one value per
/// partition, broadcast along the free dims).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    Imm(Fp32),
    Vector(AccessPattern),
}

impl Scalar {
    /// An immediate scalar.
    pub fn imm(value: f32) -> Scalar {
        Scalar::Imm(Fp32::new(value))
    }

    /// The vector operand, if this is one.
    pub fn as_vector(&self) -> Option<&AccessPattern> {
        match self {
            Scalar::Vector(ap) => Some(ap),
            Scalar::Imm(_) => None,
        }
    }
}

/// A register or a 32-bit immediate (second operand of `reg_alu`/`branch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegOrImm {
    Reg(Reg),
    Imm(i32),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_extents() {
        let ap = AccessPattern::sbuf(0, 128, 512, &[Dim::new(8, 4), Dim::new(1, 8)], DType::F32);
        assert_eq!(ap.free_size(), 32);
        assert_eq!(ap.shape(), vec![128, 4, 8]);
        assert_eq!(ap.byte_range(), Some((512, 512 + 32 * 4)));
        assert!(ap.is_contiguous());
        assert_eq!(ap.contiguous_runs_per_partition(), 1);

        let strided =
            AccessPattern::sbuf(0, 1, 100, &[Dim::new(-16, 4), Dim::new(1, 8)], DType::BF16);
        assert_eq!(strided.byte_range(), Some((100 - 96, 100 + 16)));
        assert!(!strided.is_contiguous());
        assert_eq!(strided.contiguous_runs_per_partition(), 4);

        let hbm = AccessPattern::hbm(TensorId(0), 128, 1024, 0, &[Dim::new(1, 512)], DType::F32);
        assert_eq!(hbm.byte_range(), Some((0, (127 * 1024 + 512) * 4)));
        assert_eq!(hbm.bytes_per_partition(), 2048);
    }

    #[test]
    fn broadcast_is_not_contiguous() {
        let ap = AccessPattern::sbuf(0, 4, 0, &[Dim::new(0, 16)], DType::F32);
        assert!(!ap.is_contiguous());
        assert_eq!(ap.byte_range(), Some((0, 4)));
    }

    #[test]
    fn floats_round_trip_by_bits() {
        for v in [
            1.0f32,
            -0.0,
            1e-7,
            3.4028235e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.1,
        ] {
            let f = Fp32::new(v);
            assert_eq!(Fp32::parse(&f.to_text()), Some(f), "{v}");
        }
        let nan = Fp32(0x7fc0_0001);
        assert_eq!(nan.to_text(), "nan:0x7fc00001");
        assert_eq!(Fp32::parse("nan:0x7fc00001"), Some(nan));
        assert_eq!(Fp32::parse("nan:0x00000001"), None);
        assert_eq!(Fp32::parse("NaN"), None);
        assert_eq!(Fp32::parse("2"), Some(Fp32::new(2.0)));
    }

    /// Element offsets of one partition in row-major order.
    fn offsets(ap: &AccessPattern) -> Vec<i64> {
        let mut out = vec![0i64];
        for d in &ap.dims {
            out = out
                .iter()
                .flat_map(|&o| (0..i64::from(d.count)).map(move |i| o + i * d.stride))
                .collect();
        }
        out
    }

    #[test]
    fn long_dims_split_keep_the_elements_and_their_order() {
        let long = AccessPattern::sbuf(
            0,
            1,
            0,
            &[Dim::new(3, 2), Dim::new(2, 131_072)],
            DType::BF16,
        );
        let split = long.clone().with_long_dims_split();
        assert_eq!(
            split.dims,
            vec![Dim::new(3, 2), Dim::new(65_536, 4), Dim::new(2, 32_768)]
        );
        assert_eq!(offsets(&split), offsets(&long));
        // A prime count above the limit cannot be split; a pattern with no
        // room for another dim is left as it is (the verifier rejects both).
        let prime = AccessPattern::sbuf(0, 1, 0, &[Dim::new(1, 65_537)], DType::U8);
        assert_eq!(prime.clone().with_long_dims_split(), prime);
        let full = [
            Dim::new(1, 2),
            Dim::new(1, 2),
            Dim::new(1, 2),
            Dim::new(1, 70_000),
        ];
        let full = AccessPattern::sbuf(0, 1, 0, &full, DType::U8);
        assert_eq!(full.clone().with_long_dims_split(), full);
    }
}
