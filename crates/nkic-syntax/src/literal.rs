//! Decoding of number and string literals.
//!
//! Integers become `u128` (Python's are unbounded; a literal that does not fit
//! in 128 bits is reported). Floats become `f64` by Rust's correctly rounded
//! parser. Strings are decoded with Python's escape rules:
//!
//! - `\\ \' \" \a \b \f \n \r \t \v`, octal `\ooo`, `\xhh`, and in text (not
//!   bytes) strings `\uXXXX` and `\UXXXXXXXX`;
//! - a backslash before a line break joins the lines;
//! - an unknown escape keeps its backslash (as Python does, which only warns);
//! - `\N{name}` is looked up in the table of `unicode_names.rs` (the names
//!   of the blocks a kernel author plausibly writes: ASCII, Latin-1, Greek,
//!   punctuation, arrows, math operators, box drawing and common symbols,
//!   case-insensitive as in Python); another name is reported (E0007).
//!
//! Adjacent literals are concatenated. If any of them is an f-string the
//! result is an [`ExprKind::FString`]; mixing bytes and text is an error.

use nkic_diag::{Diagnostic, FileId, Span};

use crate::ast::{Expr, ExprKind, FStringField, FStringPart};
use crate::fstring::{self, RawPart};
use crate::parser::Ctx;

/// Parses an integer literal token (`1_000`, `0x1F`, `0o17`, `0b101`).
pub(crate) fn parse_int(text: &str) -> Result<u128, String> {
    // Most literals are short plain decimals: no copy is needed for them.
    if text.len() < 39
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text.len() == 1 || !text.starts_with('0'))
    {
        return text
            .parse::<u128>()
            .map_err(|_| "integer literal is too large (it does not fit in 128 bits)".to_string());
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let (digits, radix) = match clean.get(..2) {
        Some("0x" | "0X") => (&clean[2..], 16),
        Some("0o" | "0O") => (&clean[2..], 8),
        Some("0b" | "0B") => (&clean[2..], 2),
        _ => {
            if clean.len() > 1 && clean.starts_with('0') && clean.bytes().any(|b| b != b'0') {
                return Err("leading zeros are not allowed in decimal integers".to_string());
            }
            (clean.as_str(), 10)
        }
    };
    u128::from_str_radix(digits, radix)
        .map_err(|_| "integer literal is too large (it does not fit in 128 bits)".to_string())
}

/// Parses a float literal token (`1.`, `.5`, `1e-3`, `1_0.2_5`).
pub(crate) fn parse_float(text: &str) -> f64 {
    if !text.contains('_') {
        return text.parse::<f64>().unwrap_or(f64::NAN);
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    // The lexer only produces well-formed literals; a failure is impossible,
    // and NaN keeps the tree total if that invariant is ever broken.
    clean.parse::<f64>().unwrap_or(f64::NAN)
}

/// The prefix flags and body of one string token.
struct StringToken<'a> {
    raw: bool,
    bytes: bool,
    fstring: bool,
    quote: u8,
    triple: bool,
    /// Offset of the body (after the opening quotes) in the source.
    body_start: usize,
    /// The body without the closing quotes.
    body: &'a str,
    /// The body including the closing quotes (for the f-string splitter).
    body_with_close: &'a str,
}

fn split_token(text: &str, start: usize) -> StringToken<'_> {
    let quote_pos = text.find(['\'', '"']).unwrap_or(0);
    let prefix = &text[..quote_pos];
    let quote = text.as_bytes().get(quote_pos).copied().unwrap_or(b'"');
    let rest = &text[quote_pos..];
    let triple = rest.len() >= 6 && rest.as_bytes()[1] == quote && rest.as_bytes()[2] == quote;
    let open = if triple { 3 } else { 1 };
    let body_from = quote_pos + open;
    let body_to = text.len().saturating_sub(open).max(body_from);
    StringToken {
        raw: prefix.contains(['r', 'R']),
        bytes: prefix.contains(['b', 'B']),
        fstring: prefix.contains(['f', 'F']),
        quote,
        triple,
        body_start: start + body_from,
        body: &text[body_from..body_to],
        body_with_close: &text[body_from..],
    }
}

/// Builds the expression for adjacent string tokens `(start, text, end)`.
pub(crate) fn strings(ctx: &mut Ctx<'_>, parts: &[(usize, &str, usize)]) -> Expr {
    let start = parts.first().map_or(0, |p| p.0);
    let end = parts.last().map_or(start, |p| p.2);
    let span = Span::from_range(start..end);
    // The common case, one plain text literal, needs no list of parts.
    if let [(s, text, _)] = parts {
        let t = split_token(text, *s);
        if !t.bytes && !t.fstring {
            let mut out = String::with_capacity(t.body.len());
            decode_into(ctx, t.body, t.body_start, t.raw, false, &mut out);
            return Expr::new(ExprKind::Str(out), span);
        }
    }
    let tokens: Vec<StringToken<'_>> = parts
        .iter()
        .map(|&(s, text, _)| split_token(text, s))
        .collect();
    let any_bytes = tokens.iter().any(|t| t.bytes);
    let all_bytes = tokens.iter().all(|t| t.bytes);
    if any_bytes && !all_bytes {
        ctx.diags.push(
            Diagnostic::error("E0008", "cannot mix bytes and text string literals")
                .with_primary(
                    FileId::default(),
                    span,
                    "these adjacent literals are concatenated",
                )
                .with_help("make every part a bytes literal (`b\"...\"`) or none"),
        );
        return Expr::error(span);
    }
    if all_bytes {
        let mut out = Vec::new();
        for t in &tokens {
            decode_into_bytes(ctx, t, &mut out);
        }
        return Expr::new(ExprKind::Bytes(out), span);
    }
    if tokens.iter().all(|t| !t.fstring) {
        let mut out = String::with_capacity(tokens.iter().map(|t| t.body.len()).sum());
        for t in &tokens {
            decode_into(ctx, t.body, t.body_start, t.raw, false, &mut out);
        }
        return Expr::new(ExprKind::Str(out), span);
    }
    let mut out: Vec<FStringPart> = Vec::new();
    for t in &tokens {
        if t.fstring {
            let raw_parts = fstring::split(t.body_with_close, t.quote, t.triple, t.raw);
            fstring_parts(ctx, t, &raw_parts, &mut out);
        } else {
            let mut text = String::new();
            decode_into(ctx, t.body, t.body_start, t.raw, false, &mut text);
            push_literal(&mut out, text);
        }
    }
    Expr::new(ExprKind::FString(out), span)
}

/// Appends literal text, merging with a preceding literal part.
fn push_literal(out: &mut Vec<FStringPart>, text: String) {
    if text.is_empty() {
        return;
    }
    if let Some(FStringPart::Literal(prev)) = out.last_mut() {
        prev.push_str(&text);
    } else {
        out.push(FStringPart::Literal(text));
    }
}

fn fstring_parts(
    ctx: &mut Ctx<'_>,
    t: &StringToken<'_>,
    raw_parts: &[RawPart],
    out: &mut Vec<FStringPart>,
) {
    let base = t.body_start;
    for part in raw_parts {
        match part {
            RawPart::Literal(range) => {
                let text = &t.body_with_close[range.clone()];
                let mut decoded = String::new();
                decode_into(ctx, text, base + range.start, t.raw, true, &mut decoded);
                push_literal(out, decoded);
            }
            RawPart::StrayCloseBrace(at) => {
                let at = base + at;
                ctx.diags.push(
                    Diagnostic::error("E0014", "single `}` is not allowed in an f-string")
                        .with_primary(
                            FileId::default(),
                            Span::from_range(at..at + 1),
                            "unmatched `}`",
                        )
                        .with_help("write `}}` for a literal brace"),
                );
            }
            RawPart::Field(field) => {
                let value =
                    ctx.parse_sub_expression(base + field.expr.start, base + field.expr.end);
                let debug_text = field
                    .debug
                    .as_ref()
                    .map(|r| t.body_with_close[r.clone()].to_string());
                let conversion = match &field.conversion {
                    None => None,
                    Some(r) => {
                        let text = &t.body_with_close[r.clone()];
                        match text {
                            "r" | "s" | "a" => text.chars().next(),
                            _ => {
                                let span = Span::from_range(base + r.start..base + r.end);
                                ctx.diags.push(
                                    Diagnostic::error(
                                        "E0014",
                                        format!("invalid conversion `!{text}` in an f-string"),
                                    )
                                    .with_primary(
                                        FileId::default(),
                                        span,
                                        "expected `r`, `s` or `a`",
                                    ),
                                );
                                None
                            }
                        }
                    }
                };
                let format_spec = field.spec.as_ref().map(|spec| {
                    let mut parts = Vec::new();
                    fstring_parts(ctx, t, spec, &mut parts);
                    parts
                });
                out.push(FStringPart::Field(Box::new(FStringField {
                    value,
                    debug_text,
                    conversion,
                    format_spec,
                    span: Span::from_range(base + field.span.start..base + field.span.end),
                })));
            }
        }
    }
}

/// Decodes escapes of a text literal body into `out`. `body_start` is the
/// source offset of `body` (for diagnostics); `in_fstring` also turns `{{`
/// and `}}` into single braces.
fn decode_into(
    ctx: &mut Ctx<'_>,
    body: &str,
    body_start: usize,
    raw: bool,
    in_fstring: bool,
    out: &mut String,
) {
    // Text without escapes, line ends or braces is its own value.
    if !body
        .bytes()
        .any(|b| b == b'\\' || b == b'\r' || (in_fstring && (b == b'{' || b == b'}')))
    {
        out.push_str(body);
        return;
    }
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' | '}' if in_fstring => {
                out.push(c);
                if chars.peek().map(|&(_, n)| n) == Some(c) {
                    chars.next();
                }
            }
            '\r' => {
                // Line ends inside triple-quoted strings are normalised to `\n`.
                out.push('\n');
                if chars.peek().map(|&(_, n)| n) == Some('\n') {
                    chars.next();
                }
            }
            '\\' if raw => {
                out.push('\\');
                // In a raw literal a backslash still keeps the next character
                // (a quote) from ending the string, and both are kept.
                if let Some(&(_, n)) = chars.peek()
                    && n != '{'
                    && n != '}'
                {
                    out.push(n);
                    chars.next();
                }
            }
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    out.push('\\');
                    break;
                };
                match e {
                    '\n' => {}
                    '\r' => {
                        if chars.peek().map(|&(_, n)| n) == Some('\n') {
                            chars.next();
                        }
                    }
                    '\\' => out.push('\\'),
                    '\'' => out.push('\''),
                    '"' => out.push('"'),
                    'a' => out.push('\x07'),
                    'b' => out.push('\x08'),
                    'f' => out.push('\x0C'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'v' => out.push('\x0B'),
                    '0'..='7' => {
                        let mut value = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match chars.peek() {
                                Some(&(_, d @ '0'..='7')) => {
                                    value = value * 8 + d.to_digit(8).unwrap_or(0);
                                    chars.next();
                                }
                                _ => break,
                            }
                        }
                        out.push(char::from_u32(value).unwrap_or('\u{FFFD}'));
                    }
                    'x' | 'u' | 'U' => {
                        let n = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut value = 0u32;
                        let mut ok = true;
                        for _ in 0..n {
                            match chars.peek().and_then(|&(_, d)| d.to_digit(16)) {
                                Some(d) => {
                                    value = value.wrapping_mul(16).wrapping_add(d);
                                    chars.next();
                                }
                                None => {
                                    ok = false;
                                    break;
                                }
                            }
                        }
                        match char::from_u32(value).filter(|_| ok) {
                            Some(ch) => out.push(ch),
                            None => {
                                let at = body_start + i;
                                let end = chars
                                    .peek()
                                    .map_or(body_start + body.len(), |&(j, _)| body_start + j);
                                ctx.diags.push(
                                    Diagnostic::error("E0007", format!("invalid `\\{e}` escape"))
                                        .with_primary(FileId::default(), Span::from_range(at..end), format!("`\\{e}` needs {n} hexadecimal digits forming a valid character")),
                                );
                            }
                        }
                    }
                    'N' if chars.peek().map(|&(_, n)| n) == Some('{') => {
                        chars.next();
                        let name_start = chars.peek().map_or(body.len(), |&(j, _)| j);
                        let mut name_end = None;
                        for (j, ch) in chars.by_ref() {
                            if ch == '}' {
                                name_end = Some(j);
                                break;
                            }
                        }
                        let escape_end = name_end.map_or(body.len(), |j| j + 1);
                        let name = &body[name_start..name_end.unwrap_or(body.len())];
                        match name_end.and(crate::unicode_names::lookup(name)) {
                            Some(ch) => out.push(ch),
                            None => {
                                let at = body_start + i;
                                let span = Span::from_range(at..body_start + escape_end);
                                let diag = if name_end.is_none() {
                                    Diagnostic::error("E0007", "unterminated `\\N{...}` escape")
                                        .with_primary(
                                            FileId::default(),
                                            span,
                                            "expected `}` after the character name",
                                        )
                                } else {
                                    Diagnostic::error(
                                        "E0007",
                                        format!("unknown character name `{}` in `\\N{{...}}`", name.trim()),
                                    )
                                    .with_primary(FileId::default(), span, "no character has this name")
                                    .with_help(
                                        "nkic knows the Unicode names of ASCII, Latin-1, Greek, punctuation, arrows, \
                                         math operators and common symbols; write the character itself \
                                         or use `\\u` with its code point",
                                    )
                                };
                                ctx.diags.push(diag);
                                out.push_str(&body[i..escape_end]);
                            }
                        }
                    }
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            c => out.push(c),
        }
    }
}

/// Decodes a bytes literal body into `out`.
fn decode_into_bytes(ctx: &mut Ctx<'_>, t: &StringToken<'_>, out: &mut Vec<u8>) {
    let body = t.body;
    let mut reported_non_ascii = false;
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b >= 0x80 {
            if !reported_non_ascii {
                reported_non_ascii = true;
                let at = t.body_start + i;
                let len = body
                    .get(i..)
                    .and_then(|rest| rest.chars().next())
                    .map_or(1, char::len_utf8);
                ctx.diags.push(
                    Diagnostic::error("E0007", "bytes literals can contain only ASCII characters")
                        .with_primary(
                            FileId::default(),
                            Span::from_range(at..at + len),
                            "non-ASCII character",
                        )
                        .with_help("write the byte values with `\\x` escapes"),
                );
            }
            i += 1;
            continue;
        }
        if b == b'\r' {
            out.push(b'\n');
            i += if bytes.get(i + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
            continue;
        }
        if b != b'\\' || i + 1 >= bytes.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let e = bytes[i + 1];
        if e >= 0x80 {
            // A backslash before a non-ASCII character: keep the backslash
            // and let the next round report the character, so the scan never
            // stops inside a multi-byte character.
            out.push(b'\\');
            i += 1;
            continue;
        }
        if t.raw {
            out.push(b'\\');
            out.push(e);
            i += 2;
            continue;
        }
        i += 2;
        match e {
            b'\n' => {}
            b'\r' => {
                if bytes.get(i) == Some(&b'\n') {
                    i += 1;
                }
            }
            b'\\' | b'\'' | b'"' => out.push(e),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0C),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0B),
            b'0'..=b'7' => {
                let mut value = u32::from(e - b'0');
                for _ in 0..2 {
                    match bytes.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push((value & 0xFF) as u8);
            }
            b'x' => {
                let hex = body
                    .get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => {
                        let at = t.body_start + i - 2;
                        ctx.diags.push(
                            Diagnostic::error("E0007", "invalid `\\x` escape").with_primary(
                                FileId::default(),
                                Span::from_range(at..at + 2),
                                "`\\x` needs 2 hexadecimal digits",
                            ),
                        );
                    }
                }
            }
            other => {
                out.push(b'\\');
                if other < 0x80 {
                    out.push(other);
                } else {
                    // Leave the non-ASCII byte to the loop, which reports it.
                    i -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_int("1_000"), Ok(1000));
        assert_eq!(parse_int("0x_fF"), Ok(255));
        assert_eq!(parse_int("0o17"), Ok(15));
        assert_eq!(parse_int("0B101"), Ok(5));
        assert_eq!(parse_int("000"), Ok(0));
        assert!(parse_int("0123").is_err());
        assert_eq!(
            parse_int("340282366920938463463374607431768211455"),
            Ok(u128::MAX)
        );
        assert!(parse_int("340282366920938463463374607431768211456").is_err());
    }

    #[test]
    fn floats() {
        assert_eq!(parse_float("1."), 1.0);
        assert_eq!(parse_float(".5"), 0.5);
        assert_eq!(parse_float("1_0.2_5e1_0"), 10.25e10);
    }
}
