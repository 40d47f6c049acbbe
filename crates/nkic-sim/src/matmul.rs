//! The TensorE inner loop: `acc[m, n] += Σ_k s[k, m] · v[k, n]` in f32.
//!
//! For every output element the sum starts from the element's value in
//! `acc` (0 or the old PSUM value) and adds the products over `k` in
//! ascending order, each product rounded to f32 and then added (no fused
//! multiply-add), so
//! the blocked loop below gives exactly the bits of the naive triple loop
//! (`reference`, used by the tests). For bf16 and fp8 inputs the products
//! are exact in f32, so only the additions round.
//!
//! The loop is register-blocked: a 4 × 8 tile of the output stays in local
//! variables across the whole `k` range, reading 4 stationary values and 8
//! contiguous moving values per step. The edges fall back to a plain loop
//! with the same summation order.

/// Output rows per register tile.
const MR: usize = 4;
/// Output columns per register tile.
const NR: usize = 8;

/// `acc[m · n_cols + n] += Σ_k s[k · m_cols + m] · v[k · n_cols + n]`
/// (sequentially in `k`), with `s` of `k × m_cols`, `v` of `k × n_cols` and
/// `acc` of `m_cols × n_cols` values (row-major).
pub(crate) fn matmul(
    s: &[f32],
    v: &[f32],
    k: usize,
    m_cols: usize,
    n_cols: usize,
    acc: &mut [f32],
) {
    debug_assert!(s.len() >= k * m_cols && v.len() >= k * n_cols && acc.len() >= m_cols * n_cols);
    let m_main = m_cols / MR * MR;
    let n_main = n_cols / NR * NR;
    for m0 in (0..m_main).step_by(MR) {
        for n0 in (0..n_main).step_by(NR) {
            let mut c = [[0f32; NR]; MR];
            for (r, row) in c.iter_mut().enumerate() {
                row.copy_from_slice(&acc[(m0 + r) * n_cols + n0..(m0 + r) * n_cols + n0 + NR]);
            }
            for kk in 0..k {
                let srow = &s[kk * m_cols + m0..kk * m_cols + m0 + MR];
                let vrow = &v[kk * n_cols + n0..kk * n_cols + n0 + NR];
                for r in 0..MR {
                    let a = srow[r];
                    for j in 0..NR {
                        c[r][j] += a * vrow[j];
                    }
                }
            }
            for r in 0..MR {
                acc[(m0 + r) * n_cols + n0..(m0 + r) * n_cols + n0 + NR].copy_from_slice(&c[r]);
            }
        }
        // Columns left of the register tiles.
        edge(s, v, k, m_cols, n_cols, m0..m0 + MR, n_main..n_cols, acc);
    }
    edge(s, v, k, m_cols, n_cols, m_main..m_cols, 0..n_cols, acc);
}

/// The plain loop over a block of outputs, same summation order.
#[allow(clippy::too_many_arguments)]
fn edge(
    s: &[f32],
    v: &[f32],
    k: usize,
    m_cols: usize,
    n_cols: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    acc: &mut [f32],
) {
    if cols.is_empty() {
        return;
    }
    for m in rows {
        for n in cols.clone() {
            let mut sum = acc[m * n_cols + n];
            for kk in 0..k {
                sum += s[kk * m_cols + m] * v[kk * n_cols + n];
            }
            acc[m * n_cols + n] = sum;
        }
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
        for (k, m, n) in [
            (1, 1, 1),
            (3, 5, 9),
            (128, 128, 512),
            (7, 12, 17),
            (16, 4, 8),
        ] {
            let s = values(k * m, 1);
            let v = values(k * n, 2);
            let init = values(m * n, 3);
            let mut acc = init.clone();
            matmul(&s, &v, k, m, n, &mut acc);
            let want = reference(&s, &v, k, m, n, &init);
            let same = acc
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "k={k} m={m} n={n}");
        }
    }
}
