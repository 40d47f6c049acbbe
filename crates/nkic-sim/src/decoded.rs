//! Matmul operands kept decoded for the next matmul that reads the same
//! bytes.
//!
//! A tiled matmul reads each operand tile several times: the moving tile
//! of a column block once per row tile, the stationary tile once per
//! column block. Decoding it to f32 again each time (and reading it into
//! padded rows) was most of the stepping thread's work in a bf16 matmul.
//! `MemoryState::read_operand` keeps the values of the last operands it
//! decoded with a copy of the bytes they came from, and gives the same
//! values again only when the view is the same and its bytes, all written
//! and defined, are equal to that copy byte for byte: no write anywhere
//! needs to tell the cache, and a value can only come from the bytes it
//! decodes. Reading a clean view records nothing (no written bit, no
//! definedness, no fault), so a hit leaves the memory's bookkeeping as a
//! decode would; only the HBM read count is added, as `read_f32` does.
//!
//! The cache holds at most `DECODED_BYTES` of values and copies, least
//! recently used first out.

use std::sync::{Arc, OnceLock};

use nkic_isa::DType;

use crate::matmul::Magnitudes;
use crate::memory::{SpaceId, View};

/// An operand's values, with their magnitudes (`Magnitudes::of`) once a
/// matmul has asked for them: the test of exact products scans every
/// value of a bf16 operand, once per operand instead of once per use.
pub(crate) struct Values {
    values: Vec<f32>,
    magnitudes: OnceLock<Option<Magnitudes>>,
}

impl Values {
    pub fn new(values: Vec<f32>) -> Values {
        Values {
            values,
            magnitudes: OnceLock::new(),
        }
    }

    /// `Magnitudes::of` the values, computed on first use.
    pub fn magnitudes(&self) -> Option<&Magnitudes> {
        self.magnitudes
            .get_or_init(|| Magnitudes::of(&self.values))
            .as_ref()
    }

    /// The buffer, for reuse.
    pub fn into_vec(self) -> Vec<f32> {
        self.values
    }
}

impl std::ops::Deref for Values {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        &self.values
    }
}

/// Whether every product of a value of `s` and one of `v` is exact in
/// f32 (`matmul::Magnitudes::products_exact`).
pub(crate) fn products_exact(s: &Values, v: &Values) -> bool {
    Magnitudes::products_exact(s.magnitudes(), v.magnitudes())
}

/// The most buffers of evicted values the cache keeps for reuse.
const SPARE_BUFFERS: usize = 4;

/// The most bytes of values and byte copies the cache keeps: the moving
/// operands of a 128-row tile's contraction (eight 128 × 512 tiles) and
/// the stationary ones between their uses.
const DECODED_BYTES: usize = 6 << 20;

/// What a matmul operand read is: the view's bytes and how its values
/// are laid out (`read_f32`, or rows `stride` values apart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    space: SpaceId,
    dtype: DType,
    rows: usize,
    row_base: i64,
    row_step: i64,
    run_len: usize,
    runs: Vec<i64>,
    stride: Option<usize>,
}

impl Key {
    /// `None` for views whose rows are not `row_base + p · row_step`
    /// (the rows of an indirect DMA, never an operand here).
    pub fn of(v: &View, stride: Option<usize>) -> Option<Key> {
        v.row_addrs.is_none().then(|| Key {
            space: v.space,
            dtype: v.dtype,
            rows: v.rows,
            row_base: v.row_base,
            row_step: v.row_step,
            run_len: v.run_len,
            runs: v.runs.clone(),
            stride,
        })
    }
}

struct Entry {
    key: Key,
    /// The view's bytes when they were decoded, row by row, run by run.
    bytes: Vec<u8>,
    values: Arc<Values>,
}

impl Entry {
    fn size(&self) -> usize {
        self.bytes.len() + 4 * self.values.len()
    }
}

/// The decoded operands, least recently used first.
#[derive(Default)]
pub(crate) struct Decoded {
    entries: Vec<Entry>,
    size: usize,
    /// Buffers of evicted values no matmul holds any more.
    spare: Vec<Vec<f32>>,
}

impl Decoded {
    /// Whether an operand of `bytes` bytes may be kept: its copy and its
    /// values (at least as many bytes again) fit the cache with room to
    /// spare, so that one too large to keep is not copied for nothing.
    pub fn fits(bytes: usize) -> bool {
        bytes.saturating_mul(3) <= DECODED_BYTES
    }

    /// The values of `key` if its bytes were `equal` to the copy kept
    /// with them (which `equal` compares with the memory's).
    pub fn get(&mut self, key: &Key, equal: impl Fn(&[u8]) -> bool) -> Option<Arc<Values>> {
        let i = self.entries.iter().rposition(|e| e.key == *key)?;
        if !equal(&self.entries[i].bytes) {
            let stale = self.entries.remove(i);
            self.size -= stale.size();
            self.keep(stale);
            return None;
        }
        let entry = self.entries.remove(i);
        let values = Arc::clone(&entry.values);
        self.entries.push(entry);
        Some(values)
    }

    /// Keeps `values`, decoded from `bytes`, for `key`.
    pub fn put(&mut self, key: Key, bytes: Vec<u8>, values: Arc<Values>) {
        let entry = Entry { key, bytes, values };
        if entry.size() > DECODED_BYTES {
            return;
        }
        self.size += entry.size();
        self.entries.push(entry);
        let mut evicted = 0;
        while self.size > DECODED_BYTES {
            self.size -= self.entries[evicted].size();
            evicted += 1;
        }
        let gone: Vec<Entry> = self.entries.drain(..evicted).collect();
        for entry in gone {
            self.keep(entry);
        }
    }

    /// A buffer of evicted values, if one is free.
    pub fn spare(&mut self) -> Option<Vec<f32>> {
        let mut buffer = self.spare.pop()?;
        buffer.clear();
        Some(buffer)
    }

    /// Keeps an evicted entry's buffer when nothing else holds it.
    fn keep(&mut self, entry: Entry) {
        if self.spare.len() < SPARE_BUFFERS
            && let Ok(values) = Arc::try_unwrap(entry.values)
        {
            self.spare.push(values.into_vec());
        }
    }
}
