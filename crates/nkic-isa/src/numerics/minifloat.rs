//! The narrow float formats (fp8 e4m3, e4m3fn, e5m2, fp4 e2m1fn and the MX
//! scale type e8m0fnu): compile-time decode tables and bit-manipulation encoders.
//!
//! Decoding is a lookup in a 256-entry (or 16-entry) `f32` table built by a
//! `const fn`, so the tables cost nothing at run time. Encoding rounds the
//! `f32` bit pattern directly with integer arithmetic: the exponent is rebased
//! and the dropped mantissa bits are rounded to nearest, ties to even, so a
//! carry out of the mantissa moves into the exponent on its own.
//!
//! Every rule here is pinned by the exhaustive `ml_dtypes` tables in
//! `tests/data/numerics/` (see `tests/numerics.rs`).

/// How a narrow format spells its special values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Specials {
    /// IEEE style: the all-ones exponent holds infinity (mantissa 0) and NaNs.
    Ieee,
    /// OCP "fn" style: no infinities; only `S.1..1.1..1` is NaN.
    FiniteNan,
    /// Neither infinities nor NaNs (fp4 e2m1fn).
    FiniteOnly,
}

/// A sign-exponent-mantissa format narrower than `f32` with a normal exponent
/// range inside `f32`'s.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Format {
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    pub specials: Specials,
    /// The code of the largest finite magnitude (sign bit clear).
    pub max_code: u32,
    /// The code of +infinity (only meaningful for `Specials::Ieee`).
    pub inf_code: u32,
    /// The code this codec writes for a positive NaN (sign bit clear).
    pub nan_code: u32,
}

impl Format {
    /// The position of the sign bit.
    const fn sign_shift(&self) -> u32 {
        self.exp_bits + self.man_bits
    }
}

/// NKI's legacy fp8 e4m3 (`ml_dtypes.float8_e4m3`): IEEE style, bias 7, max 240.
pub(crate) const E4M3: Format = Format {
    exp_bits: 4,
    man_bits: 3,
    bias: 7,
    specials: Specials::Ieee,
    max_code: 0x77,
    inf_code: 0x78,
    nan_code: 0x7c,
};

/// OCP fp8 e4m3fn: no infinities, NaN = `S.1111.111`, max 448.
pub(crate) const E4M3FN: Format = Format {
    exp_bits: 4,
    man_bits: 3,
    bias: 7,
    specials: Specials::FiniteNan,
    max_code: 0x7e,
    inf_code: 0x7f,
    nan_code: 0x7f,
};

/// fp8 e5m2: IEEE style, bias 15, max 57344.
pub(crate) const E5M2: Format = Format {
    exp_bits: 5,
    man_bits: 2,
    bias: 15,
    specials: Specials::Ieee,
    max_code: 0x7b,
    inf_code: 0x7c,
    nan_code: 0x7e,
};

/// fp4 e2m1fn: bias 1, max 6, no infinities and no NaN.
pub(crate) const E2M1: Format = Format {
    exp_bits: 2,
    man_bits: 1,
    bias: 1,
    specials: Specials::FiniteOnly,
    max_code: 0x7,
    inf_code: 0x7,
    nan_code: 0x7,
};

/// The canonical quiet NaN this module decodes NaN codes to.
const F32_QNAN: u32 = 0x7fc0_0000;

/// Decode tables, one `f32` per code.
pub(crate) static E4M3_TABLE: [f32; 256] = build_table::<256>(&E4M3);
pub(crate) static E4M3FN_TABLE: [f32; 256] = build_table::<256>(&E4M3FN);
pub(crate) static E5M2_TABLE: [f32; 256] = build_table::<256>(&E5M2);
pub(crate) static E2M1_TABLE: [f32; 16] = build_table::<16>(&E2M1);
pub(crate) static E8M0_TABLE: [f32; 256] = build_e8m0_table();

/// Encodes `x` into `fmt` with round-to-nearest-even.
///
/// With `saturate == false` the format's own overflow rule applies (the one
/// `ml_dtypes` `astype` uses): a finite value that rounds past the largest
/// finite magnitude becomes infinity (IEEE style), NaN (`FiniteNan`) or the
/// largest finite value (`FiniteOnly`, which cannot do anything else). With
/// `saturate == true` such values become the largest finite value of the same
/// sign; infinities stay infinities where the format has them.
#[inline]
pub(crate) fn encode(fmt: &Format, x: f32, saturate: bool) -> u32 {
    let bits = x.to_bits();
    let sign = bits >> 31;
    let abs = bits & 0x7fff_ffff;
    let sign_bit = sign << fmt.sign_shift();
    if abs > 0x7f80_0000 {
        return match fmt.specials {
            Specials::Ieee | Specials::FiniteNan => fmt.nan_code | sign_bit,
            // `ml_dtypes` writes a NaN into e2m1fn as a zero whose sign is the
            // inverse of the NaN's sign bit; we keep that exact behaviour so
            // host data encoded here and by NumPy agree bit for bit.
            Specials::FiniteOnly => (sign ^ 1) << fmt.sign_shift(),
        };
    }
    let mag = if abs == 0x7f80_0000 {
        match fmt.specials {
            Specials::Ieee => fmt.inf_code,
            Specials::FiniteNan if !saturate => fmt.nan_code,
            Specials::FiniteNan | Specials::FiniteOnly => fmt.max_code,
        }
    } else {
        let code = round_magnitude(fmt, abs);
        if code <= fmt.max_code || saturate {
            code.min(fmt.max_code)
        } else {
            match fmt.specials {
                Specials::Ieee => fmt.inf_code,
                Specials::FiniteNan => fmt.nan_code,
                Specials::FiniteOnly => fmt.max_code,
            }
        }
    };
    mag | sign_bit
}

/// Encodes `x` into e8m0fnu, matching `ml_dtypes.float8_e8m0fnu`.
///
/// The format is an unsigned power of two, 2^(code-127), with 0xFF as NaN.
/// NaN, zero and every negative value (including -0.0) encode to NaN, since
/// none of them is a power of two. A positive value rounds to the nearer of
/// the two neighbouring powers of two in linear distance, halfway cases going
/// up (so 1.5 → 2 and 0.75 → 1): the code is the `f32` exponent plus one when
/// the mantissa is at least one half. Values below 2^-127 round to 2^-127 (the
/// format has no zero). With `saturate == false` a value that rounds past
/// 2^127, and +infinity, become NaN; with `saturate == true` they become 2^127.
#[inline]
pub(crate) fn encode_e8m0(x: f32, saturate: bool) -> u32 {
    let bits = x.to_bits();
    if bits == 0 || bits > 0x7f80_0000 {
        // Zero, NaN and every negative value.
        return 0xff;
    }
    if bits == 0x7f80_0000 {
        return if saturate { 0xfe } else { 0xff };
    }
    let exp = bits >> 23;
    let man = bits & 0x007f_ffff;
    if exp == 0 {
        // An `f32` subnormal: only 2^-127 (mantissa 0x400000) and 2^-126 are near.
        return u32::from(man > 0x0040_0000);
    }
    let code = exp + u32::from(man >= 0x0040_0000);
    if code > 0xfe {
        if saturate { 0xfe } else { 0xff }
    } else {
        code
    }
}

/// Rounds a finite, non-negative `f32` bit pattern to a magnitude code of `fmt`
/// (which may exceed `fmt.max_code` when the value overflows).
#[inline]
fn round_magnitude(fmt: &Format, abs: u32) -> u32 {
    let exp = abs >> 23;
    // The biased `f32` exponent of the format's smallest normal number.
    let min_normal_exp = (128 - fmt.bias) as u32;
    let drop = 23 - fmt.man_bits;
    // Both arms are cheap and branch-free, so the compiler can select
    // between them without a jump.
    let (m, shift) = if exp >= min_normal_exp {
        // A normal result: rebase the exponent to the format's bias; the
        // mantissa rounding then carries into the exponent field by itself.
        (abs - (((127 - fmt.bias) as u32) << 23), drop)
    } else {
        // A subnormal (or zero) result: take the integer mantissa (with its
        // implicit bit unless the input is an `f32` subnormal, whose
        // effective exponent is 1) and shift it down to the subnormal unit.
        let implicit = if exp == 0 { 0 } else { 0x0080_0000 };
        (
            (abs & 0x007f_ffff) | implicit,
            drop + (min_normal_exp - exp.max(1)),
        )
    };
    round_shift_rne(m, shift)
}

/// `m >> shift`, rounded to nearest with ties to even, without branches.
///
/// Requires `m < 2^31` and `shift >= 1`. Shifts beyond 31 give 0, which is
/// the right answer for every `m` of 24 bits or fewer (all callers).
#[inline]
pub(crate) fn round_shift_rne(m: u32, shift: u32) -> u32 {
    debug_assert!(m < 1 << 31 && shift >= 1);
    let shift = shift.min(31);
    // Adding just under one half, plus one when the kept part is odd, makes
    // the truncating shift round halfway cases to the even neighbour.
    (m + ((1u32 << (shift - 1)) - 1) + ((m >> shift) & 1)) >> shift
}

/// The `f32` bit pattern of one code of `fmt`.
const fn decode_bits(fmt: &Format, code: u32) -> u32 {
    let sign = ((code >> fmt.sign_shift()) & 1) << 31;
    let exp_mask = (1u32 << fmt.exp_bits) - 1;
    let man_mask = (1u32 << fmt.man_bits) - 1;
    let exp = (code >> fmt.man_bits) & exp_mask;
    let man = code & man_mask;
    match fmt.specials {
        Specials::Ieee if exp == exp_mask => {
            return if man == 0 {
                sign | 0x7f80_0000
            } else {
                sign | F32_QNAN
            };
        }
        Specials::FiniteNan if exp == exp_mask && man == man_mask => return sign | F32_QNAN,
        _ => {}
    }
    if exp == 0 {
        if man == 0 {
            return sign;
        }
        // Normalise the subnormal: every narrow format's subnormals are
        // normal numbers in `f32`.
        let mut unbiased = 1 - fmt.bias;
        let mut m = man;
        while m & (1 << fmt.man_bits) == 0 {
            m <<= 1;
            unbiased -= 1;
        }
        let f32_exp = (unbiased + 127) as u32;
        return sign | (f32_exp << 23) | ((m & man_mask) << (23 - fmt.man_bits));
    }
    let f32_exp = (exp as i32 - fmt.bias + 127) as u32;
    sign | (f32_exp << 23) | (man << (23 - fmt.man_bits))
}

const fn build_table<const N: usize>(fmt: &Format) -> [f32; N] {
    let mut table = [0.0f32; N];
    let mut code = 0;
    while code < N {
        table[code] = f32::from_bits(decode_bits(fmt, code as u32));
        code += 1;
    }
    table
}

const fn build_e8m0_table() -> [f32; 256] {
    let mut table = [0.0f32; 256];
    let mut code = 0;
    while code < 255 {
        // 2^(code-127); code 0 is the `f32` subnormal 2^-127.
        table[code] = if code == 0 {
            f32::from_bits(0x0040_0000)
        } else {
            f32::from_bits((code as u32) << 23)
        };
        code += 1;
    }
    table[255] = f32::from_bits(F32_QNAN);
    table
}
