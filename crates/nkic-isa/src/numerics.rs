//! Conversions between every dtype's bit patterns and `f32`.
//!
//! The machine computes in `f32`: engines read an element, widen it to `f32`,
//! operate, and round the result to the destination dtype on write (`isa.md`
//! §2.2). This module is that widening and that rounding, for every [`DType`].
//! The simulator calls it on hot paths, so the functions are small, branch on
//! the dtype once per slice in the slice helpers, and decode the narrow
//! formats through 256-entry tables built at compile time.
//!
//! # Conventions (also in `docs/numerics.md`)
//!
//! * **Bits.** A non-packed element travels as its raw little-endian bits,
//!   zero-extended to `u32` (an `int8` holding -1 is `0xFF`, not `0xFFFF_FFFF`).
//! * **Rounding.** Every conversion to a float format rounds to nearest, ties
//!   to even (RNE), directly from `f32` (one rounding, never via another format).
//! * **Overflow.** [`from_f32`] applies the format's own rule, the one
//!   `ml_dtypes`/NumPy `astype` applies: `float16`, `bfloat16`, `tfloat32`,
//!   `float8_e4m3` and `float8_e5m2` overflow to infinity, `float8_e4m3fn` and
//!   `float8_e8m0fnu` overflow to NaN, fp4 e2m1 (no infinity, no NaN)
//!   saturates. [`from_f32_with`] with [`Overflow::Saturate`] instead clamps
//!   finite values that round past the largest finite value to that value
//!   (infinities stay infinities where the format has them, else become the
//!   largest finite value; NaN stays NaN).
//! * **NaN.** A NaN encodes to NaN in every format that has one. The fp8 codes
//!   are canonical: `0x7C` (e4m3), `0x7F` (e4m3fn), `0x7E` (e5m2), each with
//!   the input's sign bit, and `0xFF` (e8m0fnu). `float16`/`bfloat16` keep the
//!   payload's top bits (the `half` crate's rule) and `tfloat32` keeps the top
//!   10 payload bits with the quiet bit set. fp4 e2m1 has no NaN: a NaN
//!   encodes to a zero whose sign is the inverse of the NaN's sign (the
//!   `ml_dtypes` behaviour, kept so host data agrees with NumPy bit for bit).
//!   Decoding an fp8 or e8m0fnu NaN code gives a quiet `f32` NaN with the
//!   code's sign; a `float16` NaN keeps its payload and gets the quiet bit;
//!   `bfloat16` and `tfloat32` decode by placing the bits, payload unchanged.
//! * **e8m0fnu** (an unsigned power of two) encodes zero, negative values and
//!   NaN as NaN (`0xFF`); positive values round to the nearer power of two in
//!   linear distance, ties up (see `minifloat::encode_e8m0`).
//! * **Integers.** Float → int rounds to nearest, ties to even, saturates to
//!   the integer range, and maps NaN to 0 (both policies alike). Int → float
//!   is exact where representable, else RNE (`int32`/`uint32` beyond 2^24).
//! * **bool.** Float → bool is `x != 0` (so NaN → 1, -0.0 → 0), stored as one
//!   byte 0 or 1. Bool → float reads any nonzero byte as 1.0.
//! * **tfloat32** lives in a 4-byte container: encode is `f32` rounded (RNE)
//!   to 10 mantissa bits with the low 13 bits zero; decode ignores the low 13
//!   bits of the container.
//! * **Packed x4 types.** `float8_e4m3fn_x4` and `float8_e5m2_x4` hold four
//!   fp8 values in a `u32`, lane 0 in the least significant byte;
//!   `float4_e2m1fn_x4` holds four fp4 e2m1 values in a `u16`, lane 0 in the
//!   low nibble. Use [`to_f32_x4`]/[`from_f32_x4`]; the slice helpers expand
//!   one packed element to four `f32` and back.

mod minifloat;
#[cfg(test)]
mod tests;

use crate::DType;
use half::{bf16, f16};
use minifloat::{E2M1, E4M3, E4M3FN, E5M2};

/// What a conversion to a float format does with values beyond its largest
/// finite value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// The format's own rule, as `ml_dtypes`/NumPy `astype`: overflow to
    /// infinity where the format has one, else to NaN (`float8_e4m3fn`,
    /// `float8_e8m0fnu`), and saturation for fp4 e2m1 (which has neither).
    #[default]
    Native,
    /// Finite inputs that round past the largest finite value become that
    /// value (with their sign). Infinite inputs stay infinite where the format
    /// has infinities and become the largest finite value otherwise; NaN stays
    /// NaN. Integer and bool conversions are unaffected.
    Saturate,
}

/// Decodes one non-packed element's raw bits (zero-extended) to `f32`.
///
/// Bits above the dtype's size are ignored.
///
/// # Panics
///
/// Panics if `dt` is a packed x4 type: those hold four values, use
/// [`to_f32_x4`]. Passing one is a bug in the caller, not a user error.
#[inline]
pub fn to_f32(dt: DType, bits: u32) -> f32 {
    match dt {
        DType::F32 => f32::from_bits(bits),
        DType::F16 => f16_to_f32(bits & 0xffff),
        DType::BF16 => f32::from_bits(bits << 16),
        DType::TF32 => f32::from_bits(bits & !TF32_DROPPED),
        DType::F8E4M3 => minifloat::E4M3_TABLE[(bits & 0xff) as usize],
        DType::F8E4M3FN => minifloat::E4M3FN_TABLE[(bits & 0xff) as usize],
        DType::F8E5M2 => minifloat::E5M2_TABLE[(bits & 0xff) as usize],
        DType::F8E8M0 => minifloat::E8M0_TABLE[(bits & 0xff) as usize],
        DType::I8 => f32::from(bits as u8 as i8),
        DType::I16 => f32::from(bits as u16 as i16),
        DType::I32 => bits as i32 as f32,
        DType::U8 => f32::from(bits as u8),
        DType::U16 => f32::from(bits as u16),
        DType::U32 => bits as f32,
        DType::Bool => {
            if bits & 0xff != 0 {
                1.0
            } else {
                0.0
            }
        }
        DType::F8E4M3FNx4 | DType::F8E5M2x4 | DType::F4E2M1FNx4 => {
            panic!("to_f32 called on packed dtype {dt}; packed dtypes decode with to_f32_x4")
        }
    }
}

/// Encodes `x` into a non-packed dtype with RNE and the format's own overflow
/// rule ([`Overflow::Native`]); returns the raw bits zero-extended to `u32`.
///
/// # Panics
///
/// Panics if `dt` is a packed x4 type (use [`from_f32_x4`]).
#[inline]
pub fn from_f32(dt: DType, x: f32) -> u32 {
    from_f32_with(dt, x, Overflow::Native)
}

/// Encodes `x` into a non-packed dtype with RNE and the given overflow policy.
///
/// # Panics
///
/// Panics if `dt` is a packed x4 type (use [`from_f32_x4`]).
#[inline]
pub fn from_f32_with(dt: DType, x: f32, overflow: Overflow) -> u32 {
    let saturate = overflow == Overflow::Saturate;
    match dt {
        DType::F32 => x.to_bits(),
        DType::F16 => f16_from_f32(x, saturate),
        DType::BF16 => bf16_from_f32(x, saturate),
        DType::TF32 => tf32_from_f32(x, saturate),
        DType::F8E4M3 => minifloat::encode(&E4M3, x, saturate),
        DType::F8E4M3FN => minifloat::encode(&E4M3FN, x, saturate),
        DType::F8E5M2 => minifloat::encode(&E5M2, x, saturate),
        DType::F8E8M0 => minifloat::encode_e8m0(x, saturate),
        DType::I8 => float_to_int(x, i8::MIN.into(), i8::MAX.into()) as i8 as u8 as u32,
        DType::I16 => float_to_int(x, i16::MIN.into(), i16::MAX.into()) as i16 as u16 as u32,
        DType::I32 => float_to_int(x, i32::MIN.into(), i32::MAX.into()) as i32 as u32,
        DType::U8 => float_to_int(x, 0, u8::MAX.into()) as u32,
        DType::U16 => float_to_int(x, 0, u16::MAX.into()) as u32,
        DType::U32 => float_to_int(x, 0, u32::MAX.into()) as u32,
        DType::Bool => u32::from(x != 0.0),
        DType::F8E4M3FNx4 | DType::F8E5M2x4 | DType::F4E2M1FNx4 => {
            panic!("from_f32 called on packed dtype {dt}; packed dtypes encode with from_f32_x4")
        }
    }
}

/// Decodes one packed x4 element (bits zero-extended to `u32`) into its four
/// values, lane 0 first (lane 0 is the least significant byte or nibble).
///
/// # Panics
///
/// Panics if `dt` is not a packed x4 type.
#[inline]
pub fn to_f32_x4(dt: DType, bits: u32) -> [f32; 4] {
    match dt {
        DType::F8E4M3FNx4 => bytes_lanes(&minifloat::E4M3FN_TABLE, bits),
        DType::F8E5M2x4 => bytes_lanes(&minifloat::E5M2_TABLE, bits),
        DType::F4E2M1FNx4 => std::array::from_fn(|lane| fp4_e2m1_to_f32(bits >> (4 * lane as u32))),
        _ => panic!("to_f32_x4 called on non-packed dtype {dt}"),
    }
}

/// Encodes four values (lane 0 first) into one packed x4 element with RNE and
/// the given overflow policy; returns the bits zero-extended to `u32`.
///
/// # Panics
///
/// Panics if `dt` is not a packed x4 type.
#[inline]
pub fn from_f32_x4(dt: DType, xs: [f32; 4], overflow: Overflow) -> u32 {
    let saturate = overflow == Overflow::Saturate;
    let (fmt, width) = match dt {
        DType::F8E4M3FNx4 => (&E4M3FN, 8),
        DType::F8E5M2x4 => (&E5M2, 8),
        DType::F4E2M1FNx4 => (&E2M1, 4),
        _ => panic!("from_f32_x4 called on non-packed dtype {dt}"),
    };
    xs.iter().enumerate().fold(0, |acc, (lane, &x)| {
        acc | (minifloat::encode(fmt, x, saturate) << (width * lane as u32))
    })
}

/// Decodes one fp4 e2m1fn value from the low nibble of `nibble`.
#[inline]
pub fn fp4_e2m1_to_f32(nibble: u32) -> f32 {
    minifloat::E2M1_TABLE[(nibble & 0xf) as usize]
}

/// Encodes `x` as one fp4 e2m1fn value (a nibble in bits 0..4) with RNE.
///
/// The format has no infinity and no NaN, so overflow always saturates to ±6
/// and NaN becomes a zero (see the module doc).
#[inline]
pub fn fp4_e2m1_from_f32(x: f32) -> u32 {
    minifloat::encode(&E2M1, x, true)
}

/// Appends the `f32` values of the elements stored little-endian in `bytes`
/// to `out`: one value per element, four per packed x4 element.
///
/// `bytes.len()` should be a multiple of `dt.size()`; a trailing partial
/// element is ignored.
pub fn decode(dt: DType, bytes: &[u8], out: &mut Vec<f32>) {
    let lanes = lanes(dt);
    out.reserve(bytes.len() / dt.size() as usize * lanes);
    match dt {
        DType::F32 => decode_each(bytes, out, f32::from_le_bytes),
        DType::F16 => decode_each(bytes, out, |b| f16_to_f32(u32::from(u16::from_le_bytes(b)))),
        DType::BF16 => decode_each(bytes, out, |b| {
            f32::from_bits(u32::from(u16::from_le_bytes(b)) << 16)
        }),
        DType::TF32 => decode_each(bytes, out, |b| {
            f32::from_bits(u32::from_le_bytes(b) & !TF32_DROPPED)
        }),
        DType::I16 => decode_each(bytes, out, |b| f32::from(i16::from_le_bytes(b))),
        DType::U16 => decode_each(bytes, out, |b| f32::from(u16::from_le_bytes(b))),
        DType::I32 => decode_each(bytes, out, |b| i32::from_le_bytes(b) as f32),
        DType::U32 => decode_each(bytes, out, |b| u32::from_le_bytes(b) as f32),
        DType::I8 => out.extend(bytes.iter().map(|&b| f32::from(b as i8))),
        DType::U8 => out.extend(bytes.iter().map(|&b| f32::from(b))),
        DType::Bool => out.extend(bytes.iter().map(|&b| if b != 0 { 1.0 } else { 0.0 })),
        DType::F8E4M3 => out.extend(bytes.iter().map(|&b| minifloat::E4M3_TABLE[b as usize])),
        DType::F8E4M3FN => out.extend(bytes.iter().map(|&b| minifloat::E4M3FN_TABLE[b as usize])),
        DType::F8E5M2 => out.extend(bytes.iter().map(|&b| minifloat::E5M2_TABLE[b as usize])),
        DType::F8E8M0 => out.extend(bytes.iter().map(|&b| minifloat::E8M0_TABLE[b as usize])),
        DType::F8E4M3FNx4 | DType::F8E5M2x4 => {
            // Lane 0 is the least significant byte, so in little-endian
            // storage the lanes are simply consecutive bytes.
            let table = if dt == DType::F8E4M3FNx4 {
                &minifloat::E4M3FN_TABLE
            } else {
                &minifloat::E5M2_TABLE
            };
            let whole = bytes.len() / 4 * 4;
            out.extend(bytes[..whole].iter().map(|&b| table[b as usize]));
        }
        DType::F4E2M1FNx4 => {
            for c in bytes.chunks_exact(2) {
                out.extend_from_slice(&to_f32_x4(dt, u32::from(u16::from_le_bytes([c[0], c[1]]))));
            }
        }
    }
}

/// Appends the little-endian encoding of `xs` in `dt` to `out`, with RNE and
/// the format's own overflow rule ([`Overflow::Native`]). Packed x4 types take
/// four values per element; a trailing partial group of values is ignored.
pub fn encode(dt: DType, xs: &[f32], out: &mut Vec<u8>) {
    encode_with(dt, xs, Overflow::Native, out);
}

/// Like [`encode`], with the given overflow policy.
pub fn encode_with(dt: DType, xs: &[f32], overflow: Overflow, out: &mut Vec<u8>) {
    let saturate = overflow == Overflow::Saturate;
    let lanes = lanes(dt);
    out.reserve(xs.len() / lanes * dt.size() as usize);
    match dt {
        DType::F32 => encode_each(xs, out, f32::to_le_bytes),
        DType::F16 => encode_each(xs, out, |x| {
            (f16_from_f32(x, saturate) as u16).to_le_bytes()
        }),
        DType::BF16 => encode_each(xs, out, |x| {
            (bf16_from_f32(x, saturate) as u16).to_le_bytes()
        }),
        DType::TF32 => encode_each(xs, out, |x| tf32_from_f32(x, saturate).to_le_bytes()),
        DType::F8E4M3 => encode_each(xs, out, |x| [minifloat::encode(&E4M3, x, saturate) as u8]),
        DType::F8E4M3FN => {
            encode_each(xs, out, |x| [minifloat::encode(&E4M3FN, x, saturate) as u8])
        }
        DType::F8E5M2 => encode_each(xs, out, |x| [minifloat::encode(&E5M2, x, saturate) as u8]),
        DType::F8E8M0 => encode_each(xs, out, |x| [minifloat::encode_e8m0(x, saturate) as u8]),
        DType::F8E4M3FNx4 | DType::F8E5M2x4 => {
            // Lane 0 is the least significant byte, so in little-endian
            // storage the lanes are simply consecutive bytes.
            let fmt = if dt == DType::F8E4M3FNx4 {
                &E4M3FN
            } else {
                &E5M2
            };
            let whole = xs.len() / 4 * 4;
            encode_each(&xs[..whole], out, |x| {
                [minifloat::encode(fmt, x, saturate) as u8]
            });
        }
        DType::F4E2M1FNx4 => {
            for c in xs.chunks_exact(4) {
                let bits = c.iter().enumerate().fold(0, |acc, (lane, &x)| {
                    acc | (fp4_e2m1_from_f32(x) << (4 * lane))
                });
                out.extend_from_slice(&(bits as u16).to_le_bytes());
            }
        }
        DType::I8 => encode_each(xs, out, |x| {
            (float_to_int(x, i8::MIN.into(), i8::MAX.into()) as i8).to_le_bytes()
        }),
        DType::I16 => encode_each(xs, out, |x| {
            (float_to_int(x, i16::MIN.into(), i16::MAX.into()) as i16).to_le_bytes()
        }),
        DType::I32 => encode_each(xs, out, |x| {
            (float_to_int(x, i32::MIN.into(), i32::MAX.into()) as i32).to_le_bytes()
        }),
        DType::U8 => encode_each(xs, out, |x| {
            (float_to_int(x, 0, u8::MAX.into()) as u8).to_le_bytes()
        }),
        DType::U16 => encode_each(xs, out, |x| {
            (float_to_int(x, 0, u16::MAX.into()) as u16).to_le_bytes()
        }),
        DType::U32 => encode_each(xs, out, |x| {
            (float_to_int(x, 0, u32::MAX.into()) as u32).to_le_bytes()
        }),
        DType::Bool => encode_each(xs, out, |x| [u8::from(x != 0.0)]),
    }
}

/// Rounds `x` to the nearest value of `dt` and back to `f32`
/// (`to_f32(dt, from_f32(dt, x))`): what an engine write followed by a read
/// yields. Packed x4 types round through their lane format.
#[inline]
pub fn quantize(dt: DType, x: f32) -> f32 {
    match dt {
        DType::F8E4M3FNx4 => minifloat::E4M3FN_TABLE[minifloat::encode(&E4M3FN, x, false) as usize],
        DType::F8E5M2x4 => minifloat::E5M2_TABLE[minifloat::encode(&E5M2, x, false) as usize],
        DType::F4E2M1FNx4 => fp4_e2m1_to_f32(fp4_e2m1_from_f32(x)),
        _ => to_f32(dt, from_f32(dt, x)),
    }
}

/// The number of values one element holds: 4 for the packed x4 types, else 1.
#[inline]
pub fn lanes(dt: DType) -> usize {
    if dt.is_packed_x4() { 4 } else { 1 }
}

/// The largest finite value of `dt` (of its lane format for packed types),
/// exactly, as `f64`. For `bool` this is 1.
pub fn max_finite(dt: DType) -> f64 {
    match dt {
        DType::F32 => f64::from(f32::MAX),
        DType::F16 => 65504.0,
        DType::BF16 => f64::from(f32::from_bits(0x7f7f_0000)),
        DType::TF32 => f64::from(f32::from_bits(0x7f7f_e000)),
        DType::F8E4M3 => 240.0,
        DType::F8E4M3FN | DType::F8E4M3FNx4 => 448.0,
        DType::F8E5M2 | DType::F8E5M2x4 => 57344.0,
        DType::F8E8M0 => f64::from(f32::from_bits(0x7f00_0000)),
        DType::F4E2M1FNx4 => 6.0,
        DType::I8 => i8::MAX.into(),
        DType::I16 => i16::MAX.into(),
        DType::I32 => i32::MAX.into(),
        DType::U8 => u8::MAX.into(),
        DType::U16 => u16::MAX.into(),
        DType::U32 => u32::MAX.into(),
        DType::Bool => 1.0,
    }
}

/// The smallest (most negative) finite value of `dt`, exactly, as `f64`:
/// `-max_finite` for the signed float formats, 2^-127 for the unsigned
/// `float8_e8m0fnu`, the integer minimum for integers and 0 for `bool`.
pub fn min_finite(dt: DType) -> f64 {
    match dt {
        DType::F8E8M0 => f64::from(f32::from_bits(0x0040_0000)),
        DType::I8 => i8::MIN.into(),
        DType::I16 => i16::MIN.into(),
        DType::I32 => i32::MIN.into(),
        DType::U8 | DType::U16 | DType::U32 | DType::Bool => 0.0,
        _ => -max_finite(dt),
    }
}

/// True if `dt` (or its lane format) has infinities.
pub fn has_inf(dt: DType) -> bool {
    matches!(
        dt,
        DType::F32
            | DType::F16
            | DType::BF16
            | DType::TF32
            | DType::F8E4M3
            | DType::F8E5M2
            | DType::F8E5M2x4
    )
}

/// True if `dt` (or its lane format) has NaN codes.
pub fn has_nan(dt: DType) -> bool {
    dt.is_float() && dt != DType::F4E2M1FNx4
}

/// The low mantissa bits a `tfloat32` does not keep.
const TF32_DROPPED: u32 = 0x1fff;

/// `f32` → `tfloat32` container bits: RNE to 10 mantissa bits.
#[inline]
fn tf32_from_f32(x: f32, saturate: bool) -> u32 {
    let bits = x.to_bits();
    let sign = bits & 0x8000_0000;
    let abs = bits & 0x7fff_ffff;
    if abs > 0x7f80_0000 {
        // Keep the NaN's sign and top payload bits; set the quiet bit so the
        // result stays a NaN once the low bits are cleared.
        return (bits | 0x0040_0000) & !TF32_DROPPED;
    }
    let rounded = minifloat::round_shift_rne(abs, 13) << 13;
    if saturate && rounded == 0x7f80_0000 && abs != 0x7f80_0000 {
        return sign | 0x7f7f_e000;
    }
    sign | rounded
}

/// Float → integer: RNE, saturating to `[lo, hi]`, NaN → 0.
#[inline]
fn float_to_int(x: f32, lo: i64, hi: i64) -> i64 {
    let r = round_ties_even(x);
    if r.is_nan() {
        return 0;
    }
    // Clamping in `f32` compiles to branch-free min/max. The bounds round to
    // the nearest `f32`, which only moves `i32::MAX` and `u32::MAX` up by
    // one; the final `min` in `i64` puts those back.
    (r.clamp(lo as f32, hi as f32) as i64).min(hi)
}

/// `x` rounded to an integer, ties to even.
///
/// `f32::round_ties_even` is a library call on baseline x86-64; adding and
/// subtracting 2^23 makes the FPU round instead (Rust guarantees the default
/// round-to-nearest-even mode). Magnitudes of 2^23 and above are integers.
#[inline]
fn round_ties_even(x: f32) -> f32 {
    const TWO_23: f32 = 8_388_608.0;
    let a = x.abs();
    if a < TWO_23 {
        ((a + TWO_23) - TWO_23).copysign(x)
    } else {
        x
    }
}

/// `f32` → `float16` bits (RNE, via the `half` crate), with the policy's overflow.
#[inline]
fn f16_from_f32(x: f32, saturate: bool) -> u32 {
    half_overflow(x, f16::from_f32(x).to_bits(), saturate, 0x7c00, 0x7bff)
}

/// `f32` → `bfloat16` bits (RNE, via the `half` crate), with the policy's overflow.
#[inline]
fn bf16_from_f32(x: f32, saturate: bool) -> u32 {
    half_overflow(x, bf16::from_f32(x).to_bits(), saturate, 0x7f80, 0x7f7f)
}

/// The 16-bit result `h` of rounding the finite or infinite `x`: when
/// saturating, an infinity (`inf` in magnitude) that `x` overflowed to
/// becomes the largest finite value `max` of the same sign.
#[inline]
fn half_overflow(x: f32, h: u16, saturate: bool, inf: u32, max: u32) -> u32 {
    let h = u32::from(h);
    if saturate && h & 0x7fff == inf && x.is_finite() {
        (h & 0x8000) | max
    } else {
        h
    }
}

/// Appends `f(x)` for every value; one monomorphic loop per dtype.
#[inline]
fn encode_each<const N: usize>(xs: &[f32], out: &mut Vec<u8>, f: impl Fn(f32) -> [u8; N]) {
    // Sized once, then filled: no capacity check per element.
    let start = out.len();
    out.resize(start + xs.len() * N, 0);
    for (bytes, &x) in out[start..].chunks_exact_mut(N).zip(xs) {
        bytes.copy_from_slice(&f(x));
    }
}

/// `f16` bits → `f32`: exact, NaN payloads kept with the quiet bit set.
/// Every case is computed and one selected, with no branch, so that
/// `decode`'s loop over a row is vectorised (2–4× quicker than one branch
/// per case).
#[inline]
fn f16_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff;
    // Subnormal or zero: the 10-bit integer mantissa times 2^-24, exact.
    let subnormal = (em as f32 * f32::from_bits(0x3380_0000)).to_bits();
    // Normal: move the fields into place and rebias 15 → 127.
    let normal = (em << 13) + (112 << 23);
    // Infinity keeps its zero mantissa; a NaN gets the quiet bit.
    let quiet = if em > 0x7c00 { 0x0040_0000 } else { 0 };
    let special = 0x7f80_0000 | quiet | ((em & 0x03ff) << 13);
    let mag = if em < 0x0400 {
        subnormal
    } else if em < 0x7c00 {
        normal
    } else {
        special
    };
    f32::from_bits(sign | mag)
}

/// Appends `f(element)` for every whole `N`-byte element of `bytes`; one
/// monomorphic loop per dtype keeps the dtype dispatch out of the loop.
#[inline]
fn decode_each<const N: usize>(bytes: &[u8], out: &mut Vec<f32>, f: impl Fn([u8; N]) -> f32) {
    out.extend(bytes.chunks_exact(N).map(|c| {
        let mut raw = [0u8; N];
        raw.copy_from_slice(c);
        f(raw)
    }));
}

/// The four fp8 lanes of a packed word, lane 0 in the least significant byte.
#[inline]
fn bytes_lanes(table: &[f32; 256], bits: u32) -> [f32; 4] {
    std::array::from_fn(|lane| table[((bits >> (8 * lane as u32)) & 0xff) as usize])
}
