//! An output's bytes at the end of a run, with the elements the kernel
//! never wrote kept as runs rather than bytes.
//!
//! A never-written element reads as the poison policy's fill (NaN for a
//! float, `docs/numerics.md`). Writing that fill into the output's buffer
//! touches every page of it: a kernel that stores one tile into a 16 GiB
//! output would cost 16 GiB of memory, though it touched 256 KiB
//! (issue #15: memory follows what a program touches). So [`OutputBytes`]
//! keeps the written bytes in the buffer the run wrote (its never-written
//! pages never mapped) and the never-written elements as sorted runs, and
//! makes the fill only where bytes are delivered: piece by piece to a
//! writer ([`OutputBytes::try_for_each_piece`]), or whole when a caller
//! asks for them ([`OutputBytes::bytes`], [`OutputBytes::into_vec`]).
//!
//! Every way of reading an `OutputBytes` gives the same bytes: the written
//! ones, and the fill for each never-written element. Equality compares
//! those bytes, not the representation.

use std::borrow::Cow;
use std::ops::Range;

/// At most this many bytes of fill are made at a time for a piece.
const FILL_PIECE: usize = 1 << 20;

/// An output's bytes: see the module doc.
#[derive(Clone)]
pub struct OutputBytes {
    /// The run's buffer; a never-written element's bytes in it are
    /// unspecified and never read.
    data: Vec<u8>,
    /// The bytes of one never-written element.
    fill: Vec<u8>,
    /// The never-written elements, as byte ranges of whole elements:
    /// sorted, disjoint, non-empty, no two adjacent.
    unwritten: Vec<Range<usize>>,
}

impl OutputBytes {
    /// An output every byte of which was written.
    pub fn written(data: Vec<u8>) -> OutputBytes {
        OutputBytes {
            data,
            fill: Vec::new(),
            unwritten: Vec::new(),
        }
    }

    /// `data` with the elements of `unwritten` (byte ranges, sorted, of
    /// whole `fill.len()`-byte elements) never written. When there are
    /// more runs than `most_runs` allows (a scattered write), the fill is
    /// written into `data` at once instead.
    pub(crate) fn with_unwritten(
        mut data: Vec<u8>,
        fill: Vec<u8>,
        unwritten: Vec<Range<usize>>,
    ) -> OutputBytes {
        if unwritten.len() > most_runs(data.len()) {
            for r in unwritten {
                fill_range(&mut data[r], &fill);
            }
            return OutputBytes::written(data);
        }
        OutputBytes {
            data,
            fill,
            unwritten,
        }
    }

    /// The output's length in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// How many bytes were never written (and read as the fill).
    pub fn unwritten_bytes(&self) -> usize {
        self.unwritten.iter().map(ExactSizeIterator::len).sum()
    }

    /// Passes the bytes of `range` (whole elements) to `each` in order, in
    /// pieces of whole elements: slices of the written data, and of the
    /// fill at most [`FILL_PIECE`] bytes at a time. Stops at the first
    /// error.
    pub fn try_for_each_piece<E>(
        &self,
        range: Range<usize>,
        mut each: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut at = range.start;
        let mut fill = Vec::new();
        let first = self.unwritten.partition_point(|r| r.end <= at);
        for r in &self.unwritten[first..] {
            if r.start >= range.end {
                break;
            }
            if at < r.start {
                each(&self.data[at..r.start])?;
            }
            let (lo, hi) = (r.start.max(at), r.end.min(range.end));
            let size = self.fill.len();
            let want = (hi - lo).min((FILL_PIECE / size).max(1) * size);
            if fill.len() < want {
                fill = self.fill.repeat(want / size);
            }
            let mut left = hi - lo;
            while left > 0 {
                let n = left.min(fill.len());
                each(&fill[..n])?;
                left -= n;
            }
            at = hi;
        }
        if at < range.end {
            each(&self.data[at..range.end])?;
        }
        Ok(())
    }

    /// The bytes, borrowed when every byte was written, else made.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        if self.unwritten.is_empty() {
            Cow::Borrowed(&self.data)
        } else {
            Cow::Owned(self.to_vec())
        }
    }

    /// The bytes, copied.
    pub fn to_vec(&self) -> Vec<u8> {
        self.clone().into_vec()
    }

    /// The bytes, the fill written into the run's buffer.
    pub fn into_vec(mut self) -> Vec<u8> {
        for r in std::mem::take(&mut self.unwritten) {
            fill_range(&mut self.data[r], &self.fill);
        }
        self.data
    }
}

/// The most never-written runs an output of `len` bytes keeps: what
/// takes an eighth of its bytes. A write scattered finer than that has its
/// fill written into the bytes instead.
pub(crate) fn most_runs(len: usize) -> usize {
    len / 8 / std::mem::size_of::<Range<usize>>()
}

/// Writes `fill` (one element) over every element of `range`.
pub(crate) fn fill_range(range: &mut [u8], fill: &[u8]) {
    for e in range.chunks_exact_mut(fill.len()) {
        e.copy_from_slice(fill);
    }
}

impl From<Vec<u8>> for OutputBytes {
    fn from(data: Vec<u8>) -> OutputBytes {
        OutputBytes::written(data)
    }
}

/// Whether `a` and `b` give the same bytes, compared piece by piece (no
/// fill made whole).
fn same_bytes(a: &OutputBytes, b: &OutputBytes) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.unwritten.is_empty() && b.unwritten.is_empty() {
        return a.data == b.data;
    }
    // `b`'s pieces in order, each compared with the same stretch of `a`.
    let mut at = 0;
    b.try_for_each_piece(0..b.len(), |piece| {
        let end = at + piece.len();
        let mut off = 0;
        a.try_for_each_piece(at..end, |mine| {
            let same = mine == &piece[off..off + mine.len()];
            off += mine.len();
            if same { Ok(()) } else { Err(()) }
        })?;
        at = end;
        Ok::<(), ()>(())
    })
    .is_ok()
}

impl PartialEq for OutputBytes {
    fn eq(&self, other: &OutputBytes) -> bool {
        same_bytes(self, other)
    }
}

impl Eq for OutputBytes {}

impl PartialEq<[u8]> for OutputBytes {
    fn eq(&self, other: &[u8]) -> bool {
        self.len() == other.len() && {
            let mut at = 0;
            self.try_for_each_piece(0..self.len(), |piece| {
                let same = piece == &other[at..at + piece.len()];
                at += piece.len();
                if same { Ok(()) } else { Err(()) }
            })
            .is_ok()
        }
    }
}

impl PartialEq<Vec<u8>> for OutputBytes {
    fn eq(&self, other: &Vec<u8>) -> bool {
        *self == other[..]
    }
}

impl PartialEq<&[u8]> for OutputBytes {
    fn eq(&self, other: &&[u8]) -> bool {
        *self == **other
    }
}

/// Small outputs print their bytes (what a failed `assert_eq!` shows);
/// large ones their length and how much was never written.
impl std::fmt::Debug for OutputBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.len() <= 4096 {
            return self.to_vec().fmt(f);
        }
        f.debug_struct("OutputBytes")
            .field("len", &self.len())
            .field("unwritten_bytes", &self.unwritten_bytes())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 four-byte elements, elements 1–2 and 6 never written.
    fn sample() -> OutputBytes {
        let data: Vec<u8> = (0..400).map(|i| i as u8).collect();
        OutputBytes::with_unwritten(data, vec![0xAA; 4], vec![4..12, 24..28])
    }

    fn expected() -> Vec<u8> {
        let mut want: Vec<u8> = (0..400).map(|i| i as u8).collect();
        want[4..12].fill(0xAA);
        want[24..28].fill(0xAA);
        want
    }

    #[test]
    fn every_reading_gives_the_written_bytes_and_the_fill() {
        let out = sample();
        assert_eq!(out.unwritten_bytes(), 12);
        assert_eq!(out.to_vec(), expected());
        assert_eq!(&*out.bytes(), &expected()[..]);
        assert_eq!(out.clone().into_vec(), expected());
        assert_eq!(out, expected());
        for lo in (0..=40).step_by(4).chain([400]) {
            for hi in (lo..=40).step_by(4).chain([400]) {
                let mut got = Vec::new();
                out.try_for_each_piece(lo..hi, |p| {
                    assert_eq!(p.len() % 4, 0, "whole elements");
                    got.extend_from_slice(p);
                    Ok::<(), ()>(())
                })
                .unwrap();
                assert_eq!(got, expected()[lo..hi], "{lo}..{hi}");
            }
        }
    }

    #[test]
    fn equality_compares_bytes_not_representation() {
        let out = sample();
        assert_eq!(out, OutputBytes::written(expected()));
        assert_eq!(OutputBytes::written(expected()), out);
        let mut other = expected();
        other[25] = 0;
        assert_ne!(out, other);
        assert_ne!(out, OutputBytes::written(other));
        assert_ne!(out, OutputBytes::written(expected()[..396].to_vec()));
    }

    #[test]
    fn a_scattered_write_fills_at_once() {
        // Every other element unwritten: the runs would outweigh the data.
        let runs: Vec<_> = (0..10).map(|e| e * 8..e * 8 + 4).collect();
        let out = OutputBytes::with_unwritten(vec![1; 80], vec![9; 4], runs);
        assert_eq!(out.unwritten_bytes(), 0);
        let want: Vec<u8> = (0..80).map(|i| if i % 8 < 4 { 9 } else { 1 }).collect();
        assert_eq!(out, want);
    }

    #[test]
    fn long_fills_come_in_bounded_pieces() {
        let n = 3 * FILL_PIECE + 8;
        let out = OutputBytes::with_unwritten(
            vec![0; n],
            vec![7, 7],
            std::iter::once(2..n - 2).collect(),
        );
        let mut pieces = Vec::new();
        out.try_for_each_piece(0..n, |p| {
            pieces.push(p.len());
            Ok::<(), ()>(())
        })
        .unwrap();
        assert!(pieces.iter().all(|&p| p <= FILL_PIECE), "{pieces:?}");
        assert_eq!(pieces.iter().sum::<usize>(), n);
        assert_eq!(out.to_vec()[..4], [0, 0, 7, 7]);
    }
}
