//! The text form of instruction fields: how each operand type prints and
//! parses in `.nkasm`.
//!
//! The instruction table (`inst.rs`) lists each instruction's fields with
//! their Rust types; the printer and the assembler reach a field only
//! through the `FieldValue` (print, visit access patterns) and `FieldParse`
//! (parse, default when omitted) traits implemented here. A field's text
//! never contains whitespace, `#`, `(` or `)`, so an instruction line splits
//! into `key=value` words on whitespace.
//!
//! Spellings:
//!
//! | type | example |
//! |---|---|
//! | access pattern | `sbuf[0:128]+512:f32[4,8][1,512]`, `psum[32:32]:bf16[1,64]`, `hbm.a[0:128*1024]+r3*4:f32[1,512]` |
//! | scalar | `1.0`, `-inf`, `nan:0x7fc00000`, or a `(P,1)` access pattern |
//! | immediate | `0`, `-3`, `0x7f` (integer) or `0.5` (float) |
//! | pattern (`iota`) | `[1,512]`, `[-1,128][1,4]` |
//! | byte list (`mask`) | `[0,1,2,255]` |
//! | pair | `[64,0]` |
//! | register, label | `r3`, `L0` |
//! | flag | `true` (omitted when false) |
//! | enum | its name (`add`, `exp`, `reset_reduce`) |

use crate::ap::{
    AccessPattern, Dim, DynOffset, Fp32, Imm, Memory, Reg, RegOrImm, Scalar, TensorId,
};
use crate::dtype::DType;
use crate::enums::{
    ActFunc, AluOp, BranchCond, DgeMode, MatmulPerfMode, OobMode, ReduceCmd, RegAluOp,
};
use crate::inst::Label;

/// Names that field text refers to: the program's HBM tensors.
#[derive(Clone, Debug, Default)]
pub struct Names {
    hbm: Vec<String>,
    /// Name → id, for the assembler (the first tensor of a name wins).
    by_name: std::collections::BTreeMap<String, TensorId>,
}

impl Names {
    /// The names of `hbm` tensors, in id order.
    pub fn new(hbm: Vec<String>) -> Names {
        let mut by_name = std::collections::BTreeMap::new();
        for (i, name) in (0u32..).zip(&hbm) {
            by_name.entry(name.clone()).or_insert(TensorId(i));
        }
        Names { hbm, by_name }
    }

    fn tensor_name(&self, id: TensorId) -> Option<&str> {
        self.hbm.get(id.0 as usize).map(String::as_str)
    }

    fn tensor_id(&self, name: &str) -> Option<TensorId> {
        self.by_name.get(name).copied()
    }
}

/// The object-safe half of a field: printing and operand discovery.
pub trait FieldValue {
    /// Appends the field's text.
    fn write_text(&self, names: &Names, out: &mut String);
    /// True when the printer leaves the field out (it equals the default
    /// the assembler fills in).
    fn is_omitted(&self) -> bool {
        false
    }
    /// The access pattern inside the field, if any (a field holds at
    /// most one, so asking allocates nothing).
    fn access_pattern(&self) -> Option<&AccessPattern> {
        None
    }
}

/// The parsing half of a field.
pub trait FieldParse: Sized {
    /// Parses the field's text; the error is a message without position.
    fn parse_text(text: &str, names: &Names) -> Result<Self, String>;
    /// The value of an omitted field, or `None` when the field is required.
    fn omitted() -> Option<Self> {
        None
    }
}

/// The short dtype spellings used in `.nkasm`.
pub fn dtype_short_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::TF32 => "tf32",
        DType::F8E4M3 => "f8e4m3",
        DType::F8E4M3FN => "f8e4m3fn",
        DType::F8E5M2 => "f8e5m2",
        DType::F8E8M0 => "e8m0",
        DType::F8E4M3FNx4 => "f8e4m3fnx4",
        DType::F8E5M2x4 => "f8e5m2x4",
        DType::F4E2M1FNx4 => "f4e2m1fnx4",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::U8 => "u8",
        DType::U16 => "u16",
        DType::U32 => "u32",
        DType::Bool => "bool",
    }
}

/// Parses a short dtype spelling, or any name `DType::from_str` accepts.
pub fn parse_dtype(text: &str) -> Option<DType> {
    DType::ALL
        .iter()
        .copied()
        .find(|&dt| dtype_short_name(dt) == text)
        .or_else(|| text.parse::<DType>().ok())
}

/// Parses a decimal or `0x` hexadecimal integer with an optional `-`
/// that fits an `i64`.
pub fn parse_int(text: &str) -> Option<i64> {
    parse_wide_int(text).and_then(|v| i64::try_from(v).ok())
}

/// Parses a decimal or `0x` hexadecimal integer with an optional `-`, in
/// the range of `i128` (wide enough for every `u64` and `i64`): the
/// integer syntax of `.nkasm` and of the tile IR's text.
pub fn parse_wide_int(text: &str) -> Option<i128> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let magnitude = if let Some(hex) = body.strip_prefix("0x") {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        i128::from_str_radix(hex, 16).ok()?
    } else {
        if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        body.parse::<i128>().ok()?
    };
    Some(if neg { -magnitude } else { magnitude })
}

/// Writes `bytes` as lowercase hexadecimal, two digits a byte: the
/// spelling of constant data in `.nkasm` (`.data`) and in the tile IR's
/// text (`data=`).
pub fn write_hex(bytes: &[u8], out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 * bytes.len());
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

/// Parses what `write_hex` writes: pairs of lowercase hexadecimal digits.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if let Some(bad) = text
        .chars()
        .find(|c| !c.is_ascii() || digit(*c as u8).is_none())
    {
        return Err(format!("`{bad}` is not a lowercase hexadecimal digit"));
    }
    if !text.len().is_multiple_of(2) {
        return Err(format!(
            "{} hexadecimal digits, an odd number; a byte is two",
            text.len()
        ));
    }
    Ok(text
        .as_bytes()
        .chunks_exact(2)
        .filter_map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect())
}

fn parse_int_as<T: TryFrom<i128>>(text: &str, what: &str) -> Result<T, String> {
    let v = parse_wide_int(text).ok_or_else(|| format!("expected {what}, found `{text}`"))?;
    T::try_from(v).map_err(|_| format!("{what} out of range: `{text}`"))
}

// ---------------------------------------------------------------- access patterns

/// Writes an access pattern (see the module doc for the spelling).
pub fn write_ap(ap: &AccessPattern, names: &Names, out: &mut String) {
    use std::fmt::Write;
    match ap.mem {
        Memory::Sbuf => out.push_str("sbuf"),
        Memory::Psum => out.push_str("psum"),
        Memory::Hbm(id) => match names.tensor_name(id) {
            Some(name) => {
                out.push_str("hbm.");
                out.push_str(name);
            }
            // An unknown tensor prints in a form the assembler rejects.
            None => {
                let _ = write!(out, "hbm.?{}", id.0);
            }
        },
    }
    let _ = write!(out, "[{}:{}", ap.partition_start, ap.partition_count);
    if ap.partition_stride != 0 {
        let _ = write!(out, "*{}", ap.partition_stride);
    }
    out.push(']');
    if ap.offset != 0 {
        let _ = write!(out, "+{}", ap.offset);
    }
    if let Some(d) = ap.dyn_offset {
        let _ = write!(out, "+{}*{}", d.reg, d.scale);
    }
    out.push(':');
    out.push_str(dtype_short_name(ap.dtype));
    for d in &ap.dims {
        let _ = write!(out, "[{},{}]", d.stride, d.count);
    }
}

/// True when `text` starts like an access pattern.
pub fn looks_like_ap(text: &str) -> bool {
    text.starts_with("sbuf[") || text.starts_with("psum[") || text.starts_with("hbm.")
}

/// Parses an access pattern.
pub fn parse_ap(text: &str, names: &Names) -> Result<AccessPattern, String> {
    let open = text.find('[').ok_or_else(|| {
        format!("expected an access pattern like `sbuf[0:128]:f32[1,512]`, found `{text}`")
    })?;
    let mem_text = &text[..open];
    let mem = match mem_text {
        "sbuf" => Memory::Sbuf,
        "psum" => Memory::Psum,
        _ => {
            let name = mem_text.strip_prefix("hbm.").ok_or_else(|| {
                format!("unknown memory `{mem_text}`: expected `sbuf`, `psum` or `hbm.<tensor>`")
            })?;
            let id = names.tensor_id(name).ok_or_else(|| {
                format!("unknown HBM tensor `{name}` (declare it with `.arg` or `.hbm`)")
            })?;
            Memory::Hbm(id)
        }
    };
    let rest = &text[open + 1..];
    let close = rest
        .find(']')
        .ok_or_else(|| format!("missing `]` after the partition range in `{text}`"))?;
    let part = &rest[..close];
    let (start_text, count_text) = part
        .split_once(':')
        .ok_or_else(|| format!("expected a partition range `start:count`, found `{part}`"))?;
    let (count_text, stride_text) = match count_text.split_once('*') {
        Some((c, s)) => (c, Some(s)),
        None => (count_text, None),
    };
    let partition_start = parse_int_as::<u32>(start_text, "a partition start")?;
    let partition_count = parse_int_as::<u32>(count_text, "a partition count")?;
    let partition_stride = match stride_text {
        Some(s) => parse_int_as::<i64>(s, "a partition stride")?,
        None => 0,
    };
    let mut rest = &rest[close + 1..];
    let colon = rest
        .find(':')
        .ok_or_else(|| format!("missing `:<dtype>` in access pattern `{text}`"))?;
    let offsets = &rest[..colon];
    rest = &rest[colon + 1..];
    let (offset, dyn_offset) = parse_offsets(offsets)?;
    let dims_at = rest.find('[').unwrap_or(rest.len());
    let dtype_text = &rest[..dims_at];
    let dtype = parse_dtype(dtype_text).ok_or_else(|| format!("unknown dtype `{dtype_text}`"))?;
    let dims = parse_dim_list(&rest[dims_at..])?;
    Ok(AccessPattern {
        mem,
        partition_start,
        partition_count,
        partition_stride,
        offset,
        dyn_offset,
        dims,
        dtype,
    })
}

/// Parses `+<bytes>`, `+r<n>*<scale>` or both (in that order), or nothing.
fn parse_offsets(text: &str) -> Result<(u64, Option<DynOffset>), String> {
    let mut offset = 0u64;
    let mut dyn_offset = None;
    if text.is_empty() {
        return Ok((offset, dyn_offset));
    }
    let body = text
        .strip_prefix('+')
        .ok_or_else(|| format!("expected `+<offset>` after the partition range, found `{text}`"))?;
    let mut parts = body.split('+');
    let mut next = parts.next();
    if let Some(first) = next
        && !first.starts_with('r')
    {
        offset = parse_int_as::<u64>(first, "a byte offset")?;
        next = parts.next();
    }
    if let Some(first) = next {
        let (reg_text, scale_text) = first
            .split_once('*')
            .ok_or_else(|| format!("expected a dynamic offset `r<n>*<scale>`, found `{first}`"))?;
        let reg = parse_reg(reg_text)?;
        let scale = parse_int_as::<i64>(scale_text, "a dynamic offset scale")?;
        dyn_offset = Some(DynOffset { reg, scale });
    }
    if let Some(extra) = parts.next() {
        return Err(format!("unexpected `+{extra}` in offset"));
    }
    Ok((offset, dyn_offset))
}

/// Parses `[a,b][c,d]…` into dims (strides may be negative).
fn parse_dim_list(text: &str) -> Result<Vec<Dim>, String> {
    parse_pairs(text)?
        .into_iter()
        .map(|(stride, count)| {
            let count =
                u32::try_from(count).map_err(|_| format!("dim count out of range: {count}"))?;
            Ok(Dim { stride, count })
        })
        .collect()
}

/// Parses a sequence of `[int,int]` groups.
fn parse_pairs(text: &str) -> Result<Vec<(i64, i64)>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let body = rest
            .strip_prefix('[')
            .ok_or_else(|| format!("expected `[stride,count]`, found `{rest}`"))?;
        let close = body
            .find(']')
            .ok_or_else(|| format!("missing `]` in `{rest}`"))?;
        let (a, b) = body[..close]
            .split_once(',')
            .ok_or_else(|| format!("expected `[stride,count]`, found `[{}]`", &body[..close]))?;
        let a = parse_int(a).ok_or_else(|| format!("expected an integer, found `{a}`"))?;
        let b = parse_int(b).ok_or_else(|| format!("expected an integer, found `{b}`"))?;
        out.push((a, b));
        rest = &body[close + 1..];
    }
    Ok(out)
}

pub(crate) fn parse_reg(text: &str) -> Result<Reg, String> {
    text.strip_prefix('r')
        .filter(|d| {
            !d.is_empty()
                && d.bytes().all(|b| b.is_ascii_digit())
                && (d.len() == 1 || !d.starts_with('0'))
        })
        .and_then(|d| d.parse::<u8>().ok())
        .map(Reg)
        .ok_or_else(|| format!("expected a register like `r3`, found `{text}`"))
}

pub(crate) fn parse_label(text: &str) -> Result<Label, String> {
    text.strip_prefix('L')
        .filter(|d| {
            !d.is_empty()
                && d.bytes().all(|b| b.is_ascii_digit())
                && (d.len() == 1 || !d.starts_with('0'))
        })
        .and_then(|d| d.parse::<u32>().ok())
        .map(Label)
        .ok_or_else(|| format!("expected a label like `L0`, found `{text}`"))
}

// ---------------------------------------------------------------- impls

impl FieldValue for AccessPattern {
    fn write_text(&self, names: &Names, out: &mut String) {
        write_ap(self, names, out);
    }
    fn access_pattern(&self) -> Option<&AccessPattern> {
        Some(self)
    }
}

impl FieldParse for AccessPattern {
    fn parse_text(text: &str, names: &Names) -> Result<Self, String> {
        parse_ap(text, names)
    }
}

impl<T: FieldValue> FieldValue for Option<T> {
    fn write_text(&self, names: &Names, out: &mut String) {
        if let Some(v) = self {
            v.write_text(names, out);
        }
    }
    fn is_omitted(&self) -> bool {
        self.is_none()
    }
    fn access_pattern(&self) -> Option<&AccessPattern> {
        self.as_ref().and_then(FieldValue::access_pattern)
    }
}

impl<T: FieldParse> FieldParse for Option<T> {
    fn parse_text(text: &str, names: &Names) -> Result<Self, String> {
        T::parse_text(text, names).map(Some)
    }
    fn omitted() -> Option<Self> {
        Some(None)
    }
}

impl FieldValue for Scalar {
    fn write_text(&self, names: &Names, out: &mut String) {
        match self {
            Scalar::Imm(v) => out.push_str(&v.to_text()),
            Scalar::Vector(ap) => write_ap(ap, names, out),
        }
    }
    fn access_pattern(&self) -> Option<&AccessPattern> {
        match self {
            Scalar::Imm(_) => None,
            Scalar::Vector(ap) => Some(ap),
        }
    }
}

impl FieldParse for Scalar {
    fn parse_text(text: &str, names: &Names) -> Result<Self, String> {
        if looks_like_ap(text) {
            parse_ap(text, names).map(Scalar::Vector)
        } else {
            Fp32::parse(text).map(Scalar::Imm).ok_or_else(|| {
                format!("expected a float or a `(P,1)` access pattern, found `{text}`")
            })
        }
    }
}

impl FieldValue for Fp32 {
    fn write_text(&self, _: &Names, out: &mut String) {
        out.push_str(&self.to_text());
    }
}

impl FieldParse for Fp32 {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        Fp32::parse(text).ok_or_else(|| format!("expected a float, found `{text}`"))
    }
}

impl FieldValue for Imm {
    fn write_text(&self, _: &Names, out: &mut String) {
        match self {
            Imm::Int(v) => out.push_str(&v.to_string()),
            Imm::Float(v) => out.push_str(&v.to_text()),
        }
    }
}

impl FieldParse for Imm {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        if let Some(v) = parse_int(text) {
            return Ok(Imm::Int(v));
        }
        Fp32::parse(text)
            .map(Imm::Float)
            .ok_or_else(|| format!("expected an integer or a float, found `{text}`"))
    }
}

impl FieldValue for bool {
    fn write_text(&self, _: &Names, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
    fn is_omitted(&self) -> bool {
        !*self
    }
}

impl FieldParse for bool {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        match text {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("expected `true` or `false`, found `{text}`")),
        }
    }
    fn omitted() -> Option<Self> {
        Some(false)
    }
}

macro_rules! int_field {
    ($($ty:ty => $what:literal),*) => {$(
        impl FieldValue for $ty {
            fn write_text(&self, _: &Names, out: &mut String) {
                out.push_str(&self.to_string());
            }
        }
        impl FieldParse for $ty {
            fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
                parse_int_as::<$ty>(text, $what)
            }
        }
    )*};
}

int_field!(i32 => "an integer", u32 => "an unsigned integer", u8 => "an integer in 0..=255");

/// Declares that an enum prints by name, with an optional default that is
/// omitted from the text.
macro_rules! enum_field {
    ($ty:ident, $what:literal) => {
        enum_field!(@impl $ty, $what, None, |_v: &$ty| false);
    };
    ($ty:ident, $what:literal, default = $default:expr) => {
        enum_field!(@impl $ty, $what, Some($default), |v: &$ty| *v == $default);
    };
    (@impl $ty:ident, $what:literal, $omitted:expr, $is_default:expr) => {
        impl FieldValue for $ty {
            fn write_text(&self, _: &Names, out: &mut String) {
                out.push_str(self.name());
            }
            fn is_omitted(&self) -> bool {
                ($is_default)(self)
            }
        }
        impl FieldParse for $ty {
            fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
                $ty::from_name(text).ok_or_else(|| {
                    let all: Vec<&str> = $ty::ALL.iter().map(|v| v.name()).collect();
                    format!("unknown {} `{}`; expected one of: {}", $what, text, all.join(", "))
                })
            }
            fn omitted() -> Option<Self> {
                $omitted
            }
        }
    };
}

enum_field!(AluOp, "ALU operator");
enum_field!(ActFunc, "activation function");
enum_field!(ReduceCmd, "reduce command", default = ReduceCmd::Idle);
enum_field!(DgeMode, "DGE mode", default = DgeMode::None);
enum_field!(OobMode, "out-of-bounds mode", default = OobMode::Error);
enum_field!(
    MatmulPerfMode,
    "matmul performance mode",
    default = MatmulPerfMode::None
);
enum_field!(RegAluOp, "register operator");
enum_field!(BranchCond, "branch condition");

impl FieldValue for Vec<Dim> {
    fn write_text(&self, _: &Names, out: &mut String) {
        for d in self {
            out.push_str(&format!("[{},{}]", d.stride, d.count));
        }
        if self.is_empty() {
            out.push_str("[]");
        }
    }
}

impl FieldParse for Vec<Dim> {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        if text == "[]" {
            return Ok(Vec::new());
        }
        parse_dim_list(text)
    }
}

impl FieldValue for Vec<u8> {
    fn write_text(&self, _: &Names, out: &mut String) {
        out.push('[');
        for (i, b) in self.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&b.to_string());
        }
        out.push(']');
    }
}

impl FieldParse for Vec<u8> {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        let body = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .ok_or_else(|| format!("expected a list like `[0,1,2]`, found `{text}`"))?;
        if body.is_empty() {
            return Ok(Vec::new());
        }
        body.split(',')
            .map(|b| parse_int_as::<u8>(b, "an integer in 0..=255"))
            .collect()
    }
}

impl FieldValue for [u32; 2] {
    fn write_text(&self, _: &Names, out: &mut String) {
        out.push_str(&format!("[{},{}]", self[0], self[1]));
    }
}

impl FieldParse for [u32; 2] {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        match parse_pairs(text)?.as_slice() {
            [(a, b)] => Ok([
                u32::try_from(*a)
                    .map_err(|_| format!("expected an unsigned integer, found {a}"))?,
                u32::try_from(*b)
                    .map_err(|_| format!("expected an unsigned integer, found {b}"))?,
            ]),
            _ => Err(format!("expected a pair like `[64,0]`, found `{text}`")),
        }
    }
}

impl FieldValue for Reg {
    fn write_text(&self, _: &Names, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

impl FieldParse for Reg {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        parse_reg(text)
    }
}

impl FieldValue for RegOrImm {
    fn write_text(&self, _: &Names, out: &mut String) {
        match self {
            RegOrImm::Reg(r) => out.push_str(&r.to_string()),
            RegOrImm::Imm(v) => out.push_str(&v.to_string()),
        }
    }
}

impl FieldParse for RegOrImm {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        if text.starts_with('r') {
            parse_reg(text).map(RegOrImm::Reg)
        } else {
            parse_int_as::<i32>(text, "a register or a 32-bit integer").map(RegOrImm::Imm)
        }
    }
}

impl FieldValue for Label {
    fn write_text(&self, _: &Names, out: &mut String) {
        out.push_str(&self.to_string());
    }
}

impl FieldParse for Label {
    fn parse_text(text: &str, _: &Names) -> Result<Self, String> {
        parse_label(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names::new(vec!["a".into(), "out".into()])
    }

    fn round_trip(text: &str) {
        let ap = parse_ap(text, &names()).unwrap_or_else(|e| panic!("{text}: {e}"));
        let mut out = String::new();
        write_ap(&ap, &names(), &mut out);
        assert_eq!(out, text);
    }

    #[test]
    fn hex_text() {
        let mut out = String::new();
        write_hex(&[0x00, 0x0f, 0xa0, 0xff], &mut out);
        assert_eq!(out, "000fa0ff");
        assert_eq!(parse_hex("000fa0ff"), Ok(vec![0x00, 0x0f, 0xa0, 0xff]));
        assert_eq!(parse_hex(""), Ok(Vec::new()));
        assert_eq!(
            parse_hex("0A"),
            Err("`A` is not a lowercase hexadecimal digit".to_owned())
        );
        assert_eq!(
            parse_hex("abc"),
            Err("3 hexadecimal digits, an odd number; a byte is two".to_owned())
        );
    }

    #[test]
    fn access_pattern_text() {
        round_trip("sbuf[0:128]+512:f32[4,8][1,512]");
        round_trip("psum[32:32]:bf16[1,64]");
        round_trip("hbm.out[0:128*1024]+r3*4:f32[1,512]");
        round_trip("hbm.a[0:1]+8+r63*-16:i32");
        let ap = parse_ap("sbuf[64:64]+0x40:bfloat16[1,8]", &names()).unwrap();
        assert_eq!(ap.offset, 64);
        assert_eq!(ap.dtype, DType::BF16);
        assert_eq!(ap.partition_start, 64);
        assert_eq!(ap.dims, vec![Dim::new(1, 8)]);
    }

    #[test]
    fn access_pattern_errors() {
        let n = names();
        assert!(parse_ap("sbuf[0:128]+12+:f32", &n).is_err());
        assert!(parse_ap("sbuf[0:128]+:f32", &n).is_err());
        assert!(
            parse_ap("hbm.b[0:1]:f32", &n)
                .unwrap_err()
                .contains("unknown HBM tensor `b`")
        );
        assert!(
            parse_ap("sbuf[0:128]:f33[1,2]", &n)
                .unwrap_err()
                .contains("unknown dtype")
        );
        assert!(
            parse_ap("sram[0:1]:f32", &n)
                .unwrap_err()
                .contains("unknown memory")
        );
        assert!(parse_ap("sbuf[0:128]:f32[1,-2]", &n).is_err());
        assert!(parse_ap("sbuf[0:128]+r1:f32", &n).is_err());
    }

    #[test]
    fn scalars_and_immediates() {
        let n = names();
        assert_eq!(Scalar::parse_text("1.5", &n), Ok(Scalar::imm(1.5)));
        assert!(matches!(
            Scalar::parse_text("sbuf[0:128]:f32[1,1]", &n),
            Ok(Scalar::Vector(_))
        ));
        assert_eq!(Imm::parse_text("-3", &n), Ok(Imm::Int(-3)));
        assert_eq!(Imm::parse_text("0x10", &n), Ok(Imm::Int(16)));
        assert_eq!(Imm::parse_text("1e20", &n), Ok(Imm::Float(Fp32::new(1e20))));
        assert_eq!(RegOrImm::parse_text("r7", &n), Ok(RegOrImm::Reg(Reg(7))));
        assert_eq!(RegOrImm::parse_text("-7", &n), Ok(RegOrImm::Imm(-7)));
        assert!(Reg::parse_text("r01", &n).is_err());
        assert_eq!(<Vec<u8>>::parse_text("[0,255]", &n), Ok(vec![0, 255]));
        assert_eq!(<[u32; 2]>::parse_text("[64,0]", &n), Ok([64, 0]));
        assert!(
            ReduceCmd::parse_text("resett", &n)
                .unwrap_err()
                .contains("reset_reduce")
        );
    }
}
