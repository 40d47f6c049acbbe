//! Text of values: `str()`, `repr()` and f-string format specs.
//!
//! Floats print as Python prints them (shortest round-trip text, `1.0`,
//! `1e-06`, `inf`). Format specs follow Python's mini-language
//! `[[fill]align][sign][#][0][width][,|_][.precision][type]` for ints,
//! floats and strings; anything else is formatted through `str()` with only
//! fill, alignment and width.

use crate::value::{ClassKind, IntOrReg, Value};

/// The value's type with an article: `an int`, `a tensor`.
pub fn a_type(v: &Value) -> String {
    let t = v.type_name();
    let article = if t.starts_with(['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {t}")
}

/// The message of a value of the wrong type: `{wanted}, found {a_type(v)}`
/// ("`join` needs strings, found an int").
pub fn found(wanted: impl std::fmt::Display, v: &Value) -> String {
    format!("{wanted}, found {}", a_type(v))
}

/// `str(v)`.
pub fn str(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        _ => repr(v),
    }
}

/// `repr(v)` cut to 60 characters, for notes and hover texts.
pub fn short_repr(v: &Value) -> String {
    let text = repr(v);
    if text.chars().count() <= 60 {
        return text;
    }
    let cut: String = text.chars().take(57).collect();
    format!("{cut}...")
}

/// The longest text [`repr`] writes: containers shared many times over can
/// stand for more text than memory holds (`a = [a, a]` twenty times), so a
/// longer text is cut and ends with `...`.
pub const MAX_REPR_BYTES: usize = 4 << 20;

/// `repr(v)`, cut after [`MAX_REPR_BYTES`].
pub fn repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, v, 0);
    out
}

fn write_repr(out: &mut String, v: &Value, depth: usize) {
    if depth > 32 || out.len() > MAX_REPR_BYTES {
        if !out.ends_with("...") {
            out.push_str("...");
        }
        return;
    }
    let seq = |out: &mut String, items: &[Value], open: &str, close: &str, tuple: bool| {
        out.push_str(open);
        for (i, it) in items.iter().enumerate() {
            if out.len() > MAX_REPR_BYTES {
                break;
            }
            if i > 0 {
                out.push_str(", ");
            }
            write_repr(out, it, depth + 1);
        }
        if tuple && items.len() == 1 {
            out.push(',');
        }
        out.push_str(close);
    };
    match v {
        Value::None => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&float_repr(*f)),
        Value::Str(s) => out.push_str(&str_repr(s)),
        Value::Tuple(items) => seq(out, items, "(", ")", true),
        Value::List(items) => seq(out, &items.borrow(), "[", "]", false),
        Value::Dict(d) => {
            out.push('{');
            for (i, (k, val)) in d.borrow().entries.iter().enumerate() {
                if out.len() > MAX_REPR_BYTES {
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, k, depth + 1);
                out.push_str(": ");
                write_repr(out, val, depth + 1);
            }
            out.push('}');
        }
        Value::Slice(s) => {
            out.push_str("slice(");
            write_repr(out, &s.lower, depth + 1);
            out.push_str(", ");
            write_repr(out, &s.upper, depth + 1);
            out.push_str(", ");
            write_repr(out, &s.step, depth + 1);
            out.push(')');
        }
        Value::Ellipsis => out.push_str("Ellipsis"),
        Value::Range(r) => {
            out.push_str(&format!("{}({}, {}", r.kind.name(), r.start, r.stop));
            if r.step != 1 {
                out.push_str(&format!(", {}", r.step));
            }
            out.push(')');
        }
        Value::DynRange(r) => out.push_str(&format!(
            "dynamic_range({}, {}, {})",
            int_or_reg(&r.start),
            int_or_reg(&r.stop),
            r.step
        )),
        Value::Function(f) => out.push_str(&format!("<function {}>", f.name)),
        Value::BoundMethod(m) => {
            let name = match &m.func {
                Value::Function(f) => f.name.to_string(),
                Value::Api(f) => crate::api::name(*f).to_owned(),
                Value::Builtin(b) => b.name().to_owned(),
                other => other.type_name(),
            };
            out.push_str(&format!(
                "<bound method {name} of {}>",
                m.receiver.type_name()
            ));
        }
        Value::Builtin(crate::Builtin::NotImplemented) => out.push_str("NotImplemented"),
        Value::Builtin(b) => {
            if b.is_type() {
                out.push_str(&format!("<class '{}'>", b.name()));
            } else {
                out.push_str(&format!("<built-in function {}>", b.name()));
            }
        }
        Value::Class(c) => out.push_str(&format!("<class '{}'>", c.name)),
        Value::Object(o) => {
            if o.class.kind != ClassKind::Plain {
                let name = o.get("name").map(|n| str(&n)).unwrap_or_default();
                out.push_str(&format!("{}.{name}", o.class.name));
                return;
            }
            out.push_str(&o.class.name);
            out.push('(');
            for (i, (k, val)) in o.fields.borrow().iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push('=');
                write_repr(out, val, depth + 1);
            }
            out.push(')');
        }
        Value::Module(m) => out.push_str(&format!("<module '{}'>", m.name)),
        Value::Namespace(ns) => out.push_str(&format!("<module '{}'>", ns.name())),
        Value::Api(f) => out.push_str(&format!("<function {}>", crate::api::name(*f))),
        Value::Intrinsic(i) => out.push_str(&format!("<function {i:?}>")),
        Value::DType(d) => out.push_str(d.name()),
        Value::Buffer(b) => out.push_str(b.name()),
        Value::Tensor(t) => {
            let dims: Vec<String> = t.shape.iter().map(u64::to_string).collect();
            out.push_str(&format!(
                "tensor(shape=({}{}), dtype={}, buffer={})",
                dims.join(", "),
                if dims.len() == 1 { "," } else { "" },
                t.dtype(),
                t.buffer
            ));
        }
        Value::Register(r) => out.push_str(&reg_text(r)),
        Value::Ds(d) => out.push_str(&format!("ds({}, {})", int_or_reg(&d.start), d.size)),
        Value::Index(e) => {
            let dims: Vec<String> = e.shape().iter().map(u64::to_string).collect();
            out.push_str(&format!(
                "index_expr({}, shape=({}))",
                affine_text(e),
                dims.join(", ")
            ));
        }
        Value::IndexPred(p) => {
            let clauses: Vec<String> = p
                .clauses
                .iter()
                .map(|(e, op)| format!("{} {op} 0", affine_text(e)))
                .collect();
            out.push_str(&format!("index_mask({})", clauses.join(" & ")));
        }
        Value::Ext(e) => out.push_str(&e.display()),
        Value::Super(s) => out.push_str(&format!("<super: {}>", s.class.name)),
    }
}

/// `2*i1 - i0 + 1`: an affine index expression, `iK` the index along axis K.
fn affine_text(e: &crate::value::IndexExpr) -> String {
    let mut out = String::new();
    for t in &e.terms {
        let (sign, mag) = if t.coef < 0 {
            ("-", t.coef.unsigned_abs())
        } else {
            ("+", t.coef.unsigned_abs())
        };
        if out.is_empty() {
            if sign == "-" {
                out.push('-');
            }
        } else {
            out.push_str(&format!(" {sign} "));
        }
        if mag != 1 {
            out.push_str(&format!("{mag}*"));
        }
        out.push_str(&format!("i{}", t.axis));
    }
    if e.constant != 0 || out.is_empty() {
        if out.is_empty() {
            out.push_str(&e.constant.to_string());
        } else {
            let sign = if e.constant < 0 { '-' } else { '+' };
            out.push_str(&format!(" {sign} {}", e.constant.unsigned_abs()));
        }
    }
    out
}

fn int_or_reg(v: &IntOrReg) -> String {
    match v {
        IntOrReg::Int(i) => i.to_string(),
        IntOrReg::Reg(r) => reg_text(r),
    }
}

fn reg_text(r: &crate::value::RegValue) -> String {
    let mut s = format!("register(r{}", r.reg.index());
    if r.scale != 1 {
        s.push_str(&format!(" * {}", r.scale));
    }
    if r.offset != 0 {
        s.push_str(&format!(" + {}", r.offset));
    }
    s.push(')');
    s
}

/// Python's `repr` of a string: single quotes unless the text has them.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr` of a float.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Python's `repr` is the shortest round-tripping digits, positional
    // when the decimal exponent is in -4..16, scientific otherwise.
    let s = format!("{f:e}");
    let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    if (-4..16).contains(&e) {
        let t = format!("{f}");
        if t.contains('.') { t } else { format!("{t}.0") }
    } else {
        let sign = if e < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", e.abs())
    }
}

/// A parsed format spec.
#[derive(Clone, Debug, Default, PartialEq)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    alternate: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    ty: Option<char>,
}

fn parse_spec(spec: &str) -> Option<Spec> {
    let chars: Vec<char> = spec.chars().collect();
    let mut i = 0;
    let mut s = Spec::default();
    let is_align = |c: char| matches!(c, '<' | '>' | '^' | '=');
    if chars.len() >= 2 && is_align(chars[1]) {
        s.fill = Some(chars[0]);
        s.align = Some(chars[1]);
        i = 2;
    } else if !chars.is_empty() && is_align(chars[0]) {
        s.align = Some(chars[0]);
        i = 1;
    }
    if i < chars.len() && matches!(chars[i], '+' | '-' | ' ') {
        s.sign = Some(chars[i]);
        i += 1;
    }
    if i < chars.len() && chars[i] == '#' {
        s.alternate = true;
        i += 1;
    }
    if i < chars.len() && chars[i] == '0' {
        s.zero = true;
        i += 1;
    }
    let start = i;
    while i < chars.len() && chars[i].is_ascii_digit() {
        i += 1;
    }
    if i > start {
        s.width = chars[start..i].iter().collect::<String>().parse().ok()?;
    }
    if i < chars.len() && matches!(chars[i], ',' | '_') {
        s.grouping = Some(chars[i]);
        i += 1;
    }
    if i < chars.len() && chars[i] == '.' {
        i += 1;
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        s.precision = Some(chars[start..i].iter().collect::<String>().parse().ok()?);
    }
    if i < chars.len() {
        s.ty = Some(chars[i]);
        i += 1;
    }
    // Widths and precisions beyond this make strings no kernel needs.
    if s.width > 1000 || s.precision.is_some_and(|p| p > 1000) {
        return None;
    }
    (i == chars.len()).then_some(s)
}

/// Formats `v` with `spec` (the text after `:` in an f-string field), or
/// explains why the spec does not apply.
pub fn format_value(v: &Value, spec: &str) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(str(v));
    }
    let s = parse_spec(spec).ok_or_else(|| format!("invalid format spec `{spec}`"))?;
    let (body, numeric) = match (v, s.ty) {
        (Value::Int(_) | Value::Bool(_), None | Some('d' | 'n')) => {
            let i = v.as_int().unwrap_or(0);
            (group(&i.abs().to_string(), s.grouping), Some(i < 0))
        }
        (Value::Int(_) | Value::Bool(_), Some(t @ ('x' | 'X' | 'o' | 'b'))) => {
            let i = v.as_int().unwrap_or(0);
            let digits = match t {
                'x' => format!("{:x}", i.unsigned_abs()),
                'X' => format!("{:X}", i.unsigned_abs()),
                'o' => format!("{:o}", i.unsigned_abs()),
                _ => format!("{:b}", i.unsigned_abs()),
            };
            let prefix = if s.alternate {
                match t {
                    'x' => "0x",
                    'X' => "0X",
                    'o' => "0o",
                    _ => "0b",
                }
            } else {
                ""
            };
            (format!("{prefix}{digits}"), Some(i < 0))
        }
        (
            Value::Int(_) | Value::Bool(_) | Value::Float(_),
            Some('f' | 'F' | 'e' | 'E' | 'g' | 'G' | '%'),
        )
        | (Value::Float(_), None) => {
            let f = v.as_float().unwrap_or(0.0);
            let neg = f.is_sign_negative() && f != 0.0 || (f == 0.0 && f.is_sign_negative());
            let a = f.abs();
            let text = match s.ty {
                Some('f' | 'F') => {
                    group_float(&format!("{:.*}", s.precision.unwrap_or(6), a), s.grouping)
                }
                Some('%') => format!("{:.*}%", s.precision.unwrap_or(6), a * 100.0),
                Some(t @ ('e' | 'E')) => {
                    let t2 = sci(a, s.precision.unwrap_or(6));
                    if t == 'E' { t2.to_uppercase() } else { t2 }
                }
                Some(t @ ('g' | 'G')) => {
                    let t2 = general(a, s.precision.unwrap_or(6), s.alternate);
                    if t == 'G' { t2.to_uppercase() } else { t2 }
                }
                _ => match s.precision {
                    Some(p) => general(a, p, s.alternate),
                    None => float_repr(a),
                },
            };
            (text, Some(neg))
        }
        (Value::Str(_), None | Some('s')) => {
            let mut t = str(v);
            if let Some(p) = s.precision {
                t = t.chars().take(p).collect();
            }
            (t, None)
        }
        (_, None) if s.sign.is_none() && s.precision.is_none() && !s.zero => (str(v), None),
        _ => {
            return Err(format!(
                "format spec `{spec}` does not apply to {}",
                crate::format::a_type(v)
            ));
        }
    };
    let sign = match numeric {
        Some(true) => "-",
        Some(false) => match s.sign {
            Some('+') => "+",
            Some(' ') => " ",
            _ => "",
        },
        None => "",
    };
    let len = sign.chars().count() + body.chars().count();
    let pad = s.width.saturating_sub(len);
    let default_align = if numeric.is_some() { '>' } else { '<' };
    let (fill, align) = if s.zero && s.align.is_none() && numeric.is_some() {
        ('0', '=')
    } else {
        (s.fill.unwrap_or(' '), s.align.unwrap_or(default_align))
    };
    let fills = |n: usize| std::iter::repeat_n(fill, n).collect::<String>();
    Ok(match align {
        '<' => format!("{sign}{body}{}", fills(pad)),
        '^' => format!("{}{sign}{body}{}", fills(pad / 2), fills(pad - pad / 2)),
        '=' => format!("{sign}{}{body}", fills(pad)),
        _ => format!("{}{sign}{body}", fills(pad)),
    })
}

fn group(digits: &str, sep: Option<char>) -> String {
    let Some(sep) = sep else {
        return digits.to_owned();
    };
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

fn group_float(text: &str, sep: Option<char>) -> String {
    match text.split_once('.') {
        Some((int, frac)) => format!("{}.{frac}", group(int, sep)),
        None => group(text, sep),
    }
}

/// `{:.{p}e}` with Python's two-digit signed exponent.
fn sci(a: f64, p: usize) -> String {
    let s = format!("{a:.p$e}");
    let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", e.abs())
}

/// Python's `g` format.
fn general(a: f64, p: usize, alternate: bool) -> String {
    if !a.is_finite() {
        return float_repr(a);
    }
    let p = p.max(1);
    let exp = if a == 0.0 {
        0
    } else {
        let s = format!("{a:.*e}", p - 1);
        s.split_once('e')
            .and_then(|(_, e)| e.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let mut text = if exp >= -4 && exp < p as i32 {
        format!("{a:.*}", (p as i32 - 1 - exp).max(0) as usize)
    } else {
        sci(a, p - 1)
    };
    if !alternate {
        // Strip trailing zeros of the fraction.
        let (mant, rest) = match text.find('e') {
            Some(i) => (text[..i].to_owned(), text[i..].to_owned()),
            None => (text.clone(), String::new()),
        };
        let mant = if mant.contains('.') {
            mant.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            mant
        };
        text = format!("{mant}{rest}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_reprs_match_python() {
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(1e-6), "1e-06");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(123456.5), "123456.5");
        assert_eq!(float_repr(-0.0), "-0.0");
        assert_eq!(float_repr(f64::INFINITY), "inf");
        assert_eq!(float_repr(1e-4), "0.0001");
        assert_eq!(float_repr(6.103515625e-05), "6.103515625e-05");
        assert_eq!(float_repr(9.5e-5), "9.5e-05");
        assert_eq!(float_repr(1e15), "1000000000000000.0");
        assert_eq!(float_repr(0.0), "0.0");
        assert_eq!(float_repr(2.5e-320), "2.5e-320");
    }

    #[test]
    fn format_specs() {
        let i = Value::Int(42);
        assert_eq!(format_value(&i, "5d").unwrap(), "   42");
        assert_eq!(format_value(&i, "<5").unwrap(), "42   ");
        assert_eq!(format_value(&i, "05").unwrap(), "00042");
        assert_eq!(format_value(&i, "#x").unwrap(), "0x2a");
        assert_eq!(format_value(&i, "+").unwrap(), "+42");
        assert_eq!(
            format_value(&Value::Int(1234567), ",").unwrap(),
            "1,234,567"
        );
        let f = Value::Float(1.23456);
        assert_eq!(format_value(&f, ".2f").unwrap(), "1.23");
        assert_eq!(format_value(&f, "8.3f").unwrap(), "   1.235");
        assert_eq!(format_value(&f, ".3e").unwrap(), "1.235e+00");
        assert_eq!(format_value(&f, "g").unwrap(), "1.23456");
        assert_eq!(format_value(&Value::Float(1e-7), "g").unwrap(), "1e-07");
        assert_eq!(format_value(&Value::Float(0.25), ".0%").unwrap(), "25%");
        assert_eq!(format_value(&Value::Float(-2.5), ".1f").unwrap(), "-2.5");
        assert_eq!(format_value(&Value::str("ab"), "^6").unwrap(), "  ab  ");
        assert_eq!(format_value(&Value::str("ab"), "*>4").unwrap(), "**ab");
        assert!(format_value(&Value::str("ab"), "d").is_err());
        assert!(format_value(&i, "q!").is_err());
    }

    #[test]
    fn reprs() {
        assert_eq!(repr(&Value::str("it's")), "\"it's\"");
        assert_eq!(repr(&Value::tuple(vec![Value::Int(1)])), "(1,)");
        assert_eq!(
            repr(&Value::list(vec![
                Value::None,
                Value::Bool(true),
                Value::Float(2.0)
            ])),
            "[None, True, 2.0]"
        );
    }
}
