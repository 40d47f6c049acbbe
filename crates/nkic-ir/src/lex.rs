//! The tokens of the IR text form and a cursor over one line's tokens.
//!
//! The text form is line oriented: the reader splits the input into lines
//! and tokenizes each on its own. A token is a *word* (a run of letters,
//! digits and `_ . + - /`; numbers, names, handles and file names are all
//! words), a double-quoted *string* with backslash escapes, or one
//! punctuation character of `[ ] ( ) { } , : = ? @ *`. Whitespace separates
//! tokens and `#` starts a comment that runs to the end of the line.

/// The integers of the text form are those of `.nkasm`.
pub(crate) use nkic_isa::field::parse_wide_int as parse_int;

/// One token of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Word(String),
    Str(String),
    Punct(char),
}

impl Tok {
    /// A short description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Punct(c) => format!("`{c}`"),
        }
    }
}

const PUNCT: &[char] = &['[', ']', '(', ')', '{', '}', ',', ':', '=', '?', '@', '*'];

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-' | '/')
}

/// Splits one line into tokens, dropping a trailing comment.
pub(crate) fn tokenize(line: &str) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut chars = line.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '#' {
            break;
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            let mut closed = false;
            while let Some((_, c)) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some((_, '"')) => s.push('"'),
                        Some((_, '\\')) => s.push('\\'),
                        Some((_, 'n')) => s.push('\n'),
                        Some((_, 't')) => s.push('\t'),
                        Some((_, 'u')) => {
                            if chars.next().map(|(_, c)| c) != Some('{') {
                                return Err("expected `{` after `\\u`".into());
                            }
                            let mut hex = String::new();
                            loop {
                                match chars.next() {
                                    Some((_, '}')) => break,
                                    Some((_, h)) if h.is_ascii_hexdigit() && hex.len() < 6 => {
                                        hex.push(h)
                                    }
                                    _ => return Err("bad `\\u{…}` escape".into()),
                                }
                            }
                            let ch = u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .ok_or_else(|| format!("bad character code `{hex}`"))?;
                            s.push(ch);
                        }
                        _ => return Err("unknown escape in string".into()),
                    },
                    c => s.push(c),
                }
            }
            if !closed {
                return Err(format!("unterminated string starting at column {}", i + 1));
            }
            toks.push(Tok::Str(s));
        } else if PUNCT.contains(&c) {
            chars.next();
            toks.push(Tok::Punct(c));
        } else if is_word_char(c) {
            let mut w = String::new();
            while let Some(&(_, c)) = chars.peek() {
                if !is_word_char(c) {
                    break;
                }
                w.push(c);
                chars.next();
            }
            toks.push(Tok::Word(w));
        } else {
            return Err(format!("unexpected character `{c}`"));
        }
    }
    Ok(toks)
}

/// Writes `s` as a string token that `tokenize` reads back unchanged.
pub(crate) fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A position in a slice of tokens.
pub(crate) struct Cursor<'t> {
    toks: &'t [Tok],
    pos: usize,
}

impl<'t> Cursor<'t> {
    pub(crate) fn new(toks: &'t [Tok]) -> Cursor<'t> {
        Cursor { toks, pos: 0 }
    }

    pub(crate) fn peek(&self) -> Option<&'t Tok> {
        self.toks.get(self.pos)
    }

    pub(crate) fn peek_at(&self, ahead: usize) -> Option<&'t Tok> {
        self.toks.get(self.pos + ahead)
    }

    pub(crate) fn next(&mut self) -> Option<&'t Tok> {
        let t = self.toks.get(self.pos);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    /// The tokens not yet consumed.
    pub(crate) fn rest(&self) -> &'t [Tok] {
        &self.toks[self.pos.min(self.toks.len())..]
    }

    /// Consumes `c` if it is next.
    pub(crate) fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consumes the word `w` if it is next.
    pub(crate) fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(x)) if x == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{c}`, found {}", self.found()))
        }
    }

    pub(crate) fn expect_word_is(&mut self, w: &str) -> Result<(), String> {
        if self.eat_word(w) {
            Ok(())
        } else {
            Err(format!("expected `{w}`, found {}", self.found()))
        }
    }

    pub(crate) fn word(&mut self) -> Result<&'t str, String> {
        self.text_token("a word", |t| match t {
            Tok::Word(w) => Some(w),
            _ => None,
        })
    }

    pub(crate) fn string(&mut self) -> Result<&'t str, String> {
        self.text_token("a string", |t| match t {
            Tok::Str(s) => Some(s),
            _ => None,
        })
    }

    /// Takes the next token if `text` finds text in it, else fails
    /// expecting `what`.
    fn text_token(
        &mut self,
        what: &str,
        text: impl FnOnce(&'t Tok) -> Option<&'t str>,
    ) -> Result<&'t str, String> {
        match self.peek().and_then(text) {
            Some(t) => {
                self.pos += 1;
                Ok(t)
            }
            None => Err(format!("expected {what}, found {}", self.found())),
        }
    }

    /// Reads an integer word (decimal, optionally negative, or `0x` hex).
    pub(crate) fn int<T: TryFrom<i128>>(&mut self) -> Result<T, String> {
        let w = self.word()?;
        parse_int(w)
            .and_then(|v| T::try_from(v).ok())
            .ok_or_else(|| format!("expected an integer in range, found `{w}`"))
    }

    /// Reads `[a, b, …]`, each element with `item`; `[]` only when
    /// `empty` allows it.
    pub(crate) fn list<T>(
        &mut self,
        empty: bool,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        self.expect('[')?;
        let mut out = Vec::new();
        if empty && self.eat(']') {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(']') {
                return Ok(out);
            }
            self.expect(',')?;
        }
    }

    /// Reads a `[stride, count]` pair.
    pub(crate) fn stride_count<S: TryFrom<i128>, C: TryFrom<i128>>(
        &mut self,
    ) -> Result<(S, C), String> {
        self.expect('[')?;
        let stride = self.int()?;
        self.expect(',')?;
        let count = self.int()?;
        self.expect(']')?;
        Ok((stride, count))
    }

    pub(crate) fn expect_end(&self) -> Result<(), String> {
        if self.at_end() {
            Ok(())
        } else {
            Err(format!("unexpected {}", self.found()))
        }
    }

    /// Describes the next token for an error message.
    pub(crate) fn found(&self) -> String {
        self.peek()
            .map_or_else(|| "end of line".to_owned(), Tok::describe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_words_strings_and_punctuation() {
        let toks = tokenize(r#"op3 = memset dst=t1[0:128, 0:4] name="a \"b\"" # note"#).unwrap();
        let words: Vec<_> = toks.iter().map(Tok::describe).collect();
        assert_eq!(
            words.join(" "),
            "`op3` `=` `memset` `dst` `=` `t1` `[` `0` `:` `128` `,` `0` `:` `4` `]` `name` `=` string \"a \\\"b\\\"\""
        );
        assert!(tokenize("\"open").is_err());
        assert!(tokenize("a ; b").is_err());
    }

    #[test]
    fn strings_round_trip_through_quote() {
        for s in [
            "",
            "plain",
            "with \"quotes\" and \\",
            "tab\tnew\nline",
            "bell\u{7}",
        ] {
            let mut out = String::new();
            quote(s, &mut out);
            assert_eq!(tokenize(&out).unwrap(), vec![Tok::Str(s.to_owned())]);
        }
    }

    #[test]
    fn integers() {
        assert_eq!(parse_int("-12"), Some(-12));
        assert_eq!(parse_int("0x1f"), Some(31));
        assert_eq!(parse_int("1.0"), None);
        assert_eq!(parse_int("-"), None);
    }
}
