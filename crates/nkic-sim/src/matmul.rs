//! The TensorE inner loop: `acc[m, n] += Σ_k s[k, m] · v[k, n]` in f32.
//!
//! For every output element the sum starts from the element's value in
//! `acc` (0 or the old PSUM value) and adds the products over `k` in
//! ascending order, each product rounded to f32 and then added (no fused
//! multiply-add), so
//! the blocked loop below gives exactly the bits of the naive triple loop
//! (`reference`, used by the tests). For bf16 and fp8 inputs the products
//! are exact in f32, so only the additions round. The operands are f32
//! (`nc_matmul`) or f64 (`nc_matmul_mx`'s exactly scaled values, whose
//! product is taken in f64 and rounded to f32): `Operand`.
//!
//! The loop is register-blocked: an `MR × NR` tile of the output stays in
//! local variables across the whole `k` range, reading `MR` stationary
//! values and `NR` contiguous moving values per step, from copies of the
//! operands packed so that each step's values are adjacent (the operands'
//! own rows are a power of two apart, which makes the caches thrash) and
//! padded with zeros to whole tiles.
//!
//! Output partitions are independent, so above `PARALLEL_MIN_MACS` bands
//! of `MR` of them run on rayon's threads; each output element is still
//! summed by one thread in the one order, so the result does not depend on
//! the thread count. On x86-64 CPUs with AVX the tile is 6 × 16 and
//! compiled for AVX (`avx`), elsewhere 6 × 8 with the baseline vector
//! width: eight-lane multiplies and adds round each lane exactly as scalar
//! ones do.

use rayon::prelude::*;

/// Multiply-adds from which a matmul spreads its output partitions over
/// threads; below it the thread hand-off costs more than it saves.
const PARALLEL_MIN_MACS: usize = 1 << 22;

/// Output rows per register tile.
const MR: usize = 6;

/// `acc[m · n_cols + n] += Σ_k s[k · m_cols + m] · v[k · n_cols + n]`
/// (sequentially in `k`), with `s` of `k × m_cols`, `v` of `k × n_cols` and
/// `acc` of `m_cols × n_cols` values (row-major).
pub(crate) fn matmul<T: Operand>(
    s: &[T],
    v: &[T],
    k: usize,
    m_cols: usize,
    n_cols: usize,
    acc: &mut [f32],
) {
    debug_assert!(s.len() >= k * m_cols && v.len() >= k * n_cols && acc.len() >= m_cols * n_cols);
    let shape = Shape { k, m_cols, n_cols };
    #[cfg(target_arch = "x86_64")]
    if avx::available() {
        return blocked::<T, { avx::NR }>(s, v, shape, acc, avx::band::<T>);
    }
    blocked::<T, 8>(s, v, shape, acc, band::<T, 8>);
}

/// A matmul operand's element: its product with another, rounded to f32
/// once, is what the accumulator adds.
pub(crate) trait Operand: Copy + Default + Send + Sync {
    fn product(self, other: Self) -> f32;
}

/// TensorE's operands: the f32 product, correctly rounded.
impl Operand for f32 {
    #[inline(always)]
    fn product(self, other: f32) -> f32 {
        self * other
    }
}

/// Exactly scaled MX values (`nc_matmul_mx`): the product in f64, exact
/// for them, rounded to f32.
impl Operand for f64 {
    #[inline(always)]
    fn product(self, other: f64) -> f32 {
        (self * other) as f32
    }
}

/// The sizes of one matmul.
#[derive(Clone, Copy)]
struct Shape {
    k: usize,
    m_cols: usize,
    n_cols: usize,
}

/// A band's register tiles: `MR` packed stationary columns (`k × MR`), the
/// packed moving matrix (`⌈n_cols / NR⌉` blocks of `k × NR`) and the
/// band's output rows (`MR` of them, fewer in the last band).
type Band<T> = fn(&[T], &[T], Shape, &mut [f32]);

/// Packs the operands, then runs every band of `MR` output rows through
/// `tiles`, in parallel when the matmul is large. The packed operands are
/// padded with zeros to whole tiles, whose padding lanes compute values
/// that are never stored, so every output goes through the same loop.
fn blocked<T: Operand, const NR: usize>(
    s: &[T],
    v: &[T],
    shape: Shape,
    acc: &mut [f32],
    tiles: Band<T>,
) {
    let Shape { k, m_cols, n_cols } = shape;
    let mut moving = vec![T::default(); n_cols.div_ceil(NR) * k * NR];
    for (b, block) in moving.chunks_exact_mut(k * NR).enumerate() {
        let width = NR.min(n_cols - b * NR);
        for (kk, row) in block.chunks_exact_mut(NR).enumerate() {
            row[..width].copy_from_slice(&v[kk * n_cols + b * NR..][..width]);
        }
    }
    let run_band = |(band, rows): (usize, &mut [f32])| {
        let m0 = band * MR;
        let height = MR.min(m_cols - m0);
        let mut stationary = vec![T::default(); k * MR];
        for (kk, row) in stationary.chunks_exact_mut(MR).enumerate() {
            row[..height].copy_from_slice(&s[kk * m_cols + m0..][..height]);
        }
        tiles(&stationary, &moving, shape, rows);
    };
    let acc = &mut acc[..m_cols * n_cols];
    if k * m_cols * n_cols >= PARALLEL_MIN_MACS {
        acc.par_chunks_mut(MR * n_cols)
            .enumerate()
            .for_each(run_band);
    } else {
        acc.chunks_mut(MR * n_cols).enumerate().for_each(run_band);
    }
}

/// The register tiles of one band (`Band`), each an `MR × NR` block of
/// outputs summed over the whole `k` range in local variables.
#[inline(always)]
fn band<T: Operand, const NR: usize>(
    stationary: &[T],
    moving: &[T],
    shape: Shape,
    rows: &mut [f32],
) {
    let Shape { k, n_cols, .. } = shape;
    for (b, block) in moving.chunks_exact(k * NR).enumerate() {
        let n0 = b * NR;
        let width = NR.min(n_cols - n0);
        let mut c = [[0f32; NR]; MR];
        for (tile_row, row) in c.iter_mut().zip(rows.chunks_exact(n_cols)) {
            tile_row[..width].copy_from_slice(&row[n0..n0 + width]);
        }
        for (srow, vrow) in stationary.chunks_exact(MR).zip(block.chunks_exact(NR)) {
            for r in 0..MR {
                let a = srow[r];
                for j in 0..NR {
                    c[r][j] += a.product(vrow[j]);
                }
            }
        }
        for (tile_row, row) in c.iter().zip(rows.chunks_exact_mut(n_cols)) {
            row[n0..n0 + width].copy_from_slice(&tile_row[..width]);
        }
    }
}

/// The band loop compiled for AVX: the same Rust code, eight lanes wide.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx {
    use super::{Operand, Shape};

    /// Output columns per register tile: two AVX registers.
    pub(super) const NR: usize = 16;

    /// Whether this CPU runs AVX instructions (detected once, then cached
    /// by the standard library).
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx")
    }

    /// `super::band::<T, NR>` on a CPU with AVX.
    pub(super) fn band<T: Operand>(stationary: &[T], moving: &[T], shape: Shape, rows: &mut [f32]) {
        assert!(
            available(),
            "the AVX matmul loop runs only on CPUs with AVX"
        );
        // SAFETY: `band_avx` is safe Rust compiled with AVX enabled; its
        // only precondition is that the CPU supports AVX, asserted above.
        unsafe { band_avx(stationary, moving, shape, rows) }
    }

    #[target_feature(enable = "avx")]
    fn band_avx<T: Operand>(stationary: &[T], moving: &[T], shape: Shape, rows: &mut [f32]) {
        super::band::<T, NR>(stationary, moving, shape, rows);
    }
}

#[cfg(test)]
pub(crate) fn reference(
    s: &[f32],
    v: &[f32],
    k: usize,
    m_cols: usize,
    n_cols: usize,
    init: &[f32],
) -> Vec<f32> {
    let mut out = init.to_vec();
    for m in 0..m_cols {
        for n in 0..n_cols {
            let mut sum = out[m * n_cols + n];
            for kk in 0..k {
                sum += s[kk * m_cols + m] * v[kk * n_cols + n];
            }
            out[m * n_cols + n] = sum;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random stream of awkward floats.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((x >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 3.7
            })
            .collect()
    }

    #[test]
    fn blocked_loop_matches_the_reference_bit_for_bit() {
        // Shapes with and without edge rows and columns, below and above
        // `PARALLEL_MIN_MACS`.
        for (k, m, n) in [
            (1, 1, 1),
            (3, 5, 9),
            (128, 128, 512),
            (7, 12, 17),
            (16, 4, 8),
            (16, 6, 16),
            (128, 127, 129),
            (256, 64, 96),
        ] {
            let s = values(k * m, 1);
            let v = values(k * n, 2);
            let init = values(m * n, 3);
            let want = reference(&s, &v, k, m, n, &init);
            let shape = Shape {
                k,
                m_cols: m,
                n_cols: n,
            };
            let mut portable = init.clone();
            blocked::<f32, 8>(&s, &v, shape, &mut portable, band::<f32, 8>);
            let mut chosen = init.clone();
            matmul(&s, &v, k, m, n, &mut chosen);
            for (name, got) in [("portable", &portable), ("chosen", &chosen)] {
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{name} k={k} m={m} n={n}");
            }
        }
    }
}
