//! The text form of op fields: how each operand type prints and parses.
//!
//! The op table (`op.rs`) lists each op's fields with their Rust types;
//! the printer, the reader and operand discovery reach a field only through
//! [`FieldValue`] (print, views, registers) and `FieldParse` (parse,
//! default when omitted), implemented here.
//!
//! Spellings:
//!
//! | type | example |
//! |---|---|
//! | view, slice form | `t3[0:128, 0:512]`, `t3[0:128, 0:512:2]` (`start:stop` or `start:stop:step` per storage dim) |
//! | view, pattern form | `t3.ap([[512, 128], [1, 64]], offset=64, dtype=bfloat16, scalar_offset=r1*64)`, `…, vector_offset=t9[0:128, 0:1])`, `…, indirect=t9[0:16, 0:8])` |
//! | scalar | `1.0`, `-inf`, `nan:0x7fc00000`, or a view |
//! | immediate | `0`, `-3` (integer) or `0.5` (float) |
//! | pattern (`iota`) | `[[1, 512]]` (`[step, count]` pairs) |
//! | byte list (`mask`) | `[0, 1, 2, 255]` |
//! | pair | `[64, 0]` |
//! | register, register or immediate | `r3`, `r3` or `-7` |
//! | flag | `true` (omitted when false); optional flag `true`/`false` |
//! | enum | its name (`add`, `exp`, `reset_reduce`) |
//!
//! A view prints in slice form exactly when it is a plain slice of its
//! storage (same dtype and rank, positive steps, no dynamic parts);
//! otherwise in pattern form. Both forms read back to the same view, so
//! print → read → print is the identity.
//!
//! Fields equal to their default (`false`, `None`, `reduce_cmd=idle`,
//! `oob=error`, `perf_mode=none`) are omitted.

use std::fmt::Write as _;

use nkic_isa::{
    ActFunc, AluOp, DType, DgeMode, Dim, Fp32, Imm, MatmulPerfMode, OobMode, ReduceCmd, RegAluOp,
};

use crate::arena::{Arena, Handle};
use crate::kernel::{RegHandle, Storage};
use crate::lex::{Cursor, Tok, parse_int};
use crate::op::{RegOrImm, Scalar};
use crate::view::{DynOffset, Indirection, View, ViewDim};

/// The object-safe half of a field: printing and operand discovery.
pub trait FieldValue {
    /// Appends the field's text; `storages` gives views their shapes.
    fn write_text(&self, storages: &Arena<Storage>, out: &mut String);
    /// True when the printer leaves the field out (it equals the default
    /// the reader fills in).
    fn is_omitted(&self) -> bool {
        false
    }
    /// The view in this field, if any (not its index view); a field
    /// holds at most one, so asking allocates nothing.
    fn view(&self) -> Option<&View> {
        None
    }
    /// The view in this field, mutably (the same one as [`view`](Self::view)).
    fn view_mut(&mut self) -> Option<&mut View> {
        None
    }
    /// The register operands of this field (not views' dynamic offsets).
    fn registers(&self) -> Vec<RegHandle> {
        Vec::new()
    }
    /// The value of a flag field (`bool`, or an open choice of one once
    /// made); `None` for other fields and open choices.
    fn flag(&self) -> Option<bool> {
        None
    }
}

/// The parsing half of a field.
pub(crate) trait FieldParse: Sized {
    /// Parses the field's text; the cursor must be left at the end.
    fn parse(c: &mut Cursor<'_>, storages: &Arena<Storage>) -> Result<Self, String>;
    /// The value of an omitted field; `None` when the field is required.
    fn omitted() -> Option<Self> {
        None
    }
}

/// The fields of one op line, by name, for `OpKind::parse_fields`.
pub(crate) struct FieldSource<'a> {
    pub(crate) fields: Vec<(&'a str, &'a [Tok])>,
    pub(crate) storages: &'a Arena<Storage>,
}

impl FieldSource<'_> {
    /// Removes field `name` and parses it, or supplies its default.
    pub(crate) fn field<T: FieldParse>(&mut self, name: &str) -> Result<T, String> {
        match self.fields.iter().position(|(n, _)| *n == name) {
            Some(i) => {
                let (_, toks) = self.fields.remove(i);
                let mut c = Cursor::new(toks);
                let v =
                    T::parse(&mut c, self.storages).map_err(|e| format!("bad `{name}`: {e}"))?;
                c.expect_end().map_err(|e| format!("bad `{name}`: {e}"))?;
                Ok(v)
            }
            None => T::omitted().ok_or_else(|| format!("missing field `{name}`")),
        }
    }
}

// ---------------------------------------------------------------- views

/// The start of each storage dim when `view` is a plain slice of `st`, with
/// each dim's step; `None` when the view needs the pattern form.
fn slice_form(view: &View, st: &Storage) -> Option<Vec<(u64, u64)>> {
    if view.dtype != st.dtype
        || view.is_dynamic()
        || view.dims.len() != st.shape.len()
        || view.offset < 0
    {
        return None;
    }
    let strides = st.row_major_strides();
    let mut rem = u64::try_from(view.offset).ok()?;
    let mut out = Vec::with_capacity(view.dims.len());
    for ((d, &size), &row) in view.dims.iter().zip(&st.shape).zip(&strides) {
        if row == 0 {
            return None;
        }
        let start = rem / row;
        rem %= row;
        let stride = u64::try_from(d.stride).ok()?;
        if stride == 0 || stride % row != 0 || d.count == 0 {
            return None;
        }
        let step = stride / row;
        if d.count == 1 && step != 1 {
            return None;
        }
        let last = start.checked_add((d.count - 1).checked_mul(step)?)?;
        if last >= size {
            return None;
        }
        out.push((start, step));
    }
    (rem == 0).then_some(out)
}

/// Writes a view in slice or pattern form.
pub(crate) fn write_view(view: &View, storages: &Arena<Storage>, out: &mut String) {
    out.push_str(&view.storage.to_string());
    let st = storages.try_get(view.storage);
    if let Some(slices) = st.and_then(|st| slice_form(view, st)) {
        out.push('[');
        for (k, ((start, step), d)) in slices.iter().zip(&view.dims).enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            let stop = start + (d.count - 1) * step + 1;
            let _ = write!(out, "{start}:{stop}");
            if *step != 1 {
                let _ = write!(out, ":{step}");
            }
        }
        out.push(']');
        return;
    }
    out.push_str(".ap([");
    for (k, d) in view.dims.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "[{}, {}]", d.stride, d.count);
    }
    let _ = write!(out, "], offset={}", view.offset);
    if st.is_none_or(|st| st.dtype != view.dtype) {
        let _ = write!(out, ", dtype={}", view.dtype);
    }
    if let Some(d) = &view.dyn_offset {
        let _ = write!(out, ", scalar_offset={}*{}", d.reg, d.scale);
    }
    if let Some(ind) = &view.indirect {
        let _ = write!(out, ", {}=", ind.name());
        write_view(ind.index(), storages, out);
    }
    out.push(')');
}

/// Parses `t<N>` into a storage handle.
fn parse_storage_handle(w: &str) -> Result<Handle<Storage>, String> {
    w.strip_prefix('t')
        .and_then(parse_index)
        .and_then(Handle::from_index)
        .ok_or_else(|| format!("expected a storage like `t3`, found `{w}`"))
}

/// Parses `r<N>` into a register handle.
pub(crate) fn parse_reg_handle(w: &str) -> Result<RegHandle, String> {
    w.strip_prefix('r')
        .and_then(parse_index)
        .and_then(Handle::from_index)
        .ok_or_else(|| format!("expected a register like `r3`, found `{w}`"))
}

/// Parses the digits of a handle (no sign, no leading zeros).
pub(crate) fn parse_index(digits: &str) -> Option<usize> {
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse().ok()
}

/// Parses a view in slice or pattern form.
pub(crate) fn parse_view(c: &mut Cursor<'_>, storages: &Arena<Storage>) -> Result<View, String> {
    let word = c.word()?;
    // The pattern form is lexed as one word `t3.ap`.
    if let Some(handle) = word.strip_suffix(".ap") {
        let storage = parse_storage_handle(handle)?;
        return parse_ap(c, storage, storages);
    }
    let storage = parse_storage_handle(word)?;
    let st = storages
        .try_get(storage)
        .ok_or_else(|| format!("unknown storage `{storage}`"))?;
    c.expect('[')?;
    let strides = st.row_major_strides();
    let mut dims = Vec::new();
    let mut offset: i64 = 0;
    loop {
        let k = dims.len();
        let (Some(&size), Some(&row)) = (st.shape.get(k), strides.get(k)) else {
            return Err(format!("more slices than `{storage}` has dims"));
        };
        let start: u64 = c.int()?;
        c.expect(':')?;
        let stop: u64 = c.int()?;
        let step: u64 = if c.eat(':') { c.int()? } else { 1 };
        if step == 0 || stop <= start || stop > size {
            return Err(format!(
                "bad slice {start}:{stop}:{step} of a dim of size {size}"
            ));
        }
        let count = (stop - start).div_ceil(step);
        let to_i64 = |v: u64| i64::try_from(v).map_err(|_| "slice out of range".to_owned());
        offset = offset
            .checked_add(
                to_i64(start)?
                    .checked_mul(to_i64(row)?)
                    .ok_or("slice out of range")?,
            )
            .ok_or("slice out of range")?;
        dims.push(ViewDim::new(
            to_i64(row)?
                .checked_mul(to_i64(step)?)
                .ok_or("slice out of range")?,
            count,
        ));
        if c.eat(']') {
            break;
        }
        c.expect(',')?;
    }
    if dims.len() != st.shape.len() {
        return Err(format!(
            "slice form needs {} slices for `{storage}`, found {}",
            st.shape.len(),
            dims.len()
        ));
    }
    Ok(View::new(storage, st.dtype, offset, &dims))
}

fn parse_ap(
    c: &mut Cursor<'_>,
    storage: Handle<Storage>,
    storages: &Arena<Storage>,
) -> Result<View, String> {
    c.expect('(')?;
    let dims = c.list(true, |c| {
        let (stride, count) = c.stride_count()?;
        Ok(ViewDim::new(stride, count))
    })?;
    c.expect(',')?;
    c.expect_word_is("offset")?;
    c.expect('=')?;
    let offset: i64 = c.int()?;
    let mut dtype = storages.try_get(storage).map(|s| s.dtype);
    let mut dyn_offset = None;
    let mut indirect = None;
    while c.eat(',') {
        let key = c.word()?;
        c.expect('=')?;
        match key {
            "dtype" => dtype = Some(parse_dtype(c.word()?)?),
            "scalar_offset" => {
                let reg = parse_reg_handle(c.word()?)?;
                c.expect('*')?;
                let scale: i64 = c.int()?;
                dyn_offset = Some(DynOffset { reg, scale });
            }
            "vector_offset" => {
                indirect = Some(Indirection::Rows {
                    index: Box::new(parse_view(c, storages)?),
                })
            }
            "indirect" => {
                indirect = Some(Indirection::Columns {
                    index: Box::new(parse_view(c, storages)?),
                })
            }
            other => return Err(format!("unknown view parameter `{other}`")),
        }
    }
    c.expect(')')?;
    let dtype = dtype.ok_or_else(|| format!("unknown storage `{storage}` (give `dtype=`)"))?;
    Ok(View {
        storage,
        dtype,
        offset,
        dims,
        dyn_offset,
        indirect,
    })
}

pub(crate) fn parse_dtype(w: &str) -> Result<DType, String> {
    DType::ALL
        .into_iter()
        .find(|d| d.name() == w)
        .ok_or_else(|| format!("unknown dtype `{w}`"))
}

impl FieldValue for View {
    fn write_text(&self, storages: &Arena<Storage>, out: &mut String) {
        write_view(self, storages, out);
    }
    fn view(&self) -> Option<&View> {
        Some(self)
    }
    fn view_mut(&mut self) -> Option<&mut View> {
        Some(self)
    }
}

impl FieldParse for View {
    fn parse(c: &mut Cursor<'_>, storages: &Arena<Storage>) -> Result<Self, String> {
        parse_view(c, storages)
    }
}

// ---------------------------------------------------------------- scalars and numbers

fn parse_fp32(c: &mut Cursor<'_>) -> Result<Fp32, String> {
    let w = c.word()?;
    if w == "nan" {
        c.expect(':')?;
        let bits = c.word()?;
        return Fp32::parse(&format!("nan:{bits}")).ok_or_else(|| format!("bad NaN `nan:{bits}`"));
    }
    Fp32::parse(w).ok_or_else(|| format!("expected a float, found `{w}`"))
}

impl FieldValue for Fp32 {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        out.push_str(&self.to_text());
    }
}

impl FieldParse for Fp32 {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        parse_fp32(c)
    }
}

impl FieldValue for Scalar {
    fn write_text(&self, storages: &Arena<Storage>, out: &mut String) {
        match self {
            Scalar::Imm(v) => out.push_str(&v.to_text()),
            Scalar::Vector(view) => write_view(view, storages, out),
        }
    }
    fn view(&self) -> Option<&View> {
        match self {
            Scalar::Imm(_) => None,
            Scalar::Vector(v) => Some(v),
        }
    }
    fn view_mut(&mut self) -> Option<&mut View> {
        match self {
            Scalar::Imm(_) => None,
            Scalar::Vector(v) => Some(v),
        }
    }
}

impl FieldParse for Scalar {
    fn parse(c: &mut Cursor<'_>, storages: &Arena<Storage>) -> Result<Self, String> {
        match c.peek() {
            Some(Tok::Word(w)) if w.starts_with('t') => {
                Ok(Scalar::Vector(parse_view(c, storages)?))
            }
            _ => Ok(Scalar::Imm(parse_fp32(c)?)),
        }
    }
}

impl FieldValue for Imm {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        match self {
            Imm::Int(v) => out.push_str(&v.to_string()),
            Imm::Float(v) => out.push_str(&v.to_text()),
        }
    }
}

impl FieldParse for Imm {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        if let Some(Tok::Word(w)) = c.peek()
            && let Some(v) = parse_int(w)
        {
            c.next();
            return i64::try_from(v)
                .map(Imm::Int)
                .map_err(|_| format!("integer `{w}` out of range"));
        }
        Ok(Imm::Float(parse_fp32(c)?))
    }
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl FieldValue for $t {
            fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
                out.push_str(&self.to_string());
            }
        }
        impl FieldParse for $t {
            fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
                c.int()
            }
        }
    )*};
}

int_field!(u8, u32, i32);

impl FieldValue for bool {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
    fn is_omitted(&self) -> bool {
        !*self
    }
    fn flag(&self) -> Option<bool> {
        Some(*self)
    }
}

impl FieldParse for bool {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        match c.word()? {
            "true" => Ok(true),
            "false" => Ok(false),
            w => Err(format!("expected `true` or `false`, found `{w}`")),
        }
    }
    fn omitted() -> Option<Self> {
        Some(false)
    }
}

impl FieldValue for [u32; 2] {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        let _ = write!(out, "[{}, {}]", self[0], self[1]);
    }
}

impl FieldParse for [u32; 2] {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        c.expect('[')?;
        let a = c.int()?;
        c.expect(',')?;
        let b = c.int()?;
        c.expect(']')?;
        Ok([a, b])
    }
}

impl FieldValue for Vec<Dim> {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        out.push('[');
        for (k, d) in self.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "[{}, {}]", d.stride, d.count);
        }
        out.push(']');
    }
}

impl FieldParse for Vec<Dim> {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        c.list(true, |c| {
            let (stride, count) = c.stride_count()?;
            Ok(Dim::new(stride, count))
        })
    }
}

impl FieldValue for Vec<u8> {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        let items: Vec<String> = self.iter().map(u8::to_string).collect();
        let _ = write!(out, "[{}]", items.join(", "));
    }
}

impl FieldParse for Vec<u8> {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        c.list(true, Cursor::int)
    }
}

// ---------------------------------------------------------------- registers

impl FieldValue for RegHandle {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        out.push_str(&self.to_string());
    }
    fn registers(&self) -> Vec<RegHandle> {
        vec![*self]
    }
}

impl FieldParse for RegHandle {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        parse_reg_handle(c.word()?)
    }
}

impl FieldValue for RegOrImm {
    fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
        match self {
            RegOrImm::Reg(r) => out.push_str(&r.to_string()),
            RegOrImm::Imm(v) => out.push_str(&v.to_string()),
        }
    }
    fn registers(&self) -> Vec<RegHandle> {
        match self {
            RegOrImm::Reg(r) => vec![*r],
            RegOrImm::Imm(_) => Vec::new(),
        }
    }
}

impl FieldParse for RegOrImm {
    fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
        parse_reg_or_imm(c)
    }
}

/// Parses `r3` or an integer.
pub(crate) fn parse_reg_or_imm(c: &mut Cursor<'_>) -> Result<RegOrImm, String> {
    let w = c.word()?;
    if w.starts_with('r') {
        return parse_reg_handle(w).map(RegOrImm::Reg);
    }
    parse_int(w)
        .and_then(|v| i32::try_from(v).ok())
        .map(RegOrImm::Imm)
        .ok_or_else(|| format!("expected a register or a 32-bit integer, found `{w}`"))
}

// ---------------------------------------------------------------- enums and options

macro_rules! enum_field {
    ($($t:ty => $default:expr),* $(,)?) => {$(
        impl FieldValue for $t {
            fn write_text(&self, _: &Arena<Storage>, out: &mut String) {
                out.push_str(self.name());
            }
            fn is_omitted(&self) -> bool {
                let default: Option<$t> = $default;
                default == Some(*self)
            }
        }
        impl FieldParse for $t {
            fn parse(c: &mut Cursor<'_>, _: &Arena<Storage>) -> Result<Self, String> {
                let w = c.word()?;
                <$t>::from_name(w).ok_or_else(|| format!("unknown {} `{w}`", stringify!($t)))
            }
            fn omitted() -> Option<Self> {
                $default
            }
        }
    )*};
}

enum_field! {
    AluOp => None,
    ActFunc => None,
    ReduceCmd => Some(ReduceCmd::Idle),
    DgeMode => None,
    OobMode => Some(OobMode::Error),
    MatmulPerfMode => Some(MatmulPerfMode::None),
    RegAluOp => None,
}

impl<T: FieldValue> FieldValue for Option<T> {
    fn write_text(&self, storages: &Arena<Storage>, out: &mut String) {
        if let Some(v) = self {
            v.write_text(storages, out);
        }
    }
    fn is_omitted(&self) -> bool {
        self.is_none()
    }
    fn view(&self) -> Option<&View> {
        self.as_ref().and_then(FieldValue::view)
    }
    fn view_mut(&mut self) -> Option<&mut View> {
        self.as_mut().and_then(FieldValue::view_mut)
    }
    fn registers(&self) -> Vec<RegHandle> {
        self.as_ref().map(FieldValue::registers).unwrap_or_default()
    }
    fn flag(&self) -> Option<bool> {
        self.as_ref().and_then(FieldValue::flag)
    }
}

impl<T: FieldParse> FieldParse for Option<T> {
    fn parse(c: &mut Cursor<'_>, storages: &Arena<Storage>) -> Result<Self, String> {
        T::parse(c, storages).map(Some)
    }
    fn omitted() -> Option<Self> {
        Some(None)
    }
}
