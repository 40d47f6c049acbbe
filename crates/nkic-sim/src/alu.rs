//! The engines' arithmetic: ALU operators in fp32, bitwise operators on raw
//! integer bits, and the Scalar engine's activation functions.
//!
//! # Choices (the spec leaves these open)
//!
//! * `maximum`/`minimum` propagate NaN (as NumPy's `np.maximum`); otherwise
//!   `maximum(a, b)` is `a` when `a >= b`, else `b` (so `maximum(-0, +0)` is
//!   `-0`), and `minimum(a, b)` is `a` when `a <= b`, else `b`.
//! * Comparisons give 1.0 or 0.0; a NaN operand compares false except for
//!   `not_equal`.
//! * The logical operators read any nonzero value (and NaN) as true and give
//!   1.0 or 0.0.
//! * `abs_max`/`abs_min` return the operand of larger/smaller magnitude with
//!   its sign; ties go to the second operand (isa.md §2.3).
//! * Unary operators ignore the second operand; `bypass` returns the first.
//! * `average` (legal only in `tensor_partition_reduce`, which divides the
//!   sum itself) acts as `add` here.
//! * Bitwise operators work on 32-bit integers: each integer element is
//!   sign-extended (signed dtypes) or zero-extended, an fp32 immediate is
//!   truncated toward zero; shifts use `rhs mod 32` and `right_shift` is
//!   logical. The result is truncated to the destination's width on write
//!   (docs/isa.md §1.6).
//! * Activation functions are computed in f64 from the f32 input with the
//!   standard definitions of isa.md §2.4 and rounded once to f32. The
//!   hardware's piecewise polynomials (and their garbage outside the valid
//!   ranges) are not modelled; in particular `sin` is the true sine
//!   everywhere. `prelu` uses the slope `alpha` (`relu_param`, 0 when the
//!   instruction has none, which makes it `relu`). `sign` returns -1, +1,
//!   the input itself for ±0 and NaN for NaN. `erf` is our own f64
//!   implementation (a Taylor series below 2.5, a continued fraction for
//!   erfc above), accurate to far better than f32 precision.

use nkic_isa::{ActFunc, AluOp};

/// `lhs op rhs` in fp32 for the arithmetic operators.
///
/// Bitwise operators reaching this function (an instruction applying one to
/// float data) act on the values converted to integers; see `alu_bits`.
#[inline]
pub(crate) fn alu(op: AluOp, a: f32, b: f32) -> f32 {
    match op {
        AluOp::Add | AluOp::Average => a + b,
        AluOp::Subtract => a - b,
        AluOp::Multiply => a * b,
        AluOp::Maximum => max(a, b),
        AluOp::Minimum => min(a, b),
        AluOp::Equal => bool_f(a == b),
        AluOp::NotEqual => bool_f(a != b),
        AluOp::GreaterEqual => bool_f(a >= b),
        AluOp::Greater => bool_f(a > b),
        AluOp::LessEqual => bool_f(a <= b),
        AluOp::Less => bool_f(a < b),
        AluOp::LogicalAnd => bool_f(truthy(a) && truthy(b)),
        AluOp::LogicalOr => bool_f(truthy(a) || truthy(b)),
        AluOp::LogicalXor => bool_f(truthy(a) != truthy(b)),
        AluOp::Power => a.powf(b),
        AluOp::AbsMax => by_magnitude(a, b, f32::abs, PartialOrd::gt),
        AluOp::AbsMin => by_magnitude(a, b, f32::abs, PartialOrd::lt),
        AluOp::Abs => a.abs(),
        AluOp::Square => a * a,
        AluOp::Relu => max(a, 0.0),
        AluOp::Rsqrt => (1.0 / f64::from(a).sqrt()) as f32,
        AluOp::Reciprocal => 1.0 / a,
        AluOp::Bypass => a,
        AluOp::Invert
        | AluOp::BitwiseAnd
        | AluOp::BitwiseOr
        | AluOp::BitwiseXor
        | AluOp::LeftShift
        | AluOp::RightShift => {
            let bits = alu_bits(op, float_to_bits(a), float_to_bits(b));
            bits as i32 as f32
        }
    }
}

/// `lhs op rhs` on raw bits for the bitwise operators (other operators are
/// computed on the bits read as signed 32-bit integers, exactly, wrapping).
#[inline]
pub(crate) fn alu_bits(op: AluOp, a: u32, b: u32) -> u32 {
    match op {
        AluOp::Invert => !a,
        AluOp::BitwiseAnd => a & b,
        AluOp::BitwiseOr => a | b,
        AluOp::BitwiseXor => a ^ b,
        AluOp::LeftShift => a << (b % 32),
        AluOp::RightShift => a >> (b % 32),
        other => alu_int(other, i64::from(a as i32), i64::from(b as i32)) as u32,
    }
}

/// Exact integer arithmetic (GpSimd's integer paths): the result wraps to
/// 64 bits here and to the destination width on write.
#[inline]
pub(crate) fn alu_int(op: AluOp, a: i64, b: i64) -> i64 {
    match op {
        AluOp::Add | AluOp::Average => a.wrapping_add(b),
        AluOp::Subtract => a.wrapping_sub(b),
        AluOp::Multiply => a.wrapping_mul(b),
        AluOp::Maximum => a.max(b),
        AluOp::Minimum => a.min(b),
        AluOp::Equal => i64::from(a == b),
        AluOp::NotEqual => i64::from(a != b),
        AluOp::GreaterEqual => i64::from(a >= b),
        AluOp::Greater => i64::from(a > b),
        AluOp::LessEqual => i64::from(a <= b),
        AluOp::Less => i64::from(a < b),
        AluOp::LogicalAnd => i64::from(a != 0 && b != 0),
        AluOp::LogicalOr => i64::from(a != 0 || b != 0),
        AluOp::LogicalXor => i64::from((a != 0) != (b != 0)),
        AluOp::AbsMax => by_magnitude(a, b, i64::unsigned_abs, PartialOrd::gt),
        AluOp::AbsMin => by_magnitude(a, b, i64::unsigned_abs, PartialOrd::lt),
        AluOp::Abs => a.wrapping_abs(),
        AluOp::Square => a.wrapping_mul(a),
        AluOp::Relu => a.max(0),
        AluOp::Bypass => a,
        AluOp::Invert => !a,
        AluOp::BitwiseAnd => a & b,
        AluOp::BitwiseOr => a | b,
        AluOp::BitwiseXor => a ^ b,
        AluOp::LeftShift => {
            if (0..64).contains(&b) {
                a.wrapping_shl(b as u32)
            } else {
                0
            }
        }
        AluOp::RightShift => {
            if (0..64).contains(&b) {
                ((a as u64) >> b) as i64
            } else {
                0
            }
        }
        // Operators without an exact integer form go through fp32.
        AluOp::Power | AluOp::Rsqrt | AluOp::Reciprocal => {
            let r = alu(op, a as f32, b as f32);
            if r.is_finite() { r as i64 } else { 0 }
        }
    }
}

/// An fp32 immediate used as an integer operand of a bitwise operator:
/// truncated toward zero to `i32` (saturating; NaN is 0), as bits.
#[inline]
pub(crate) fn float_to_bits(x: f32) -> u32 {
    x as i32 as u32
}

/// The exact 32-bit integer form of GpSimd's integer paths (docs/isa.md
/// §1.6): `add`, `subtract`, `multiply`, `maximum`, `minimum` and the
/// comparisons, wrapping, signed or unsigned; `None` for other operators.
#[inline]
pub(crate) fn alu_i32(op: AluOp, a: u32, b: u32, signed: bool) -> Option<u32> {
    let (sa, sb) = (a as i32, b as i32);
    let cmp = |lt: bool, eq: bool| -> u32 {
        let gt = !lt && !eq;
        u32::from(match op {
            AluOp::Equal => eq,
            AluOp::NotEqual => !eq,
            AluOp::Less => lt,
            AluOp::LessEqual => lt || eq,
            AluOp::Greater => gt,
            _ => gt || eq,
        })
    };
    let lt = if signed { sa < sb } else { a < b };
    Some(match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Subtract => a.wrapping_sub(b),
        AluOp::Multiply => a.wrapping_mul(b),
        AluOp::Maximum => {
            if lt {
                b
            } else {
                a
            }
        }
        AluOp::Minimum => {
            if lt {
                a
            } else {
                b
            }
        }
        AluOp::Equal
        | AluOp::NotEqual
        | AluOp::Less
        | AluOp::LessEqual
        | AluOp::Greater
        | AluOp::GreaterEqual => cmp(lt, a == b),
        _ => return None,
    })
}

/// The identity of a reduction operator (isa.md §2.5).
pub(crate) fn identity(op: AluOp) -> f32 {
    op.reduction_identity().unwrap_or(0.0)
}

/// `abs_max`/`abs_min`: `a` when `keep_a(|a|, |b|)` holds for the
/// magnitudes `abs` gives, else `b` (so ties go to `b`).
#[inline]
fn by_magnitude<T: Copy, M>(
    a: T,
    b: T,
    abs: impl Fn(T) -> M,
    keep_a: impl Fn(&M, &M) -> bool,
) -> T {
    if keep_a(&abs(a), &abs(b)) { a } else { b }
}

#[inline]
fn bool_f(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

#[inline]
fn truthy(x: f32) -> bool {
    x != 0.0
}

#[inline]
fn max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

#[inline]
fn min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// The activation function `func` at `x` (see the module doc).
pub(crate) fn activation(func: ActFunc, x: f32, alpha: f32) -> f32 {
    let v = f64::from(x);
    let r = match func {
        ActFunc::Copy => return x,
        ActFunc::Square => v * v,
        ActFunc::Sigmoid => sigmoid(v),
        ActFunc::Relu => return max(x, 0.0),
        ActFunc::Prelu => {
            if x > 0.0 || x.is_nan() {
                return x;
            }
            v * f64::from(alpha)
        }
        ActFunc::Gelu => 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2)),
        ActFunc::GeluDx => {
            let cdf = 0.5 * (1.0 + erf(v / std::f64::consts::SQRT_2));
            let pdf = (-0.5 * v * v).exp() / (2.0 * std::f64::consts::PI).sqrt();
            cdf + v * pdf
        }
        ActFunc::GeluApprxTanh => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh())
        }
        ActFunc::GeluApprxSigmoid => v * sigmoid(1.702 * v),
        ActFunc::GeluApprxSigmoidDx => {
            let s = sigmoid(1.702 * v);
            s + 1.702 * v * s * (1.0 - s)
        }
        ActFunc::Silu => v * sigmoid(v),
        ActFunc::SiluDx => {
            let s = sigmoid(v);
            s * (1.0 + v * (1.0 - s))
        }
        ActFunc::Tanh => v.tanh(),
        ActFunc::Softplus => softplus(v),
        ActFunc::Mish => v * softplus(v).tanh(),
        ActFunc::Erf => erf(v),
        ActFunc::ErfDx => 2.0 / std::f64::consts::PI.sqrt() * (-v * v).exp(),
        ActFunc::Exp => return crate::exp::exp_f32(x),
        ActFunc::Log => v.ln(),
        ActFunc::Sin => v.sin(),
        ActFunc::Arctan => v.atan(),
        ActFunc::Sqrt => v.sqrt(),
        ActFunc::Rsqrt => 1.0 / v.sqrt(),
        ActFunc::Reciprocal => 1.0 / v,
        ActFunc::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                return x;
            }
        }
        ActFunc::Abs => return x.abs(),
    };
    r as f32
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// `ln(1 + e^v)` without overflow.
fn softplus(v: f64) -> f64 {
    if v.is_nan() {
        return v;
    }
    v.max(0.0) + (-v.abs()).exp().ln_1p()
}

/// The error function in f64.
pub(crate) fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        // Taylor series: erf x = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)).
        let x2 = a * a;
        let mut term = a;
        let mut sum = a;
        let mut n = 0.0;
        loop {
            n += 1.0;
            term *= -x2 / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            if add.abs() <= 1e-17 * sum.abs() || n > 200.0 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else if a < 6.0 {
        1.0 - erfc_cf(a)
    } else {
        1.0
    };
    r.copysign(x)
}

/// erfc(x) for x ≥ 2.5 by its continued fraction, evaluated backwards:
/// erfc x = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))).
fn erfc_cf(x: f64) -> f64 {
    let mut f = x;
    for k in (1..=60).rev() {
        f = x + (f64::from(k) / 2.0) / f;
    }
    (-x * x).exp() / std::f64::consts::PI.sqrt() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        // Reference values from the standard tables (15 significant digits).
        let cases = [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_047),
            (1.0, 0.842_700_792_949_715),
            (2.0, 0.995_322_265_018_953),
            (2.5, 0.999_593_047_982_555),
            (3.0, 0.999_977_909_503_001),
            (-1.0, -0.842_700_792_949_715),
        ];
        for (x, want) in cases {
            assert!((erf(x) - want).abs() < 1e-13, "erf({x}) = {}", erf(x));
        }
        assert_eq!(erf(7.0), 1.0);
    }

    #[test]
    fn nan_propagates_through_max_and_min() {
        assert!(alu(AluOp::Maximum, f32::NAN, 1.0).is_nan());
        assert!(alu(AluOp::Minimum, 1.0, f32::NAN).is_nan());
        assert_eq!(
            alu(AluOp::Maximum, -0.0, 0.0).to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(alu(AluOp::AbsMax, -3.0, 2.0), -3.0);
        assert_eq!(alu(AluOp::AbsMax, -2.0, 2.0), 2.0);
        assert_eq!(alu(AluOp::AbsMin, -2.0, 2.0), 2.0);
        assert_eq!(alu(AluOp::NotEqual, f32::NAN, f32::NAN), 1.0);
        assert_eq!(alu(AluOp::Equal, f32::NAN, f32::NAN), 0.0);
    }

    #[test]
    fn bit_operators() {
        assert_eq!(alu_bits(AluOp::RightShift, 0xff, 4), 0x0f);
        assert_eq!(alu_bits(AluOp::LeftShift, 1, 33), 2);
        assert_eq!(alu_bits(AluOp::Invert, 0, 0), u32::MAX);
        assert_eq!(float_to_bits(255.9), 255);
        assert_eq!(float_to_bits(-1.5), u32::MAX);
        assert_eq!(alu_i32(AluOp::Add, u32::MAX, 2, false), Some(1));
        assert_eq!(alu_i32(AluOp::Less, u32::MAX, 2, true), Some(1));
        assert_eq!(alu_i32(AluOp::Less, u32::MAX, 2, false), Some(0));
        assert_eq!(alu_i32(AluOp::Maximum, u32::MAX, 2, true), Some(2));
        assert_eq!(alu_i32(AluOp::Power, 1, 2, true), None);
    }

    #[test]
    fn activations() {
        assert_eq!(activation(ActFunc::Relu, -2.0, 0.0), 0.0);
        assert_eq!(activation(ActFunc::Prelu, -2.0, 0.25), -0.5);
        assert_eq!(activation(ActFunc::Exp, 0.0, 0.0), 1.0);
        assert_eq!(activation(ActFunc::Sigmoid, 0.0, 0.0), 0.5);
        assert_eq!(activation(ActFunc::Sign, -3.0, 0.0), -1.0);
        assert_eq!(activation(ActFunc::Gelu, 0.0, 0.0), 0.0);
        assert_eq!(
            activation(ActFunc::Softplus, 0.0, 0.0),
            std::f32::consts::LN_2
        );
        assert_eq!(activation(ActFunc::Rsqrt, 4.0, 0.0), 0.5);
        assert_eq!(activation(ActFunc::Log, 1.0, 0.0), 0.0);
        assert_eq!(activation(ActFunc::Sin, 9.0, 0.0), 9.0f64.sin() as f32);
    }
}
