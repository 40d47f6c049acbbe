//! The `exp` activation's f32 result without a libm call for most inputs.
//!
//! `nl.exp` is defined as the f32 rounding of the double-precision `exp` of
//! the (f32) input: `f64::from(x).exp() as f32` (`alu::activation`). Calling
//! libm for every element is a third of the run of exp-heavy kernels
//! (nki-library's cross-entropy), so [`fast`] computes the same f32 from a
//! short f64 evaluation and says when it cannot vouch for it:
//!
//! * `v = f64::from(x)` at most [`ZERO_AT`] gives +0 and at least
//!   [`INF_AT`] +∞, as libm's result rounds there (`e^-104` is below
//!   2⁻¹⁵⁰, half the smallest f32 subnormal; `e^89` is above f32's largest
//!   finite value by more than half its ulp): a masked attention score
//!   (−∞ or −3·10³⁸) is one of these;
//! * otherwise `v` in `[LO, HI]` (so `e^v` is a normal f32; NaN, the
//!   subnormal results and the rest go to libm);
//! * `v = (k / 64) ln 2 + r` with `k` the nearest integer to `64 v / ln 2`
//!   (added to and subtracted from `SHIFTER`, which rounds to an integer
//!   and leaves `k` in the low bits) and `r` by the two-part `ln 2 / 64` of
//!   `L1 + L2` (`L1` has 32 significant bits, so `k · L1` is exact);
//! * `e^v = 2^(k >> 6) · 2^((k & 63) / 64) · e^r`, the middle factor from
//!   [`table`], `e^r` by its Taylor polynomial of degree 6 (|r| ≤ ln 2 /
//!   128, so the first term left out is below 2⁻⁶⁵ relative), evaluated by
//!   Estrin's scheme (`(1 + r) + r²(1/2 + r/3!) + r⁴((1/4! + r/5!) +
//!   r²/6!)`: a dependency chain half as long as Horner's);
//! * the f64 result `y` is within a few f64 ulps of `e^v` (the table's
//!   entries are within 1 ulp, the polynomial and product add about 3), as
//!   is libm's; both round to the same f32 unless an f32 rounding midpoint
//!   lies between them. So `y` is rejected when its 29 bits below the f32
//!   precision are within `MARGIN` (64 ulps) of the midpoint pattern
//!   `0x1000_0000`, about 2 inputs in 10⁷, and libm decides.
//!
//! `fast(x)`, where it gives a value, equals `f64::from(x).exp() as f32`
//! for every f32 `x`: `exhaustive_against_libm` checks all 2³² of them
//! (ignored in CI: 20 s of CPU; CI checks a strided sample). The native
//! tier emits the same operations in the same order (`jit/compile.rs`,
//! `Emit::exp`), which the tier tests compare with this function's bits.
//!
//! [`exp_in_place`] runs the same steps over a slice without a branch
//! (`fast_or_unsure`, which `fast` is made of), so that the compiler
//! vectorizes them (AVX-512 where the CPU has it: eight lanes, the table
//! read by a gather), and calls libm for the values it was not sure of.
//! The native tier's dense `exp` rows go through it a chunk at a time.

use std::sync::OnceLock;

/// Inputs at most this give +0 (module doc).
pub(crate) const ZERO_AT: f64 = -104.0;
/// Inputs at least this give +∞ (module doc).
pub(crate) const INF_AT: f64 = 89.0;
/// The smallest input of the fast path (`e^-87` is a normal f32).
pub(crate) const LO: f64 = -87.0;
/// The largest input of the fast path (`e^88` is below f32's maximum).
pub(crate) const HI: f64 = 88.0;
/// `64 / ln 2`.
pub(crate) const INV_LN2_64: f64 = 64.0 / std::f64::consts::LN_2;
/// `1.5 · 2⁵²`: adding it rounds to an integer kept in the low bits.
pub(crate) const SHIFTER: f64 = 6_755_399_441_055_744.0;
/// The high part of `ln 2 / 64` (32 significant bits; `ln 2`'s usual
/// split `0x3fe62e42fee00000` over 64).
pub(crate) const L1: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000) / 64.0;
/// The low part: `ln 2 / 64 - L1` (`0x3dea39ef35793c76` over 64).
pub(crate) const L2: f64 = f64::from_bits(0x3dea_39ef_3579_3c76) / 64.0;
/// The Taylor coefficients of `e^r` from `r³` up: `1/3!` … `1/6!`.
pub(crate) const C3: f64 = 1.0 / 6.0;
pub(crate) const C4: f64 = 1.0 / 24.0;
pub(crate) const C5: f64 = 1.0 / 120.0;
pub(crate) const C6: f64 = 1.0 / 720.0;
/// The f64 bits below f32's precision (29 of the 52 fraction bits).
pub(crate) const LOW_BITS: i64 = 0x1FFF_FFFF;
/// Those bits at an f32 rounding midpoint.
pub(crate) const MIDPOINT: i64 = 0x1000_0000;
/// How many f64 ulps from a midpoint the fast result is not trusted.
pub(crate) const MARGIN: i64 = 64;

/// `2^(j / 64)` for `j` in `0..64`. Its address is stable (compiled loops
/// load from it).
pub(crate) fn table() -> &'static [f64; 64] {
    static TABLE: OnceLock<[f64; 64]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|j| (j as f64 / 64.0).exp2()))
}

/// `f64::from(x).exp() as f32`, when the fast evaluation is sure of it
/// (module doc); `None` otherwise.
#[inline]
pub(crate) fn fast(x: f32) -> Option<f32> {
    let (y, sure) = fast_or_unsure(x, table());
    sure.then_some(y)
}

/// [`fast`] without a branch, so that a loop of it vectorizes: the value
/// and whether it is sure (the value means nothing otherwise). Every
/// step is computed for every input; those outside the range give
/// garbage that is not used (`ki & 63` keeps the table index in range).
#[inline(always)]
fn fast_or_unsure(x: f32, table: &[f64; 64]) -> (f32, bool) {
    let v = f64::from(x);
    let inside = (LO..=HI).contains(&v);
    let t = v * INV_LN2_64 + SHIFTER;
    let k = t - SHIFTER;
    let ki = t.to_bits() as i32;
    let r = (v - k * L1) - k * L2;
    // Estrin's scheme: a short dependency chain.
    let (r2, r4);
    r2 = r * r;
    r4 = r2 * r2;
    let p = ((1.0 + r) + r2 * (0.5 + r * C3)) + r4 * ((C4 + r * C5) + r2 * C6);
    let scale = f64::from_bits(((i64::from(ki >> 6) + 1023) as u64) << 52);
    let y = (table[(ki & 63) as usize] * p) * scale;
    let d = (y.to_bits() as i64 & LOW_BITS) - MIDPOINT;
    let near = d.wrapping_abs() <= MARGIN;
    let (zero, inf) = (v <= ZERO_AT, v >= INF_AT);
    let y = if zero {
        0.0
    } else if inf {
        f32::INFINITY
    } else {
        y as f32
    };
    (y, (inside && !near) || zero || inf)
}

/// `f64::from(x).exp() as f32`.
#[inline]
pub(crate) fn exp_f32(x: f32) -> f32 {
    fast(x).unwrap_or_else(|| f64::from(x).exp() as f32)
}

/// Values [`exp_in_place`] evaluates together.
#[cfg(any(feature = "jit", test))]
pub(crate) const CHUNK: usize = 64;

/// [`exp_f32`] of every value of `xs`, in place: [`fast_or_unsure`] over
/// chunks of [`CHUNK`] (a loop the compiler vectorizes, for AVX-512 where
/// the CPU has it), then libm for the values it was not sure of. The
/// bits are `exp_f32`'s.
#[cfg(any(feature = "jit", test))]
pub(crate) fn exp_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx512f() {
        simd::exp_chunks_avx512(xs);
        return;
    }
    exp_chunks(xs);
}

/// [`exp_in_place`]'s loop.
#[inline(always)]
#[cfg(any(feature = "jit", test))]
fn exp_chunks(xs: &mut [f32]) {
    let table = table();
    for chunk in xs.chunks_mut(CHUNK) {
        let mut inputs = [0f32; CHUNK];
        // Places past a short last chunk stay sure.
        let mut sure = [true; CHUNK];
        for ((x, input), ok) in chunk.iter_mut().zip(&mut inputs).zip(&mut sure) {
            *input = *x;
            (*x, *ok) = fast_or_unsure(*x, table);
        }
        // Usually every value is sure: one vector test instead of a
        // branch per value.
        if sure.iter().fold(true, |all, &ok| all & ok) {
            continue;
        }
        for ((x, &input), &ok) in chunk.iter_mut().zip(&inputs).zip(&sure) {
            if !ok {
                *x = f64::from(input).exp() as f32;
            }
        }
    }
}

/// The AVX-512 build of the chunk loop.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[cfg(any(feature = "jit", test))]
mod simd {
    /// `super::exp_chunks` on a CPU with AVX-512.
    pub(super) fn exp_chunks_avx512(xs: &mut [f32]) {
        assert!(
            crate::cpu::avx512f(),
            "the AVX-512 exp loop runs only on CPUs with AVX-512"
        );
        // SAFETY: `chunks_avx512` is safe Rust compiled with AVX-512
        // enabled; its only precondition is that the CPU supports it,
        // asserted above.
        unsafe { chunks_avx512(xs) }
    }

    #[target_feature(enable = "avx512f")]
    fn chunks_avx512(xs: &mut [f32]) {
        super::exp_chunks(xs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn libm(x: f32) -> f32 {
        f64::from(x).exp() as f32
    }

    /// Every `step`-th f32 bit pattern (from `start`) that the fast path
    /// answers agrees with libm; returns how many it answered.
    fn check(start: u32, step: u32) -> u64 {
        let mut answered = 0;
        let mut bits = start;
        loop {
            let x = f32::from_bits(bits);
            if let Some(y) = fast(x) {
                assert_eq!(
                    y.to_bits(),
                    libm(x).to_bits(),
                    "exp({x:e}) [bits {bits:#010x}]"
                );
                answered += 1;
            }
            match bits.checked_add(step) {
                Some(b) => bits = b,
                None => return answered,
            }
        }
    }

    #[test]
    fn a_strided_sample_agrees_with_libm() {
        // About 16.7 M inputs, every sign and binade.
        let answered = check(12_345, 257);
        assert!(answered > 4_000_000, "{answered}");
    }

    /// The chunked loop (AVX-512 where available, and the portable one)
    /// gives `exp_f32`'s bits over a strided sample of every f32 and the
    /// edges, in slices whose lengths leave partial chunks.
    #[test]
    fn exp_in_place_gives_exp_f32s_bits() {
        let mut xs: Vec<f32> = (0..1_000_003u32)
            .map(|i| f32::from_bits(i.wrapping_mul(4_297)))
            .chain([
                f32::NAN,
                -f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                -104.0,
                89.0,
                88.7,
                -103.97,
            ])
            .collect();
        let want: Vec<u32> = xs.iter().map(|&x| exp_f32(x).to_bits()).collect();
        let mut portable = xs.clone();
        exp_in_place(&mut xs);
        exp_chunks(&mut portable);
        for got in [&xs, &portable] {
            let got: Vec<u32> = got.iter().map(|y| y.to_bits()).collect();
            assert!(
                got == want,
                "first difference at {:?}",
                got.iter().zip(&want).position(|(a, b)| a != b)
            );
        }
    }

    #[test]
    fn edges_and_specials() {
        for x in [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            87.999_99,
            88.0,
            -87.0,
            88.000_01,
            -87.000_01,
            f32::MIN_POSITIVE,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -103.97,
            -104.0,
            -3.0e38,
            88.8,
            89.0,
        ] {
            assert_eq!(exp_f32(x).to_bits(), libm(x).to_bits(), "exp({x})");
        }
        assert_eq!(fast(88.000_01), None);
        assert_eq!(fast(-103.9), None);
        assert_eq!(fast(f32::NEG_INFINITY), Some(0.0));
        assert_eq!(fast(-104.0), Some(0.0));
        assert_eq!(fast(-3.0e38), Some(0.0));
        assert_eq!(fast(89.0), Some(f32::INFINITY));
        assert_eq!(fast(f32::NAN), None);
        assert_eq!(fast(1.0), Some(std::f32::consts::E));
    }

    #[test]
    #[ignore = "all 2^32 inputs: about 20 s of CPU in release"]
    fn exhaustive_against_libm() {
        let answered = check(0, 1);
        assert!(answered > 1_000_000_000, "{answered}");
    }
}
