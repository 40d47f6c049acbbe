//! Mapping views to machine access patterns, once the backend has placed
//! their storages.
//!
//! The IR addresses a storage in elements of the view's dtype
//! ([`view`](crate::view) module doc); an `nkic_isa::AccessPattern`
//! addresses memory in bytes with the partition axis split off. Given where
//! a storage lives ([`Placement`]), [`View::to_access_pattern`] performs
//! that translation:
//!
//! * on chip, the view's first dim becomes the partition range
//!   (`partition + first partition of the view`, `dims[0].count`) and the
//!   remaining dims the free dims; the byte offset is the placement's byte
//!   plus the view's byte offset within its partition row;
//! * in HBM, the first dim becomes the pattern's rows (`partition_count`,
//!   `partition_stride`) and the remaining dims the free dims; the byte
//!   offset is the placement's plus the view's;
//! * a dynamic offset of `reg · scale` elements becomes `phys · (scale ·
//!   size)` bytes, where `phys` is the physical register the backend chose.
//!
//! Indirect views have no single access pattern: the backend emits
//! `dma_gather`/`dma_scatter` with the index view as its own operand and
//! lowers the view [`without_indirection`](View::without_indirection).

use std::fmt;

use nkic_isa::{AccessPattern, Dim, Memory, Reg, TensorId};

use crate::kernel::Storage;
use crate::view::View;

/// Where the backend placed a storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// SBUF or PSUM: the first partition and the byte offset within every
    /// partition.
    OnChip { partition: u32, byte: u64 },
    /// An HBM tensor of the program and the byte offset of the storage in it.
    Hbm { tensor: TensorId, byte: u64 },
}

/// Why a view has no access pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LowerError {
    /// The view is indirect (see the module doc).
    Indirect,
    /// The view has a dynamic offset but no physical register was given.
    NoRegister,
    /// More free dims than `nkic_isa::MAX_DIMS`.
    TooManyDims(usize),
    /// A count, partition or offset does not fit the machine's fields, or
    /// the view starts before its storage.
    OutOfRange(&'static str),
    /// An on-chip placement for an HBM storage, or the reverse.
    WrongPlacement,
}

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LowerError::Indirect => f.write_str("an indirect view has no single access pattern"),
            LowerError::NoRegister => f.write_str("a dynamic offset needs a physical register"),
            LowerError::TooManyDims(n) => write!(
                f,
                "{n} free dims, more than the machine's {}",
                nkic_isa::MAX_DIMS
            ),
            LowerError::OutOfRange(what) => write!(f, "{what} out of range"),
            LowerError::WrongPlacement => {
                f.write_str("placement does not match the storage's buffer")
            }
        }
    }
}

impl std::error::Error for LowerError {}

impl View {
    /// The same view without its indirection (the rows or columns it would
    /// select if every index were its own position).
    pub fn without_indirection(&self) -> View {
        View {
            indirect: None,
            ..self.clone()
        }
    }

    /// The machine access pattern of this view of `st` placed at
    /// `placement`; `reg` is the physical register holding the dynamic
    /// offset's value, if the view has one.
    pub fn to_access_pattern(
        &self,
        st: &Storage,
        placement: Placement,
        reg: Option<Reg>,
    ) -> Result<AccessPattern, LowerError> {
        if self.indirect.is_some() {
            return Err(LowerError::Indirect);
        }
        let size = i64::from(self.dtype.size());
        let fp = self.footprint_in(st);
        let free: Vec<Dim> = self
            .dims
            .iter()
            .skip(1)
            .map(|d| {
                u32::try_from(d.count)
                    .map(|count| Dim::new(d.stride, count))
                    .map_err(|_| LowerError::OutOfRange("dim count"))
            })
            .collect::<Result<_, _>>()?;
        if free.len() > nkic_isa::MAX_DIMS {
            return Err(LowerError::TooManyDims(free.len()));
        }
        let rows = u32::try_from(self.partition_count())
            .map_err(|_| LowerError::OutOfRange("partition count"))?;
        let dyn_offset = match (&self.dyn_offset, reg) {
            (None, _) => None,
            (Some(_), None) => return Err(LowerError::NoRegister),
            (Some(d), Some(reg)) => Some(nkic_isa::DynOffset {
                reg,
                scale: d
                    .scale
                    .checked_mul(size)
                    .ok_or(LowerError::OutOfRange("dynamic scale"))?,
            }),
        };
        let add = |byte: u64, base: i64| {
            u64::try_from(base)
                .ok()
                .and_then(|b| byte.checked_add(b))
                .ok_or(LowerError::OutOfRange("offset"))
        };
        match (placement, st.buffer.is_on_chip()) {
            (Placement::OnChip { partition, byte }, true) => {
                let start = u32::try_from(fp.partitions.start)
                    .ok()
                    .and_then(|s| s.checked_add(partition))
                    .ok_or(LowerError::OutOfRange("partition"))?;
                Ok(AccessPattern {
                    mem: if st.buffer == crate::kernel::Buffer::Psum {
                        Memory::Psum
                    } else {
                        Memory::Sbuf
                    },
                    partition_start: start,
                    partition_count: rows,
                    partition_stride: 0,
                    offset: add(byte, fp.base)?,
                    dyn_offset,
                    dims: free,
                    dtype: self.dtype,
                })
            }
            (Placement::Hbm { tensor, byte }, false) => Ok(AccessPattern {
                mem: Memory::Hbm(tensor),
                partition_start: 0,
                partition_count: rows,
                partition_stride: self.dims.first().map_or(0, |d| d.stride),
                offset: add(byte, fp.base)?,
                dyn_offset,
                dims: free,
                dtype: self.dtype,
            }),
            _ => Err(LowerError::WrongPlacement),
        }
    }
}
