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
//! The cache holds at most `limit` bytes of values, least recently used
//! first out. The limit starts at `DECODED_START` and grows, up to
//! `DECODED_BYTES`, by the size of each operand decoded again after it
//! was evicted for room (a *ghost*: the cache remembers the hashes of
//! the keys it last evicted, as ARC does): a kernel whose reused operands
//! fit in a few MiB never takes the pages of more (every decoded value is
//! a fresh page's worth of work at its first write), and one that reuses
//! more grows the cache to what it reuses. An operand the launch reads
//! only once (`read_once`: one matmul's, in a launch without control
//! flow) is decoded into a buffer of its own and never kept.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

use nkic_isa::hash::FastBuild;
use nkic_isa::{AccessPattern, DType, Op, Program};

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

/// The cache's first limit (module doc). The 1024³ bf16 matmul reuses
/// each moving operand for the four row tiles of its column block (eight
/// of 272 KiB) and each stationary one in the next column block (32 of
/// 64 KiB), and the least recently used entries when that block starts
/// are the stationary ones it is about to read: its hits need about
/// 6.4 MB (from 4 MiB it decodes 135 operands instead of 96 while the
/// cache grows), where the fixed 24 MiB limit kept all 12 MiB it decoded.
const DECODED_START: usize = 8 << 20;

/// The most evicted entries the cache remembers (by their keys' hashes:
/// two keys of the same hash only grow the cache sooner).
const GHOSTS: usize = 4096;

/// The matmul operands a launch reads exactly once, so that keeping their
/// values could serve no later read: an access pattern that is the
/// stationary or moving operand of one `nc_matmul` of a launch with no
/// control flow (no `jump` or `branch`, so every instruction runs once)
/// and of no other. A tiled kernel that loads each tile into SBUF of its
/// own (a tutorial's `affine_range` matmul: 128 matmuls, 256 distinct
/// operands) would otherwise fill the cache with values no read hits,
/// 8 MiB of peak memory; reused operands (the moving tile of a column
/// block read by each row tile) keep their place. Empty when the launch
/// has control flow: then any operand may be read again.
pub(crate) fn read_once(cores: &[Program]) -> HashSet<AccessPattern, FastBuild> {
    let insts = || cores.iter().flat_map(|p| &p.queues).flat_map(|q| &q.insts);
    if insts().any(|i| matches!(i.op, Op::Jump(_) | Op::Branch(_))) {
        return HashSet::default();
    }
    let mut seen: HashMap<&AccessPattern, bool, FastBuild> = HashMap::default();
    for i in insts() {
        if let Op::NcMatmul(m) = &i.op {
            for ap in [&m.stationary, &m.moving] {
                seen.entry(ap)
                    .and_modify(|again| *again = true)
                    .or_insert(false);
            }
        }
    }
    seen.into_iter()
        .filter(|&(_, again)| !again)
        .map(|(ap, _)| ap.clone())
        .collect()
}

/// What a matmul operand read is: the view's bytes and how its values
/// are laid out (`read_f32`, or rows `stride` values apart).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
    /// Whether `v` has a key: its rows are `row_base + p · row_step`.
    pub fn keyable(v: &View) -> bool {
        v.row_addrs.is_none()
    }

    /// `None` for views whose rows are not `row_base + p · row_step`
    /// (the rows of an indirect DMA, never an operand here).
    pub fn of(v: &View, stride: Option<usize>) -> Option<Key> {
        Key::keyable(v).then(|| Key {
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
pub(crate) struct Decoded {
    entries: Vec<Entry>,
    size: usize,
    /// The most bytes `entries` may hold (module doc).
    limit: usize,
    /// The hashes of the keys of the last `GHOSTS` entries evicted for
    /// room, oldest first in `ghost_order` with the number of their
    /// eviction; `ghosts` maps each remembered hash to its latest one, so
    /// that forgetting an old eviction of a key evicted again since
    /// leaves the newer one remembered.
    ghosts: HashMap<u64, u64, FastBuild>,
    ghost_order: VecDeque<(u64, u64)>,
    /// Evictions for room so far (numbers `ghost_order`'s entries).
    evictions: u64,
    /// Buffers of evicted values no matmul holds any more.
    spare: Vec<Vec<f32>>,
}

impl Default for Decoded {
    fn default() -> Decoded {
        Decoded {
            entries: Vec::new(),
            size: 0,
            limit: DECODED_START,
            ghosts: HashMap::default(),
            ghost_order: VecDeque::new(),
            evictions: 0,
            spare: Vec::new(),
        }
    }
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
        // Decoded again after an eviction for room: the cache was too small.
        if self
            .ghosts
            .remove(&FastBuild::default().hash_one(&entry.key))
            .is_some()
        {
            self.limit = (self.limit + entry.size()).min(DECODED_BYTES);
        }
        self.size += entry.size();
        self.entries.push(entry);
        let mut evicted = 0;
        while self.size > self.limit {
            self.size -= self.entries[evicted].size();
            evicted += 1;
        }
        let gone: Vec<Entry> = self.entries.drain(..evicted).collect();
        for entry in gone {
            let hash = FastBuild::default().hash_one(&entry.key);
            self.evictions += 1;
            self.ghosts.insert(hash, self.evictions);
            self.ghost_order.push_back((hash, self.evictions));
            if self.ghost_order.len() > GHOSTS
                && let Some((oldest, at)) = self.ghost_order.pop_front()
                && self.ghosts.get(&oldest) == Some(&at)
            {
                self.ghosts.remove(&oldest);
            }
            self.keep(entry);
        }
    }

    /// A buffer of evicted values, if one is free: one that holds `len`
    /// values when there is one (a shorter one would grow into fresh
    /// pages).
    pub fn spare(&mut self, len: usize) -> Option<Vec<f32>> {
        let last = self.spare.len().checked_sub(1)?;
        let at = self.spare.iter().position(|b| b.capacity() >= len);
        let mut buffer = self.spare.swap_remove(at.unwrap_or(last));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of a view of `rows` partitions at byte `base` of SBUF.
    fn key(base: i64) -> Key {
        Key {
            space: SpaceId::Sbuf(0),
            dtype: DType::BF16,
            rows: 128,
            row_base: base,
            row_step: 1 << 18,
            run_len: 512,
            runs: vec![0],
            stride: None,
        }
    }

    /// Values of `bytes` bytes.
    fn values(bytes: usize) -> Arc<Values> {
        Arc::new(Values::new(vec![0.0; bytes / 4]))
    }

    fn cached(d: &mut Decoded, base: i64) -> bool {
        d.get(&key(base), |_| true).is_some()
    }

    /// An operand of one matmul is read once; one two matmuls share (as
    /// stationary or as moving) is not; with a loop every operand may be
    /// read again.
    #[test]
    fn read_once_finds_the_operands_of_one_matmul() {
        let text = "\
.target trn3
.queue tensor
  nc_matmul dst=psum[0:8]:f32[1,16] stationary=sbuf[0:128]+256:f32[1,8] moving=sbuf[0:128]:f32[1,16]
  nc_matmul dst=psum[0:8]+64:f32[1,16] stationary=sbuf[0:128]+512:f32[1,8] moving=sbuf[0:128]:f32[1,16]
  nc_matmul dst=psum[0:16]:f32[1,16] stationary=sbuf[0:128]:f32[1,16] moving=sbuf[0:128]+1024:f32[1,16]
";
        let p = nkic_isa::assemble(text).expect("assembles");
        let once = read_once(std::slice::from_ref(&p));
        let operands: Vec<(&AccessPattern, &AccessPattern)> = p.queues[0]
            .insts
            .iter()
            .filter_map(|i| match &i.op {
                Op::NcMatmul(m) => Some((&m.stationary, &m.moving)),
                _ => None,
            })
            .collect();
        let [(s0, v0), (s1, v1), (s2, v2)] = operands[..] else {
            panic!("three matmuls");
        };
        assert!(once.contains(s0) && once.contains(s1) && once.contains(v2));
        // The moving tile of the first two, also the third's stationary.
        assert!(!once.contains(v0) && !once.contains(v1) && !once.contains(s2));
        assert_eq!(once.len(), 3);
        let looped =
            nkic_isa::assemble(&format!("{text}L0:\n  jump target=L0\n")).expect("assembles");
        assert!(read_once(std::slice::from_ref(&looped)).is_empty());
    }

    /// The cache keeps what fits in `DECODED_START`, evicts the least
    /// recently used beyond it, and grows by an operand's size when an
    /// operand it evicted for room is decoded again, up to
    /// `DECODED_BYTES`; a stale entry is dropped without growing it.
    #[test]
    fn the_limit_grows_by_what_is_decoded_again() {
        const MIB: usize = 1 << 20;
        let mut d = Decoded::default();
        let n = (DECODED_START / MIB) as i64;
        for base in 0..n {
            d.put(key(base), 0, values(MIB));
        }
        assert!((0..n).all(|base| cached(&mut d, base)));
        assert_eq!((d.size, d.limit), (DECODED_START, DECODED_START));
        // One more evicts the least recently used (0, then read again
        // above: 1 is now the oldest).
        assert!(cached(&mut d, 0));
        d.put(key(n), 0, values(MIB));
        assert!(!cached(&mut d, 1) && cached(&mut d, 0) && cached(&mut d, n));
        assert_eq!(d.limit, DECODED_START);
        // Decoded again: a ghost, so the limit grows and nothing goes.
        d.put(key(1), 0, values(MIB));
        assert_eq!(d.limit, DECODED_START + MIB);
        assert!((0..=n).all(|base| cached(&mut d, base)));
        // A key never evicted for room grows nothing.
        d.put(key(9), 0, values(MIB));
        assert_eq!(d.limit, DECODED_START + MIB);
        // A stale entry is dropped, and not remembered.
        assert!(d.get(&key(9), |_| false).is_none());
        d.put(key(9), 0, values(MIB));
        assert_eq!(d.limit, DECODED_START + MIB);
        // Growth stops at `DECODED_BYTES`.
        for round in 0..3 {
            for base in 100..140 {
                d.put(key(base), round, values(MIB));
            }
        }
        assert_eq!(d.limit, DECODED_BYTES);
        assert!(d.size <= DECODED_BYTES);
    }

    /// A spare buffer long enough for the decode is taken before a
    /// shorter one, which would grow into fresh pages.
    #[test]
    fn a_spare_buffer_that_fits_comes_first() {
        let mut d = Decoded::default();
        assert!(d.spare(10).is_none());
        d.spare = vec![
            Vec::with_capacity(100),
            Vec::with_capacity(10),
            vec![1.0; 5],
        ];
        let b = d.spare(50).expect("a spare buffer");
        assert!(b.capacity() >= 100 && b.is_empty());
        let b = d.spare(500).expect("a spare buffer");
        assert!(b.is_empty() && b.capacity() < 500);
        assert_eq!(d.spare.len(), 1);
    }
}
