//! Checks `nkic_isa::numerics` against the ml_dtypes/NumPy reference tables in
//! `tests/data/numerics/` (written by `scripts/gen_numerics_tables.py`; the
//! file formats are described in that script and in the tables' README.md).
//!
//! Every code of every 16-bit and narrower float format is decoded, and a
//! million `f32` inputs are encoded into every float format, both through the
//! scalar functions and through the slice helpers. A failing check reports how
//! many values disagree and the first few, in hex. NaN results compare as
//! "is NaN" for `float16`, `bfloat16` and `tfloat32` (payloads follow the
//! `half` crate) and bit for bit for the narrow formats, whose NaN codes are
//! canonical.

use nkic_isa::DType;
use nkic_isa::numerics::{self, Overflow};
use std::path::Path;

/// How many disagreeing values a failure lists.
const SHOWN: usize = 12;

/// Collects disagreements for one check and fails with the first few.
struct Mismatches {
    what: String,
    count: usize,
    first: Vec<String>,
}

impl Mismatches {
    fn new(what: impl Into<String>) -> Self {
        Mismatches {
            what: what.into(),
            count: 0,
            first: Vec::new(),
        }
    }

    fn check(&mut self, ok: bool, describe: impl FnOnce() -> String) {
        if !ok {
            self.count += 1;
            if self.first.len() < SHOWN {
                self.first.push(describe());
            }
        }
    }

    /// Checks the code `got` the input `x` encodes to against `want`
    /// (codes shown `width` characters wide).
    fn check_code(&mut self, ok: bool, x: f32, got: u32, want: u32, width: usize) {
        self.check(ok, || {
            format!(
                "{:#010x} ({x:e}): got {got:#0width$x}, want {want:#0width$x}",
                x.to_bits()
            )
        });
    }

    fn finish(self) {
        assert!(
            self.count == 0,
            "{}: {} mismatches; first ones:\n  {}",
            self.what,
            self.count,
            self.first.join("\n  ")
        );
    }
}

fn read(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/numerics")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); regenerate with scripts/gen_numerics_tables.py",
            path.display()
        )
    })
}

fn read_u32s(name: &str) -> Vec<u32> {
    read(name)
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn read_u16s(name: &str) -> Vec<u16> {
    read(name)
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn read_flags(name: &str, n: usize) -> Vec<bool> {
    let bytes = read(name);
    assert_eq!(bytes.len(), n.div_ceil(8), "{name}: wrong size");
    (0..n).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1).collect()
}

fn inputs() -> Vec<f32> {
    let xs: Vec<f32> = read_u32s("inputs.f32")
        .into_iter()
        .map(f32::from_bits)
        .collect();
    assert!(
        xs.len() >= 1_000_000,
        "inputs.f32 holds only {} values",
        xs.len()
    );
    xs
}

fn same_f32(got: f32, want: f32) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

fn is_f16_nan(h: u32) -> bool {
    h & 0x7c00 == 0x7c00 && h & 0x03ff != 0
}

fn is_bf16_nan(h: u32) -> bool {
    h & 0x7f80 == 0x7f80 && h & 0x007f != 0
}

/// The float formats with one value per code, their decode table and their
/// encode table.
const CODE_FORMATS: [(DType, &str); 4] = [
    (DType::F8E4M3, "float8_e4m3"),
    (DType::F8E4M3FN, "float8_e4m3fn"),
    (DType::F8E5M2, "float8_e5m2"),
    (DType::F8E8M0, "float8_e8m0fnu"),
];

#[test]
fn every_code_decodes_like_ml_dtypes() {
    let mut formats: Vec<(DType, &str, usize)> =
        vec![(DType::F16, "float16", 2), (DType::BF16, "bfloat16", 2)];
    formats.extend(CODE_FORMATS.iter().map(|&(dt, name)| (dt, name, 1)));
    for (dt, name, size) in formats {
        let want = read_u32s(&format!("decode_{name}.bin"));
        assert_eq!(want.len(), 1 << (8 * size), "decode_{name}.bin: wrong size");
        let mut bad = Mismatches::new(format!("decode {name}"));
        let mut bytes = Vec::new();
        for (code, &w) in want.iter().enumerate() {
            let got = numerics::to_f32(dt, code as u32);
            let w = f32::from_bits(w);
            bad.check(same_f32(got, w), || {
                format!(
                    "code {code:#06x}: got {:#010x} ({got:e}), want {:#010x} ({w:e})",
                    got.to_bits(),
                    w.to_bits()
                )
            });
            bytes.extend_from_slice(&(code as u32).to_le_bytes()[..size]);
        }
        bad.finish();
        // The slice helper decodes the same way.
        let mut decoded = Vec::new();
        numerics::decode(dt, &bytes, &mut decoded);
        assert_eq!(decoded.len(), want.len());
        let mut bad = Mismatches::new(format!("decode slice {name}"));
        for (code, (&got, &w)) in decoded.iter().zip(&want).enumerate() {
            bad.check(same_f32(got, f32::from_bits(w)), || {
                format!("code {code:#06x}: got {:#010x}", got.to_bits())
            });
        }
        bad.finish();
    }

    let want = read_u32s("decode_float4_e2m1fn.bin");
    assert_eq!(want.len(), 16);
    for (code, &w) in want.iter().enumerate() {
        let got = numerics::fp4_e2m1_to_f32(code as u32);
        assert_eq!(got.to_bits(), w, "fp4 code {code:#x}");
    }
}

#[test]
fn inputs_encode_like_ml_dtypes() {
    let xs = inputs();
    let n = xs.len();

    let want = read_u16s("encode_float16.bin");
    assert_eq!(want.len(), n);
    let mut bad = Mismatches::new("encode float16");
    for (&x, &w) in xs.iter().zip(&want) {
        let got = numerics::from_f32(DType::F16, x);
        let w = u32::from(w);
        let ok = if is_f16_nan(w) {
            is_f16_nan(got)
        } else {
            got == w
        };
        bad.check_code(ok, x, got, w, 6);
    }
    bad.finish();

    for (dt, name) in CODE_FORMATS {
        let want = read(&format!("encode_{name}.bin"));
        assert_eq!(want.len(), n);
        let mut bad = Mismatches::new(format!("encode {name}"));
        for (&x, &w) in xs.iter().zip(&want) {
            let got = numerics::from_f32(dt, x);
            bad.check_code(got == u32::from(w), x, got, u32::from(w), 4);
        }
        bad.finish();
        // The slice helper writes the same bytes.
        let mut bytes = Vec::new();
        numerics::encode(dt, &xs, &mut bytes);
        assert!(
            bytes == want,
            "encode slice {name} differs from the scalar encoder"
        );
    }

    let want = read("encode_float4_e2m1fn.bin");
    assert_eq!(want.len(), n / 2);
    let mut bad = Mismatches::new("encode float4_e2m1fn");
    for (i, &x) in xs.iter().enumerate() {
        let w = u32::from(want[i / 2] >> (4 * (i % 2)) & 0xf);
        let got = numerics::fp4_e2m1_from_f32(x);
        bad.check_code(got == w, x, got, w, 0);
    }
    bad.finish();
    // Packed into the x4 type, lane 0 in the low nibble, the bytes are the
    // table's bytes: the table packs input 2i in the low nibble of byte i.
    let mut bytes = Vec::new();
    numerics::encode(DType::F4E2M1FNx4, &xs, &mut bytes);
    assert!(
        bytes == want,
        "encode float4_e2m1fn_x4 slice differs from the table"
    );
}

#[test]
fn inputs_encode_to_bf16_and_tf32_by_rounding_the_top_bits() {
    let xs = inputs();
    check_rounding_encoder(
        DType::BF16,
        "bfloat16",
        &xs,
        |bits, up| (bits >> 16) + u32::from(up),
        (is_bf16_nan, 0x7fc0),
        6,
    );
    check_rounding_encoder(
        DType::TF32,
        "tfloat32",
        &xs,
        |bits, up| (bits & !0x1fff) + (u32::from(up) << 13),
        (
            |got| f32::from_bits(got).is_nan() && got & 0x1fff == 0,
            0x7fc0_0000,
        ),
        10,
    );
}

/// Checks the encoder of `dt` on every input against the rounding
/// directions of `encode_<name>.flags`: `round(bits, up)` is the code of a
/// number, a NaN encodes to a code `nan.0` accepts (canonically `nan.1`);
/// codes are shown `width` characters wide.
fn check_rounding_encoder(
    dt: DType,
    name: &str,
    xs: &[f32],
    round: impl Fn(u32, bool) -> u32,
    nan: (impl Fn(u32) -> bool, u32),
    width: usize,
) {
    let flags = read_flags(&format!("encode_{name}.flags"), xs.len());
    let mut bad = Mismatches::new(format!("encode {name}"));
    for (&x, &up) in xs.iter().zip(&flags) {
        let got = numerics::from_f32(dt, x);
        let (ok, want) = if x.is_nan() {
            (nan.0(got), nan.1)
        } else {
            let w = round(x.to_bits(), up);
            (got == w, w)
        };
        bad.check_code(ok, x, got, want, width);
    }
    bad.finish();
}

/// The saturating policy is the native result with overflow clamped: checked
/// on every input against the reference tables.
#[test]
fn saturating_encode_clamps_the_native_overflow() {
    let xs = inputs();
    let mut natives: Vec<(DType, Vec<u32>)> = vec![(
        DType::F16,
        read_u16s("encode_float16.bin")
            .into_iter()
            .map(u32::from)
            .collect(),
    )];
    for (dt, name) in CODE_FORMATS {
        natives.push((
            dt,
            read(&format!("encode_{name}.bin"))
                .into_iter()
                .map(u32::from)
                .collect(),
        ));
    }
    for (dt, native) in natives {
        let max_code = numerics::from_f32(dt, numerics::max_finite(dt) as f32);
        let sign_bit = if dt == DType::F16 { 0x8000 } else { 0x80 };
        let mut bad = Mismatches::new(format!("saturating encode {dt}"));
        for (&x, &w) in xs.iter().zip(&native) {
            let decoded = numerics::to_f32(dt, w);
            let want = if dt == DType::F8E8M0 {
                // Only positive values overflow; zero and negatives stay NaN.
                if x > 0.0 && decoded.is_nan() {
                    max_code
                } else {
                    w
                }
            } else if !x.is_nan()
                && !decoded.is_finite()
                && (x.is_finite() || !numerics::has_inf(dt))
            {
                max_code | if x < 0.0 { sign_bit } else { 0 }
            } else {
                w
            };
            let got = numerics::from_f32_with(dt, x, Overflow::Saturate);
            let ok = if x.is_nan() {
                numerics::to_f32(dt, got).is_nan()
            } else {
                got == want
            };
            bad.check_code(ok, x, got, want, 0);
        }
        bad.finish();
    }
}

#[test]
fn float_to_int_follows_the_documented_rule() {
    let xs: Vec<f32> = read_u32s("int_inputs.f32")
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let ints: [(DType, &str); 6] = [
        (DType::I8, "int8"),
        (DType::I16, "int16"),
        (DType::I32, "int32"),
        (DType::U8, "uint8"),
        (DType::U16, "uint16"),
        (DType::U32, "uint32"),
    ];
    for (dt, name) in ints {
        let size = dt.size() as usize;
        let want = read(&format!("int_{name}.bin"));
        assert_eq!(want.len(), xs.len() * size, "int_{name}.bin: wrong size");
        let mut bad = Mismatches::new(format!("encode {name}"));
        for (&x, w) in xs.iter().zip(want.chunks_exact(size)) {
            let mut raw = [0u8; 4];
            raw[..size].copy_from_slice(w);
            let w = u32::from_le_bytes(raw);
            let got = numerics::from_f32(dt, x);
            bad.check_code(got == w, x, got, w, 0);
        }
        bad.finish();
        let mut bytes = Vec::new();
        numerics::encode(dt, &xs, &mut bytes);
        assert!(bytes == want, "encode slice {name} differs from the table");
    }
}
