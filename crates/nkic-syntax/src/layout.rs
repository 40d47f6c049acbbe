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
use crate::{SPLIT_HELP, error_at};

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

/// The most tree-deepening operators allowed in one comma-separated part of
/// a logical line. Deeper expressions would make the recursive walks over
/// the tree (and its drop) overflow the stack; no real code comes near.
const MAX_NESTING_OPS: u32 = 1000;

/// The most open indentation levels (CPython's limit is 100). The body of a
/// block nested deeper is reported and dropped, which bounds the depth of
/// the statement tree and so of every recursive walk over it.
pub const MAX_INDENT_DEPTH: usize = 100;

/// The maximum bracket nesting; deeper input is reported and its brackets are
/// not tracked further (CPython's limit is 200).
const MAX_BRACKET_DEPTH: usize = 200;

/// The state of dropping a too deeply nested block (see
/// [`Layout::skip_deep`]).
struct DeepSkip {
    /// The column of the level enclosing the block: a line indented no
    /// deeper ends the skip.
    column: u32,
    /// Brackets open in the dropped text (their lines are joined).
    brackets: u32,
    /// Whether the next raw token starts a physical line.
    at_line_start: bool,
}

/// The layout state machine.
struct Layout<'src> {
    src: &'src str,
    lexer: logos::SpannedIter<'src, Token<'src>>,
    /// Open indentation levels as (column with tab size 8, column with tab
    /// size 1); never empty, the bottom is `(0, 0)`.
    indents: Vec<(u32, u32)>,
    /// Open brackets: the opener, its start offset, and the count of
    /// [`Layout::nesting_ops`] when it opened (a comma inside the bracket
    /// resets the count to it, so that nesting through several brackets
    /// adds up).
    brackets: Vec<(Token<'src>, usize, u32)>,
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
    /// Whether ambiguous tab indentation was already reported.
    tab_reported: bool,
    /// Operators that deepen an expression tree (binary and unary
    /// operators, `.`, calls, subscripts, `lambda`, `if`) since the last
    /// comma or line end; bounded by [`MAX_NESTING_OPS`].
    nesting_ops: u32,
    /// Skipping the rest of a logical line whose expression was too deep:
    /// the number of brackets that were open when skipping began.
    skipping: Option<usize>,
    /// Dropping the lines of a block nested deeper than [`MAX_INDENT_DEPTH`].
    deep_skip: Option<DeepSkip>,
    finished: bool,
    config: Config,
    diags: Vec<Diagnostic>,
}

impl<'src> Layout<'src> {
    fn new(src: &'src str, config: Config) -> Layout<'src> {
        Layout {
            src,
            lexer: {
                let mut lexer = Token::lexer(src);
                // A UTF-8 byte-order mark at the very start is not part of
                // the program, as in CPython.
                if src.starts_with('\u{feff}') {
                    lexer.bump('\u{feff}'.len_utf8());
                }
                lexer.spanned()
            },
            indents: vec![(0, 0)],
            brackets: Vec::new(),
            pending: VecDeque::new(),
            at_line_start: true,
            line_has_content: false,
            newline_in_brackets: false,
            last_end: 0,
            last_token: None,
            depth_reported: false,
            tab_reported: false,
            nesting_ops: 0,
            skipping: None,
            deep_skip: None,
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
                self.deep_skip = None;
                self.finish();
                continue;
            };
            if self.deep_skip.is_some() && self.skip_deep(&res, range.start) {
                continue;
            }
            let tok = match res {
                Ok(tok) => tok,
                Err(err) => {
                    self.lex_error(err, range.clone());
                    Token::Error
                }
            };
            // Fast path: a token in the middle of a line that neither opens
            // nor closes a bracket nor deepens an expression needs no
            // bookkeeping beyond the last token (this is most tokens).
            if !self.at_line_start
                && !self.newline_in_brackets
                && self.skipping.is_none()
                && self.pending.is_empty()
                && is_plain(tok)
            {
                if matches!(tok, Token::Comma | Token::Semicolon) {
                    self.nesting_ops = self.comma_base();
                }
                self.last_end = range.end;
                self.last_token = Some(tok);
                return Some((range.start, tok, range.end));
            }
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
        self.nesting_ops = 0;
        self.skipping = None;
    }

    /// Handles a token other than a newline. Returns it directly when no
    /// synthetic token has to come first (the common, fast case); otherwise
    /// queues it behind them.
    fn real_token(
        &mut self,
        mut tok: Token<'src>,
        start: usize,
        end: usize,
    ) -> Option<Spanned<'src>> {
        if self.newline_in_brackets
            && !self.brackets.is_empty()
            && self.starts_new_statement(tok, start)
        {
            // This line starts a new statement: an earlier bracket was never
            // closed.
            self.close_all_brackets(self.last_end, "before the next statement");
            self.pending
                .push_back((self.last_end, Token::Newline, self.last_end));
            self.line_has_content = false;
            self.at_line_start = true;
        }
        self.newline_in_brackets = false;
        if self.at_line_start && !self.config.inside_brackets {
            self.at_line_start = false;
            if self.indentation(start) {
                // This line opens a block nested too deeply: it becomes one
                // error token, and the lines indented as deeply are dropped.
                self.line_has_content = true;
                self.deep_skip = Some(DeepSkip {
                    column: self.indents.iter().rev().nth(1).map_or(0, |&(c, _)| c),
                    brackets: u32::from(matches!(
                        tok,
                        Token::LParen | Token::LBracket | Token::LBrace
                    )),
                    at_line_start: false,
                });
                self.last_end = end;
                self.last_token = Some(Token::Error);
                self.pending.push_back((start, Token::Error, end));
                return None;
            }
        }
        self.line_has_content = true;
        if let Some(open_before) = self.skipping {
            return self.skip_token(tok, start, end, open_before);
        }
        if deepens(tok) {
            self.nesting_ops += 1;
            if self.nesting_ops > MAX_NESTING_OPS {
                self.diags.push(
                    error_at(
                        "E0018",
                        "expression is nested too deeply",
                        start..end,
                        format!("more than {MAX_NESTING_OPS} nested operations at this point"),
                    )
                    .with_help(SPLIT_HELP),
                );
                self.skipping = Some(self.brackets.len());
                // The rest of the logical line becomes one error token.
                self.last_end = end;
                self.last_token = Some(Token::Error);
                return Some((start, Token::Error, end));
            }
        } else if matches!(tok, Token::Comma | Token::Semicolon) {
            self.nesting_ops = self.comma_base();
        }
        if matches!(tok, Token::LParen | Token::LBracket | Token::LBrace) {
            if self.brackets.len() < MAX_BRACKET_DEPTH {
                self.brackets.push((tok, start, self.nesting_ops));
            } else {
                if !self.depth_reported {
                    self.depth_reported = true;
                    self.diags.push(
                        error_at(
                            "E0011",
                            "too many nested brackets",
                            start..end,
                            "nesting exceeds 200 levels here",
                        )
                        .with_help(SPLIT_HELP),
                    );
                }
                // As for a too deep expression, the rest of the logical line
                // becomes one error token (so the parser never nests deeper);
                // this bracket is tracked so that its closer is skipped too.
                self.skipping = Some(self.brackets.len());
                self.brackets.push((tok, start, self.nesting_ops));
                self.last_end = end;
                self.last_token = Some(Token::Error);
                return Some((start, Token::Error, end));
            }
        }
        // A closing bracket may be dropped (unmatched) or replaced (typo).
        if matches!(tok, Token::RParen | Token::RBracket | Token::RBrace)
            && !self.close_bracket(&mut tok, start, end)
        {
            return None;
        }
        self.last_end = end;
        self.last_token = Some(tok);
        if self.pending.is_empty() {
            return Some((start, tok, end));
        }
        self.pending.push_back((start, tok, end));
        None
    }

    /// The nesting count a comma resets to: the count when the innermost open
    /// bracket opened (0 outside brackets).
    fn comma_base(&self) -> u32 {
        self.brackets.last().map_or(0, |b| b.2)
    }

    /// Handles a token in the skipped rest of a too-deep logical line: only
    /// closers of brackets opened before the skip are passed on, so the
    /// parser still sees balanced brackets.
    fn skip_token(
        &mut self,
        tok: Token<'src>,
        start: usize,
        end: usize,
        open_before: usize,
    ) -> Option<Spanned<'src>> {
        match tok {
            Token::LParen | Token::LBracket | Token::LBrace => {
                self.brackets.push((tok, start, self.nesting_ops));
                None
            }
            Token::RParen | Token::RBracket | Token::RBrace => {
                let (open, _, _) = self.brackets.pop()?;
                if self.brackets.len() >= open_before {
                    return None;
                }
                // This closes a bracket the parser has seen open.
                self.skipping = Some(self.brackets.len());
                let closer = open.closer().unwrap_or(tok);
                self.last_end = end;
                self.last_token = Some(closer);
                if self.pending.is_empty() {
                    Some((start, closer, end))
                } else {
                    self.pending.push_back((start, closer, end));
                    None
                }
            }
            _ => None,
        }
    }

    /// Whether `tok`, the first token of a physical line inside brackets
    /// (starting at `start`), shows that the brackets were never closed:
    ///
    /// - a keyword that only starts statements (`def`, `return`, …);
    /// - `name =` (or `name += …`) after anything but `(`, `,` or `lambda`:
    ///   inside brackets `name =` can only be a keyword argument or a
    ///   parameter default, which follow those tokens;
    /// - a name or number right after a token that ends an expression, at a
    ///   column no deeper than the line that opened the innermost bracket (a
    ///   continuation line is indented deeper, and two juxtaposed operands are
    ///   never valid anyway).
    fn starts_new_statement(&self, tok: Token<'src>, start: usize) -> bool {
        if starts_statement_only(tok) {
            return true;
        }
        if !matches!(tok, Token::Name(_) | Token::Int(_) | Token::Float(_)) {
            return false;
        }
        if matches!(tok, Token::Name(_))
            && !matches!(
                self.last_token,
                Some(
                    Token::LParen | Token::Comma | Token::Lambda | Token::Star | Token::DoubleStar
                )
            )
        {
            let next = self.lexer.clone().next().and_then(|(res, _)| res.ok());
            if matches!(
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
            ) {
                return true;
            }
        }
        let prev_ends_expr = self.last_token.is_some_and(|t| t.ends_operand());
        let Some(&(_, open_start, _)) = self.brackets.last() else {
            return false;
        };
        prev_ends_expr
            && indentation_of(self.src, start).0 <= indentation_of(self.src, open_start).0
    }

    /// Handles a closing bracket; returns whether the token is passed on
    /// (possibly replaced, see below).
    ///
    /// - It matches the innermost opener: it closes it.
    /// - It matches an outer opener and the next token is not a closer that
    ///   the outer opener would then leave unmatched: the inner openers were
    ///   never closed.
    /// - Otherwise it is a typo for the innermost opener's closer, reported
    ///   once and replaced, or (with nothing open) a stray closer, reported
    ///   and dropped.
    fn close_bracket(&mut self, tok: &mut Token<'src>, start: usize, end: usize) -> bool {
        let matching = self
            .brackets
            .iter()
            .rposition(|(open, _, _)| open.closer() == Some(*tok));
        let top = self.brackets.len().checked_sub(1);
        if let Some(idx) = matching
            && Some(idx) != top
        {
            // A closer for an outer bracket: either the inner brackets were
            // left open, or this is a typo for the inner closer (then the
            // next token closes the outer bracket).
            let next = self.lexer.clone().next().and_then(|(res, _)| res.ok());
            if next != Some(*tok) {
                while self.brackets.len() > idx + 1 {
                    self.close_top_bracket(
                        Span::from_range(start..end),
                        format!("expected `{{}}` before this `{}`", tok.text()),
                    );
                }
                self.brackets.pop();
                return true;
            }
        }
        if matching.is_some() && matching == top {
            self.brackets.pop();
            return true;
        }
        if self.depth_reported {
            return true;
        }
        match self.brackets.pop() {
            Some((open, open_start, _)) => {
                let expected = open.closer().unwrap_or(Token::RParen);
                self.diags.push(
                    Diagnostic::error(
                        "E0005",
                        format!("`{}` does not match the open `{}`", tok.text(), open.text()),
                    )
                    .with_primary(
                        FileId::default(),
                        Span::from_range(start..end),
                        format!("expected `{}` here", expected.text()),
                    )
                    .with_secondary(
                        FileId::default(),
                        Span::from_range(open_start..open_start + 1),
                        format!("this `{}` is open", open.text()),
                    ),
                );
                *tok = expected;
                true
            }
            None => {
                self.diags.push(
                    Diagnostic::error("E0005", format!("unmatched `{}`", tok.text())).with_primary(
                        FileId::default(),
                        Span::from_range(start..end),
                        "no open bracket to close here",
                    ),
                );
                false
            }
        }
    }

    /// Reports the innermost open bracket as unclosed and closes it with a
    /// synthetic zero-width closer at the start of `primary`, the place the
    /// missing closer was noticed. `label` may contain `{}` for the closer.
    fn close_top_bracket(&mut self, primary: Span, label: String) {
        let Some((open, open_start, _)) = self.brackets.pop() else {
            return;
        };
        let Some(closer) = open.closer() else {
            return;
        };
        self.diags.push(
            Diagnostic::error("E0004", format!("unclosed `{}`", open.text()))
                .with_primary(
                    FileId::default(),
                    primary,
                    label.replace("{}", closer.text()),
                )
                .with_secondary(
                    FileId::default(),
                    Span::from_range(open_start..open_start + 1),
                    format!("this `{}` is never closed", open.text()),
                )
                .with_help(format!(
                    "add `{}` where the bracketed part ends",
                    closer.text()
                )),
        );
        let at = primary.start as usize;
        self.pending.push_back((at, closer, at));
    }

    /// Closes every open bracket at the end of the last token (`at`), as
    /// noticed at the end of the input or at a line that starts a new
    /// statement.
    fn close_all_brackets(&mut self, at: usize, noticed: &str) {
        // Brackets opened while the rest of a line was being skipped were
        // never emitted (they are inside its error token): no closers.
        if let Some(open_before) = self.skipping.take() {
            self.brackets.truncate(open_before);
        }
        let primary = point_after(self.src, at);
        while !self.brackets.is_empty() {
            self.close_top_bracket(primary, format!("expected `{{}}` {noticed}"));
        }
    }

    /// Handles a raw token while the lines of a too deeply nested block are
    /// dropped; returns whether it was dropped. The first token of a line
    /// indented no deeper than the block's enclosing level ends the skip: the
    /// error line is ended and the token is handled as usual.
    fn skip_deep(&mut self, res: &Result<Token<'src>, LexError>, start: usize) -> bool {
        let Some(skip) = self.deep_skip.as_mut() else {
            return false;
        };
        match res {
            Ok(Token::Newline) => {
                skip.at_line_start |= skip.brackets == 0;
                return true;
            }
            Ok(Token::LParen | Token::LBracket | Token::LBrace) => skip.brackets += 1,
            Ok(Token::RParen | Token::RBracket | Token::RBrace) => {
                skip.brackets = skip.brackets.saturating_sub(1);
            }
            _ => {}
        }
        if !skip.at_line_start {
            return true;
        }
        skip.at_line_start = false;
        if indentation_of(self.src, start).0 > skip.column {
            return true;
        }
        self.deep_skip = None;
        self.pending
            .push_back((self.last_end, Token::Newline, self.last_end));
        self.line_has_content = false;
        self.at_line_start = true;
        false
    }

    /// Measures the indentation of the token at `start` and emits INDENT or
    /// DEDENTs. Returns whether the line opens a block nested deeper than
    /// [`MAX_INDENT_DEPTH`] (reported here; the caller drops its lines).
    fn indentation(&mut self, start: usize) -> bool {
        let (col, alt, line_start) = indentation_of(self.src, start);
        let ws_span = Span::from_range(line_start..start);
        let (top, top_alt) = self.indents.last().copied().unwrap_or((0, 0));
        if col > top {
            if alt <= top_alt {
                self.tab_error(ws_span);
            }
            self.indents.push((col, alt));
            self.pending.push_back((start, Token::Indent, start));
            if self.indents.len() > MAX_INDENT_DEPTH {
                self.diags.push(
                    error_at(
                        "E0021",
                        "too many levels of indentation",
                        line_start..start,
                        format!("this line is nested more than {MAX_INDENT_DEPTH} blocks deep"),
                    )
                    .with_help("move the inner blocks into a helper function"),
                );
                return true;
            }
            return false;
        }
        if col == top {
            if alt != top_alt {
                self.tab_error(ws_span);
            }
            return false;
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
        false
    }

    /// Reports ambiguous tab indentation, once per file: after the first
    /// report every following line of the block would repeat it.
    fn tab_error(&mut self, span: Span) {
        if self.tab_reported {
            return;
        }
        self.tab_reported = true;
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
        self.close_all_brackets(self.last_end, "before the end of the file");
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
            LexError::InvalidCharacter if text.starts_with('\\') => {
                let at_eof = range.end >= self.src.len();
                let message = if at_eof {
                    "a line continuation `\\` at the end of the file"
                } else {
                    "`\\` must be the last character of its line"
                };
                Diagnostic::error("E0001", message)
                    .with_primary(FileId::default(), span, "line continuation character")
                    .with_help(if at_eof {
                        "remove the `\\`"
                    } else {
                        "remove the text after `\\` (comments included), or the `\\` itself"
                    })
            }
            LexError::UnclosedFStringField(offset) => {
                let at = range.start + offset as usize;
                Diagnostic::error("E0014", "unclosed `{` in an f-string")
                    .with_primary(
                        FileId::default(),
                        Span::from_range(at..at + 1),
                        "this field is never closed with `}`",
                    )
                    .with_help("close the field with `}`, or write `{{` for a literal brace")
            }
            LexError::InvalidNumber => {
                let lower = text.to_ascii_lowercase();
                let message = if lower.starts_with("0x") {
                    "invalid hexadecimal literal"
                } else if lower.starts_with("0o") {
                    "invalid octal literal"
                } else if lower.starts_with("0b") {
                    "invalid binary literal"
                } else {
                    "invalid decimal literal"
                };
                let label = if text.ends_with('_') || text.contains("__") {
                    "`_` in a number must be followed by a digit"
                } else {
                    "a number cannot be followed directly by letters"
                };
                Diagnostic::error("E0006", format!("{message} `{text}`")).with_primary(
                    FileId::default(),
                    span,
                    label,
                )
            }
            LexError::InvalidCharacter => {
                let shown = text.chars().next().map_or_else(String::new, display_char);
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
                let shown = display_char(c);
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

/// The indentation of the line containing `offset`, measured up to
/// `offset`: (column with tabs to multiples of 8, column with tab size 1,
/// line start offset).
fn indentation_of(src: &str, offset: usize) -> (u32, u32, usize) {
    let offset = offset.min(src.len());
    let line_start = src.as_bytes()[..offset]
        .iter()
        .rposition(|&b| b == b'\n' || b == b'\r')
        .map_or(0, |i| i + 1);
    let (mut col, mut alt) = (0u32, 0u32);
    for b in src.as_bytes()[line_start..offset].iter() {
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
            // Stop at the first non-blank character: for a token inside a
            // line this gives the indentation of the line.
            _ => break,
        }
    }
    (col, alt, line_start)
}

/// A one-character span just after `offset` when the next character is on
/// the same line, else an empty span there.
fn point_after(src: &str, offset: usize) -> Span {
    let offset = offset.min(src.len());
    match src[offset..].chars().next() {
        Some(c) if c != '\n' && c != '\r' => Span::from_range(offset..offset + c.len_utf8()),
        _ => Span::from_range(offset..offset),
    }
}

/// Whether `tok` is an ordinary token for the layout pass: not a line end,
/// not a bracket and not an operator that deepens an expression (see
/// [`deepens`]).
fn is_plain(tok: Token<'_>) -> bool {
    !matches!(
        tok,
        Token::Newline | Token::RParen | Token::RBracket | Token::RBrace
    ) && !deepens(tok)
}

/// Whether `tok` can make an expression tree one level deeper.
fn deepens(tok: Token<'_>) -> bool {
    matches!(
        tok,
        Token::Plus
            | Token::Minus
            | Token::Star
            | Token::DoubleStar
            | Token::Slash
            | Token::DoubleSlash
            | Token::Percent
            | Token::At
            | Token::LeftShift
            | Token::RightShift
            | Token::Amper
            | Token::Vbar
            | Token::Circumflex
            | Token::Tilde
            | Token::Not
            | Token::Await
            | Token::Lambda
            | Token::If
            | Token::Dot
            | Token::LParen
            | Token::LBracket
            | Token::LBrace
    )
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

/// A character as shown in a message: itself when visible, else escaped.
fn display_char(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        c.escape_default().to_string()
    } else {
        c.to_string()
    }
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
