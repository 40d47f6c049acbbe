//! `.npy` files in and out, and the raw-bits convention for dtypes NumPy lacks.
//!
//! NumPy has no bfloat16, fp8, tf32 or packed MX types. Such inputs arrive as
//! raw bits: an unsigned-integer or void array (`<u2`, `|u1`, `|V2`, `|V1`,
//! `<u4`) whose element size equals the dtype's, with the dtype named after
//! the colon on the command line (`--input a=a.npy:bfloat16`) or taken from
//! the kernel argument. Such outputs are written as raw bits with descr
//! `<u2`, `|u1` or `<u4`, unless `--out-dtype float32` asks for an upcast
//! copy. Every other array is converted by value (round to nearest even)
//! into the argument's dtype.

use nkic_isa::{DType, numerics};
use npyz::TypeChar;

/// An array read from a `.npy` file: its shape and its elements in the
/// kernel argument's dtype, as little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<u64>,
    pub dtype: DType,
    pub bytes: Vec<u8>,
}

/// What a `.npy` file holds, before conversion.
enum Elements {
    /// Values NumPy understands, widened to f64 (exact for every integer
    /// and float type up to 32 bits).
    Values(Vec<f64>),
    /// Raw little-endian element bits of the given size.
    Raw { size: usize, bytes: Vec<u8> },
}

/// Reads a `.npy` file's bytes and converts them to `dtype`.
///
/// `named` is the dtype named after the colon, if any; it must agree with
/// `dtype` (the argument's), which the caller checks.
pub fn read(bytes: &[u8], dtype: DType) -> Result<Array, String> {
    let file = npyz::NpyFile::new(bytes).map_err(|err| format!("not a valid .npy file: {err}"))?;
    let shape = file.shape().to_vec();
    if file.order() == npyz::Order::Fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(
            "Fortran-order arrays are not supported; save a C-order array (np.ascontiguousarray)"
                .into(),
        );
    }
    let npyz::DType::Plain(ty) = file.dtype() else {
        return Err("structured arrays are not supported".into());
    };
    let count: u64 = shape.iter().product();
    let size = ty
        .num_bytes()
        .ok_or_else(|| format!("unsupported element type `{ty}`"))?;
    let data: &[u8] = file.into_inner();
    let need = count as usize * size;
    if data.len() < need {
        return Err(format!(
            "the file holds {} bytes of data but its shape {:?} needs {need}",
            data.len(),
            shape
        ));
    }
    let data = &data[..need];
    let little = !matches!(ty.endianness(), npyz::Endianness::Big);
    let word = |chunk: &[u8]| -> u64 {
        let mut v = 0u64;
        if little {
            for (i, b) in chunk.iter().enumerate() {
                v |= u64::from(*b) << (8 * i);
            }
        } else {
            for b in chunk {
                v = (v << 8) | u64::from(*b);
            }
        }
        v
    };
    let raw_candidate = matches!(ty.type_char(), TypeChar::Uint | TypeChar::RawData);
    let elements = match (ty.type_char(), size) {
        (TypeChar::RawData, _) => Elements::Raw {
            size,
            bytes: data.to_vec(),
        },
        (TypeChar::Uint, _)
            if raw_candidate && needs_raw_bits(dtype) && size == dtype.size() as usize =>
        {
            let mut bytes = Vec::with_capacity(need);
            for chunk in data.chunks_exact(size) {
                bytes.extend_from_slice(&word(chunk).to_le_bytes()[..size]);
            }
            Elements::Raw { size, bytes }
        }
        (TypeChar::Bool, 1) => {
            Elements::Values(data.iter().map(|&b| f64::from(u8::from(b != 0))).collect())
        }
        (TypeChar::Uint, 1 | 2 | 4 | 8) => {
            Elements::Values(data.chunks_exact(size).map(|c| word(c) as f64).collect())
        }
        (TypeChar::Int, 1 | 2 | 4 | 8) => Elements::Values(
            data.chunks_exact(size)
                .map(|c| {
                    let shift = 64 - 8 * size as u32;
                    (((word(c) << shift) as i64) >> shift) as f64
                })
                .collect(),
        ),
        (TypeChar::Float, 2) => Elements::Values(
            data.chunks_exact(2)
                .map(|c| f64::from(numerics::to_f32(DType::F16, word(c) as u32)))
                .collect(),
        ),
        // An f32 array for an f32 argument is copied bit for bit, so NaN
        // payloads (signalling ones included) survive.
        (TypeChar::Float, 4) if dtype == DType::F32 => {
            let mut bytes = Vec::with_capacity(need);
            for chunk in data.chunks_exact(4) {
                bytes.extend_from_slice(&(word(chunk) as u32).to_le_bytes());
            }
            Elements::Raw { size, bytes }
        }
        (TypeChar::Float, 4) => Elements::Values(
            data.chunks_exact(4)
                .map(|c| f64::from(f32::from_bits(word(c) as u32)))
                .collect(),
        ),
        (TypeChar::Float, 8) => Elements::Values(
            data.chunks_exact(8)
                .map(|c| f64::from_bits(word(c)))
                .collect(),
        ),
        _ => return Err(format!("unsupported element type `{ty}`")),
    };
    let bytes = match elements {
        Elements::Raw { size, bytes } => {
            if size != dtype.size() as usize {
                return Err(format!(
                    "raw {size}-byte elements cannot hold {dtype}, whose elements are {} bytes",
                    dtype.size()
                ));
            }
            bytes
        }
        Elements::Values(values) => encode_values(&values, dtype)?,
    };
    Ok(Array {
        shape,
        dtype,
        bytes,
    })
}

/// The shape of a `.npy` file and the dtype its NumPy type maps to
/// (`None` for raw-bit arrays, whose dtype must be named). float64 maps to
/// float32 and int64/uint64 to their 32-bit types, the widest the machine has.
pub fn peek(bytes: &[u8]) -> Result<(Vec<u64>, Option<DType>), String> {
    let file = npyz::NpyFile::new(bytes).map_err(|err| format!("not a valid .npy file: {err}"))?;
    let shape = file.shape().to_vec();
    let npyz::DType::Plain(ty) = file.dtype() else {
        return Err("structured arrays are not supported".into());
    };
    let size = ty.num_bytes().unwrap_or(0);
    let dtype = match (ty.type_char(), size) {
        (TypeChar::Float, 2) => Some(DType::F16),
        (TypeChar::Float, 4 | 8) => Some(DType::F32),
        (TypeChar::Int, 1) => Some(DType::I8),
        (TypeChar::Int, 2) => Some(DType::I16),
        (TypeChar::Int, 4 | 8) => Some(DType::I32),
        (TypeChar::Uint, 1) => Some(DType::U8),
        (TypeChar::Uint, 2) => Some(DType::U16),
        (TypeChar::Uint, 4 | 8) => Some(DType::U32),
        (TypeChar::Bool, 1) => Some(DType::Bool),
        (TypeChar::RawData, _) => None,
        _ => return Err(format!("unsupported element type `{ty}`")),
    };
    Ok((shape, dtype))
}

/// Whether a dtype has no NumPy equivalent and so travels as raw bits.
pub fn needs_raw_bits(dtype: DType) -> bool {
    !matches!(
        dtype,
        DType::F32
            | DType::F16
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::U8
            | DType::U16
            | DType::U32
            | DType::Bool
    )
}

fn encode_values(values: &[f64], dtype: DType) -> Result<Vec<u8>, String> {
    if dtype.is_packed_x4() {
        return Err(format!(
            "{dtype} inputs must be given as raw bits (a `<u4`/`<u2` array of packed elements)"
        ));
    }
    let mut out = Vec::with_capacity(values.len() * dtype.size() as usize);
    if dtype.is_int() || dtype == DType::Bool {
        // Integers convert exactly: f64 holds every 32-bit integer.
        for &v in values {
            let bits = if dtype == DType::Bool {
                u32::from(v != 0.0)
            } else {
                let (lo, hi) = match dtype {
                    DType::I8 => (i8::MIN as f64, i8::MAX as f64),
                    DType::I16 => (i16::MIN as f64, i16::MAX as f64),
                    DType::I32 => (i32::MIN as f64, i32::MAX as f64),
                    DType::U8 => (0.0, u8::MAX as f64),
                    DType::U16 => (0.0, u16::MAX as f64),
                    _ => (0.0, u32::MAX as f64),
                };
                if v.fract() != 0.0 || v < lo || v > hi {
                    return Err(format!("value {v} does not fit in {dtype}"));
                }
                v as i64 as u32
            };
            out.extend_from_slice(&bits.to_le_bytes()[..dtype.size() as usize]);
        }
        return Ok(out);
    }
    let floats: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    numerics::encode(dtype, &floats, &mut out);
    Ok(out)
}

/// How outputs are written (`--out-dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutDType {
    /// The element's own type; raw bits for types NumPy lacks.
    #[default]
    Native,
    /// An upcast float32 copy.
    Float32,
}

/// Encodes an output as a `.npy` file (format version 1.0, C order).
pub fn write(shape: &[u64], dtype: DType, bytes: &[u8], out: OutDType) -> Vec<u8> {
    if out == OutDType::Float32 && dtype.is_float() {
        let mut values = Vec::new();
        numerics::decode(dtype, bytes, &mut values);
        let mut shape = shape.to_vec();
        if dtype.is_packed_x4() {
            // Each packed element unpacks into its lanes along the last axis.
            let lanes = numerics::lanes(dtype) as u64;
            match shape.last_mut() {
                Some(last) => *last *= lanes,
                None => shape.push(lanes),
            }
        }
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        return encode_file("<f4", &shape, &data);
    }
    let descr = match dtype {
        DType::F32 | DType::TF32 => "<f4",
        DType::F16 => "<f2",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::Bool => "|b1",
        // Raw bits for the types NumPy lacks.
        _ => match dtype.size() {
            1 => "|u1",
            2 => "<u2",
            _ => "<u4",
        },
    };
    encode_file(descr, shape, bytes)
}

/// The `.npy` container: magic, version 1.0, a header dict padded so the
/// data starts on a 64-byte boundary, then the little-endian data.
fn encode_file(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_it_reads() {
        let values = [1.5f32, -2.0, 0.25, 3.0, 0.0, -0.5];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = write(&[2, 3], DType::F32, &bytes, OutDType::Native);
        assert_eq!(file.len() % 64, (bytes.len()) % 64);
        let back = read(&file, DType::F32).unwrap();
        assert_eq!(back.shape, vec![2, 3]);
        assert_eq!(back.bytes, bytes);
    }

    #[test]
    fn f32_nan_payloads_survive() {
        let bits = [0x7f81_2345u32, 0x7f80_0001, 0xffc0_0000];
        let bytes: Vec<u8> = bits.iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = write(&[3], DType::F32, &bytes, OutDType::Native);
        assert_eq!(read(&file, DType::F32).unwrap().bytes, bytes);
    }

    #[test]
    fn bf16_travels_as_raw_bits() {
        let bits: Vec<u8> = [0x3f80u16, 0xc000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let file = write(&[2], DType::BF16, &bits, OutDType::Native);
        assert!(
            std::str::from_utf8(&file[10..40])
                .unwrap()
                .contains("'descr': '<u2'")
        );
        let back = read(&file, DType::BF16).unwrap();
        assert_eq!(back.bytes, bits);
        let up = write(&[2], DType::BF16, &bits, OutDType::Float32);
        let back = read(&up, DType::F32).unwrap();
        let floats: Vec<f32> = back
            .bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(floats, vec![1.0, -2.0]);
    }

    #[test]
    fn values_convert_into_the_argument_dtype() {
        let values = [1.0f32, 0.1];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = write(&[2], DType::F32, &bytes, OutDType::Native);
        let bf = read(&file, DType::BF16).unwrap();
        assert_eq!(bf.bytes, vec![0x80, 0x3f, 0xcd, 0x3d]);
        let ints = write(
            &[2],
            DType::I32,
            &[7, 0, 0, 0, 0xf9, 0xff, 0xff, 0xff],
            OutDType::Native,
        );
        assert_eq!(read(&ints, DType::I8).unwrap().bytes, vec![7, 0xf9]);
        assert!(read(&file, DType::I32).is_err(), "0.1 is not an int32");
        assert!(read(b"garbage", DType::F32).is_err());
    }
}
