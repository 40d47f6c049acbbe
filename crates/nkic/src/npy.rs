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
use nkic_sim::OutputBytes;

/// The element kinds of a `.npy` type string (`<f4`: kind `f`, size 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TypeChar {
    Bool,
    Int,
    Uint,
    Float,
    RawData,
    /// Any other kind (complex, strings, dates, objects): not supported.
    Other(char),
}

/// A plain `.npy` element type: `<f4`, `|u1`, `>i2`, `|V2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TypeStr {
    big_endian: bool,
    kind: TypeChar,
    size: usize,
}

impl std::fmt::Display for TypeStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            TypeChar::Bool => 'b',
            TypeChar::Int => 'i',
            TypeChar::Uint => 'u',
            TypeChar::Float => 'f',
            TypeChar::RawData => 'V',
            TypeChar::Other(c) => c,
        };
        let order = if self.size == 1 {
            '|'
        } else if self.big_endian {
            '>'
        } else {
            '<'
        };
        write!(f, "{order}{kind}{}", self.size)
    }
}

/// The header of a `.npy` file.
#[derive(Debug, PartialEq)]
struct Header {
    ty: TypeStr,
    fortran_order: bool,
    shape: Vec<u64>,
    /// Where the data starts.
    data_start: usize,
}

/// The longest header nkic reads; NumPy's own limit is 10,000 bytes for
/// the dict of any array it writes, far below this.
const MAX_HEADER_BYTES: usize = 1 << 20;

/// Parses a `.npy` header (format versions 1–3) in one left-to-right pass:
/// time linear in the header, and the header length is checked against the
/// bytes actually there before anything is taken from it.
fn parse_header(bytes: &[u8]) -> Result<Header, String> {
    let bad = |what: &str| format!("not a valid .npy file: {what}");
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("it does not start with the .npy magic string"));
    }
    let (len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        2 | 3 => return Err(bad("the header is cut short")),
        v => return Err(bad(&format!("unknown format version {v}"))),
    };
    if len > MAX_HEADER_BYTES {
        return Err(bad(&format!(
            "a header of {len} bytes is longer than {MAX_HEADER_BYTES}"
        )));
    }
    let end = start + len;
    if end > bytes.len() {
        return Err(bad(&format!(
            "the header claims {len} bytes but the file has {}",
            bytes.len() - start
        )));
    }
    let text =
        std::str::from_utf8(&bytes[start..end]).map_err(|_| bad("the header is not text"))?;
    let mut p = HeaderParser { text, pos: 0 };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect('{')?;
    loop {
        p.skip_ws();
        if p.eat('}') {
            break;
        }
        let key = p.string()?;
        p.expect(':')?;
        p.skip_ws();
        match key.as_str() {
            "descr" => {
                if p.peek() == Some('[') {
                    return Err("structured arrays are not supported".into());
                }
                descr = Some(parse_typestr(&p.string()?)?);
            }
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => shape = Some(p.shape()?),
            other => return Err(bad(&format!("unknown header key `{other}`"))),
        }
        p.skip_ws();
        if !p.eat(',') {
            p.expect('}')?;
            break;
        }
    }
    Ok(Header {
        ty: descr.ok_or_else(|| bad("the header has no `descr`"))?,
        fortran_order: fortran.ok_or_else(|| bad("the header has no `fortran_order`"))?,
        shape: shape.ok_or_else(|| bad("the header has no `shape`"))?,
        data_start: end,
    })
}

/// A cursor over a header's Python dict literal.
struct HeaderParser<'a> {
    text: &'a str,
    pos: usize,
}

impl HeaderParser<'_> {
    fn error(&self) -> String {
        format!(
            "not a valid .npy file: the header cannot be read at byte {}",
            self.pos
        )
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    /// A quoted string without escapes (all a header holds).
    fn string(&mut self) -> Result<String, String> {
        self.skip_ws();
        let quote = match self.peek() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(self.error()),
        };
        let rest = &self.text[self.pos + 1..];
        let close = rest.find(quote).ok_or_else(|| self.error())?;
        let s = rest[..close].to_string();
        self.pos += close + 2;
        Ok(s)
    }

    fn boolean(&mut self) -> Result<bool, String> {
        self.skip_ws();
        for (word, value) in [("True", true), ("False", false)] {
            if self.text[self.pos..].starts_with(word) {
                self.pos += word.len();
                return Ok(value);
            }
        }
        Err(self.error())
    }

    /// A tuple of non-negative ints: `()`, `(3,)`, `(3, 4)`.
    fn shape(&mut self) -> Result<Vec<u64>, String> {
        self.expect('(')?;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(')') {
                return Ok(dims);
            }
            let digits = self.text[self.pos..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            if digits == 0 {
                return Err(self.error());
            }
            let dim = self.text[self.pos..self.pos + digits]
                .parse::<u64>()
                .map_err(|_| self.error())?;
            self.pos += digits;
            // `3L` is how Python 2 wrote longs.
            self.eat('L');
            dims.push(dim);
            if !self.eat(',') {
                self.expect(')')?;
                return Ok(dims);
            }
        }
    }
}

/// Parses a type string such as `<f4`.
fn parse_typestr(s: &str) -> Result<TypeStr, String> {
    let bad = || format!("unsupported element type `{s}`");
    let mut chars = s.chars();
    let (big_endian, rest) = match chars.next() {
        Some('<' | '|' | '=') => (false, chars.as_str()),
        Some('>') => (true, chars.as_str()),
        _ => (false, s),
    };
    let mut chars = rest.chars();
    let kind = match chars.next().ok_or_else(bad)? {
        'b' | '?' => TypeChar::Bool,
        'i' => TypeChar::Int,
        'u' => TypeChar::Uint,
        'f' => TypeChar::Float,
        'V' => TypeChar::RawData,
        c => TypeChar::Other(c),
    };
    let size: usize = chars.as_str().parse().map_err(|_| bad())?;
    if size == 0 || size > 1 << 16 {
        return Err(bad());
    }
    Ok(TypeStr {
        big_endian,
        kind,
        size,
    })
}

/// Reorders the elements of a Fortran-order array (`shape`, `size`-byte
/// elements) into C order.
fn fortran_to_c(data: &[u8], shape: &[u64], size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let n = shape.len();
    // Fortran strides in elements: the first axis varies fastest.
    let mut strides = vec![0u64; n];
    let mut acc = 1u64;
    for k in 0..n {
        strides[k] = acc;
        acc *= shape[k];
    }
    let count = acc as usize;
    let mut index = vec![0u64; n];
    let mut offset = 0u64;
    for _ in 0..count {
        let at = offset as usize * size;
        out.extend_from_slice(&data[at..at + size]);
        // Advance the C-order index (the last axis fastest).
        for k in (0..n).rev() {
            index[k] += 1;
            offset += strides[k];
            if index[k] < shape[k] {
                break;
            }
            offset -= strides[k] * shape[k];
            index[k] = 0;
        }
    }
    out
}

/// An array read from a `.npy` file: its shape and its elements in the
/// kernel argument's dtype, as little-endian bytes.
#[cfg(test)]
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

    /// Raw little-endian element bits.
    Raw(Vec<u8>),
}

/// A `.npy` file's elements in the argument's dtype.
pub enum Converted {
    /// The file's own bytes, at this range of it: they already are the
    /// elements' little-endian bits in C order.
    Verbatim(std::ops::Range<usize>),
    /// Converted bytes.
    Owned(Vec<u8>),
}

/// Reads a `.npy` file's bytes and converts them to `dtype`: `load` on
/// bytes in memory.
#[cfg(test)]
pub fn read(bytes: &[u8], dtype: DType) -> Result<Array, String> {
    let (shape, data) = convert(bytes, dtype)?;
    let bytes = match data {
        Converted::Verbatim(range) => bytes[range].to_vec(),
        Converted::Owned(bytes) => bytes,
    };
    Ok(Array {
        shape,
        dtype,
        bytes,
    })
}

/// The shape and elements of a `.npy` file's `bytes` in `dtype`.
pub fn convert(bytes: &[u8], dtype: DType) -> Result<(Vec<u64>, Converted), String> {
    let header = parse_header(bytes)?;
    let shape = header.shape;
    let ty = header.ty;
    let size = ty.size;
    let data = &bytes[header.data_start..];
    let need = shape
        .iter()
        .try_fold(size as u64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= data.len() as u64)
        .ok_or_else(|| {
            format!(
                "the file holds {} bytes of data but its shape {shape:?} of {size}-byte elements needs more",
                data.len()
            )
        })? as usize;
    let little = !ty.big_endian;
    let raw_candidate = matches!(ty.kind, TypeChar::Uint | TypeChar::RawData);
    let raw_bits = ty.kind == TypeChar::RawData
        || (raw_candidate && needs_raw_bits(dtype) && size == dtype.size() as usize);
    // An array whose element type is the argument's dtype is copied bit
    // for bit: conversion by value would give the same bits (all but NaN
    // payloads, which survive, signalling ones included), without the
    // detour through f64 values.
    let same_type = size == dtype.size() as usize
        && match ty.kind {
            TypeChar::Float => matches!(dtype, DType::F16 | DType::F32),
            TypeChar::Int => matches!(dtype, DType::I8 | DType::I16 | DType::I32),
            TypeChar::Uint => matches!(dtype, DType::U8 | DType::U16 | DType::U32),
            _ => false,
        };
    if raw_bits && size != dtype.size() as usize {
        return Err(format!(
            "raw {size}-byte elements cannot hold {dtype}, whose elements are {} bytes",
            dtype.size()
        ));
    }
    if (raw_bits || same_type)
        && !header.fortran_order
        && (little || size == 1 || ty.kind == TypeChar::RawData)
    {
        let start = header.data_start;
        return Ok((shape, Converted::Verbatim(start..start + need)));
    }
    let reordered;
    let data = if header.fortran_order {
        reordered = fortran_to_c(&data[..need], &shape, size);
        &reordered[..]
    } else {
        &data[..need]
    };
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
    let elements = match (ty.kind, size) {
        (TypeChar::RawData, _) => Elements::Raw(data.to_vec()),
        _ if raw_bits || same_type => {
            let mut bytes = Vec::with_capacity(need);
            for chunk in data.chunks_exact(size) {
                bytes.extend_from_slice(&word(chunk).to_le_bytes()[..size]);
            }
            Elements::Raw(bytes)
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
        // float16 and float32 values are exact in f32, so they convert
        // from f32 (`encode_floats`) with the values the f64 path gives.
        (TypeChar::Float, 2) => Elements::Raw(encode_floats(data, 2, dtype, |c| {
            numerics::to_f32(DType::F16, word(c) as u32)
        })?),
        // Most `.npy` floats are little-endian float32: read a word at a
        // time (the byte loop of `word` and the f64 detour were most of
        // converting a 1024² float32 input to bfloat16).
        (TypeChar::Float, 4) if little => Elements::Raw(encode_floats(data, 4, dtype, |c| {
            f32::from_le_bytes([c[0], c[1], c[2], c[3]])
        })?),
        (TypeChar::Float, 4) => Elements::Raw(encode_floats(data, 4, dtype, |c| {
            f32::from_bits(word(c) as u32)
        })?),
        (TypeChar::Float, 8) => Elements::Values(
            data.chunks_exact(8)
                .map(|c| f64::from_bits(word(c)))
                .collect(),
        ),
        _ => return Err(format!("unsupported element type `{ty}`")),
    };
    let bytes = match elements {
        Elements::Raw(bytes) => bytes,
        Elements::Values(values) => encode_values(&values, dtype)?,
    };
    Ok((shape, Converted::Owned(bytes)))
}

/// The shape of a `.npy` file and the dtype its NumPy type maps to
/// (`None` for raw-bit arrays, whose dtype must be named). float64 maps to
/// float32 and int64/uint64 to their 32-bit types, the widest the machine has.
pub fn peek(bytes: &[u8]) -> Result<(Vec<u64>, Option<DType>), String> {
    let header = parse_header(bytes)?;
    let (shape, ty) = (header.shape, header.ty);
    let dtype = match (ty.kind, ty.size) {
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

/// The `size`-byte float elements of `data`, each exact in f32 as
/// `value` reads it, as elements of `dtype`: what `encode_values` gives
/// for their values, converted a block at a time for a float `dtype`
/// (no f64 or f32 copy of the whole array).
fn encode_floats(
    data: &[u8],
    size: usize,
    dtype: DType,
    value: impl Fn(&[u8]) -> f32,
) -> Result<Vec<u8>, String> {
    if dtype.is_packed_x4() || dtype.is_int() || dtype == DType::Bool {
        let wide: Vec<f64> = data
            .chunks_exact(size)
            .map(|c| f64::from(value(c)))
            .collect();
        return encode_values(&wide, dtype);
    }
    let mut out = Vec::with_capacity(data.len() / size * dtype.size() as usize);
    let mut block = Vec::with_capacity(CONVERT_CHUNK);
    for bytes in data.chunks(CONVERT_CHUNK * size) {
        block.clear();
        block.extend(bytes.chunks_exact(size).map(&value));
        numerics::encode(dtype, &block, &mut out);
    }
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
    let mut file = Vec::new();
    write_to(&mut file, shape, dtype, bytes, out).expect("writing to a Vec cannot fail");
    file
}

/// Elements converted at a time by `write_to` and `encode_floats`: the
/// float32 copy of an output is streamed, never held whole (a 2 GiB
/// output would need another 2 GiB, or 8 for a bfloat16 one), and so is
/// the f32 copy of a float input converted to another dtype.
const CONVERT_CHUNK: usize = 1 << 16;

/// Writes `write`'s file to `w`: its header, then `bytes` themselves, or,
/// for `OutDType::Float32` of a float dtype other than float32, their
/// float32 values a chunk at a time.
pub fn write_to(
    w: &mut dyn std::io::Write,
    shape: &[u64],
    dtype: DType,
    bytes: &[u8],
    out: OutDType,
) -> std::io::Result<()> {
    let layout = Layout::of(shape, dtype, out);
    w.write_all(&layout.header)?;
    layout.each_piece(bytes, |piece| w.write_all(piece))
}

/// Outputs of at least this many bytes are written to a file by two
/// threads (`write_file`).
const PARALLEL_WRITE: usize = 32 << 20;

/// As [`write_to`], into `file` from its start, of an output's bytes as
/// the simulator leaves them: the fill of its never-written elements is
/// made a piece at a time as it is written (`nkic_sim::OutputBytes`), so
/// a mostly unwritten output costs no memory of its size. An output of at
/// least `PARALLEL_WRITE` bytes is written in two halves side by side,
/// each thread converting its half and writing it at its offset
/// (`pwrite`), for the kernel's copy into the page cache takes the
/// writing thread's time (a third of writing a gigabyte of bfloat16
/// outputs as float32). The file's bytes are those `write_to` writes.
pub fn write_file(
    file: &std::fs::File,
    shape: &[u64],
    dtype: DType,
    bytes: &OutputBytes,
    out: OutDType,
) -> std::io::Result<()> {
    write_file_from(file, shape, dtype, bytes, out, PARALLEL_WRITE)
}

/// `write_file`, in halves from `parallel` bytes of data (on unix; in one
/// stream elsewhere).
#[cfg_attr(not(unix), allow(unused_variables))]
fn write_file_from(
    file: &std::fs::File,
    shape: &[u64],
    dtype: DType,
    bytes: &OutputBytes,
    out: OutDType,
    parallel: usize,
) -> std::io::Result<()> {
    let layout = Layout::of(shape, dtype, out);
    #[cfg(unix)]
    if bytes.len() >= parallel && bytes.len() / dtype.size() as usize >= 2 {
        return write_halves(file, &layout, dtype, bytes);
    }
    use std::io::Write;
    let mut w = file;
    w.write_all(&layout.header)?;
    bytes.try_for_each_piece(0..bytes.len(), |piece| {
        layout.each_piece(piece, |data| w.write_all(data))
    })
}

/// Allocates the blocks of a new file's `len` bytes before they are
/// written. A file system that allocates blocks late (ext4's delayed
/// allocation) otherwise reserves them page by page during the writes and
/// allocates them all at once when the file is renamed over an existing one
/// (ext4 flushes a file renamed over another, `auto_da_alloc`): measured
/// here for a 64 MiB output, writes of 15–165 ms and a rename of 20–31 ms
/// without, 10–16 ms and 12–15 ms with. Where the file system cannot
/// preallocate, the file is written as before.
#[cfg(unix)]
fn preallocate(file: &std::fs::File, len: u64) {
    #[cfg(target_os = "linux")]
    let _ = rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len);
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len);
}

/// `write_file`'s two halves side by side.
#[cfg(unix)]
fn write_halves(
    file: &std::fs::File,
    layout: &Layout,
    dtype: DType,
    bytes: &OutputBytes,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let start = layout.header.len() as u64;
    preallocate(file, start + layout.written(bytes.len()) as u64);
    file.write_all_at(&layout.header, 0)?;
    let size = dtype.size() as usize;
    let half = bytes.len() / size / 2 * size;
    let write_half = |part: std::ops::Range<usize>, mut at: u64| {
        bytes.try_for_each_piece(part, |piece| {
            layout.each_piece(piece, |data| {
                file.write_all_at(data, at)?;
                at += data.len() as u64;
                Ok(())
            })
        })
    };
    let upper_at = start + layout.written(half) as u64;
    std::thread::scope(|scope| {
        let upper = scope.spawn(|| write_half(half..bytes.len(), upper_at));
        let lower = write_half(0..half, start);
        let upper = upper
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        lower.and(upper)
    })
}

/// What `write_to` writes for an output: its header, and whether its
/// data is converted to float32.
struct Layout {
    header: Vec<u8>,
    /// The float dtype converted to float32, or `None` for raw bytes.
    convert: Option<DType>,
}

impl Layout {
    fn of(shape: &[u64], dtype: DType, out: OutDType) -> Layout {
        if out == OutDType::Float32 && dtype.is_float() && dtype != DType::F32 {
            let mut shape = shape.to_vec();
            if dtype.is_packed_x4() {
                // Each packed element unpacks into its lanes along the last axis.
                let lanes = numerics::lanes(dtype) as u64;
                match shape.last_mut() {
                    Some(last) => *last *= lanes,
                    None => shape.push(lanes),
                }
            }
            return Layout {
                header: header("<f4", &shape),
                convert: Some(dtype),
            };
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
        Layout {
            header: header(descr, shape),
            convert: None,
        }
    }

    /// The bytes of data written for the first `bytes` bytes of an output
    /// (a whole number of elements).
    fn written(&self, bytes: usize) -> usize {
        match self.convert {
            Some(dtype) => bytes / dtype.size() as usize * numerics::lanes(dtype) * 4,
            None => bytes,
        }
    }

    /// Passes the data written for `bytes` to `write` in order: `bytes`
    /// themselves, or their float32 values a chunk at a time.
    fn each_piece(
        &self,
        bytes: &[u8],
        mut write: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let Some(dtype) = self.convert else {
            return write(bytes);
        };
        let (mut values, mut data) = (Vec::new(), Vec::new());
        for chunk in bytes.chunks(CONVERT_CHUNK * dtype.size() as usize) {
            values.clear();
            numerics::decode(dtype, chunk, &mut values);
            data.clear();
            data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            write(&data)?;
        }
        Ok(())
    }
}

/// The start of a `.npy` file, before its little-endian data: magic,
/// version 1.0, a header dict padded so the data starts on a 64-byte
/// boundary.
fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
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
    let mut out = Vec::with_capacity(10 + header.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy_file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    /// Crafted headers are refused quickly: nested braces (exponential for
    /// a backtracking parser), a length beyond the file, a v2 length of
    /// 4 GiB, a shape whose byte count overflows.
    #[test]
    fn hostile_headers_are_refused() {
        let braces = npy_file(&"{".repeat(100_000), b"");
        let err = read(&braces, DType::F32).unwrap_err();
        assert!(err.contains("cannot be read at byte 1"), "{err}");
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend(u32::MAX.to_le_bytes());
        v2.push(b'{');
        let err = read(&v2, DType::F32).unwrap_err();
        assert!(err.contains("longer than 1048576"), "{err}");
        let mut short = npy_file("{}", b"");
        short[8] = 200;
        assert!(
            read(&short, DType::F32)
                .unwrap_err()
                .contains("claims 200 bytes")
        );
        let huge = npy_file(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
            &[0; 16],
        );
        assert!(read(&huge, DType::F32).unwrap_err().contains("needs more"));
        let structured = npy_file(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
            &[0; 4],
        );
        assert_eq!(
            read(&structured, DType::F32).unwrap_err(),
            "structured arrays are not supported"
        );
    }

    /// A Fortran-order array is read in C order: element `[i][j]` of a
    /// (2, 3) array is at `j * 2 + i` in the file.
    #[test]
    fn fortran_order_is_transposed() {
        let logical = |i: u32, j: u32| (10 * i + j) as f32;
        let mut data = Vec::new();
        for j in 0..3 {
            for i in 0..2 {
                data.extend(logical(i, j).to_le_bytes());
            }
        }
        let file = npy_file(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
            &data,
        );
        let array = read(&file, DType::F32).unwrap();
        assert_eq!(array.shape, [2, 3]);
        let values: Vec<f32> = array
            .bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(values, [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
        assert_eq!(peek(&file).unwrap(), (vec![2, 3], Some(DType::F32)));
    }

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

    /// An array of the argument's own dtype is used bit for bit, in place
    /// (fp16 NaN payloads, signalling ones included, survive; integers of
    /// every width); big-endian and Fortran-order arrays are reordered.
    #[test]
    fn same_dtype_arrays_are_copied_bit_for_bit() {
        let f16: Vec<u8> = [0x3c00u16, 0x7d01, 0xfe00, 0x0001]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let file = write(&[4], DType::F16, &f16, OutDType::Native);
        assert!(matches!(
            convert(&file, DType::F16).unwrap().1,
            Converted::Verbatim(_)
        ));
        assert_eq!(read(&file, DType::F16).unwrap().bytes, f16);
        for (descr, dtype, bytes) in [
            ("<i1", DType::I8, vec![0x80u8, 0x7f]),
            ("<i2", DType::I16, vec![0x00, 0x80, 0xff, 0x7f]),
            ("<u2", DType::U16, vec![0xff, 0xff, 0x01, 0x00]),
            ("<i4", DType::I32, vec![0, 0, 0, 0x80, 1, 0, 0, 0]),
            ("<u4", DType::U32, vec![0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0]),
        ] {
            let n = bytes.len() / dtype.size() as usize;
            let file = npy_file(
                &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n},), }}"),
                &bytes,
            );
            assert!(
                matches!(convert(&file, dtype).unwrap().1, Converted::Verbatim(_)),
                "{descr}"
            );
            assert_eq!(read(&file, dtype).unwrap().bytes, bytes, "{descr}");
        }
        let big = npy_file(
            "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }",
            &[0x7d, 0x01, 0x3c, 0x00],
        );
        assert_eq!(
            read(&big, DType::F16).unwrap().bytes,
            [0x01, 0x7d, 0x00, 0x3c]
        );
        // Another dtype still converts by value: fp16 into f32.
        let up = read(&file, DType::F32).unwrap().bytes;
        assert_eq!(up[..4], 1.0f32.to_le_bytes());
        assert_eq!(up[12..], (2f32.powi(-24)).to_le_bytes());
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

    /// A float32 copy longer than one conversion chunk is every element's
    /// value in order, and a float32 output's copy is its own bits.
    #[test]
    fn float32_copies_stream_in_chunks() {
        let n = 2 * CONVERT_CHUNK + 3;
        let bits: Vec<u16> = (0..n).map(|i| 0x3f80 + (i % 512) as u16).collect();
        let bytes: Vec<u8> = bits.iter().flat_map(|v| v.to_le_bytes()).collect();
        let up = write(&[n as u64], DType::BF16, &bytes, OutDType::Float32);
        let back = read(&up, DType::F32).unwrap();
        let want: Vec<u8> = bits
            .iter()
            .flat_map(|&b| f32::from_bits(u32::from(b) << 16).to_le_bytes())
            .collect();
        assert_eq!(back.shape, vec![n as u64]);
        assert_eq!(back.bytes, want);
        let nan = 0x7f81_2345u32.to_le_bytes();
        let same = write(&[1], DType::F32, &nan, OutDType::Float32);
        assert_eq!(read(&same, DType::F32).unwrap().bytes, nan);
    }

    /// A file written in two halves at their offsets holds the bytes
    /// `write_to` streams, converted or raw, for an odd element count
    /// (the halves differ in size) and a packed dtype (each element
    /// unpacks into four values); a wrong offset for the upper half, or
    /// a split inside an element, changes them.
    #[test]
    fn files_written_in_halves_hold_what_write_to_streams() {
        // Not `fsio::scratch_dir`: this file is also built alone, by the
        // fuzz targets' seed test.
        let dir = std::env::temp_dir().join(format!("nkic-npy-halves-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (DType::BF16, 2 * CONVERT_CHUNK + 3, OutDType::Float32),
            (DType::BF16, 2 * CONVERT_CHUNK + 3, OutDType::Native),
            (DType::F8E4M3FNx4, 1001, OutDType::Float32),
            (DType::F32, 7, OutDType::Float32),
        ];
        for (k, (dtype, n, out)) in cases.into_iter().enumerate() {
            let bytes: Vec<u8> = (0..n * dtype.size() as usize)
                .map(|i| (i * 7 % 251) as u8)
                .collect();
            let shape = [n as u64];
            let path = dir.join(format!("h{k}.npy"));
            let file = std::fs::File::create(&path).unwrap();
            write_file_from(&file, &shape, dtype, &bytes.clone().into(), out, 1).unwrap();
            drop(file);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                write(&shape, dtype, &bytes, out),
                "{dtype:?} {out:?}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// float16 and float32 inputs longer than a conversion chunk, in
    /// either byte order, convert into a float dtype element by element as
    /// `numerics::encode` rounds their values, and into an integer dtype
    /// by value, exact values only.
    #[test]
    fn float_inputs_convert_a_chunk_at_a_time() {
        let n = 2 * CONVERT_CHUNK + 3;
        let values: Vec<f32> = (0..n).map(|i| (i as f32 - 7.0) * 0.37).collect();
        for dtype in [DType::BF16, DType::F8E4M3, DType::F16] {
            let mut want = Vec::new();
            numerics::encode(dtype, &values, &mut want);
            for big in [false, true] {
                let bytes: Vec<u8> = values
                    .iter()
                    .flat_map(|v| match big {
                        false => v.to_le_bytes(),
                        true => v.to_be_bytes(),
                    })
                    .collect();
                let descr = if big { ">f4" } else { "<f4" };
                let file = npy_file(
                    &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n},), }}"),
                    &bytes,
                );
                assert_eq!(
                    read(&file, dtype).unwrap().bytes,
                    want,
                    "{descr} to {dtype}"
                );
            }
        }
        let halves: Vec<u16> = (0..n).map(|i| 0x3c00 ^ (i as u16 & 0x3ff)).collect();
        let bytes: Vec<u8> = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
        let file = npy_file(
            &format!("{{'descr': '<f2', 'fortran_order': False, 'shape': ({n},), }}"),
            &bytes,
        );
        let up: Vec<f32> = halves
            .iter()
            .map(|&h| numerics::to_f32(DType::F16, u32::from(h)))
            .collect();
        let mut want = Vec::new();
        numerics::encode(DType::BF16, &up, &mut want);
        assert_eq!(read(&file, DType::BF16).unwrap().bytes, want);
        let whole = [3.0f32, -2.0];
        let bytes: Vec<u8> = whole.iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = write(&[2], DType::F32, &bytes, OutDType::Native);
        assert_eq!(read(&file, DType::I8).unwrap().bytes, vec![3, 0xfe]);
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
