//! Matmul operands kept decoded for the next matmul that reads the same
//! bytes.
//!
//! A tiled matmul reads each operand tile several times: the moving tile
//! of a column block once per row tile, the stationary tile once per
//! column block. Decoding it to f32 again each time (and reading it into
//! padded rows) was most of the stepping thread's work in a bf16 matmul.
//! `MemoryState::read_operand` keeps the values of the last operands it
//! decoded with the count of writes to their memory at that time
//! (`Space::track_writes`), and gives the same values again only when the
//! view is the same, its bytes are all written and defined, and no write
//! since touched them (each write stamps the blocks it changes with a
//! higher count: `Space::stamps`). An earlier build kept a copy of the
//! bytes and compared it instead; copying and comparing every operand
//! was a fifth of the stepping thread in the 8K `attention_bwd`. Debug
//! builds decode every hit again and assert the values are the same, so
//! the test suite checks that no write goes unstamped. Reading a clean
//! view records nothing (no written bit, no definedness, no fault), so a
//! hit leaves the memory's bookkeeping as a decode would; only the HBM
//! read count is added, as `read_f32` does.
//!
//! The cache holds at most `DECODED_BYTES` of values, least recently
//! used first out.

use std::sync::{Arc, OnceLock};

use nkic_isa::DType;

use crate::matmul::{Magnitudes, Products};
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

/// How a matmul contracting `k` rows of `s` and `v` may add their
/// products (`matmul::Magnitudes::products`).
pub(crate) fn products(s: &Values, v: &Values, k: usize) -> Products {
    Magnitudes::products(s.magnitudes(), v.magnitudes(), k)
}

/// The most buffers of evicted values the cache keeps for reuse.
const SPARE_BUFFERS: usize = 4;

/// The most bytes of values the cache keeps: the moving operands of a
/// 128-row tile's contraction (eight 128 × 512 tiles) and the stationary
/// ones between their uses, several times over. A hit costs no read of
/// the operand's memory, so more entries pay: in the 8K bf16
/// `attention_bwd` row, 75k of 278k operand reads hit at 6 MiB, 140k at
/// 24 MiB, 147k at 64 MiB; the 1024³ bf16 matmul's peak RSS grows from 46
/// to 50 MB (its budget is 52 MiB).
const DECODED_BYTES: usize = 24 << 20;

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
    /// The count of writes to the view's memory when it was decoded.
    since: u64,
    values: Arc<Values>,
}

impl Entry {
    fn size(&self) -> usize {
        4 * self.values.len()
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
    /// Whether an operand of `values` values may be kept: they fill at
    /// most half the cache.
    pub fn fits(values: usize) -> bool {
        values.saturating_mul(8) <= DECODED_BYTES
    }

    /// The values of `key` if `unchanged` holds for the count of writes
    /// kept with them (no write since touched the view's bytes).
    pub fn get(&mut self, key: &Key, unchanged: impl Fn(u64) -> bool) -> Option<Arc<Values>> {
        let i = self.entries.iter().rposition(|e| e.key == *key)?;
        if !unchanged(self.entries[i].since) {
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

    /// Keeps `values`, decoded for `key` when its memory had seen `since`
    /// writes.
    pub fn put(&mut self, key: Key, since: u64, values: Arc<Values>) {
        let entry = Entry { key, since, values };
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
