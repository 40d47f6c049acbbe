//! String-literal scanning: where a literal ends, and the structure of an
//! f-string (literal pieces and replacement fields).
//!
//! The raw lexer calls [`scan_body_detailed`] to find the closing quote of every
//! string. For f-strings the scan is brace- and quote-aware: a replacement
//! field may contain brackets, nested strings (including nested f-strings and,
//! as in Python 3.12, strings using the same quote as the outer literal), a
//! `=` debug marker, a `!r`/`!s`/`!a` conversion and a format spec that may
//! itself contain fields. [`split`] runs the same scan and returns the pieces
//! as byte ranges, which the parser glue decodes and parses.
//!
//! Inside a single-quoted literal a line break ends the literal (unterminated
//! string), also inside a replacement field; triple-quoted literals may span
//! lines anywhere.

use std::ops::Range;

/// One piece of an f-string body, with byte ranges relative to the start of
/// the body (the first byte after the opening quotes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RawPart {
    /// Literal text, still containing escapes and doubled braces.
    Literal(Range<usize>),
    /// A replacement field `{...}`.
    Field(RawField),
    /// A lone `}` in literal text, which Python rejects.
    StrayCloseBrace(usize),
}

/// A replacement field: `{expr[=][!c][:spec]}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawField {
    /// The whole field including braces.
    pub span: Range<usize>,
    /// The expression text.
    pub expr: Range<usize>,
    /// The expression text plus the `=` and surrounding whitespace, when the
    /// field is a self-documenting `{x=}` field.
    pub debug: Option<Range<usize>>,
    /// The conversion name after `!` (normally one letter).
    pub conversion: Option<Range<usize>>,
    /// The format spec after `:`, itself a sequence of parts.
    pub spec: Option<Vec<RawPart>>,
}

/// Scans a string body after its opening quote(s).
///
/// Returns `Ok(len)` with the length of the body *including* the closing
/// quote(s), or `Err(len)` with the length to skip when the literal is
/// unterminated (up to the end of the line for single-quoted literals, to the
/// end of the input for triple-quoted ones).
#[cfg(test)]
pub(crate) fn scan_body(text: &str, quote: u8, triple: bool, is_f: bool) -> Result<usize, usize> {
    scan_body_detailed(text, quote, triple, is_f).map_err(|(len, _)| len)
}

/// Like [`scan_body`], and on error also says where a replacement field was
/// left unclosed, when that is the likely mistake: the literal's own closing
/// quote follows a complete operand inside a field (`f"{a[0]x{b}"`), which
/// can only be read as a missing `}`. The offset is that of the field's `{`.
pub(crate) fn scan_body_detailed(
    text: &str,
    quote: u8,
    triple: bool,
    is_f: bool,
) -> Result<usize, (usize, Option<usize>)> {
    let mut scanner = Scanner::new(text.as_bytes(), quote, triple, true, true);
    let res = scanner.body(is_f);
    res.map_err(|len| (len, scanner.unclosed_field))
}

/// Splits an f-string body (the text between the quotes, without the closing
/// quotes) into parts. `raw` is true for `rf`/`fr` literals.
pub(crate) fn split(body_with_close: &str, quote: u8, triple: bool, raw: bool) -> Vec<RawPart> {
    let mut scanner = Scanner::new(body_with_close.as_bytes(), quote, triple, raw, true);
    let mut parts = Vec::new();
    // The lexer has already checked that the literal is terminated, so the
    // result only matters for error-recovery text (never for a panic).
    let _ = scanner.literal(Some(&mut parts), false);
    parts
}

/// Byte-level scanner state; `pos` indexes `bytes`.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    quote: u8,
    triple: bool,
    /// Whether backslashes are literal (raw strings). Escapes still protect a
    /// following quote from ending the literal either way.
    raw: bool,
    /// Whether this scans a literal of the source itself (not a string nested
    /// in a replacement field).
    outer: bool,
    /// Set when the literal ended inside a field that was never closed: the
    /// offset of the field's `{`.
    unclosed_field: Option<usize>,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `bytes`, a body closed by `quote` (three of
    /// them when `triple`).
    fn new(bytes: &'a [u8], quote: u8, triple: bool, raw: bool, outer: bool) -> Self {
        Scanner {
            bytes,
            pos: 0,
            quote,
            triple,
            raw,
            outer,
            unclosed_field: None,
        }
    }

    /// Scans the whole body: an f-string's (with its fields) when `is_f`,
    /// else a plain string's. Ok: the body's length with the closing
    /// quotes.
    fn body(&mut self, is_f: bool) -> Result<usize, usize> {
        if is_f {
            self.literal(None, false)
        } else {
            self.plain()
        }
    }

    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos + offset).copied()
    }

    /// Whether the closing quote(s) start at `pos`.
    fn at_close(&self) -> bool {
        if self.peek(0) != Some(self.quote) {
            return false;
        }
        !self.triple || (self.peek(1) == Some(self.quote) && self.peek(2) == Some(self.quote))
    }

    fn close_len(&self) -> usize {
        if self.triple { 3 } else { 1 }
    }

    /// Skips a backslash and the character it escapes.
    fn skip_escape(&mut self) {
        self.pos += 1;
        match self.peek(0) {
            Some(b'\r') if self.peek(1) == Some(b'\n') => self.pos += 2,
            Some(c) => self.pos += utf8_len(c),
            None => {}
        }
    }

    /// A non-f string: escapes and quotes only.
    fn plain(&mut self) -> Result<usize, usize> {
        loop {
            match self.peek(0) {
                None => return Err(self.pos),
                Some(b'\\') => self.skip_escape(),
                Some(b'\n' | b'\r') if !self.triple => return Err(self.pos),
                Some(c) if c == self.quote => {
                    if self.at_close() {
                        return Ok(self.pos + self.close_len());
                    }
                    self.pos += 1;
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// Literal text of an f-string (or of a format spec when `in_spec`).
    ///
    /// At the top level this returns at the closing quote (consumed); inside a
    /// spec it returns at the `}` that closes the field (not consumed).
    fn literal(
        &mut self,
        mut parts: Option<&mut Vec<RawPart>>,
        in_spec: bool,
    ) -> Result<usize, usize> {
        let mut lit_start = self.pos;
        let flush = |parts: &mut Option<&mut Vec<RawPart>>, start: usize, end: usize| {
            if let Some(parts) = parts.as_deref_mut()
                && end > start
            {
                parts.push(RawPart::Literal(start..end));
            }
        };
        loop {
            match self.peek(0) {
                None => return Err(self.pos),
                Some(b'\\') => {
                    // `\N{...}` is a named escape whose braces are not a field.
                    if !self.raw && self.peek(1) == Some(b'N') && self.peek(2) == Some(b'{') {
                        self.pos += 3;
                        while let Some(c) = self.peek(0) {
                            self.pos += 1;
                            if c == b'}' {
                                break;
                            }
                        }
                    } else if matches!(self.peek(1), Some(b'{' | b'}')) {
                        self.pos += 1;
                    } else {
                        self.skip_escape();
                    }
                }
                Some(b'\n' | b'\r') if !self.triple => return Err(self.pos),
                Some(c) if c == self.quote && self.at_close() => {
                    flush(&mut parts, lit_start, self.pos);
                    if in_spec {
                        // The field was not closed before the literal ended.
                        return Err(self.pos);
                    }
                    return Ok(self.pos + self.close_len());
                }
                Some(b'{') if self.peek(1) == Some(b'{') => self.pos += 2,
                Some(b'{') => {
                    flush(&mut parts, lit_start, self.pos);
                    let field = self.field(parts.is_some())?;
                    if let Some(parts) = parts.as_deref_mut() {
                        parts.push(RawPart::Field(field));
                    }
                    lit_start = self.pos;
                }
                Some(b'}') if in_spec => {
                    flush(&mut parts, lit_start, self.pos);
                    return Ok(self.pos);
                }
                Some(b'}') if self.peek(1) == Some(b'}') => self.pos += 2,
                Some(b'}') => {
                    flush(&mut parts, lit_start, self.pos);
                    if let Some(parts) = parts.as_deref_mut() {
                        parts.push(RawPart::StrayCloseBrace(self.pos));
                    }
                    self.pos += 1;
                    lit_start = self.pos;
                }
                Some(c) => self.pos += utf8_len(c),
            }
        }
    }

    /// A replacement field starting at the `{` under `pos`; on return `pos`
    /// is just past the closing `}`.
    fn field(&mut self, want_parts: bool) -> Result<RawField, usize> {
        let start = self.pos;
        self.pos += 1;
        let expr_start = self.pos;
        let mut depth = 0usize;
        let mut expr_end = None;
        let mut debug = None;
        // Scan the expression up to `=`, `!`, `:` or `}` at bracket depth 0.
        loop {
            let Some(c) = self.peek(0) else {
                return Err(self.pos);
            };
            match c {
                b'\n' | b'\r' if !self.triple => return Err(self.pos),
                b'\'' | b'"'
                    if c == self.quote
                        && self.outer
                        && !self.triple
                        && depth == 0
                        && ends_operand(&self.bytes[expr_start..self.pos]) =>
                {
                    // The literal's own quote right after an operand: the
                    // field was never closed (see `scan_body_detailed`).
                    self.unclosed_field = Some(start);
                    return Err(self.pos + 1);
                }
                b'\'' | b'"' => {
                    let (is_f, raw) = prefix_flags(&self.bytes[expr_start..self.pos]);
                    let rest = &self.bytes[self.pos + 1..];
                    let triple = rest.len() >= 2 && rest[0] == c && rest[1] == c;
                    let body_start = self.pos + 1 + if triple { 2 } else { 0 };
                    let mut inner = Scanner::new(&self.bytes[body_start..], c, triple, raw, false);
                    match inner.body(is_f) {
                        Ok(len) => self.pos = body_start + len,
                        Err(len) => return Err(body_start + len),
                    }
                }
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    self.pos += 1;
                }
                b')' | b']' => {
                    depth = depth.saturating_sub(1);
                    self.pos += 1;
                }
                b'}' if depth > 0 => {
                    depth -= 1;
                    self.pos += 1;
                }
                b'}' => {
                    expr_end.get_or_insert(self.pos);
                    break;
                }
                b'=' if depth == 0
                    && self.peek(1) != Some(b'=')
                    && !matches!(
                        self.pos.checked_sub(1).map(|p| self.bytes[p]),
                        Some(b'=' | b'!' | b'<' | b'>')
                    ) =>
                {
                    expr_end = Some(self.pos);
                    self.pos += 1;
                    // Whitespace after `=` belongs to the debug text.
                    while matches!(self.peek(0), Some(b' ' | b'\t')) {
                        self.pos += 1;
                    }
                    debug = Some(expr_start..self.pos);
                    break;
                }
                b'!' if depth == 0 && self.peek(1) != Some(b'=') => {
                    expr_end = Some(self.pos);
                    break;
                }
                b':' if depth == 0 => {
                    expr_end = Some(self.pos);
                    break;
                }
                _ => self.pos += utf8_len(c),
            }
        }
        let expr_end = expr_end.unwrap_or(self.pos);
        let mut conversion = None;
        if self.peek(0) == Some(b'!') {
            self.pos += 1;
            let conv_start = self.pos;
            while let Some(c) = self.peek(0) {
                if c == b':' || c == b'}' || c == self.quote || c == b'\n' {
                    break;
                }
                self.pos += utf8_len(c);
            }
            conversion = Some(conv_start..self.pos);
        }
        let mut spec = None;
        if self.peek(0) == Some(b':') {
            self.pos += 1;
            let mut spec_parts = Vec::new();
            self.literal(want_parts.then_some(&mut spec_parts), true)?;
            spec = Some(spec_parts);
        }
        if self.peek(0) != Some(b'}') {
            // A field that is not closed where it should be: the literal is
            // malformed. Report it as unterminated at this point.
            return Err(self.pos);
        }
        self.pos += 1;
        Ok(RawField {
            span: start..self.pos,
            expr: expr_start..expr_end,
            debug,
            conversion,
            spec,
        })
    }
}

/// Whether the field text so far ends with a complete operand (a name,
/// number or closing bracket), ignoring trailing spaces: then a quote cannot
/// start a nested string, and the field was never closed.
///
/// A keyword (`f"{x if c else "s"}"`, `f"{a or "b"}"`) and a string prefix
/// glued to the quote (`f"{f"{x}"}"`) are not operands: a nested string may
/// follow them (Python 3.12).
fn ends_operand(text: &[u8]) -> bool {
    let full_len = text.len();
    let trimmed_len = text
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let text = &text[..trimmed_len];
    let Some(&last) = text.last() else {
        return false;
    };
    if matches!(last, b')' | b']' | b'}') {
        return true;
    }
    if !(last.is_ascii_alphanumeric() || last == b'_' || last >= 0x80) {
        return false;
    }
    let word_start = text
        .iter()
        .rposition(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80))
        .map_or(0, |i| i + 1);
    let word = &text[word_start..];
    if word[0].is_ascii_digit() {
        return true;
    }
    const KEYWORDS: &[&[u8]] = &[
        b"and", b"or", b"not", b"in", b"is", b"if", b"else", b"await", b"yield", b"from", b"lambda",
    ];
    if KEYWORDS.contains(&word) {
        return false;
    }
    // A string prefix directly before the quote (no space in between).
    let glued = trimmed_len == full_len;
    let is_prefix = word.len() <= 2
        && word
            .iter()
            .all(|b| matches!(b.to_ascii_lowercase(), b'r' | b'b' | b'f' | b'u'));
    !(glued && is_prefix)
}

/// Reads the string prefix letters just before a quote inside a field
/// (`rf"..."`): returns whether the nested literal is an f-string and whether
/// it is raw.
fn prefix_flags(before: &[u8]) -> (bool, bool) {
    let mut is_f = false;
    let mut raw = false;
    for &b in before.iter().rev().take(2) {
        match b {
            b'f' | b'F' => is_f = true,
            b'r' | b'R' => raw = true,
            b'b' | b'B' | b'u' | b'U' => {}
            _ => break,
        }
    }
    (is_f, raw)
}

/// The length of the UTF-8 sequence starting with byte `b` (1 for ASCII and
/// for continuation bytes, so the scan always advances).
fn utf8_len(b: u8) -> usize {
    match b {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_string_ends_at_quote() {
        assert_eq!(scan_body(r#"abc" + 1"#, b'"', false, false), Ok(4));
        assert_eq!(scan_body(r#"a\"c" + 1"#, b'"', false, false), Ok(5));
        assert_eq!(scan_body("abc\nd\"", b'"', false, false), Err(3));
        assert_eq!(scan_body("a\"b\n\"\"\" x", b'"', true, false), Ok(7));
    }

    #[test]
    fn fstring_fields_nest() {
        let body = r#"a{x["k"]:>{w}}b{y!r}{z=}"rest"#;
        let len = scan_body(body, b'"', false, true);
        assert_eq!(len, Ok(body.find("\"rest").map(|i| i + 1).unwrap_or(0)));
        let parts = split(body, b'"', false, false);
        assert_eq!(parts.len(), 5);
        let RawPart::Field(f) = &parts[1] else {
            panic!("expected a field")
        };
        assert_eq!(&body[f.expr.clone()], r#"x["k"]"#);
        let spec = f.spec.as_ref().map(Vec::len);
        assert_eq!(spec, Some(2));
        let RawPart::Field(f) = &parts[3] else {
            panic!("expected a field")
        };
        assert_eq!(&body[f.conversion.clone().unwrap_or(0..0)], "r");
        let RawPart::Field(f) = &parts[4] else {
            panic!("expected a field")
        };
        assert_eq!(&body[f.debug.clone().unwrap_or(0..0)], "z=");
    }

    #[test]
    fn fstring_fields_may_reuse_the_quote_after_keywords_and_prefixes() {
        // Python 3.12: the same quote may start a nested string after an
        // operator, a keyword, a bracket or a string prefix.
        for body in [
            r#"{x if c else "s"}""#,
            r#"{a or "b"}""#,
            r#"{"t" in d["k"]}""#,
            r#"{x:{"<" if c else ">"}10}""#,
            r#"{f"{x}" + f"{d["k"]}"}""#,
            r#"{rb"x"}""#,
        ] {
            assert_eq!(scan_body(body, b'"', false, true), Ok(body.len()), "{body}");
        }
        // After a complete operand the quote ends the literal: the field
        // was never closed.
        for body in [r#"{x""#, r#"{x y""#, r#"{None""#, r#"{f(1)""#, r#"{xf""#] {
            assert_eq!(
                scan_body_detailed(body, b'"', false, true),
                Err((body.len(), Some(0))),
                "{body}"
            );
        }
    }

    #[test]
    fn fstring_doubled_braces_are_literal() {
        let body = "{{x}}\"";
        assert_eq!(
            split(body, b'"', false, false),
            vec![RawPart::Literal(0..5)]
        );
        assert_eq!(
            scan_body_detailed("ab{x\" + 1", b'"', false, true),
            Err((5, Some(2)))
        );
        assert_eq!(scan_body("{\"", b'"', false, true), Err(2));
        assert_eq!(scan_body("{a != b}\"", b'"', false, true), Ok(9));
    }
}
