//! Element types of the machine: the `DType` enum, its names, sizes and classes.
//!
//! Conversions between a dtype's bit patterns and `f32` live in `numerics`;
//! this module only names the types.

use std::fmt;
use std::str::FromStr;

/// Every element type NKI names.
///
/// Sizes are the storage sizes of one element in bytes. The packed MX types
/// (`*_x4`) are one element holding four narrow values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F16,
    BF16,
    /// TF32 values (1,8,10) stored in a 4-byte container.
    TF32,
    /// NKI's legacy fp8 e4m3: IEEE-style with infinities and NaNs, bias 7, max 240.
    F8E4M3,
    /// OCP fp8 e4m3fn: no infinities, NaN is `S.1111.111`, max 448.
    F8E4M3FN,
    F8E5M2,
    /// The MX scale type e8m0fnu: value 2^(e-127), 0xFF is NaN.
    F8E8M0,
    F8E4M3FNx4,
    F8E5M2x4,
    F4E2M1FNx4,
    I8,
    I16,
    I32,
    U8,
    U16,
    U32,
    /// Stored as one byte, 0 or 1.
    Bool,
}

impl DType {
    /// All dtypes, in declaration order.
    pub const ALL: [DType; 18] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::TF32,
        DType::F8E4M3,
        DType::F8E4M3FN,
        DType::F8E5M2,
        DType::F8E8M0,
        DType::F8E4M3FNx4,
        DType::F8E5M2x4,
        DType::F4E2M1FNx4,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::Bool,
    ];

    /// The NKI spelling (`nl.<name>`), also used in `.nkasm` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::TF32 => "tfloat32",
            DType::F8E4M3 => "float8_e4m3",
            DType::F8E4M3FN => "float8_e4m3fn",
            DType::F8E5M2 => "float8_e5m2",
            DType::F8E8M0 => "float8_e8m0fnu",
            DType::F8E4M3FNx4 => "float8_e4m3fn_x4",
            DType::F8E5M2x4 => "float8_e5m2_x4",
            DType::F4E2M1FNx4 => "float4_e2m1fn_x4",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::Bool => "bool_",
        }
    }

    /// Storage size of one element in bytes.
    pub fn size(self) -> u32 {
        match self {
            DType::F8E4M3
            | DType::F8E4M3FN
            | DType::F8E5M2
            | DType::F8E8M0
            | DType::I8
            | DType::U8
            | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 | DType::F4E2M1FNx4 => 2,
            DType::F32
            | DType::TF32
            | DType::I32
            | DType::U32
            | DType::F8E4M3FNx4
            | DType::F8E5M2x4 => 4,
        }
    }

    pub fn is_float(self) -> bool {
        !self.is_int() && self != DType::Bool
    }

    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::I8 | DType::I16 | DType::I32 | DType::U8 | DType::U16 | DType::U32
        )
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32)
    }

    /// True for the fp8 formats (not the MX scale type, not the packed types).
    pub fn is_fp8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E4M3FN | DType::F8E5M2)
    }

    /// True for the packed MX types that hold four values per element.
    pub fn is_packed_x4(self) -> bool {
        matches!(
            self,
            DType::F8E4M3FNx4 | DType::F8E5M2x4 | DType::F4E2M1FNx4
        )
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a dtype name that NKI does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDType(pub String);

impl fmt::Display for UnknownDType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown dtype `{}`", self.0)
    }
}

impl std::error::Error for UnknownDType {}

impl FromStr for DType {
    type Err = UnknownDType;

    /// Accepts the NKI names and the common short aliases (`bf16`, `fp32`,
    /// `f32`, `bool`, `fp8_e4m3`, …).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(dt) = DType::ALL.iter().copied().find(|dt| dt.name() == s) {
            return Ok(dt);
        }
        let dt = match s {
            "f32" | "fp32" => DType::F32,
            "f16" | "fp16" | "half" => DType::F16,
            "bf16" | "bfp16" => DType::BF16,
            "tf32" => DType::TF32,
            "fp8_e4m3" | "f8e4m3" => DType::F8E4M3,
            "fp8_e4m3fn" | "f8e4m3fn" => DType::F8E4M3FN,
            "fp8_e5m2" | "f8e5m2" => DType::F8E5M2,
            "float8_e8m0" | "e8m0" => DType::F8E8M0,
            "i8" => DType::I8,
            "i16" => DType::I16,
            "i32" => DType::I32,
            "u8" => DType::U8,
            "u16" => DType::U16,
            "u32" => DType::U32,
            "bool" => DType::Bool,
            _ => return Err(UnknownDType(s.to_owned())),
        };
        Ok(dt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for dt in DType::ALL {
            assert_eq!(dt.name().parse::<DType>(), Ok(dt));
        }
        assert_eq!("bf16".parse::<DType>(), Ok(DType::BF16));
        assert!("float64".parse::<DType>().is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(DType::BF16.size(), 2);
        assert_eq!(DType::F8E5M2x4.size(), 4);
        assert_eq!(DType::F4E2M1FNx4.size(), 2);
        assert_eq!(DType::Bool.size(), 1);
    }
}
