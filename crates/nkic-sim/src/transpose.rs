//! Transposing the rows of a `[P, F]` tile (`nc_transpose`, and
//! `dma_transpose` of a two-dimensional view): element `(p, j)` of the
//! rows becomes element `(j, p)` of the result.
//!
//! Elements of 2 and 4 bytes (bf16, fp16, fp32: the tiles kernels
//! transpose) go through SSE2 registers on x86-64, eight rows by eight
//! elements or four by four at a time, read and written sixteen bytes at
//! a time; the rest of the tile (rows and columns past the last whole
//! block) and every other size are copied an element at a time, eight
//! rows at a time so that each column's elements are written as one
//! piece. SSE2 is part of every x86-64 CPU, so nothing is detected. On a
//! 128 × 128 bf16 tile the registers take 1.6 µs where the element copies
//! took 10–12 µs (about a twentieth of the stepping thread in the 8K
//! `attention_bwd` run). Both ways give the same bytes: the module's
//! tests compare them with the plain permutation.

/// The elements (`size` bytes each) of `rows`, rows of equal length,
/// transposed: the concatenation of the result's rows is what permuting
/// the rows' concatenation with `[1, 0]` gives. The rows are read where
/// they are (no copy of them first).
pub(crate) fn transposed_rows(rows: &[&[u8]], size: usize) -> Vec<u8> {
    let p = rows.len();
    let f = rows.first().map_or(0, |r| r.len() / size.max(1));
    assert!(
        rows.iter().all(|r| r.len() == f * size),
        "invariant broken: the rows of a transposed tile have one length"
    );
    let mut out = crate::pages::zeros(p * f * size);
    // The rows before `done_rows` and the elements before `done_cols`
    // of them are transposed by whole blocks.
    let (done_rows, done_cols) = blocks(rows, size, f, &mut out);
    match size {
        1 => copy_rest::<1>(rows, f, (done_rows, done_cols), &mut out),
        2 => copy_rest::<2>(rows, f, (done_rows, done_cols), &mut out),
        4 => copy_rest::<4>(rows, f, (done_rows, done_cols), &mut out),
        8 => copy_rest::<8>(rows, f, (done_rows, done_cols), &mut out),
        _ => {
            for (i, row) in rows.iter().enumerate() {
                for (j, e) in row.chunks_exact(size).enumerate() {
                    let at = (j * p + i) * size;
                    out[at..at + size].copy_from_slice(e);
                }
            }
        }
    }
    out
}

/// Copies the elements of `rows` that whole blocks did not (`done`: the
/// first rows and columns the blocks covered) to their transposed places
/// in `out`, eight rows at a time.
fn copy_rest<const S: usize>(
    rows: &[&[u8]],
    f: usize,
    (done_rows, done_cols): (usize, usize),
    out: &mut [u8],
) {
    let p = rows.len();
    for (b, block) in rows.chunks(8).enumerate() {
        let i0 = b * 8;
        // Rows the blocks covered have their first `done_cols` elements.
        let first = if i0 + block.len() <= done_rows {
            done_cols
        } else {
            0
        };
        for j in first..f {
            let line = &mut out[(j * p + i0) * S..][..block.len() * S];
            for (to, row) in line.chunks_exact_mut(S).zip(block) {
                to.copy_from_slice(&row[j * S..j * S + S]);
            }
        }
    }
}

/// Transposes the whole register blocks of `rows` into `out`, and
/// returns how many rows and columns they covered (`(0, 0)` where there
/// are none: other element sizes, other CPUs).
#[cfg(target_arch = "x86_64")]
fn blocks(rows: &[&[u8]], size: usize, f: usize, out: &mut [u8]) -> (usize, usize) {
    match size {
        2 => sse2::blocks_2(rows, f, out),
        4 => sse2::blocks_4(rows, f, out),
        _ => (0, 0),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn blocks(_: &[&[u8]], _: usize, _: usize, _: &mut [u8]) -> (usize, usize) {
    (0, 0)
}

/// The register blocks: eight rows of eight 2-byte elements, or four
/// rows of four 4-byte elements, each row one 16-byte register, turned
/// into the block's columns by interleaving (the classic unpack
/// sequence).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_storeu_si128, _mm_unpackhi_epi16, _mm_unpackhi_epi32,
        _mm_unpackhi_epi64, _mm_unpacklo_epi16, _mm_unpacklo_epi32, _mm_unpacklo_epi64,
    };

    /// The 16 bytes of `bytes` from `at` in a register.
    #[inline(always)]
    fn load(bytes: &[u8], at: usize) -> __m128i {
        let b: &[u8; 16] = bytes[at..at + 16].try_into().expect("16 bytes");
        // SAFETY: `b` is 16 readable bytes (checked by the slice above);
        // the load is unaligned. SSE2 is part of every x86-64 CPU.
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    /// Writes a register to the 16 bytes of `bytes` from `at`.
    #[inline(always)]
    fn store(v: __m128i, bytes: &mut [u8], at: usize) {
        let b: &mut [u8; 16] = (&mut bytes[at..at + 16]).try_into().expect("16 bytes");
        // SAFETY: `b` is 16 writable bytes (checked by the slice above);
        // the store is unaligned. SSE2 is part of every x86-64 CPU.
        unsafe { _mm_storeu_si128(b.as_mut_ptr().cast(), v) }
    }

    /// The 8 × 8 blocks of 2-byte elements.
    pub(super) fn blocks_2(rows: &[&[u8]], f: usize, out: &mut [u8]) -> (usize, usize) {
        // SAFETY: `run` needs SSE2, which every x86-64 CPU has.
        unsafe { run::<8>(rows, f, out, columns_8) }
    }

    /// The 4 × 4 blocks of 4-byte elements.
    pub(super) fn blocks_4(rows: &[&[u8]], f: usize, out: &mut [u8]) -> (usize, usize) {
        // SAFETY: `run` needs SSE2, which every x86-64 CPU has.
        unsafe { run::<4>(rows, f, out, columns_4) }
    }

    /// The whole `B × B` blocks of elements of `16 / B` bytes: each
    /// block's `B` rows loaded, turned into its columns by `columns`, and
    /// stored.
    #[target_feature(enable = "sse2")]
    fn run<const B: usize>(
        rows: &[&[u8]],
        f: usize,
        out: &mut [u8],
        columns: impl Fn([__m128i; B]) -> [__m128i; B],
    ) -> (usize, usize) {
        let size = 16 / B;
        let p = rows.len();
        let (done_rows, done_cols) = (p / B * B, f / B * B);
        for i0 in (0..done_rows).step_by(B) {
            let r = &rows[i0..i0 + B];
            for j0 in (0..done_cols).step_by(B) {
                let block = columns(std::array::from_fn(|i| load(r[i], j0 * size)));
                for (j, column) in block.into_iter().enumerate() {
                    store(column, out, ((j0 + j) * p + i0) * size);
                }
            }
        }
        (done_rows, done_cols)
    }

    /// The columns of eight rows of eight 2-byte elements: pairs of rows
    /// interleaved by element, then by pair, then by four.
    #[inline(always)]
    fn columns_8(a: [__m128i; 8]) -> [__m128i; 8] {
        // SAFETY (of each intrinsic): register operations of SSE2, which
        // every x86-64 CPU has.
        unsafe {
            let b = [
                _mm_unpacklo_epi16(a[0], a[1]),
                _mm_unpackhi_epi16(a[0], a[1]),
                _mm_unpacklo_epi16(a[2], a[3]),
                _mm_unpackhi_epi16(a[2], a[3]),
                _mm_unpacklo_epi16(a[4], a[5]),
                _mm_unpackhi_epi16(a[4], a[5]),
                _mm_unpacklo_epi16(a[6], a[7]),
                _mm_unpackhi_epi16(a[6], a[7]),
            ];
            let c = [
                _mm_unpacklo_epi32(b[0], b[2]),
                _mm_unpackhi_epi32(b[0], b[2]),
                _mm_unpacklo_epi32(b[1], b[3]),
                _mm_unpackhi_epi32(b[1], b[3]),
                _mm_unpacklo_epi32(b[4], b[6]),
                _mm_unpackhi_epi32(b[4], b[6]),
                _mm_unpacklo_epi32(b[5], b[7]),
                _mm_unpackhi_epi32(b[5], b[7]),
            ];
            [
                _mm_unpacklo_epi64(c[0], c[4]),
                _mm_unpackhi_epi64(c[0], c[4]),
                _mm_unpacklo_epi64(c[1], c[5]),
                _mm_unpackhi_epi64(c[1], c[5]),
                _mm_unpacklo_epi64(c[2], c[6]),
                _mm_unpackhi_epi64(c[2], c[6]),
                _mm_unpacklo_epi64(c[3], c[7]),
                _mm_unpackhi_epi64(c[3], c[7]),
            ]
        }
    }

    /// The columns of four rows of four 4-byte elements.
    #[inline(always)]
    fn columns_4(a: [__m128i; 4]) -> [__m128i; 4] {
        // SAFETY (of each intrinsic): register operations of SSE2, which
        // every x86-64 CPU has.
        unsafe {
            let b = [
                _mm_unpacklo_epi32(a[0], a[1]),
                _mm_unpackhi_epi32(a[0], a[1]),
                _mm_unpacklo_epi32(a[2], a[3]),
                _mm_unpackhi_epi32(a[2], a[3]),
            ];
            [
                _mm_unpacklo_epi64(b[0], b[2]),
                _mm_unpackhi_epi64(b[0], b[2]),
                _mm_unpacklo_epi64(b[1], b[3]),
                _mm_unpackhi_epi64(b[1], b[3]),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::transposed_rows;

    /// Element `(j, i)` of the result is element `(i, j)` of the rows,
    /// for every element size and for shapes with and without whole
    /// blocks and partial ones at either edge.
    #[test]
    fn transposes_every_element() {
        for size in [1usize, 2, 3, 4, 8] {
            for (p, f) in [
                (1, 1),
                (3, 5),
                (8, 8),
                (4, 4),
                (13, 7),
                (17, 130),
                (64, 17),
                (128, 128),
                (20, 0),
                (0, 0),
            ] {
                let raw: Vec<u8> = (0..p * f * size).map(|b| (b * 37 % 251) as u8).collect();
                let rows: Vec<&[u8]> = (0..p).map(|i| &raw[i * f * size..][..f * size]).collect();
                let mut want = vec![0u8; p * f * size];
                for i in 0..p {
                    for j in 0..f {
                        let (from, to) = ((i * f + j) * size, (j * p + i) * size);
                        want[to..to + size].copy_from_slice(&raw[from..from + size]);
                    }
                }
                assert_eq!(transposed_rows(&rows, size), want, "{p}x{f} size {size}");
            }
        }
    }
}
