//! The layout pass: physical tokens in, logical tokens out.
//!
//! This is CPython's tokenizer algorithm on top of the raw logos lexer:
//!
//! - a raw newline inside brackets is dropped (implicit line joining), and so
//!   is the newline of a blank or comment-only line; every other newline ends a
//!   logical line and is emitted once;
//! - at the first token of a logical line the indentation is measured (a space
//!   counts 1, a tab moves to the next multiple of 8, a form feed resets to 0)
//!   and compared with a stack of open indentation levels: deeper pushes and
//!   emits INDENT, shallower pops and emits one DEDENT per level;
//! - at the end of input a final NEWLINE (if the last line has content) and a
//!   DEDENT per open level are emitted.
//!
//! Invariants of the output, relied on by the parser and checked by tests:
//! INDENT and DEDENT are balanced; no NEWLINE appears inside brackets;
//! every logical line ends with NEWLINE; brackets are balanced (see below);
//! spans never decrease.
//!
//! Recovery, so that one mistake gives one diagnostic:
//!
//! - an inconsistent dedent (a column that matches no open level) is reported
//!   and treated as the enclosing level;
//! - indentation whose meaning depends on the tab width (tabs and spaces mixed
//!   so that tab sizes 1 and 8 disagree) is reported;
//! - a closing bracket that matches no open bracket is reported and dropped;
//!   one that matches an outer bracket closes the inner ones, which are
//!   reported as unclosed;
//! - an unclosed bracket is closed by synthetic (zero-width) closers at the
//!   end of input, or at a line that starts with a keyword that cannot occur
//!   inside an expression (`def`, `return`, `import`, …). The parser therefore
//!   sees balanced brackets and reports nothing more for them.
//!
//! Lexical errors become [`Token::Error`] plus a recorded diagnostic, because
//! an `Err` item would end parsing.

use std::collections::VecDeque;

use logos::Logos;
use nkic_diag::{Diagnostic, FileId, Span};

use crate::token::{LexError, Token};

/// A token with its byte range: the item type of the parser.
pub type Spanned<'src> = (usize, Token<'src>, usize);

/// Options of the layout pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// Treat the whole input as if inside brackets: no NEWLINE, INDENT or
    /// DEDENT at all. Used for the expressions of f-string fields.
    pub inside_brackets: bool,
}

/// Runs the raw lexer and the layout pass over `src` (offsets shifted by
/// `base`), returning the logical tokens and the lexical diagnostics.
pub fn tokenize(src: &str, config: Config) -> (Vec<Spanned<'_>>, Vec<Diagnostic>) {
    let mut layout = Layout::new(src, config);
    let mut out = Vec::with_capacity(src.len() / 8);
    while let Some(tok) = layout.next_token() {
        out.push(tok);
    }
    (out, layout.diags)
}

/// The layout pass as a streaming iterator (the parser reads it directly, so
/// a large file never needs its whole token vector in memory).
pub(crate) struct Stream<'src>(Layout<'src>);

impl<'src> Stream<'src> {
    pub(crate) fn new(src: &'src str, config: Config) -> Stream<'src> {
        Stream(Layout::new(src, config))
    }

    /// The lexical diagnostics, complete once the iterator is exhausted.
    pub(crate) fn into_diagnostics(self) -> Vec<Diagnostic> {
        self.0.diags
    }
}

impl<'src> Iterator for Stream<'src> {
    type Item = Spanned<'src>;

    fn next(&mut self) -> Option<Spanned<'src>> {
        self.0.next_token()
    }
}

/// Checks the invariants of a logical token stream for `src`: spans within
/// the input and never decreasing, INDENT/DEDENT balanced, brackets balanced,
/// no NEWLINE inside brackets, and the last logical line ended by NEWLINE.
/// Tests run it on every input; an `Err` is a bug in the layout pass.
pub fn check_tokens(src: &str, tokens: &[Spanned<'_>]) -> Result<(), String> {
    let mut depth: i64 = 0;
    let mut brackets: i64 = 0;
    let mut last_start = 0;
    for (i, (s, t, e)) in tokens.iter().enumerate() {
        if s > e || *e > src.len() {
            return Err(format!("token {i} has a bad span {s}..{e}"));
        }
        if *s < last_start {
            return Err(format!("token {i} starts before its predecessor"));
        }
        last_start = *s;
        match t {
            Token::Indent => depth += 1,
            Token::Dedent => depth -= 1,
            Token::LParen | Token::LBracket | Token::LBrace => brackets += 1,
            Token::RParen | Token::RBracket | Token::RBrace => brackets -= 1,
            Token::Newline if brackets != 0 => {
                return Err(format!("NEWLINE inside brackets at token {i}"));
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("DEDENT without INDENT at token {i}"));
        }
        if brackets < 0 {
            return Err(format!("closing bracket without opener at token {i}"));
        }
    }
    if depth != 0 {
        return Err("INDENT/DEDENT unbalanced".to_string());
    }
    if brackets != 0 {
        return Err("brackets unbalanced".to_string());
    }
    if let Some((_, last, _)) = tokens.iter().rev().find(|t| t.1 != Token::Dedent)
        && *last != Token::Newline
    {
        return Err("the last logical line does not end with NEWLINE".to_string());
    }
    Ok(())
}

/// The maximum bracket nesting; deeper input is reported and its brackets are
/// not tracked further (CPython's limit is 200).
const MAX_BRACKET_DEPTH: usize = 200;

/// The layout state machine.
struct Layout<'src> {
    src: &'src str,
    lexer: logos::SpannedIter<'src, Token<'src>>,
    /// Open indentation levels as (column with tab size 8, column with tab
    /// size 1); never empty, the bottom is `(0, 0)`.
    indents: Vec<(u32, u32)>,
    /// Open brackets: the opener and its start offset.
    brackets: Vec<(Token<'src>, usize)>,
    /// Tokens owed before the next raw token is read.
    pending: VecDeque<Spanned<'src>>,
    /// Whether the next real token starts a logical line.
    at_line_start: bool,
    /// Whether the current logical line has a token.
    line_has_content: bool,
    /// Whether a raw newline was seen inside brackets since the last token.
    newline_in_brackets: bool,
    /// End offset of the last token passed on.
    last_end: usize,
    /// The last real token passed on.
    last_token: Option<Token<'src>>,
    /// Whether a bracket nesting overflow was already reported.
    depth_reported: bool,
    finished: bool,
    config: Config,
    diags: Vec<Diagnostic>,
}

impl<'src> Layout<'src> {
    fn new(src: &'src str, config: Config) -> Layout<'src> {
        Layout {
            src,
            lexer: Token::lexer(src).spanned(),
            indents: vec![(0, 0)],
            brackets: Vec::new(),
            pending: VecDeque::new(),
            at_line_start: true,
            line_has_content: false,
            newline_in_brackets: false,
            last_end: 0,
            last_token: None,
            depth_reported: false,
            finished: false,
            config,
            diags: Vec::new(),
        }
    }

    fn next_token(&mut self) -> Option<Spanned<'src>> {
        loop {
            if let Some(tok) = self.pending.pop_front() {
                return Some(tok);
            }
            if self.finished {
                return None;
            }
            let Some((res, range)) = self.lexer.next() else {
                self.finish();
                continue;
            };
            let tok = match res {
                Ok(tok) => tok,
                Err(err) => {
                    self.lex_error(err, range.clone());
                    Token::Error
                }
            };
            if tok == Token::Newline {
                self.newline(range.start, range.end);
            } else if let Some(direct) = self.real_token(tok, range.start, range.end) {
                return Some(direct);
            }
        }
    }

    fn newline(&mut self, start: usize, end: usize) {
        if self.config.inside_brackets {
            return;
        }
        if !self.brackets.is_empty() {
            self.newline_in_brackets = true;
            return;
        }
        if self.line_has_content {
            self.pending.push_back((start, Token::Newline, end));
            self.last_end = end;
            self.line_has_content = false;
        }
        self.at_line_start = true;
    }

    /// Handles a token other than a newline. Returns it directly when no
    /// synthetic token has to come first (the common, fast case); otherwise
    /// queues it behind them.
    fn real_token(&mut self, tok: Token<'src>, start: usize, end: usize) -> Option<Spanned<'src>> {
        if self.newline_in_brackets && !self.brackets.is_empty() && self.starts_new_statement(tok) {
            // A statement keyword at the start of a line cannot be inside an
            // expression: an earlier bracket was never closed.
            self.close_all_brackets(self.last_end);
            self.pending
                .push_back((self.last_end, Token::Newline, self.last_end));
            self.line_has_content = false;
            self.at_line_start = true;
        }
        self.newline_in_brackets = false;
        if self.at_line_start && !self.config.inside_brackets {
            self.at_line_start = false;
            self.indentation(start);
        }
        self.line_has_content = true;
        match tok {
            Token::LParen | Token::LBracket | Token::LBrace => {
                if self.brackets.len() < MAX_BRACKET_DEPTH {
                    self.brackets.push((tok, start));
                } else if !self.depth_reported {
                    self.depth_reported = true;
                    self.diags.push(
                        Diagnostic::error("E0011", "too many nested brackets")
                            .with_primary(
                                FileId::default(),
                                Span::from_range(start..end),
                                "nesting exceeds 200 levels here",
                            )
                            .with_help("split the expression into several statements"),
                    );
                }
            }
            Token::RParen | Token::RBracket | Token::RBrace
                if !self.close_bracket(tok, start, end) =>
            {
                return None;
            }
            _ => {}
        }
        self.last_end = end;
        self.last_token = Some(tok);
        if self.pending.is_empty() {
            return Some((start, tok, end));
        }
        self.pending.push_back((start, tok, end));
        None
    }

    /// Whether `tok`, the first token of a physical line inside brackets,
    /// shows that the brackets were never closed: a keyword that only starts
    /// statements, or `name =` after a token that ends an expression (inside
    /// brackets `name =` is a keyword argument or parameter default, which
    /// always follows `(` or `,`).
    fn starts_new_statement(&self, tok: Token<'src>) -> bool {
        if starts_statement_only(tok) {
            return true;
        }
        if !matches!(tok, Token::Name(_)) {
            return false;
        }
        let prev_ends_expr = matches!(
            self.last_token,
            Some(
                Token::RParen
                    | Token::RBracket
                    | Token::RBrace
                    | Token::Name(_)
                    | Token::Int(_)
                    | Token::Float(_)
                    | Token::Imaginary(_)
                    | Token::String(_)
                    | Token::True
                    | Token::False
                    | Token::None
            )
        );
        if !prev_ends_expr {
            return false;
        }
        let next = self.lexer.clone().next().and_then(|(res, _)| res.ok());
        matches!(
            next,
            Some(
                Token::Equal
                    | Token::PlusEqual
                    | Token::MinusEqual
                    | Token::StarEqual
                    | Token::SlashEqual
                    | Token::DoubleSlashEqual
                    | Token::PercentEqual
                    | Token::AtEqual
                    | Token::DoubleStarEqual
                    | Token::AmperEqual
                    | Token::VbarEqual
                    | Token::CircumflexEqual
                    | Token::LeftShiftEqual
                    | Token::RightShiftEqual
            )
        )
    }

    /// Handles a closing bracket; returns whether the token is passed on.
    fn close_bracket(&mut self, tok: Token<'src>, start: usize, end: usize) -> bool {
        let matching = self
            .brackets
            .iter()
            .rposition(|(open, _)| open.closer() == Some(tok));
        match matching {
            Some(idx) => {
                while self.brackets.len() > idx + 1 {
                    self.close_top_bracket(start);
                }
                self.brackets.pop();
                true
            }
            None if self.depth_reported => true,
            None => {
                let mut diag = Diagnostic::error("E0005", format!("unmatched `{}`", tok.text()))
                    .with_primary(
                        FileId::default(),
                        Span::from_range(start..end),
                        "no open bracket to close here",
                    );
                if let Some((open, open_start)) = self.brackets.last() {
                    diag = diag.with_secondary(
                        FileId::default(),
                        Span::from_range(*open_start..*open_start + 1),
                        format!("the innermost open bracket is this `{}`", open.text()),
                    );
                }
                self.diags.push(diag);
                false
            }
        }
    }

    /// Reports the innermost open bracket as unclosed and closes it with a
    /// synthetic zero-width closer at `at`.
    fn close_top_bracket(&mut self, at: usize) {
        let Some((open, open_start)) = self.brackets.pop() else {
            return;
        };
        let Some(closer) = open.closer() else {
            return;
        };
        self.diags.push(
            Diagnostic::error("E0004", format!("unclosed `{}`", open.text()))
                .with_primary(
                    FileId::default(),
                    Span::from_range(open_start..open_start + 1),
                    format!("this `{}` is never closed", open.text()),
                )
                .with_help(format!(
                    "add `{}` where the bracketed part ends",
                    closer.text()
                )),
        );
        self.pending.push_back((at, closer, at));
    }

    fn close_all_brackets(&mut self, at: usize) {
        while !self.brackets.is_empty() {
            self.close_top_bracket(at);
        }
    }

    /// Measures the indentation of the token at `start` and emits INDENT or
    /// DEDENTs.
    fn indentation(&mut self, start: usize) {
        let line_start = self.src[..start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let (mut col, mut alt) = (0u32, 0u32);
        for b in self.src[line_start..start].bytes() {
            match b {
                b' ' => {
                    col += 1;
                    alt += 1;
                }
                b'\t' => {
                    col = (col / 8 + 1) * 8;
                    alt += 1;
                }
                b'\x0C' => {
                    col = 0;
                    alt = 0;
                }
                // A backslash continuation or other text before the token
                // (only possible after an explicit line join) does not count.
                _ => {}
            }
        }
        let ws_span = Span::from_range(line_start..start);
        let (top, top_alt) = self.indents.last().copied().unwrap_or((0, 0));
        if col > top {
            if alt <= top_alt {
                self.tab_error(ws_span);
            }
            self.indents.push((col, alt));
            self.pending.push_back((start, Token::Indent, start));
            return;
        }
        if col == top {
            if alt != top_alt {
                self.tab_error(ws_span);
            }
            return;
        }
        while self.indents.len() > 1 && self.indents.last().is_some_and(|&(c, _)| c > col) {
            self.indents.pop();
            self.pending.push_back((start, Token::Dedent, start));
        }
        let (top, top_alt) = self.indents.last().copied().unwrap_or((0, 0));
        if col != top {
            self.diags.push(
                Diagnostic::error(
                    "E0003",
                    "unindent does not match any outer indentation level",
                )
                .with_primary(
                    FileId::default(),
                    ws_span,
                    "this indentation matches no enclosing block",
                )
                .with_help(if top == 0 {
                    "remove the indentation to continue at the top level".to_string()
                } else {
                    format!("indent this line by {top} columns to continue the enclosing block")
                }),
            );
        } else if alt != top_alt {
            self.tab_error(ws_span);
        }
    }

    fn tab_error(&mut self, span: Span) {
        self.diags.push(
            Diagnostic::error(
                "E0009",
                "inconsistent use of tabs and spaces in indentation",
            )
            .with_primary(
                FileId::default(),
                span,
                "the meaning of this indentation depends on the tab width",
            )
            .with_help("indent with spaces only"),
        );
    }

    fn finish(&mut self) {
        self.finished = true;
        let end = self.src.len();
        self.close_all_brackets(end);
        if self.line_has_content && !self.config.inside_brackets {
            self.pending.push_back((end, Token::Newline, end));
            self.line_has_content = false;
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.pending.push_back((end, Token::Dedent, end));
        }
    }

    fn lex_error(&mut self, err: LexError, range: std::ops::Range<usize>) {
        let span = Span::from_range(range.clone());
        let text = self.src.get(range.clone()).unwrap_or("");
        let diag = match err {
            LexError::InvalidCharacter => {
                let shown = text
                    .chars()
                    .next()
                    .map_or_else(String::new, |c| c.escape_debug().to_string());
                let mut d = Diagnostic::error("E0001", format!("invalid character `{shown}`"))
                    .with_primary(FileId::default(), span, "this character cannot appear here");
                if let Some(help) = text.chars().next().and_then(lookalike_help) {
                    d = d.with_help(help);
                }
                d
            }
            LexError::InvalidNameCharacter => {
                let (offset, c) = text
                    .char_indices()
                    .find(|&(_, c)| !c.is_ascii() && !c.is_alphanumeric())
                    .unwrap_or((0, '?'));
                let at = range.start + offset;
                let shown = c.escape_debug().to_string();
                let mut d = Diagnostic::error("E0001", format!("invalid character `{shown}`"))
                    .with_primary(
                        FileId::default(),
                        Span::from_range(at..at + c.len_utf8()),
                        "this character cannot appear here",
                    );
                if let Some(help) = lookalike_help(c) {
                    d = d.with_help(help);
                }
                d
            }
            LexError::UnterminatedString => Diagnostic::error("E0002", "unterminated string")
                .with_primary(FileId::default(), span, "this string is never closed")
                .with_help("close the string with the quote it starts with, on the same line"),
            LexError::UnterminatedTripleString => {
                Diagnostic::error("E0002", "unterminated triple-quoted string")
                    .with_primary(
                        FileId::default(),
                        Span::from_range(range.start..(range.start + 3).min(range.end)),
                        "this string is never closed",
                    )
                    .with_help("close the string with the three quotes it starts with")
            }
        };
        self.diags.push(diag);
    }
}

/// Whether `tok` is a keyword that starts a statement and can never occur
/// inside an expression.
fn starts_statement_only(tok: Token<'_>) -> bool {
    matches!(
        tok,
        Token::Def
            | Token::Class
            | Token::Return
            | Token::Import
            | Token::With
            | Token::While
            | Token::Try
            | Token::Except
            | Token::Finally
            | Token::Elif
            | Token::Pass
            | Token::Break
            | Token::Continue
            | Token::Raise
            | Token::Global
            | Token::Nonlocal
            | Token::Del
            | Token::Assert
    )
}

/// A hint for characters that look like Python punctuation.
fn lookalike_help(c: char) -> Option<String> {
    let ascii = match c {
        '\u{2018}' | '\u{2019}' => "'",
        '\u{201C}' | '\u{201D}' => "\"",
        '\u{2212}' | '\u{2013}' | '\u{2014}' => "-",
        '\u{00D7}' => "*",
        '\u{00A0}' => " ",
        _ => return None,
    };
    Some(format!(
        "`{c}` looks like `{ascii}`; use the ASCII character"
    ))
}

#[cfg(test)]
mod tests;
