//! The TensorE inner loop: `acc[m, n] += Σ_k s[k, m] · v[k, n]` in f32.
//!
//! For every output element the sum starts from the element's value in
//! `acc` (0 or the old PSUM value) and adds the products over `k` in
//! ascending order, each product rounded to f32 and then added, so
//! the blocked loop below gives exactly the bits of the naive triple loop
//! (`reference`, used by the tests). The operands are f32
//! (`nc_matmul`) or f64 (`nc_matmul_mx`'s exactly scaled values, whose
//! product is taken in f64 and rounded to f32): `Operand`.
//!
//! For bf16, fp16 and fp8 inputs the products are exact in f32 (at most
//! 12 significant bits each, so at most 24 in the product) unless they
//! overflow or fall below the normal range, and a fused multiply-add
//! rounds `a · b + c` once, which is then the same rounding as adding the
//! exact product: `products_exact` checks both operands (finite, at most
//! 12 significant bits, and the extreme products inside f32's normal
//! range) and the loop then uses fused multiply-adds, half the
//! instructions. Any other operands keep the separate multiply and add.
//!
//! When both operands are moreover bf16 values (`Products::PairedBf16`:
//! the low 16 bits of every f32 value are zeros, every product a
//! multiple of 2^-126 and no sum able to reach 2^100 or more), CPUs with
//! AVX-512 BF16 take two steps of `k` per instruction: `vdpbf16ps` adds
//! `a₁·b₁` and then `a₀·b₀` to each lane, each rounded once as a fused
//! multiply-add, so with step `kk` in the high half of each pair and
//! `kk + 1` in the low one it computes the fused loop's two steps. The
//! instruction treats subnormal inputs and results as zeros, which IEEE
//! sums do not: with every product and every accumulator value a
//! multiple of 2^-126 (a tile whose accumulator holds any value other
//! than zero or a magnitude in 2^-103..=2^100 runs the fused loop), every
//! sum is zero or normal, and the flushing never acts. The CPU's
//! instruction is checked against `f32::mul_add` once before first use
//! (`avx::bf16_pairs_exact`). On the AMD EPYC cores CI runs on the dot
//! products issue about half as often as the fused multiply-adds they
//! replace, so the gain is the halved loads: a 128 × 128 × 512 matmul
//! with padded moving rows, one thread, 40 → 47 G multiply-adds a
//! second; `tiers/matmul_1024_bf16` 24.6 → 19.5 ms.
//!
//! The loop is register-blocked: an `MR × NR` tile of the output stays in
//! local variables across the whole `k` range, reading `MR` stationary
//! values and `NR` contiguous moving values per step, from copies of the
//! operands packed so that each step's values are adjacent (the operands'
//! own rows are a power of two apart, which makes the caches thrash) and
//! padded with zeros to whole tiles. A moving operand the caller read into
//! rows padded to a stride that is not a power of two (`Moving::Padded`)
//! is read in place instead, which saves the packing copy (4–5 % of a 1024³
//! bf16 matmul run; the loop reading the rows in place is slower by about
//! as much for fp32 operands, whose packing cost more: neither wins there).
//!
//! Output partitions are independent, so above `PARALLEL_MIN_MACS` the
//! bands of `MR` of them are split into `GROUPS_PER_THREAD` groups per
//! thread of rayon's pool (a smaller matmul is one group); each output
//! element is still summed by one thread in the one order, so the result
//! does not depend on the thread count. Within a group, each block of
//! moving columns serves all the group's bands while it is in the L1
//! cache. On x86-64 CPUs with AVX-512 the tile is two bands by 16 columns
//! (12 × 16, an odd last band 6 × 32), so that each stationary value is
//! the broadcast memory operand of one multiply (`band_pairs_f32_avx512`;
//! the fp32 `attention_bwd` with d = 256 at 8192 tokens ran 12 % faster
//! than with 6 × 32 tiles, whose register broadcasts took the vector ports
//! the adds need), with AVX 6 × 16 (`avx`), elsewhere 6 × 8 with the
//! baseline vector width: multi-lane multiplies and adds round each lane
//! exactly as scalar ones do. (Wider tiles were slower: the compiler spills the
//! accumulators. On the AMD EPYC cores CI runs on, 128 × 128 × n bf16
//! matmuls with padded moving rows, one thread, best of ten: the AVX-512
//! loop 36–50 G multiply-adds a second for n = 64, 128 and 512, the AVX
//! one 27–35; bands one at a time instead of in groups, 34–39.)

use rayon::prelude::*;

/// Multiply-adds from which a matmul spreads its output partitions over
/// threads; below it the thread hand-off costs more than it saves.
const PARALLEL_MIN_MACS: usize = 1 << 22;

/// Output rows per register tile.
const MR: usize = 6;

/// Output columns per register tile of the portable loop (the baseline
/// vector width of two registers or more).
const PORTABLE_NR: usize = 8;
const _: () = assert!(PORTABLE_NR <= MAX_NR, "padded moving rows hold whole tiles");

/// `acc[m · n_cols + n] += Σ_k s[k · m_cols + m] · v[k · n_cols + n]`
/// (sequentially in `k`), with `s` of `k × m_cols`, `v` of `k × n_cols` and
/// `acc` of `m_cols × n_cols` values (row-major).
#[cfg(test)]
pub(crate) fn matmul<T: Operand>(
    s: &[T],
    v: &[T],
    k: usize,
    m_cols: usize,
    n_cols: usize,
    acc: &mut [f32],
) {
    matmul_rows(s, v, [k, m_cols, n_cols], Rows::Values(acc));
}

/// The output rows a matmul adds into.
pub(crate) enum Rows<'a> {
    /// `m_cols × n_cols` values, row-major.
    Values(&'a mut [f32]),
    /// Little-endian f32 rows `stride` bytes apart (a PSUM tile in
    /// place): row `m` is `bytes[m · stride..][..4 · n_cols]`; the bytes
    /// between rows are left as they are.
    Bytes { bytes: &'a mut [u8], stride: usize },
}

/// `matmul` into `rows`.
pub(crate) fn matmul_rows<T: Operand>(s: &[T], v: &[T], kmn: [usize; 3], rows: Rows<'_>) {
    matmul_moving(s, Moving::Dense(v), kmn, rows, None);
}

/// A matmul's moving operand, `k` rows of `n_cols` values.
#[derive(Clone, Copy)]
pub(crate) enum Moving<'a, T> {
    /// Row-major, rows `n_cols` apart: packed before the loop.
    Dense(&'a [T]),
    /// Rows `stride` apart, each padded with zeros to whole tiles of
    /// `MAX_NR` values (`moving_stride`): the loop reads them in place.
    Padded { values: &'a [T], stride: usize },
}

/// The widest register tile (output columns) of any band loop.
const MAX_NR: usize = 32;

/// The row stride of a `Moving::Padded` operand of `n_cols` columns: whole
/// tiles of the widest loop, plus one tile, so that rows are not a power
/// of two apart (which makes the caches thrash, and is why dense operands
/// are packed).
pub(crate) fn moving_stride(n_cols: usize) -> usize {
    whole_tiles(n_cols) + MAX_NR
}

/// `n_cols` rounded up to whole tiles of the widest loop: what a padded
/// moving row must hold.
fn whole_tiles(n_cols: usize) -> usize {
    n_cols.div_ceil(MAX_NR) * MAX_NR
}

/// `matmul` of a moving operand of either layout into `rows`. `products`
/// is `T::products` of the operands when the caller knows it (computed
/// from the same values, as `decoded::Values` keeps their magnitudes).
pub(crate) fn matmul_moving<T: Operand>(
    s: &[T],
    v: Moving<'_, T>,
    [k, m_cols, n_cols]: [usize; 3],
    rows: Rows<'_>,
    products: Option<Products>,
) {
    let shape = |stride| Shape {
        k,
        m_cols,
        n_cols,
        stride,
    };
    match rows {
        Rows::Values(acc) => dispatch(s, v, shape(n_cols), acc, products),
        Rows::Bytes { bytes, stride } => {
            assert!(
                stride >= 4 * n_cols && bytes.len() >= (m_cols.max(1) - 1) * stride + 4 * n_cols,
                "the accumulator rows lie inside `bytes` and do not overlap"
            );
            dispatch(s, v, shape(stride), bytes, products);
        }
    }
}

/// Runs the band loop this CPU runs fastest for these operands.
fn dispatch<T: Operand, O: Out>(
    s: &[T],
    v: Moving<'_, T>,
    shape: Shape,
    acc: &mut [O],
    products: Option<Products>,
) {
    let Shape {
        k, m_cols, n_cols, ..
    } = shape;
    let v_all = match v {
        Moving::Dense(v) => &v[..k * n_cols],
        Moving::Padded { values, stride } => {
            assert!(
                stride >= whole_tiles(n_cols) && values.len() >= k * stride,
                "padded moving rows hold whole tiles"
            );
            &values[..k * stride]
        }
    };
    debug_assert!(s.len() >= k * m_cols);
    let classify = || products.unwrap_or_else(|| T::products(&s[..k * m_cols], v_all, k));
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx512f() {
        let tiles = match classify() {
            Products::PairedBf16 if avx::bf16_pairs_exact() => avx::band512::<T, O, true, true>,
            Products::Rounded => avx::band512::<T, O, false, false>,
            Products::Fused | Products::PairedBf16 => avx::band512::<T, O, true, false>,
        };
        return blocked::<T, O, { avx::NR512 }>(s, v, shape, acc, tiles);
    }
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx() {
        if crate::cpu::fma() && classify() != Products::Rounded {
            return blocked::<T, O, { avx::NR }>(s, v, shape, acc, avx::band_fused::<T, O>);
        }
        return blocked::<T, O, { avx::NR }>(s, v, shape, acc, avx::band::<T, O>);
    }
    blocked::<T, O, PORTABLE_NR>(s, v, shape, acc, band::<T, O, PORTABLE_NR, false>);
}

/// The element of an accumulator row: an f32 (a row of values), or a byte
/// (a row of little-endian f32 values in memory).
pub(crate) trait Out: Copy + Send + Sync {
    /// Elements per f32 value.
    const WIDTH: usize;

    /// Values `n0..n0 + out.len()` of `row`, into `out`.
    fn load(row: &[Self], n0: usize, out: &mut [f32]);

    /// Stores `values` as values `n0..` of `row`.
    fn store(row: &mut [Self], n0: usize, values: &[f32]);

    /// Where values `n0..n0 + w` of `row` lie, `w` little-endian f32
    /// values one after another (bounds checked here), for the AVX-512
    /// loops' masked loads and stores, which need no copy of the row.
    #[cfg(target_arch = "x86_64")]
    fn values(row: &[Self], n0: usize, w: usize) -> *const f32;

    /// `values`, to write through.
    #[cfg(target_arch = "x86_64")]
    fn values_mut(row: &mut [Self], n0: usize, w: usize) -> *mut f32;
}

impl Out for f32 {
    const WIDTH: usize = 1;

    #[inline(always)]
    fn load(row: &[f32], n0: usize, out: &mut [f32]) {
        out.copy_from_slice(&row[n0..n0 + out.len()]);
    }

    #[inline(always)]
    fn store(row: &mut [f32], n0: usize, values: &[f32]) {
        row[n0..n0 + values.len()].copy_from_slice(values);
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn values(row: &[f32], n0: usize, w: usize) -> *const f32 {
        row[n0..n0 + w].as_ptr()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn values_mut(row: &mut [f32], n0: usize, w: usize) -> *mut f32 {
        row[n0..n0 + w].as_mut_ptr()
    }
}

impl Out for u8 {
    const WIDTH: usize = 4;

    #[inline(always)]
    fn load(row: &[u8], n0: usize, out: &mut [f32]) {
        let bytes = &row[4 * n0..4 * (n0 + out.len())];
        for (x, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
    }

    #[inline(always)]
    fn store(row: &mut [u8], n0: usize, values: &[f32]) {
        let bytes = &mut row[4 * n0..4 * (n0 + values.len())];
        for (b, x) in bytes.chunks_exact_mut(4).zip(values) {
            b.copy_from_slice(&x.to_le_bytes());
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn values(row: &[u8], n0: usize, w: usize) -> *const f32 {
        row[4 * n0..4 * (n0 + w)].as_ptr().cast()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn values_mut(row: &mut [u8], n0: usize, w: usize) -> *mut f32 {
        row[4 * n0..4 * (n0 + w)].as_mut_ptr().cast()
    }
}

/// A matmul operand's element: its product with another, rounded to f32
/// once, is what the accumulator adds.
pub(crate) trait Operand: Copy + Default + Send + Sync + 'static {
    fn product(self, other: Self) -> f32;

    /// `acc + self.product(other)` rounded once: equal to it when
    /// `products` is not `Rounded` for the operands.
    fn fused(self, other: Self, acc: f32) -> f32;

    /// How a matmul contracting `k` rows of `s` and `v` may add their
    /// products (`Magnitudes::products`): not `Rounded` when every
    /// product is exact in f32, so that `fused` adds exactly what
    /// `product` would (module doc).
    fn products(s: &[Self], v: &[Self], k: usize) -> Products;

    /// The values as f32, when they are (the AVX-512 loop's f32 case).
    fn as_f32(values: &[Self]) -> Option<&[f32]>;

    /// The values as f64, when they are (the AVX-512 loop's f64 case).
    fn as_f64(values: &[Self]) -> Option<&[f64]>;

    /// This thread's buffer for packed operands of this type
    /// (`with_scratch`).
    fn scratch() -> &'static std::thread::LocalKey<Scratch<Self>>;
}

/// A thread's buffers for packed operands, one for each operand
/// (`with_scratch`).
pub(crate) type Scratch<T> = [std::cell::RefCell<Vec<T>>; 3];

/// Which packed operand a scratch buffer holds.
#[derive(Clone, Copy)]
enum Packed {
    Stationary = 0,
    Moving = 1,
    /// The stationary values of a `Products::PairedBf16` loop, two bf16
    /// values to a word (`avx::pair_words`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Pairs = 2,
}

/// Calls `f` with an empty buffer that keeps its capacity on this thread
/// from one matmul to the next: a fresh buffer for every group of bands
/// was most of the allocator's time in the 8K `attention_bwd` run. A
/// buffer already in use on this thread (a group taken over while the
/// thread packs the same operand) is replaced by a fresh one.
fn with_scratch<T: Operand, R>(which: Packed, f: impl FnOnce(&mut Vec<T>) -> R) -> R {
    T::scratch().with(|buffers| match buffers[which as usize].try_borrow_mut() {
        Ok(mut buffer) => {
            buffer.clear();
            f(&mut buffer)
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// TensorE's operands: the f32 product, correctly rounded.
impl Operand for f32 {
    #[inline(always)]
    fn product(self, other: f32) -> f32 {
        self * other
    }

    #[inline(always)]
    fn fused(self, other: f32, acc: f32) -> f32 {
        self.mul_add(other, acc)
    }

    fn products(s: &[f32], v: &[f32], k: usize) -> Products {
        Magnitudes::products(Magnitudes::of(s).as_ref(), Magnitudes::of(v).as_ref(), k)
    }

    fn as_f32(values: &[f32]) -> Option<&[f32]> {
        Some(values)
    }

    fn as_f64(_: &[f32]) -> Option<&[f64]> {
        None
    }

    fn scratch() -> &'static std::thread::LocalKey<Scratch<f32>> {
        thread_local!(static SCRATCH: Scratch<f32> = Default::default());
        &SCRATCH
    }
}

/// Exactly scaled MX values (`nc_matmul_mx`): the product in f64, exact
/// for them, rounded to f32.
impl Operand for f64 {
    #[inline(always)]
    fn product(self, other: f64) -> f32 {
        (self * other) as f32
    }

    /// Never chosen (`products` is `Rounded`): the separate sum.
    #[inline(always)]
    fn fused(self, other: f64, acc: f32) -> f32 {
        acc + self.product(other)
    }

    fn products(_: &[f64], _: &[f64], _: usize) -> Products {
        Products::Rounded
    }

    fn as_f32(_: &[f64]) -> Option<&[f32]> {
        None
    }

    fn as_f64(values: &[f64]) -> Option<&[f64]> {
        Some(values)
    }

    fn scratch() -> &'static std::thread::LocalKey<Scratch<f64>> {
        thread_local!(static SCRATCH: Scratch<f64> = Default::default());
        &SCRATCH
    }
}

/// The extreme magnitudes of an operand whose values are all finite with
/// at most 12 significant bits (`Magnitudes::of`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Magnitudes {
    /// The smallest magnitude other than zero; `None` if all are zeros.
    min_nonzero: Option<f64>,
    max: f64,
    /// Every value is a bf16 value (its low 16 bits are zeros).
    bf16: bool,
}

/// How a matmul's loop may add its products (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Products {
    /// Each product rounded to f32, then added.
    Rounded,
    /// Every product is exact in f32: fused multiply-adds.
    Fused,
    /// As `Fused`, and the operands are bf16 values whose products and
    /// sums stay on f32's normal grid: two steps at a time with BF16 dot
    /// products where the CPU has them (`Magnitudes::products`).
    PairedBf16,
}

/// Products and accumulator values of a `Products::PairedBf16` matmul are
/// multiples of 2^-126 (the smallest normal f32) and at most 2^100: every
/// sum along the way is zero or normal and finite, so the dot product
/// instruction's flushing of subnormals (which IEEE sums keep) never acts.
/// A product of bf16 values of exponents `e1` and `e2` is a multiple of
/// 2^(e1 + e2 - 14); products of the smallest magnitudes of at least
/// 2^-110 give `e1 + e2 >= -111`.
const PAIRED_MIN_PRODUCT: f64 = 1.0 / (1u128 << 110) as f64;
/// The largest product times the contraction length, and the largest
/// accumulator magnitude, of a `PairedBf16` matmul: no sum reaches
/// infinity.
const PAIRED_MAX: f64 = (1u128 << 100) as f64;
/// The smallest nonzero accumulator magnitude of a tile the paired loop
/// runs: a normal f32 of at least 2^-103 is a multiple of 2^-126.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const PAIRED_MIN_ACC: f32 = 1.0 / (1u128 << 103) as f32;

impl Magnitudes {
    /// `None` if a value is infinite, NaN or has more than 12 significant
    /// bits (a nonzero bit among the low 12 of its 23 stored ones). Works
    /// on the bits, where the order of finite magnitudes is the integers'
    /// (passes the compiler vectorises), and stops at the first chunk
    /// that rules the operand out: an fp32 operand usually does in its
    /// first values, and scanning all of it was 5 % of an fp32 attention
    /// backward pass.
    pub(crate) fn of(values: &[f32]) -> Option<Magnitudes> {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx512f() {
            return avx::magnitudes512(values);
        }
        Magnitudes::scan(values)
    }

    /// [`Magnitudes::of`]'s loop, inlined into each build of it: with
    /// AVX-512 sixteen values a step and unsigned minimum and maximum
    /// instructions (SSE2 has neither, and its build compared through
    /// sign flips, a twentieth of an 8K `attention_bwd` run's samples).
    #[inline(always)]
    fn scan(values: &[f32]) -> Option<Magnitudes> {
        const LOW_BITS: u32 = (1 << 12) - 1;
        const BF16_LOW_BITS: u32 = (1 << 16) - 1;
        const CHUNK: usize = 256;
        let (mut low, mut max, mut min_less_one) = (0u32, 0u32, u32::MAX);
        for chunk in values.chunks(CHUNK) {
            for x in chunk {
                let magnitude = x.to_bits() & 0x7fff_ffff;
                low |= magnitude & BF16_LOW_BITS;
                max = max.max(magnitude);
                // Zero wraps to u32::MAX and so never is the minimum.
                min_less_one = min_less_one.min(magnitude.wrapping_sub(1));
            }
            if low & LOW_BITS != 0 || max >= f32::INFINITY.to_bits() {
                return None;
            }
        }
        Some(Magnitudes {
            min_nonzero: (min_less_one != u32::MAX)
                .then(|| f64::from(f32::from_bits(min_less_one + 1))),
            max: f64::from(f32::from_bits(max)),
            bf16: low == 0,
        })
    }

    /// Whether every product of a value of an operand of magnitudes `s`
    /// and one of `v` is exact in f32 (module doc): both operands' values
    /// have at most 12 significant bits (`of`), and the products of their
    /// extreme magnitudes lie in f32's normal range.
    pub(crate) fn products_exact(s: Option<&Magnitudes>, v: Option<&Magnitudes>) -> bool {
        let (Some(s), Some(v)) = (s, v) else {
            return false;
        };
        let (Some(s_min), Some(v_min)) = (s.min_nonzero, v.min_nonzero) else {
            // Every product is a zero.
            return true;
        };
        // Products of at most 12-bit significands have at most 24 bits:
        // exact from the smallest normal f32 up to f32::MAX. The f64
        // products of two f32 values are exact.
        s_min * v_min >= f64::from(f32::MIN_POSITIVE) && s.max * v.max <= f64::from(f32::MAX)
    }

    /// How a matmul contracting `k` rows of operands of magnitudes `s`
    /// and `v` may add its products: `PairedBf16` when the products are
    /// exact, both operands are bf16 values, and the bounds of
    /// `PAIRED_MIN_PRODUCT` and `PAIRED_MAX` hold.
    pub(crate) fn products(s: Option<&Magnitudes>, v: Option<&Magnitudes>, k: usize) -> Products {
        if !Magnitudes::products_exact(s, v) {
            return Products::Rounded;
        }
        let (Some(s), Some(v)) = (s, v) else {
            return Products::Fused;
        };
        let small = match (s.min_nonzero, v.min_nonzero) {
            (Some(s_min), Some(v_min)) => s_min * v_min >= PAIRED_MIN_PRODUCT,
            // Every product is a zero.
            _ => true,
        };
        if s.bf16 && v.bf16 && small && s.max * v.max * k as f64 <= PAIRED_MAX {
            Products::PairedBf16
        } else {
            Products::Fused
        }
    }
}

/// The sizes of one matmul, and the distance between accumulator rows in
/// `Out` elements.
#[derive(Clone, Copy)]
struct Shape {
    k: usize,
    m_cols: usize,
    n_cols: usize,
    stride: usize,
}

/// A group of bands' register tiles: the bands' packed stationary
/// columns (`k × MR` each, one band after another), the moving matrix
/// (`Layout`) and the group's output rows (`MR` a band, `stride` apart,
/// fewer in the last band).
type Band<T, O> = fn(&[T], &[T], Layout, Shape, &mut [O]);

/// Groups of bands per thread of a parallel matmul: each thread takes a
/// group at a time and runs every band of it over one block of moving
/// columns while the block is in the L1 cache, so the fewer and larger
/// the groups the better, but a thread that finishes early (or starts
/// late, busy with other work) must find a group left to take.
const GROUPS_PER_THREAD: usize = 2;

/// Where the moving matrix's values are for the band loop: block `b` (its
/// columns `b · NR..`) starts at `b · block`, and its `k` rows of `NR`
/// values are `row` apart. Packed: `k · NR` and `NR`; padded rows in
/// place: `NR` and the row stride.
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    block: usize,
    row: usize,
}

/// Packs the operands, then runs every band of `MR` output rows through
/// `tiles`, in parallel when the matmul is large. The packed operands are
/// padded with zeros to whole tiles, whose padding lanes compute values
/// that are never stored, so every output goes through the same loop.
fn blocked<T: Operand, O: Out, const NR: usize>(
    s: &[T],
    v: Moving<'_, T>,
    shape: Shape,
    acc: &mut [O],
    tiles: Band<T, O>,
) {
    let Shape {
        k, m_cols, n_cols, ..
    } = shape;
    if m_cols == 0 {
        return;
    }
    // Packed by appending, so no element is written twice (zeroing a
    // fresh buffer first was 5 % of a 1024³ matmul run): a short last
    // block is padded with zeros.
    match v {
        Moving::Dense(v) => with_scratch(Packed::Moving, |moving| {
            for b in 0..n_cols.div_ceil(NR) {
                pack::<T, NR>(moving, v, b * NR, n_cols, k);
            }
            let layout = Layout {
                block: k * NR,
                row: NR,
            };
            bands_of::<T, O>(s, moving, layout, shape, acc, tiles);
        }),
        Moving::Padded { values, stride } => {
            let layout = Layout {
                block: NR,
                row: stride,
            };
            bands_of::<T, O>(s, values, layout, shape, acc, tiles);
        }
    }
}

/// `blocked`'s bands, in groups, over the packed or padded moving
/// operand: each group packs its own stationary rows.
fn bands_of<T: Operand, O: Out>(
    s: &[T],
    moving: &[T],
    layout: Layout,
    shape: Shape,
    acc: &mut [O],
    tiles: Band<T, O>,
) {
    let Shape {
        k,
        m_cols,
        n_cols,
        stride,
    } = shape;
    let bands = m_cols.div_ceil(MR);
    let parallel = k * m_cols * n_cols >= PARALLEL_MIN_MACS && nkic_isa::threads::parallel();
    let groups = match parallel {
        true => bands.min(GROUPS_PER_THREAD * rayon::current_num_threads()),
        false => 1,
    };
    let group_rows = MR * bands.div_ceil(groups);
    let run_group = |(group, rows): (usize, &mut [O])| {
        let first = group * group_rows;
        let bands = (m_cols - first).min(group_rows).div_ceil(MR);
        with_scratch(Packed::Stationary, |stationary| {
            stationary.reserve(bands * k * MR);
            for band in 0..bands {
                pack::<T, MR>(stationary, s, first + band * MR, m_cols, k);
            }
            tiles(stationary, moving, layout, shape, rows);
        });
    };
    let acc = &mut acc[..(m_cols - 1) * stride + n_cols * O::WIDTH];
    if parallel {
        acc.par_chunks_mut(group_rows * stride)
            .enumerate()
            .for_each(run_group);
    } else {
        acc.chunks_mut(group_rows * stride)
            .enumerate()
            .for_each(run_group);
    }
}

/// Appends columns `c0..c0 + W` of the `k` rows of `matrix` (`cols`
/// values each) to `packed`, `W` values per row; columns past `cols` are
/// zeros. A whole block is copied as an array of `W` values, which the
/// compiler turns into a few vector moves (a `memcpy` call per row was a
/// quarter of a 128 × 128 × 512 fp32 matmul).
fn pack<T: Operand, const W: usize>(
    packed: &mut Vec<T>,
    matrix: &[T],
    c0: usize,
    cols: usize,
    k: usize,
) {
    let width = W.min(cols - c0);
    for kk in 0..k {
        let row = &matrix[kk * cols + c0..];
        if let Some(block) = row.first_chunk::<W>().filter(|_| width == W) {
            packed.extend_from_slice(block);
        } else {
            packed.extend_from_slice(&row[..width]);
            packed.resize(packed.len() + W - width, T::default());
        }
    }
}

/// The register tiles of a group of bands (`Band`), each an `MR × NR`
/// block of outputs summed over the whole `k` range in local variables;
/// a block of the moving matrix serves every band of the group before
/// the next block is read. With `FUSED`, each step is one fused
/// multiply-add (`Operand::fused`).
#[inline(always)]
fn band<T: Operand, O: Out, const NR: usize, const FUSED: bool>(
    stationary: &[T],
    moving: &[T],
    layout: Layout,
    shape: Shape,
    rows: &mut [O],
) {
    let Shape {
        k, n_cols, stride, ..
    } = shape;
    if k == 0 {
        return;
    }
    for b in 0..n_cols.div_ceil(NR) {
        let n0 = b * NR;
        let width = NR.min(n_cols - n0);
        let block = &moving[b * layout.block..][..(k - 1) * layout.row + NR];
        for (band_rows, band_stationary) in rows
            .chunks_mut(MR * stride)
            .zip(stationary.chunks_exact(k * MR))
        {
            let mut c = [[0f32; NR]; MR];
            for (tile_row, row) in c.iter_mut().zip(band_rows.chunks(stride)) {
                O::load(row, n0, &mut tile_row[..width]);
            }
            for (kk, srow) in band_stationary.chunks_exact(MR).enumerate() {
                let vrow = block[kk * layout.row..]
                    .first_chunk::<NR>()
                    .expect("the block holds its k rows");
                for r in 0..MR {
                    let a = srow[r];
                    for j in 0..NR {
                        if FUSED {
                            c[r][j] = a.fused(vrow[j], c[r][j]);
                        } else {
                            c[r][j] += a.product(vrow[j]);
                        }
                    }
                }
            }
            for (tile_row, row) in c.iter().zip(band_rows.chunks_mut(stride)) {
                O::store(row, n0, &tile_row[..width]);
            }
        }
    }
}

/// The band loop compiled for AVX: the same Rust code, eight lanes wide;
/// and with FMA for `band_fused`; and for AVX-512 (`band512`), sixteen
/// lanes wide, written with intrinsics for f32 operands
/// (`band_f32_avx512`).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx {
    use std::arch::x86_64::{
        __m512, __m512bh, __m512i, _CMP_EQ_OQ, _CMP_GE_OQ, _CMP_LE_OQ, _mm512_abs_ps,
        _mm512_add_ps, _mm512_castps_si512, _mm512_cmp_ps_mask, _mm512_dpbf16_ps, _mm512_fmadd_ps,
        _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_mul_ps, _mm512_or_si512,
        _mm512_set1_ps, _mm512_setzero_ps, _mm512_srli_epi32,
    };

    use super::{Layout, Operand, Out, Shape};

    /// The mask of a register's first `w` lanes (`w ≤ 16`).
    #[inline(always)]
    fn lanes(w: usize) -> u16 {
        debug_assert!(w <= 16, "a register holds 16 lanes");
        (((1u32 << w) - 1) & 0xffff) as u16
    }

    /// Values `n0..n0 + w` (`w ≤ 16`) of an accumulator row in a
    /// register's first lanes, zeros in the rest: one masked load, no
    /// copy of the row first.
    #[inline(always)]
    fn load_values<O: Out>(row: &[O], n0: usize, w: usize) -> __m512 {
        let at = O::values(row, n0, w);
        // SAFETY: `values` checked that `row` holds the `w` f32 values at
        // `at`; the mask reads only those lanes. Only the AVX-512 loops
        // call this, on CPUs with AVX-512.
        unsafe { _mm512_maskz_loadu_ps(lanes(w), at) }
    }

    /// Stores a register's first `w` lanes (`w ≤ 16`) as values
    /// `n0..n0 + w` of an accumulator row.
    #[inline(always)]
    fn store_values<O: Out>(row: &mut [O], n0: usize, w: usize, v: __m512) {
        let at = O::values_mut(row, n0, w);
        // SAFETY: `values_mut` checked that `row` holds the `w` f32 values
        // at `at`; the mask writes only those lanes. Only the AVX-512
        // loops call this, on CPUs with AVX-512.
        unsafe { _mm512_mask_storeu_ps(at, lanes(w), v) }
    }

    /// Output columns per register tile: two AVX registers.
    pub(super) const NR: usize = 16;
    const _: () = assert!(NR <= super::MAX_NR, "padded moving rows hold whole tiles");

    /// `super::band::<T, O, NR, false>` on a CPU with AVX.
    pub(super) fn band<T: Operand, O: Out>(
        stationary: &[T],
        moving: &[T],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        assert!(
            crate::cpu::avx(),
            "the AVX matmul loop runs only on CPUs with AVX"
        );
        // SAFETY: `band_avx` is safe Rust compiled with AVX enabled; its
        // only precondition is that the CPU supports AVX, asserted above.
        unsafe { band_avx(stationary, moving, layout, shape, rows) }
    }

    /// `super::band::<T, O, NR, true>` on a CPU with AVX and FMA.
    pub(super) fn band_fused<T: Operand, O: Out>(
        stationary: &[T],
        moving: &[T],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        assert!(
            crate::cpu::fma(),
            "the FMA matmul loop runs only on CPUs with AVX and FMA"
        );
        // SAFETY: `band_fma` is safe Rust compiled with AVX and FMA
        // enabled; its only precondition is that the CPU supports both,
        // asserted above.
        unsafe { band_fma(stationary, moving, layout, shape, rows) }
    }

    /// Output columns per register tile with AVX-512: two registers.
    pub(super) const NR512: usize = 32;
    const _: () = assert!(
        NR512 <= super::MAX_NR,
        "padded moving rows hold whole tiles"
    );

    /// `super::Magnitudes::scan` on a CPU with AVX-512.
    pub(super) fn magnitudes512(values: &[f32]) -> Option<super::Magnitudes> {
        assert!(
            crate::cpu::avx512f(),
            "the AVX-512 magnitude scan runs only on CPUs with AVX-512"
        );
        // SAFETY: `magnitudes_avx512` is safe Rust compiled with AVX-512
        // enabled; its only precondition is that the CPU supports it,
        // asserted above.
        unsafe { magnitudes_avx512(values) }
    }

    #[target_feature(enable = "avx512f")]
    fn magnitudes_avx512(values: &[f32]) -> Option<super::Magnitudes> {
        super::Magnitudes::scan(values)
    }

    /// `super::band::<T, O, NR512, FUSED>` on a CPU with AVX-512; with
    /// `PAIRED` (for `Products::PairedBf16` operands, on a CPU whose BF16
    /// dot products passed `bf16_pairs_exact`), the tiles of pairs of
    /// bands take two contraction steps at a time (`pair_steps`).
    pub(super) fn band512<T: Operand, O: Out, const FUSED: bool, const PAIRED: bool>(
        stationary: &[T],
        moving: &[T],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        assert!(
            crate::cpu::avx512f() && (!PAIRED || bf16_pairs_exact()),
            "the AVX-512 matmul loops run only on CPUs with AVX-512 (and, paired, with exact BF16 dot products)"
        );
        // SAFETY: `band_avx512` is safe Rust compiled with AVX-512 enabled,
        // and with `PAIRED` it calls `pair_steps`, compiled with AVX-512
        // BF16 too; the CPU has what each needs, asserted above.
        unsafe { band_avx512::<T, O, FUSED, PAIRED>(stationary, moving, layout, shape, rows) }
    }

    /// Whether this CPU has the BF16 dot product (`vdpbf16ps`) and it
    /// computes `acc + a₁·b₁ + a₀·b₀` as two fused multiply-adds, the
    /// high pair first, each rounded to nearest even: checked once, on
    /// fixed cases (ties that one rounding would break the other way,
    /// signed zeros, cancellation) and pseudo-random ones, against
    /// `f32::mul_add`. The instruction's definition says so; the check
    /// keeps a CPU that differs on the exact loop.
    pub(super) fn bf16_pairs_exact() -> bool {
        static EXACT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *EXACT.get_or_init(|| {
            // SAFETY: `dot_products_match` is safe Rust compiled with
            // AVX-512 BF16, which the CPU has (tested first).
            crate::cpu::avx512bf16() && unsafe { dot_products_match() }
        })
    }

    /// `bf16_pairs_exact`'s test, on a CPU with AVX-512 BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    fn dot_products_match() -> bool {
        let p = |e: i32| 2f32.powi(e);
        // (acc, a high, b high, a low, b low).
        let mut cases: Vec<[f32; 5]> = vec![
            // 1 + 2^-24 ties to 1, twice; one rounding gives 1 + 2^-23.
            [1.0, p(-12), p(-12), p(-12), p(-12)],
            [-0.0, 0.0, 1.0, 0.0, 1.0],
            [-0.0, -0.0, 1.0, 0.0, -1.0],
            [0.0, 1.0, 1.0, -1.0, 1.0],
            [-1.0, 1.0, 1.0, -0.0, 5.0],
            [p(24), 1.0, 1.0, 1.0, -0.5],
            [3.0, p(40), p(-60), -p(100), p(-100)],
        ];
        let mut word = 0x9e37_79b9u32;
        let mut next = || {
            word ^= word << 13;
            word ^= word >> 17;
            word ^= word << 5;
            word
        };
        let bf16 = |w: u32| {
            let exponent = 127 - 20 + (w >> 8) % 40;
            f32::from_bits((w & 0x8000_0000) | (exponent << 23) | ((w & 0x7f) << 16))
        };
        for _ in 0..1024 {
            let acc = bf16(next()) * (1.0 + (next() % 1000) as f32 / 997.0);
            cases.push([acc, bf16(next()), bf16(next()), bf16(next()), bf16(next())]);
        }
        cases.iter().all(|&[acc, a1, b1, a0, b0]| {
            let want = a0.mul_add(b0, a1.mul_add(b1, acc));
            let pair = |hi: f32, lo: f32| {
                f32::from_bits((hi.to_bits() & 0xffff_0000) | (lo.to_bits() >> 16))
            };
            let a = _mm512_set1_ps(pair(a1, a0));
            let b = _mm512_set1_ps(pair(b1, b0));
            // SAFETY: `__m512` and `__m512bh` are both 64 bytes of plain
            // bits.
            let got = unsafe {
                _mm512_dpbf16_ps(
                    _mm512_set1_ps(acc),
                    std::mem::transmute::<__m512, __m512bh>(a),
                    std::mem::transmute::<__m512, __m512bh>(b),
                )
            };
            let mut lanes = [0f32; 16];
            // SAFETY: `lanes` holds the 16 values the store writes.
            unsafe { std::arch::x86_64::_mm512_storeu_ps(lanes.as_mut_ptr(), got) };
            lanes.iter().all(|x| x.to_bits() == want.to_bits())
        })
    }

    #[target_feature(enable = "avx512f")]
    fn band_avx512<T: Operand, O: Out, const FUSED: bool, const PAIRED: bool>(
        stationary: &[T],
        moving: &[T],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        if let (Some(s), Some(v)) = (T::as_f32(stationary), T::as_f32(moving)) {
            return band_f32_avx512::<O, FUSED, PAIRED>(s, v, layout, shape, rows);
        }
        match (T::as_f64(stationary), T::as_f64(moving)) {
            (Some(s), Some(v)) if !FUSED => band_f64_avx512::<O>(s, v, layout, shape, rows),
            _ => super::band::<T, O, NR512, FUSED>(stationary, moving, layout, shape, rows),
        }
    }

    /// `super::band::<f64, O, NR512, false>` written with AVX-512
    /// intrinsics (the exactly scaled values of MX matmuls outside f32's
    /// range, `Operand for f64`): each product taken in f64 and rounded to
    /// f32 (`vcvtpd2ps`, round to nearest even like `as f32`), then added
    /// to the tile's f32 values in `band`'s order, so the sums are its
    /// bits. The compiler's own vectorisation of `band` for f64 turned the
    /// tile into gathers and scatters through memory in some builds (the
    /// MX `bwmm` block row twice as slow), depending on what else the
    /// function held.
    #[target_feature(enable = "avx512f")]
    fn band_f64_avx512<O: Out>(
        stationary: &[f64],
        moving: &[f64],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        use std::arch::x86_64::{
            __m256, _mm256_add_ps, _mm512_cvtpd_ps, _mm512_mul_pd, _mm512_set1_pd,
        };
        /// f64 lanes per register, and registers per tile row.
        const LANES: usize = 8;
        const PARTS: usize = NR512 / LANES;
        #[inline(always)]
        fn load(row: &[f64; NR512]) -> [std::arch::x86_64::__m512d; PARTS] {
            // SAFETY: `row` holds the PARTS × 8 f64 values the unaligned
            // loads read.
            std::array::from_fn(|i| unsafe {
                std::arch::x86_64::_mm512_loadu_pd(row.as_ptr().add(i * LANES))
            })
        }
        #[inline(always)]
        fn load_f32(row: &[f32; NR512]) -> [__m256; PARTS] {
            // SAFETY: `row` holds the PARTS × 8 f32 values the unaligned
            // loads read.
            std::array::from_fn(|i| unsafe {
                std::arch::x86_64::_mm256_loadu_ps(row.as_ptr().add(i * LANES))
            })
        }
        #[inline(always)]
        fn store_f32(row: &mut [f32; NR512], v: [__m256; PARTS]) {
            for (i, part) in v.into_iter().enumerate() {
                // SAFETY: `row` holds the PARTS × 8 f32 values the unaligned
                // stores write.
                unsafe {
                    std::arch::x86_64::_mm256_storeu_ps(row.as_mut_ptr().add(i * LANES), part)
                }
            }
        }
        let Shape {
            k, n_cols, stride, ..
        } = shape;
        if k == 0 {
            return;
        }
        for b in 0..n_cols.div_ceil(NR512) {
            let n0 = b * NR512;
            let width = NR512.min(n_cols - n0);
            let block = &moving[b * layout.block..][..(k - 1) * layout.row + NR512];
            for (band_rows, band_stationary) in rows
                .chunks_mut(super::MR * stride)
                .zip(stationary.chunks_exact(k * super::MR))
            {
                let mut c = [[0f32; NR512]; super::MR];
                for (tile_row, row) in c.iter_mut().zip(band_rows.chunks(stride)) {
                    O::load(row, n0, &mut tile_row[..width]);
                }
                let mut acc: [[__m256; PARTS]; super::MR] =
                    std::array::from_fn(|r| load_f32(&c[r]));
                for (kk, srow) in band_stationary.chunks_exact(super::MR).enumerate() {
                    let vrow = block[kk * layout.row..]
                        .first_chunk::<NR512>()
                        .expect("the block holds its k rows");
                    let v = load(vrow);
                    for (r, tile) in acc.iter_mut().enumerate() {
                        let a = _mm512_set1_pd(srow[r]);
                        for (t, &vj) in tile.iter_mut().zip(&v) {
                            *t = _mm256_add_ps(*t, _mm512_cvtpd_ps(_mm512_mul_pd(a, vj)));
                        }
                    }
                }
                for (tile_row, &tile) in c.iter_mut().zip(&acc) {
                    store_f32(tile_row, tile);
                }
                for (tile_row, row) in c.iter().zip(band_rows.chunks_mut(stride)) {
                    O::store(row, n0, &tile_row[..width]);
                }
            }
        }
    }

    /// `super::band::<f32, O, NR512, FUSED>` written with AVX-512
    /// intrinsics: each `MR × NR512` tile in twelve registers, each step
    /// a multiply and an add (`FUSED`: one fused multiply-add) per
    /// register, in `band`'s order, so the sums are its bits. The compiler
    /// kept `band`'s tile in registers in most builds, but in one it
    /// turned the tile's rows into lanes of gathers and scatters through
    /// memory (an fp32 `attention_bwd` 15× slower): the intrinsics leave
    /// it no such choice.
    #[target_feature(enable = "avx512f")]
    fn band_f32_avx512<O: Out, const FUSED: bool, const PAIRED: bool>(
        stationary: &[f32],
        moving: &[f32],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        const HALF: usize = NR512 / 2;
        let Shape {
            k, n_cols, stride, ..
        } = shape;
        if k == 0 {
            return;
        }
        let bands = stationary.len() / (k * super::MR);
        if bands >= 2 {
            // Pairs of bands (`band_pairs_f32_avx512`); an odd last band
            // goes through the `MR × NR512` tiles below.
            let paired = bands / 2 * 2;
            let split = (paired * super::MR * stride).min(rows.len());
            let (pair_rows, last_rows) = rows.split_at_mut(split);
            let (pair_s, last_s) = stationary.split_at(paired * k * super::MR);
            band_pairs_f32_avx512::<O, FUSED, PAIRED>(pair_s, moving, layout, shape, pair_rows);
            if !last_s.is_empty() && !last_rows.is_empty() {
                band_f32_avx512::<O, FUSED, false>(last_s, moving, layout, shape, last_rows);
            }
            return;
        }
        // A row of the moving block as two registers. (Closures here
        // would not get the function's target features, nor be inlined.)
        #[inline(always)]
        fn load(row: &[f32; NR512]) -> [__m512; 2] {
            // SAFETY: `row` holds the 2 × 16 f32 values the two unaligned
            // loads read.
            unsafe {
                [
                    std::arch::x86_64::_mm512_loadu_ps(row.as_ptr()),
                    std::arch::x86_64::_mm512_loadu_ps(row.as_ptr().add(HALF)),
                ]
            }
        }
        for b in 0..n_cols.div_ceil(NR512) {
            let n0 = b * NR512;
            let width = NR512.min(n_cols - n0);
            let block = &moving[b * layout.block..][..(k - 1) * layout.row + NR512];
            for (band_rows, band_stationary) in rows
                .chunks_mut(super::MR * stride)
                .zip(stationary.chunks_exact(k * super::MR))
            {
                let lo = width.min(HALF);
                let mut acc = [[_mm512_setzero_ps(); 2]; super::MR];
                for (tile, row) in acc.iter_mut().zip(band_rows.chunks(stride)) {
                    *tile = [
                        load_values(row, n0, lo),
                        load_values(row, n0 + lo, width - lo),
                    ];
                }
                for (kk, srow) in band_stationary.chunks_exact(super::MR).enumerate() {
                    let vrow = block[kk * layout.row..]
                        .first_chunk::<NR512>()
                        .expect("the block holds its k rows");
                    let v = load(vrow);
                    for (r, tile) in acc.iter_mut().enumerate() {
                        let a = _mm512_set1_ps(srow[r]);
                        for (t, &vj) in tile.iter_mut().zip(&v) {
                            *t = if FUSED {
                                _mm512_fmadd_ps(a, vj, *t)
                            } else {
                                _mm512_add_ps(*t, _mm512_mul_ps(a, vj))
                            };
                        }
                    }
                }
                for (&[a, b], row) in acc.iter().zip(band_rows.chunks_mut(stride)) {
                    store_values(row, n0, lo, a);
                    store_values(row, n0 + lo, width - lo, b);
                }
            }
        }
    }

    /// `band_f32_avx512` on tiles of two bands (`2 · MR` rows) by 16
    /// columns, twelve registers, in `band`'s order (the same bits). Each
    /// step's twelve stationary values then serve one multiply (or fused
    /// multiply-add) each, which reads its broadcast straight from memory,
    /// where the `MR × 32` tile broadcast each value into a register for
    /// two multiplies first: with separate multiplies and adds, those
    /// broadcasts took the vector ports the adds need (module doc).
    #[target_feature(enable = "avx512f")]
    fn band_pairs_f32_avx512<O: Out, const FUSED: bool, const PAIRED: bool>(
        stationary: &[f32],
        moving: &[f32],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        const W: usize = NR512 / 2;
        const ROWS: usize = 2 * super::MR;
        #[inline(always)]
        fn load(row: &[f32; W]) -> __m512 {
            // SAFETY: `row` holds the 16 f32 values the unaligned load reads.
            unsafe { std::arch::x86_64::_mm512_loadu_ps(row.as_ptr()) }
        }
        /// Whether every value of the tile is zero or a magnitude in
        /// `PAIRED_MIN_ACC..=PAIRED_MAX` (the paired loop's condition).
        #[target_feature(enable = "avx512f")]
        #[inline]
        fn in_range(acc: &[__m512; ROWS]) -> bool {
            let (zero, lo) = (_mm512_setzero_ps(), _mm512_set1_ps(super::PAIRED_MIN_ACC));
            let hi = _mm512_set1_ps(super::PAIRED_MAX as f32);
            let mut all = u16::MAX;
            for &t in acc {
                let a = _mm512_abs_ps(t);
                all &= _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(t, zero)
                    | (_mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, lo)
                        & _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, hi));
            }
            all == u16::MAX
        }
        /// The tile's first `2 · words.len() / MR` contraction steps, two
        /// at a time: each moving pair of rows joined into one register
        /// of bf16 pairs (step `kk` in the high half, `kk + 1` in the low
        /// one, the order `vdpbf16ps` adds them in), each pair of
        /// stationary values a broadcast word (`pair_words`).
        #[target_feature(enable = "avx512f,avx512bf16")]
        fn pair_steps(
            first: &[f32],
            second: &[f32],
            block: &[f32],
            row: usize,
            c0: usize,
            acc: &mut [__m512; ROWS],
        ) {
            #[target_feature(enable = "avx512f")]
            #[inline]
            fn moving(block: &[f32], at: usize) -> __m512i {
                _mm512_castps_si512(load(
                    block[at..]
                        .first_chunk::<W>()
                        .expect("the block holds its k rows"),
                ))
            }
            // The tile in local registers: stores to `acc` before every
            // bounds check that may panic would be a store per step.
            let mut tile = *acc;
            let steps = first
                .chunks_exact(super::MR)
                .zip(second.chunks_exact(super::MR));
            for (p, (w1, w2)) in steps.enumerate() {
                let (high, low) = (
                    moving(block, 2 * p * row + c0),
                    moving(block, (2 * p + 1) * row + c0),
                );
                let joined = _mm512_or_si512(high, _mm512_srli_epi32::<16>(low));
                // SAFETY: `__m512i` and `__m512bh` are both 64 bytes of
                // plain bits.
                let v = unsafe { std::mem::transmute::<__m512i, __m512bh>(joined) };
                let (top, bottom) = tile.split_at_mut(super::MR);
                for (tiles, words) in [(top, w1), (bottom, w2)] {
                    for (t, &w) in tiles.iter_mut().zip(words) {
                        // SAFETY: as above, for `__m512`.
                        let s =
                            unsafe { std::mem::transmute::<__m512, __m512bh>(_mm512_set1_ps(w)) };
                        *t = _mm512_dpbf16_ps(*t, s, v);
                    }
                }
            }
            *acc = tile;
        }
        let Shape {
            k, n_cols, stride, ..
        } = shape;
        let pair = k * ROWS;
        // With `PAIRED`, the pairs of steps each tile in range takes two at
        // a time: the stationary words of band `j` are
        // `words[j * half * MR..][..half * MR]`.
        let half = if PAIRED { k / 2 } else { 0 };
        super::with_scratch::<f32, _>(super::Packed::Pairs, |words| {
            if PAIRED {
                pair_words(stationary, k, words);
            }
            for b in 0..n_cols.div_ceil(NR512) {
                let n0 = b * NR512;
                let width = NR512.min(n_cols - n0);
                let block = &moving[b * layout.block..][..(k - 1) * layout.row + NR512];
                let pairs = rows
                    .chunks_mut(ROWS * stride)
                    .zip(stationary.chunks_exact(pair))
                    .enumerate();
                for (i, (pair_rows, pair_stationary)) in pairs {
                    let (first, second) = pair_stationary.split_at(k * super::MR);
                    for c0 in (0..width).step_by(W) {
                        let w = W.min(width - c0);
                        let mut acc = [_mm512_setzero_ps(); ROWS];
                        for (tile, row) in acc.iter_mut().zip(pair_rows.chunks(stride)) {
                            *tile = load_values(row, n0 + c0, w);
                        }
                        let mut from = 0;
                        if PAIRED && in_range(&acc) {
                            let own = &words[i * 2 * half * super::MR..][..2 * half * super::MR];
                            let (w1, w2) = own.split_at(half * super::MR);
                            // SAFETY: `pair_steps` is safe Rust compiled with
                            // AVX-512 BF16, which the CPU has: `PAIRED` runs
                            // only where `bf16_pairs_exact` holds.
                            unsafe { pair_steps(w1, w2, block, layout.row, c0, &mut acc) };
                            from = 2 * half;
                        }
                        let steps = first[from * super::MR..]
                            .chunks_exact(super::MR)
                            .zip(second[from * super::MR..].chunks_exact(super::MR));
                        for (i, (s1, s2)) in steps.enumerate() {
                            let kk = from + i;
                            let v = load(
                                block[kk * layout.row + c0..]
                                    .first_chunk::<W>()
                                    .expect("the block holds its k rows"),
                            );
                            let (top, bottom) = acc.split_at_mut(super::MR);
                            for (tiles, values) in [(top, s1), (bottom, s2)] {
                                for (t, &a) in tiles.iter_mut().zip(values) {
                                    *t = if FUSED {
                                        _mm512_fmadd_ps(_mm512_set1_ps(a), v, *t)
                                    } else {
                                        _mm512_add_ps(*t, _mm512_mul_ps(_mm512_set1_ps(a), v))
                                    };
                                }
                            }
                        }
                        for (&tile, row) in acc.iter().zip(pair_rows.chunks_mut(stride)) {
                            store_values(row, n0 + c0, w, tile);
                        }
                    }
                }
            }
        });
    }

    /// Appends the stationary values of each band (`k` steps of `MR`
    /// values, one band after another) two steps to a word, as
    /// `pair_steps` reads them: for each pair of steps `kk`, `kk + 1` and
    /// each row, the bf16 value of step `kk` in the high half and that of
    /// `kk + 1` in the low half (an f32 bit pattern, never computed
    /// with). A last odd step is left out.
    fn pair_words(stationary: &[f32], k: usize, words: &mut Vec<f32>) {
        for band in stationary.chunks_exact(k * super::MR) {
            for steps in band.chunks_exact(2 * super::MR) {
                let (hi, lo) = steps.split_at(super::MR);
                words.extend(hi.iter().zip(lo).map(|(h, l)| {
                    f32::from_bits((h.to_bits() & 0xffff_0000) | (l.to_bits() >> 16))
                }));
            }
        }
    }

    #[target_feature(enable = "avx")]
    fn band_avx<T: Operand, O: Out>(
        stationary: &[T],
        moving: &[T],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        super::band::<T, O, NR, false>(stationary, moving, layout, shape, rows);
    }

    #[target_feature(enable = "avx,fma")]
    fn band_fma<T: Operand, O: Out>(
        stationary: &[T],
        moving: &[T],
        layout: Layout,
        shape: Shape,
        rows: &mut [O],
    ) {
        super::band::<T, O, NR, true>(stationary, moving, layout, shape, rows);
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

    /// A scratch buffer comes empty and keeps its capacity on the thread;
    /// asked for again while in use, the same kind gives a fresh buffer
    /// and leaves the first one's values alone.
    #[test]
    fn scratch_buffers_are_reused_and_never_shared() {
        let capacity = with_scratch::<f32, _>(Packed::Moving, |outer| {
            outer.extend([1.0, 2.0, 3.0]);
            with_scratch::<f32, _>(Packed::Moving, |inner| {
                assert!(inner.is_empty());
                inner.push(9.0);
            });
            with_scratch::<f32, _>(Packed::Stationary, |other| assert!(other.is_empty()));
            assert_eq!(outer[..], [1.0, 2.0, 3.0]);
            outer.capacity()
        });
        with_scratch::<f32, _>(Packed::Moving, |again| {
            assert!(again.is_empty());
            assert_eq!(again.capacity(), capacity);
        });
    }

    /// `Magnitudes::of` (the AVX-512 build where the CPU has it) agrees
    /// with a plain reading of its contract: `None` when a value is not
    /// finite or has a nonzero bit among its low 12, else the smallest
    /// nonzero and the largest magnitude; at every length around its
    /// chunks and with the offending value anywhere.
    #[test]
    fn magnitudes_are_those_of_a_plain_scan() {
        let plain = |xs: &[f32]| -> Option<(Option<f64>, f64)> {
            if xs
                .iter()
                .any(|x| !x.is_finite() || x.to_bits() & 0xfff != 0)
            {
                return None;
            }
            let mags = xs.iter().map(|x| f64::from(x.abs()));
            let min = mags.clone().filter(|&m| m > 0.0).reduce(f64::min);
            Some((min, mags.fold(0.0, f64::max)))
        };
        let short = |x: f32| f32::from_bits(x.to_bits() & !0xffff);
        let mut words = words(0x2545_f491);
        for len in [0usize, 1, 15, 16, 17, 255, 256, 257, 1000] {
            let mut xs: Vec<f32> = words
                .by_ref()
                .take(len)
                .map(|w| short(f32::from_bits(w & 0x8fff_ffff)))
                .collect();
            for (i, x) in xs.iter_mut().enumerate() {
                if i % 7 == 3 {
                    *x = 0.0;
                }
                if i % 11 == 5 {
                    *x = -f32::from_bits(0x0001_0000); // subnormal, short
                }
            }
            let got = |xs: &[f32]| Magnitudes::of(xs).map(|m| (m.min_nonzero, m.max));
            assert_eq!(got(&xs), plain(&xs), "len {len}");
            for bad in [f32::INFINITY, f32::NAN, 1.000_000_1] {
                for at in [0, len / 2, len.saturating_sub(1)] {
                    if at < len {
                        let keep = std::mem::replace(&mut xs[at], bad);
                        assert_eq!(got(&xs), None, "len {len}, {bad} at {at}");
                        xs[at] = keep;
                    }
                }
            }
        }
        assert_eq!(
            Magnitudes::of(&[0.0; 300]).map(|m| m.min_nonzero),
            Some(None)
        );
    }

    /// A deterministic pseudo-random stream of 32-bit words.
    fn words(seed: u32) -> impl Iterator<Item = u32> {
        let step = |x: &u32| Some(x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223));
        std::iter::successors(step(&seed), step)
    }

    /// A deterministic pseudo-random stream of awkward floats.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        words(seed)
            .take(n)
            .map(|x| ((x >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 3.7)
            .collect()
    }

    /// The portable band loop (fused or not) and the one `matmul` chooses
    /// give the reference's bits, with the moving operand packed and read
    /// in place from padded rows.
    fn assert_loops_match_the_reference<const FUSED: bool>(
        s: &[f32],
        v: &[f32],
        [k, m, n]: [usize; 3],
        init: &[f32],
    ) {
        let want = reference(s, v, k, m, n, init);
        let shape = Shape {
            k,
            m_cols: m,
            n_cols: n,
            stride: n,
        };
        let stride = moving_stride(n);
        let mut padded = vec![0f32; k * stride];
        for (row, vals) in padded.chunks_mut(stride).zip(v.chunks(n)) {
            row[..n].copy_from_slice(vals);
        }
        let padded = Moving::Padded {
            values: &padded,
            stride,
        };
        let mut got = Vec::new();
        for (name, v) in [("", Moving::Dense(v)), (" padded", padded)] {
            let mut portable = init.to_vec();
            blocked::<f32, f32, PORTABLE_NR>(
                s,
                v,
                shape,
                &mut portable,
                band::<f32, f32, PORTABLE_NR, FUSED>,
            );
            got.push((format!("portable{name}"), portable));
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::fma() {
                let tiles = match FUSED {
                    false => avx::band::<f32, f32>,
                    true => avx::band_fused::<f32, f32>,
                };
                let mut out = init.to_vec();
                blocked::<f32, f32, { avx::NR }>(s, v, shape, &mut out, tiles);
                got.push((format!("avx{name}"), out));
            }
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::avx512f() {
                let mut out = init.to_vec();
                let tiles = avx::band512::<f32, f32, FUSED, false>;
                blocked::<f32, f32, { avx::NR512 }>(s, v, shape, &mut out, tiles);
                got.push((format!("avx512{name}"), out));
            }
            let mut chosen = init.to_vec();
            matmul_moving(s, v, [k, m, n], Rows::Values(&mut chosen), None);
            got.push((format!("chosen{name}"), chosen));
        }
        for (name, got) in &got {
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{name} k={k} m={m} n={n} fused={FUSED}");
        }
    }

    /// Accumulating into f32 rows in memory gives `matmul`'s bits and
    /// leaves the bytes between the rows alone, for plain and fused loops,
    /// in one thread and in several.
    #[test]
    fn rows_in_memory_accumulate_as_values_do() {
        for (k, m, n, gap) in [(3, 5, 9, 4), (128, 128, 512, 0), (128, 127, 129, 12)] {
            for exact in [false, true] {
                let (s, v) = if exact {
                    (bf16_values(k * m, 7), bf16_values(k * n, 8))
                } else {
                    (values(k * m, 7), values(k * n, 8))
                };
                let init = values(m * n, 9);
                let mut want = init.clone();
                matmul(&s, &v, k, m, n, &mut want);
                let stride = 4 * n + gap;
                let mut bytes = vec![0xa5u8; m * stride];
                for (row, vals) in bytes.chunks_mut(stride).zip(init.chunks(n)) {
                    for (j, x) in vals.iter().enumerate() {
                        row[4 * j..4 * j + 4].copy_from_slice(&x.to_le_bytes());
                    }
                }
                let rows = Rows::Bytes {
                    bytes: &mut bytes,
                    stride,
                };
                matmul_rows(&s, &v, [k, m, n], rows);
                for (row, vals) in bytes.chunks(stride).zip(want.chunks(n)) {
                    let got: Vec<u32> = row[..4 * n]
                        .chunks(4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect();
                    let want: Vec<u32> = vals.iter().map(|x| x.to_bits()).collect();
                    assert_eq!(got, want, "k={k} m={m} n={n} exact={exact}");
                    assert!(row[4 * n..].iter().all(|&b| b == 0xa5), "the gap is kept");
                }
            }
        }
    }

    /// `values` rounded to bf16 (8 significant bits), some scaled far up
    /// or down, and some zeros: products exact in f32.
    fn bf16_values(n: usize, seed: u32) -> Vec<f32> {
        values(n, seed)
            .into_iter()
            .enumerate()
            .map(|(i, x)| {
                let x = f32::from_bits(x.to_bits() & !0xffff);
                match i % 7 {
                    0 => 0.0,
                    1 => x * 2f32.powi(40),
                    2 => x * 2f32.powi(-40),
                    _ => x,
                }
            })
            .collect()
    }

    #[test]
    fn fused_loop_matches_the_reference_on_exact_products() {
        for (k, m, n) in [(3, 5, 9), (128, 127, 129), (128, 128, 512)] {
            let s = bf16_values(k * m, 4);
            let v = bf16_values(k * n, 5);
            assert_ne!(f32::products(&s, &v, k), Products::Rounded);
            assert_loops_match_the_reference::<true>(&s, &v, [k, m, n], &values(m * n, 6));
        }
    }

    /// bf16 values of exponents -20..20, and zeros of both signs: their
    /// products and sums stay on the paired loop's grid.
    fn paired_values(n: usize, seed: u32) -> Vec<f32> {
        let bits = |w: u32| {
            let exponent = 127 - 20 + (w >> 8) % 40;
            (w & 0x8000_0000) | (exponent << 23) | ((w & 0x7f) << 16)
        };
        words(seed)
            .take(n)
            .enumerate()
            .map(|(i, w)| match i % 9 {
                0 => 0.0,
                4 => -0.0,
                _ => f32::from_bits(bits(w)),
            })
            .collect()
    }

    /// The paired BF16 loop (which this test requires of a CPU with
    /// AVX-512 BF16) gives the reference's bits: odd and even contraction
    /// lengths, edge rows and columns, moving rows packed and in place,
    /// values and rows in memory, and accumulators with values outside
    /// its range here and there (subnormal, tiny, huge, infinite, NaN),
    /// whose tiles take the fused loop instead.
    #[test]
    fn paired_bf16_loop_matches_the_reference() {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx512bf16() {
            assert!(
                avx::bf16_pairs_exact(),
                "this CPU's BF16 dot products are two fused multiply-adds"
            );
        }
        let specials = [
            f32::from_bits(1),
            2f32.powi(-110),
            2f32.powi(110),
            f32::NAN,
            f32::NEG_INFINITY,
        ];
        for (k, m, n) in [
            (1, 12, 16),
            (2, 24, 32),
            (7, 13, 17),
            (128, 127, 129),
            (128, 128, 512),
            (255, 36, 48),
        ] {
            let mut s = paired_values(k * m, 11);
            let v = paired_values(k * n, 12);
            assert_eq!(f32::products(&s, &v, k), Products::PairedBf16);
            let mut init = paired_values(m * n, 13);
            for (i, x) in init.iter_mut().enumerate() {
                if i % 1009 == 500 {
                    *x = specials[i / 1009 % specials.len()];
                }
            }
            // Output row 0 adds only zero products: its subnormal values
            // stay subnormal, which a dot product would flush to zero.
            for kk in 0..k {
                s[kk * m] = 0.0;
            }
            init[n - 1] = f32::from_bits(0x8000_0003);
            assert_loops_match_the_reference::<true>(&s, &v, [k, m, n], &init);
            let want = reference(&s, &v, k, m, n, &init);
            let mut bytes: Vec<u8> = init.iter().flat_map(|x| x.to_le_bytes()).collect();
            let rows = Rows::Bytes {
                bytes: &mut bytes,
                stride: 4 * n,
            };
            matmul_rows(&s, &v, [k, m, n], rows);
            let got: Vec<u32> = bytes
                .chunks(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            let want: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
            assert_eq!(got, want, "rows in memory, k={k} m={m} n={n}");
        }
    }

    /// `Products::PairedBf16` asks for bf16 values whose products are
    /// multiples of 2^-126 and whose sums stay below 2^100.
    #[test]
    fn paired_products_need_bf16_values_on_the_normal_grid() {
        let p = |e: i32| 2f32.powi(e);
        let products = |s: &[f32], v: &[f32], k| f32::products(s, v, k);
        assert_eq!(
            products(&[1.5, -3.0, 0.0], &[0.25, 7.0], 128),
            Products::PairedBf16
        );
        assert_eq!(
            products(&[1.0 + p(-10)], &[1.0], 1),
            Products::Fused,
            "11 significant bits: an fp16 value, not a bf16 one"
        );
        assert_eq!(
            products(&[p(-60)], &[p(-51)], 1),
            Products::Fused,
            "a product below 2^-110"
        );
        assert_eq!(products(&[p(-60)], &[p(-50)], 1), Products::PairedBf16);
        assert_eq!(products(&[p(50)], &[p(50)], 1), Products::PairedBf16);
        assert_eq!(
            products(&[p(50)], &[p(50)], 2),
            Products::Fused,
            "sums could pass 2^100"
        );
        assert_eq!(
            products(&[0.0], &[-0.0], 128),
            Products::PairedBf16,
            "every product is a zero"
        );
        assert_eq!(products(&[1.0 + p(-20)], &[1.0], 1), Products::Rounded);
    }

    #[test]
    fn products_are_exact_only_for_short_finite_values_in_range() {
        let p = |e: i32| 2f32.powi(e);
        let exact = |s: &[f32], v: &[f32]| f32::products(s, v, 1) != Products::Rounded;
        assert!(exact(&[1.5, -3.0, 0.0], &[0.25, 7.0]));
        assert!(exact(&[0.0, -0.0], &[p(127)]), "all products are zeros");
        assert!(
            exact(&[p(-130)], &[p(20)]),
            "a subnormal operand, a normal product"
        );
        assert!(exact(&[p(63)], &[p(64)]));
        assert!(!exact(&[1.0 + p(-12)], &[1.0]), "13 significant bits");
        assert!(!exact(&[f32::NAN], &[1.0]));
        assert!(!exact(&[1.0], &[f32::INFINITY]));
        assert!(!exact(&[p(64)], &[p(64)]), "the product overflows");
        assert!(
            !exact(&[p(-63), 1.0], &[p(-64)]),
            "a product below the normal range"
        );
        assert_eq!(f64::products(&[1.0], &[1.0], 1), Products::Rounded);
        // Long operands are scanned in chunks: what rules one out counts
        // anywhere in it, and the extremes are those of every chunk.
        let mut long = vec![1.5f32; 1000];
        assert!(exact(&long, &[2.0]));
        for (at, bad) in [(999, 1.0 + p(-12)), (700, f32::INFINITY), (256, f32::NAN)] {
            let mut s = long.clone();
            s[at] = bad;
            assert!(!exact(&s, &[2.0]), "{bad} at {at}");
        }
        long[600] = p(64);
        assert!(
            !exact(&long, &[p(64)]),
            "the largest value is in a later chunk"
        );
        long[600] = 1.5;
        long[900] = p(-63);
        assert!(
            !exact(&[p(-64)], &long),
            "the smallest value is in a later chunk"
        );
    }

    /// Operands whose products overflow or lose bits below the normal
    /// range keep the separate multiply and add: a fused one would give
    /// another sum here.
    #[test]
    fn inexact_products_keep_the_separate_add() {
        let p = |e: i32| 2f32.powi(e);
        for (s, v, init) in [
            // 2^128 + -2^127: infinity when the product is rounded first.
            (p(64), p(64), -p(127)),
            // 1.5·2^-149 rounds to 2^-148 first (three smallest subnormals
            // with the sum), to 2^-148 fused (2.5 of them, ties to even).
            (1.5 * p(-75), p(-74), p(-149)),
        ] {
            let want = reference(&[s], &[v], 1, 1, 1, &[init]);
            let fused = s.fused(v, init);
            assert_ne!(
                fused.to_bits(),
                want[0].to_bits(),
                "the case tells them apart"
            );
            let mut got = [init];
            matmul(&[s], &[v], 1, 1, 1, &mut got);
            assert_eq!(got[0].to_bits(), want[0].to_bits());
        }
    }

    /// The AVX-512 loop for f64 operands (`band_f64_avx512`) gives the
    /// portable loop's bits, with odd band counts, short column blocks,
    /// parallel groups, and products that overflow or underflow f32.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn f64_avx512_loop_matches_the_portable_one_bit_for_bit() {
        if !crate::cpu::avx512f() {
            return;
        }
        for (k, m, n, exponent) in [
            (3, 5, 9, 0),
            (128, 12, 33, 0),
            (512, 96, 256, 0),
            (64, 127, 200, 70),
            (64, 13, 40, -80),
        ] {
            let wide = |n: usize, seed: u32| -> Vec<f64> {
                values(n, seed)
                    .iter()
                    .map(|&x| f64::from(x) * f64::from(exponent).exp2())
                    .collect()
            };
            let (s, v) = (wide(k * m, 1), wide(k * n, 2));
            let shape = Shape {
                k,
                m_cols: m,
                n_cols: n,
                stride: n,
            };
            let start = values(m * n, 3);
            let (mut want, mut got) = (start.clone(), start);
            blocked::<f64, f32, PORTABLE_NR>(
                &s,
                Moving::Dense(&v),
                shape,
                &mut want,
                band::<f64, f32, PORTABLE_NR, false>,
            );
            blocked::<f64, f32, { avx::NR512 }>(
                &s,
                Moving::Dense(&v),
                shape,
                &mut got,
                avx::band512::<f64, f32, false, false>,
            );
            let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{k}x{m}x{n} at 2^{exponent}");
        }
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
            (256, 127, 200),
        ] {
            let s = values(k * m, 1);
            let v = values(k * n, 2);
            assert_loops_match_the_reference::<false>(&s, &v, [k, m, n], &values(m * n, 3));
        }
    }
}
