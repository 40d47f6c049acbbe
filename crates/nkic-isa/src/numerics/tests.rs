//! Unit tests of the numerics: integer, bool and tfloat32 rules, packing
//! order, overflow policies, and a brute-force nearest-value oracle for the
//! narrow formats. The exhaustive comparison with `ml_dtypes` lives in
//! `tests/numerics.rs`.

use super::*;

/// Every dtype that `to_f32`/`from_f32` accept: all but the packed x4
/// formats, in declaration order.
fn scalar_dtypes() -> impl Iterator<Item = DType> {
    DType::ALL.into_iter().filter(|dt| !dt.is_packed_x4())
}

const NAN: f32 = f32::NAN;
const INF: f32 = f32::INFINITY;

/// A small deterministic generator (xorshift64*) so the tests need no seed
/// handling and always check the same values.
struct Rng(u64);

impl Rng {
    fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }
}

#[test]
fn int_encode_rounds_to_nearest_even_and_saturates() {
    let cases: &[(DType, f32, u32)] = &[
        (DType::I8, 2.5, 2),
        (DType::I8, 3.5, 4),
        (DType::I8, -2.5, 0xfe),
        (DType::I8, -0.5, 0),
        (DType::I8, 0.5000001, 1),
        (DType::I8, 127.4, 127),
        (DType::I8, 127.5, 127),
        (DType::I8, -128.5, 0x80),
        (DType::I8, -1e9, 0x80),
        (DType::I8, INF, 0x7f),
        (DType::I8, -INF, 0x80),
        (DType::I8, NAN, 0),
        (DType::I8, -NAN, 0),
        (DType::U8, -3.0, 0),
        (DType::U8, -0.5, 0),
        (DType::U8, 254.5, 254),
        (DType::U8, 255.5, 255),
        (DType::U8, 1e30, 255),
        (DType::U8, NAN, 0),
        (DType::I16, -32768.0, 0x8000),
        (DType::I16, 32767.5, 0x7fff),
        (DType::I16, -40000.0, 0x8000),
        (DType::I16, 1234.5, 1234),
        (DType::U16, 65535.0, 0xffff),
        (DType::U16, 70000.0, 0xffff),
        (DType::U16, 0.49999997, 0),
        (DType::I32, 2_147_483_520.0, 2_147_483_520),
        (DType::I32, 2_147_483_648.0, 0x7fff_ffff),
        (DType::I32, -2_147_483_648.0, 0x8000_0000),
        (DType::I32, -3e9, 0x8000_0000),
        (DType::I32, -7.5, (-8i32) as u32),
        (DType::I32, NAN, 0),
        (DType::U32, 4_294_967_040.0, 4_294_967_040),
        (DType::U32, 4_294_967_296.0, u32::MAX),
        (DType::U32, -1.0, 0),
        (DType::U32, INF, u32::MAX),
    ];
    for &(dt, x, want) in cases {
        let got = from_f32(dt, x);
        assert_eq!(got, want, "{dt} from {x:e}: got {got:#x}, want {want:#x}");
        assert_eq!(
            from_f32_with(dt, x, Overflow::Saturate),
            want,
            "{dt} saturating from {x:e}"
        );
    }
}

#[test]
fn int_decode_is_exact_or_nearest_even() {
    assert_eq!(to_f32(DType::I8, 0xff), -1.0);
    assert_eq!(to_f32(DType::I8, 0x80), -128.0);
    assert_eq!(to_f32(DType::I8, 0x7f), 127.0);
    assert_eq!(to_f32(DType::U8, 0xff), 255.0);
    assert_eq!(to_f32(DType::I16, 0x8000), -32768.0);
    assert_eq!(to_f32(DType::U16, 0xffff), 65535.0);
    assert_eq!(to_f32(DType::I32, 0xffff_ffff), -1.0);
    assert_eq!(to_f32(DType::I32, 0x8000_0000), -2_147_483_648.0);
    // 2^24 + 1 is not an `f32`; it ties between 2^24 and 2^24 + 2 and goes to the even one.
    assert_eq!(to_f32(DType::I32, 16_777_217), 16_777_216.0);
    assert_eq!(to_f32(DType::I32, 16_777_219), 16_777_220.0);
    assert_eq!(to_f32(DType::U32, 0xffff_ffff), 4_294_967_296.0);
    // Bits above the element size are ignored.
    assert_eq!(to_f32(DType::I8, 0x1234_56ff), -1.0);
    assert_eq!(to_f32(DType::U16, 0xdead_0001), 1.0);
}

#[test]
fn every_int_value_of_the_narrow_ints_round_trips() {
    for dt in [DType::I8, DType::U8, DType::I16, DType::U16] {
        let n = 1u32 << (8 * dt.size());
        for bits in 0..n {
            let x = to_f32(dt, bits);
            assert_eq!(from_f32(dt, x), bits, "{dt} code {bits:#x} ({x})");
        }
    }
}

#[test]
fn bool_is_nonzero() {
    assert_eq!(from_f32(DType::Bool, 0.0), 0);
    assert_eq!(from_f32(DType::Bool, -0.0), 0);
    assert_eq!(from_f32(DType::Bool, 0.5), 1);
    assert_eq!(from_f32(DType::Bool, -3.0), 1);
    assert_eq!(from_f32(DType::Bool, f32::from_bits(1)), 1);
    assert_eq!(from_f32(DType::Bool, NAN), 1);
    assert_eq!(from_f32(DType::Bool, -INF), 1);
    assert_eq!(to_f32(DType::Bool, 0), 0.0);
    assert_eq!(to_f32(DType::Bool, 1), 1.0);
    assert_eq!(to_f32(DType::Bool, 0x80), 1.0);
    assert_eq!(to_f32(DType::Bool, 0x100), 0.0);
}

#[test]
fn tf32_rounds_the_low_13_bits_to_nearest_even() {
    let one = 1.0f32.to_bits();
    let cases: &[(u32, u32)] = &[
        (one, one),
        // Exactly halfway above 1.0 (mantissa even): stays.
        (one | 0x1000, one),
        (one | 0x1001, one + 0x2000),
        (one | 0x0fff, one),
        // Halfway above an odd mantissa: rounds up to the even one.
        (one | 0x3000, one + 0x4000),
        (0x8000_0000 | one | 0x3000, 0x8000_0000 | (one + 0x4000)),
        // The carry moves into the exponent.
        (0x3fff_f000, 0x4000_0000),
        // f32 max rounds past tf32's max to infinity.
        (0x7f7f_ffff, 0x7f80_0000),
        (0x7f7f_efff, 0x7f7f_e000),
        (0x7f80_0000, 0x7f80_0000),
        (0xff80_0000, 0xff80_0000),
        // Subnormals round like everything else.
        (0x0000_1000, 0),
        (0x0000_3000, 0x4000),
        (0x8000_0000, 0x8000_0000),
    ];
    for &(x, want) in cases {
        let got = from_f32(DType::TF32, f32::from_bits(x));
        assert_eq!(
            got, want,
            "tf32 from {x:#010x}: got {got:#010x}, want {want:#010x}"
        );
        assert_eq!(got & 0x1fff, 0);
    }
    assert_eq!(
        from_f32_with(DType::TF32, f32::MAX, Overflow::Saturate),
        0x7f7f_e000
    );
    assert_eq!(
        from_f32_with(DType::TF32, -f32::MAX, Overflow::Saturate),
        0xff7f_e000
    );
    assert_eq!(
        from_f32_with(DType::TF32, INF, Overflow::Saturate),
        0x7f80_0000
    );
    // A NaN whose payload sits only in the dropped bits stays a NaN.
    let nan = from_f32(DType::TF32, f32::from_bits(0xff80_0001));
    assert_eq!(nan, 0xffc0_0000);
    assert!(to_f32(DType::TF32, nan).is_nan());
    // Decoding ignores the low 13 bits of the container.
    assert_eq!(to_f32(DType::TF32, one | 0x1fff), 1.0);
    assert_eq!(
        max_finite(DType::TF32),
        f64::from(to_f32(DType::TF32, 0x7f7f_e000))
    );
}

#[test]
fn packed_fp8_lane_zero_is_the_least_significant_byte() {
    let xs = [1.0, 2.0, -1.0, 0.0];
    let bits = from_f32_x4(DType::F8E4M3FNx4, xs, Overflow::Native);
    assert_eq!(bits, 0x00b8_4038);
    assert_eq!(to_f32_x4(DType::F8E4M3FNx4, bits), xs);
    let bits = from_f32_x4(DType::F8E5M2x4, [1.0, 2.0, -1.0, 57344.0], Overflow::Native);
    assert_eq!(bits, 0x7bbc_403c);
    assert_eq!(to_f32_x4(DType::F8E5M2x4, bits), [1.0, 2.0, -1.0, 57344.0]);

    let mut bytes = Vec::new();
    encode(
        DType::F8E4M3FNx4,
        &[1.0, 2.0, -1.0, 0.0, 448.0, -448.0, 0.5, 3.0],
        &mut bytes,
    );
    assert_eq!(bytes, [0x38, 0x40, 0xb8, 0x00, 0x7e, 0xfe, 0x30, 0x44]);
    let mut back = Vec::new();
    decode(DType::F8E4M3FNx4, &bytes, &mut back);
    assert_eq!(back, [1.0, 2.0, -1.0, 0.0, 448.0, -448.0, 0.5, 3.0]);
}

#[test]
fn packed_fp4_lane_zero_is_the_low_nibble() {
    let xs = [0.5, 1.0, 6.0, -1.5];
    let bits = from_f32_x4(DType::F4E2M1FNx4, xs, Overflow::Native);
    assert_eq!(bits, 0xb721);
    assert_eq!(to_f32_x4(DType::F4E2M1FNx4, bits), xs);
    let mut bytes = Vec::new();
    encode(
        DType::F4E2M1FNx4,
        &[0.5, 1.0, 6.0, -1.5, 0.0, -0.0, 4.0, 3.0],
        &mut bytes,
    );
    assert_eq!(bytes, [0x21, 0xb7, 0x80, 0x56]);
    let mut back = Vec::new();
    decode(DType::F4E2M1FNx4, &bytes, &mut back);
    assert_eq!(back.len(), 8);
    assert_eq!(back[..4], xs);
    assert_eq!(
        back[4..].iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        [0u32, 0x8000_0000, 4.0f32.to_bits(), 3.0f32.to_bits()]
    );
}

#[test]
fn fp4_rounds_to_nearest_even_and_saturates() {
    let values = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for (code, &v) in values.iter().enumerate() {
        assert_eq!(fp4_e2m1_to_f32(code as u32), v);
        assert_eq!(fp4_e2m1_to_f32(code as u32 | 8), -v);
    }
    let cases: &[(f32, u32)] = &[
        (0.25, 0),
        (0.250_000_03, 1),
        (0.75, 2),
        (1.25, 2),
        (1.75, 4),
        (2.5, 4),
        (3.5, 6),
        (5.0, 6),
        (5.000_001, 7),
        (100.0, 7),
        (INF, 7),
        (-INF, 0xf),
        (-0.25, 8),
        (-5.5, 0xf),
        (NAN, 8),
        (-NAN, 0),
    ];
    for &(x, want) in cases {
        assert_eq!(fp4_e2m1_from_f32(x), want, "fp4 from {x}");
    }
}

#[test]
fn narrow_float_special_codes_decode() {
    let e4m3 = |c| to_f32(DType::F8E4M3, c);
    assert_eq!(e4m3(0x77), 240.0);
    assert_eq!(e4m3(0x78), INF);
    assert_eq!(e4m3(0xf8), -INF);
    assert!(e4m3(0x79).is_nan() && e4m3(0x7f).is_nan() && e4m3(0xff).is_nan());
    assert_eq!(e4m3(0x01), 2f32.powi(-9));
    assert_eq!(e4m3(0x08), 2f32.powi(-6));
    assert_eq!(e4m3(0x38), 1.0);
    assert_eq!(e4m3(0x80).to_bits(), 0x8000_0000);

    let e4m3fn = |c| to_f32(DType::F8E4M3FN, c);
    assert_eq!(e4m3fn(0x7e), 448.0);
    assert_eq!(e4m3fn(0x78), 256.0);
    assert_eq!(e4m3fn(0xfe), -448.0);
    assert!(e4m3fn(0x7f).is_nan() && e4m3fn(0xff).is_nan());
    assert_eq!(e4m3fn(0x07), 7.0 * 2f32.powi(-9));

    let e5m2 = |c| to_f32(DType::F8E5M2, c);
    assert_eq!(e5m2(0x7b), 57344.0);
    assert_eq!(e5m2(0x7c), INF);
    assert!(e5m2(0x7d).is_nan() && e5m2(0x7e).is_nan() && e5m2(0x7f).is_nan());
    assert_eq!(e5m2(0x01), 2f32.powi(-16));
    assert_eq!(e5m2(0x3c), 1.0);

    let e8m0 = |c| to_f32(DType::F8E8M0, c);
    assert_eq!(e8m0(0), 2f32.powi(-127));
    assert_eq!(e8m0(1), 2f32.powi(-126));
    assert_eq!(e8m0(127), 1.0);
    assert_eq!(e8m0(254), 2f32.powi(127));
    assert!(e8m0(255).is_nan());
}

#[test]
fn overflow_policies() {
    let cases: &[(DType, f32, u32, u32)] = &[
        // dtype, input, native, saturating
        (DType::F8E4M3, 1000.0, 0x78, 0x77),
        (DType::F8E4M3, -1000.0, 0xf8, 0xf7),
        (DType::F8E4M3, 247.9, 0x77, 0x77),
        (DType::F8E4M3, 248.0, 0x78, 0x77),
        (DType::F8E4M3, INF, 0x78, 0x78),
        (DType::F8E4M3, NAN, 0x7c, 0x7c),
        (DType::F8E4M3, -NAN, 0xfc, 0xfc),
        (DType::F8E4M3FN, 464.0, 0x7e, 0x7e),
        (DType::F8E4M3FN, 464.1, 0x7f, 0x7e),
        (DType::F8E4M3FN, -1e30, 0xff, 0xfe),
        (DType::F8E4M3FN, INF, 0x7f, 0x7e),
        (DType::F8E4M3FN, -INF, 0xff, 0xfe),
        (DType::F8E4M3FN, NAN, 0x7f, 0x7f),
        (DType::F8E5M2, 61439.0, 0x7b, 0x7b),
        (DType::F8E5M2, 61440.0, 0x7c, 0x7b),
        (DType::F8E5M2, -INF, 0xfc, 0xfc),
        (DType::F8E5M2, NAN, 0x7e, 0x7e),
        (DType::F8E8M0, 2f32.powi(127) * 1.5, 0xff, 0xfe),
        (DType::F8E8M0, 2f32.powi(127) * 1.25, 0xfe, 0xfe),
        (DType::F8E8M0, INF, 0xff, 0xfe),
        (DType::F8E8M0, 0.0, 0xff, 0xff),
        (DType::F8E8M0, -1.0, 0xff, 0xff),
        (DType::F8E8M0, NAN, 0xff, 0xff),
        (DType::F16, 65520.0, 0x7c00, 0x7bff),
        (DType::F16, 65519.0, 0x7bff, 0x7bff),
        (DType::F16, -1e6, 0xfc00, 0xfbff),
        (DType::F16, INF, 0x7c00, 0x7c00),
        (DType::BF16, f32::MAX, 0x7f80, 0x7f7f),
        (DType::BF16, -f32::MAX, 0xff80, 0xff7f),
        (DType::BF16, -INF, 0xff80, 0xff80),
        (DType::F32, f32::MAX, 0x7f7f_ffff, 0x7f7f_ffff),
    ];
    for &(dt, x, native, saturating) in cases {
        let got = from_f32(dt, x);
        assert_eq!(got, native, "{dt} native from {x:e}: got {got:#x}");
        let got = from_f32_with(dt, x, Overflow::Saturate);
        assert_eq!(got, saturating, "{dt} saturating from {x:e}: got {got:#x}");
    }
    let packed = from_f32_x4(DType::F8E5M2x4, [1e9, -1e9, INF, 0.0], Overflow::Saturate);
    assert_eq!(packed, 0x007c_fb7b);
    let packed = from_f32_x4(DType::F8E5M2x4, [1e9, -1e9, INF, 0.0], Overflow::Native);
    assert_eq!(packed, 0x007c_fc7c);
}

#[test]
fn e8m0_rounds_linearly_with_ties_up() {
    let cases: &[(f32, u32)] = &[
        (1.0, 127),
        (1.499_999_9, 127),
        (1.5, 128),
        (0.75, 127),
        (3.0, 129),
        (0.5, 126),
        (2f32.powi(-127), 0),
        (f32::from_bits(1), 0),
        (f32::from_bits(0x0040_0001), 1),
        (f32::from_bits(0x0060_0000), 1),
        (f32::MIN_POSITIVE, 1),
        (f32::MAX, 0xff),
    ];
    for &(x, want) in cases {
        assert_eq!(from_f32(DType::F8E8M0, x), want, "e8m0 from {x:e}");
    }
}

/// The code of `table` nearest to `x` under RNE, found by brute force: the
/// finite code with the smallest distance, ties to the code with an even
/// mantissa (for these formats, the even code).
fn nearest_code(table: &[f32], x: f32) -> u32 {
    let x = f64::from(x);
    let mut best: Option<(f64, u32)> = None;
    for (code, &v) in table.iter().enumerate() {
        if !v.is_finite() || (v == 0.0 && v.is_sign_negative() != x.is_sign_negative()) {
            continue;
        }
        let d = (f64::from(v) - x).abs();
        let better = match best {
            None => true,
            Some((bd, bc)) => d < bd || (d == bd && code % 2 == 0 && bc % 2 == 1),
        };
        if better {
            best = Some((d, code as u32));
        }
    }
    best.map_or(0, |(_, c)| c)
}

#[test]
fn fp8_finite_encoding_matches_a_brute_force_oracle() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (dt, table) in [
        (DType::F8E4M3, &minifloat::E4M3_TABLE),
        (DType::F8E4M3FN, &minifloat::E4M3FN_TABLE),
        (DType::F8E5M2, &minifloat::E5M2_TABLE),
    ] {
        let max = max_finite(dt) as f32;
        let mut checked = 0;
        while checked < 20_000 {
            // Random values spread over the format's whole range and a bit below.
            let r = rng.next_u32();
            let mag = f32::from_bits(r & 0x007f_ffff | 0x3f80_0000) - 1.0;
            let scale = 2f32.powi((r >> 24) as i32 % 40 - 24);
            let x = if r & 0x0080_0000 != 0 {
                -mag * scale
            } else {
                mag * scale
            };
            if x.abs() > max {
                continue;
            }
            let want = nearest_code(table, x);
            let got = from_f32(dt, x);
            assert_eq!(got, want, "{dt} from {x:e} ({:#010x})", x.to_bits());
            checked += 1;
        }
        // Every tie between neighbouring codes rounds to the even code.
        for code in 0..0x7fu32 {
            let (a, b) = (table[code as usize], table[code as usize + 1]);
            if !(a.is_finite() && b.is_finite()) {
                continue;
            }
            let mid = ((f64::from(a) + f64::from(b)) / 2.0) as f32;
            let want = if code % 2 == 0 { code } else { code + 1 };
            assert_eq!(from_f32(dt, mid), want, "{dt} tie {mid:e}");
            assert_eq!(from_f32(dt, -mid), want | 0x80, "{dt} tie {:e}", -mid);
        }
    }
}

#[test]
fn every_code_round_trips() {
    let formats = [
        (DType::F8E4M3, 0x100u32),
        (DType::F8E4M3FN, 0x100),
        (DType::F8E5M2, 0x100),
        (DType::F8E8M0, 0x100),
        (DType::F16, 0x1_0000),
        (DType::BF16, 0x1_0000),
    ];
    for (dt, codes) in formats {
        for code in 0..codes {
            let x = to_f32(dt, code);
            let back = from_f32(dt, x);
            if x.is_nan() {
                assert!(to_f32(dt, back).is_nan(), "{dt} NaN code {code:#x}");
            } else {
                assert_eq!(back, code, "{dt} code {code:#x} ({x:e})");
            }
        }
    }
    for code in 0..16 {
        assert_eq!(fp4_e2m1_from_f32(fp4_e2m1_to_f32(code)), code);
    }
}

/// Every f16 code decodes to its exact value (the `half` crate's), and a
/// NaN to the f32 NaN of the same sign and payload with the quiet bit set.
#[test]
fn every_f16_code_decodes_exactly() {
    for code in 0..0x1_0000u32 {
        let got = to_f32(DType::F16, code).to_bits();
        let h = f16::from_bits(code as u16);
        let want = if h.is_nan() {
            (code & 0x8000) << 16 | 0x7fc0_0000 | (code & 0x03ff) << 13
        } else {
            h.to_f32().to_bits()
        };
        assert_eq!(got, want, "code {code:#06x}");
    }
}

#[test]
fn slice_helpers_agree_with_the_scalar_functions() {
    let xs: Vec<f32> = {
        let mut rng = Rng(42);
        let mut v = vec![
            0.0, -0.0, 1.0, -1.5, 0.1, 300.0, -7e4, 1e-6, INF, -INF, NAN, 3e38,
        ];
        v.extend((0..500).map(|_| f32::from_bits(rng.next_u32())));
        v.extend((0..500).map(|i| (i as f32 - 250.0) * 0.37));
        v.truncate(1000);
        v
    };
    for dt in scalar_dtypes() {
        for overflow in [Overflow::Native, Overflow::Saturate] {
            let mut bytes = vec![0xaa];
            encode_with(dt, &xs, overflow, &mut bytes);
            assert_eq!(bytes.len(), 1 + xs.len() * dt.size() as usize, "{dt}");
            let mut decoded = vec![7.0];
            decode(dt, &bytes[1..], &mut decoded);
            assert_eq!(decoded.len(), 1 + xs.len());
            for (i, &x) in xs.iter().enumerate() {
                let size = dt.size() as usize;
                let mut raw = [0u8; 4];
                raw[..size].copy_from_slice(&bytes[1 + i * size..1 + (i + 1) * size]);
                let bits = u32::from_le_bytes(raw);
                assert_eq!(bits, from_f32_with(dt, x, overflow), "{dt} encode {x:e}");
                let want = to_f32(dt, bits);
                let got = decoded[1 + i];
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{dt} decode {bits:#x}"
                );
                if overflow == Overflow::Native {
                    let q = quantize(dt, x);
                    assert!(q.to_bits() == want.to_bits() || (q.is_nan() && want.is_nan()));
                }
            }
        }
    }
    for dt in [DType::F8E4M3FNx4, DType::F8E5M2x4, DType::F4E2M1FNx4] {
        let mut bytes = Vec::new();
        encode(dt, &xs, &mut bytes);
        assert_eq!(bytes.len(), xs.len() / 4 * dt.size() as usize);
        let mut decoded = Vec::new();
        decode(dt, &bytes, &mut decoded);
        assert_eq!(decoded.len(), xs.len());
        for (&x, &got) in xs.iter().zip(&decoded) {
            let want = quantize(dt, x);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{dt} {x:e}"
            );
        }
    }
    // A trailing partial element is ignored.
    let mut decoded = Vec::new();
    decode(DType::F32, &[0, 0, 0x80, 0x3f, 1, 2], &mut decoded);
    assert_eq!(decoded, [1.0]);
    let mut bytes = Vec::new();
    encode(DType::F8E5M2x4, &[1.0; 6], &mut bytes);
    assert_eq!(bytes, [0x3c; 4]);
}

#[test]
fn range_queries() {
    for dt in scalar_dtypes() {
        let max = max_finite(dt);
        let min = min_finite(dt);
        assert!(min < max, "{dt}");
        if dt.is_float() {
            // The bounds are values of the format and encode without overflow.
            for v in [max, min] {
                let bits = from_f32(dt, v as f32);
                assert_eq!(f64::from(to_f32(dt, bits)), v, "{dt} bound {v:e}");
            }
        }
    }
    assert_eq!(max_finite(DType::BF16), 3.389_531_389_251_535_5e38);
    assert_eq!(min_finite(DType::I32), -2_147_483_648.0);
    assert_eq!(max_finite(DType::U32), 4_294_967_295.0);
    assert_eq!(max_finite(DType::F4E2M1FNx4), 6.0);
    assert_eq!(min_finite(DType::F8E8M0), 2f64.powi(-127));
    assert!(has_inf(DType::F8E4M3) && !has_inf(DType::F8E4M3FN) && !has_inf(DType::F8E8M0));
    assert!(has_nan(DType::F8E8M0) && !has_nan(DType::F4E2M1FNx4) && !has_nan(DType::I32));
    assert_eq!(lanes(DType::F4E2M1FNx4), 4);
    assert_eq!(lanes(DType::BF16), 1);
}

mod properties {
    //! Order and idempotence properties of rounding, on arbitrary `f32` pairs.

    use super::*;
    use proptest::prelude::*;

    fn any_f32() -> impl Strategy<Value = f32> {
        any::<u32>().prop_map(f32::from_bits)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Rounding never reorders values and a rounded value rounds to itself.
        #[test]
        fn rounding_is_monotonic_and_idempotent(a in any_f32(), b in any_f32()) {
            prop_assume!(!a.is_nan() && !b.is_nan());
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            for dt in DType::ALL {
                // e8m0fnu has no zero and no negatives: only positive inputs order.
                if dt == DType::F8E8M0 && lo <= 0.0 {
                    continue;
                }
                for overflow in [Overflow::Native, Overflow::Saturate] {
                    let q = |x: f32| {
                        if dt.is_packed_x4() {
                            to_f32_x4(dt, from_f32_x4(dt, [x; 4], overflow))[0]
                        } else {
                            to_f32(dt, from_f32_with(dt, x, overflow))
                        }
                    };
                    let (qlo, qhi) = (q(lo), q(hi));
                    if dt != DType::F8E4M3FN && dt != DType::F8E8M0 && dt != DType::F8E4M3FNx4 {
                        // Formats whose overflow is NaN cannot be ordered.
                        prop_assert!(qlo <= qhi, "{dt} {overflow:?}: q({lo:e}) = {qlo:e} > q({hi:e}) = {qhi:e}");
                    } else if !qlo.is_nan() && !qhi.is_nan() {
                        prop_assert!(qlo <= qhi, "{dt} {overflow:?}: q({lo:e}) = {qlo:e} > q({hi:e}) = {qhi:e}");
                    }
                    if !qlo.is_nan() {
                        prop_assert_eq!(q(qlo).to_bits(), qlo.to_bits(), "{} {:?} not idempotent at {:e}", dt, overflow, lo);
                    }
                }
            }
        }
    }
}
