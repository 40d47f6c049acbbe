//! The hand-written expression parser and the statement chunker that feeds
//! the LR(1) statement grammar.
//!
//! Expressions make up most of a kernel file, and an LR parser spends several
//! reductions (each moving its value on the parser stack) on every operand.
//! So expressions are parsed here, by recursive descent with precedence
//! climbing for the binary operators, and the generated parser only sees the
//! statement structure: [`Chunker`] walks each logical line with a small
//! automaton that mirrors the statement grammar, parses every expression
//! position it meets (conditions, targets, values, parameter lists, call
//! arguments of a class header, `with` items) into one chunk token
//! ([`Tok::Expr`] and friends), and passes every other token through.
//!
//! The tree is the one the grammar's expression rules used to build: the same
//! node kinds, the same spans (taken from token positions, so an operand's
//! span includes its parentheses where the grammar's `@L`/`@R` did), and the
//! same checks through [`Ctx`] (targets, keyword arguments, parameter order).
//!
//! # Errors and recovery
//!
//! A token that cannot continue an expression records a syntax error in the
//! same form as the generated parser's (the token found and the terminals
//! expected), so that `parser.rs` phrases both alike. Inside brackets each
//! element of a list recovers on its own: the parser skips to the next `,` or
//! to the closing bracket at the same depth (the layout pass guarantees that
//! brackets balance), and the element becomes an error node. So independent
//! mistakes in the arguments of one multi-line call give one diagnostic each.
//! An error outside brackets ends the chunk: the chunker passes an error token
//! to the statement grammar, which drops the rest of the logical line without
//! a second diagnostic (it never phrases an error at an error token).
//!
//! Recursion depth is bounded: the layout pass cuts bracket nesting at 200
//! (the rest of such a line becomes an error token) and operator chains at
//! 1000, and the parser itself stops at 400 nested expressions (E0018), which
//! catches chains the layout pass cannot see (`lambda a, b: lambda c, d: ...`).
//! The deepest accepted input parses on a 2 MB thread stack in optimised and
//! test builds; a build without optimisation needs more for 200 nested
//! brackets (the main thread's 8 MB suffice).

use std::collections::VecDeque;

use lalrpop_util::{ErrorRecovery, ParseError};
use nkic_diag::Span;

use crate::ast::*;
use crate::layout::Spanned;
use crate::parser::{Ctx, Num, ParamItem};
use crate::token::{LexError, Token};

/// A token of the statement grammar: a token of the layout pass, or a chunk
/// of already parsed expression syntax.
#[derive(Clone, Debug)]
pub enum Tok<'src> {
    /// A token passed through unchanged.
    T(Token<'src>),
    /// One expression (or tuple) in an expression position.
    Expr(Expr),
    /// The targets of `del`.
    Targets(Vec<Expr>),
    /// The parenthesised arguments of a class header.
    Args(Vec<Arg>),
    /// The parenthesised parameter list of a `def`.
    Params(Box<Params>),
    /// The items of a `with` statement.
    WithItems(Vec<WithItem>),
}

/// Marks that a syntax error was recorded and the caller must recover.
pub(crate) struct Fail;

type PResult<T> = Result<T, Fail>;

/// The terminal names of an expression start, as the generated parser names
/// them (so that `parser.rs` says "expected an expression").
const EXPR_START: &[&str] = &[
    "name",
    "int",
    "float",
    "imaginary",
    "string",
    "(",
    "[",
    "{",
    "-",
    "+",
    "~",
    "not",
    "lambda",
    "await",
    "None",
    "True",
    "False",
    "...",
];

/// Recursive-descent parser over a token stream.
pub(crate) struct Parser<'a, 'src, I> {
    pub(crate) ctx: &'a mut Ctx<'src>,
    iter: I,
    /// The current (lookahead) token.
    cur: Spanned<'src>,
    /// End offset of the last consumed token.
    prev_end: usize,
    /// Offset of the end marker when the stream runs out.
    end: usize,
    /// The token after `cur`, once it has been looked at.
    next: Option<Spanned<'src>>,
    /// Nesting of `test` calls (the recursion depth of the parser).
    depth: u32,
}

/// The deepest nesting of expressions the parser recurses into. The layout
/// pass bounds brackets (200) and operator chains, but not chains like
/// `lambda a, b: lambda c, d: ...`; deeper input is reported (E0018).
const MAX_DEPTH: u32 = 400;

/// Whether `t` can start an operand of a binary operator (`Expr` level).
fn starts_operand(t: Token<'_>) -> bool {
    t.is_atom()
        || matches!(
            t,
            Token::LParen
                | Token::LBracket
                | Token::LBrace
                | Token::Minus
                | Token::Plus
                | Token::Tilde
                | Token::Await
                | Token::Ellipsis
                | Token::Error
        )
}

/// Whether `t` can start a `test` (any expression but a starred one).
fn starts_test(t: Token<'_>) -> bool {
    starts_operand(t) || matches!(t, Token::Not | Token::Lambda)
}

/// The binary operator of `t` with its precedence level (higher binds
/// tighter; `**` is handled separately).
fn binop_of(t: Token<'_>) -> Option<(BinOp, u8)> {
    Some(match t {
        Token::Vbar => (BinOp::BitOr, 1),
        Token::Circumflex => (BinOp::BitXor, 2),
        Token::Amper => (BinOp::BitAnd, 3),
        Token::LeftShift => (BinOp::LShift, 4),
        Token::RightShift => (BinOp::RShift, 4),
        Token::Plus => (BinOp::Add, 5),
        Token::Minus => (BinOp::Sub, 5),
        Token::Star => (BinOp::Mult, 6),
        Token::Slash => (BinOp::Div, 6),
        Token::DoubleSlash => (BinOp::FloorDiv, 6),
        Token::Percent => (BinOp::Mod, 6),
        Token::At => (BinOp::MatMult, 6),
        _ => return None,
    })
}

/// The span `l..r` (offsets saturate at `u32::MAX`, as in
/// `Span::from_range`; an end before the start is clamped to it).
#[inline]
fn span(l: usize, r: usize) -> Span {
    let clamp = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    let start = clamp(l);
    Span {
        start,
        end: clamp(r).max(start),
    }
}

impl<'a, 'src, I: Iterator<Item = Spanned<'src>>> Parser<'a, 'src, I> {
    pub(crate) fn new(ctx: &'a mut Ctx<'src>, mut iter: I, end: usize) -> Self {
        let cur = iter.next().unwrap_or((end, Token::EndMarker, end));
        Parser {
            ctx,
            iter,
            cur,
            prev_end: cur.0,
            end,
            next: None,
            depth: 0,
        }
    }

    #[inline]
    fn bump(&mut self) {
        self.prev_end = self.cur.2;
        self.cur = match self.next.take() {
            Some(t) => t,
            None => match self.iter.next() {
                Some(t) => t,
                None => (self.end, Token::EndMarker, self.end),
            },
        };
    }

    /// The token after the current one.
    #[inline]
    fn peek(&mut self) -> Token<'src> {
        if let Some(t) = self.next {
            return t.1;
        }
        let t = match self.iter.next() {
            Some(t) => t,
            None => (self.end, Token::EndMarker, self.end),
        };
        self.next = Some(t);
        t.1
    }

    /// Whether the current token is an operand that the next token cannot
    /// continue (`x,` or `1)`): then the whole chain of precedence levels
    /// would only pass the atom up, and it is parsed directly.
    #[inline]
    fn at_lone_atom(&mut self) -> bool {
        // (An imaginary literal takes the general path.)
        self.cur.1.is_atom()
            && !matches!(self.cur.1, Token::Imaginary(_))
            && matches!(
                self.peek(),
                Token::Comma
                    | Token::RParen
                    | Token::RBracket
                    | Token::RBrace
                    | Token::Colon
                    | Token::Newline
                    | Token::Equal
                    | Token::Semicolon
                    | Token::EndMarker
                    | Token::ColonEqual
                    | Token::As
                    | Token::From
                    | Token::For
            )
    }

    /// Whether the stream is exhausted.
    pub(crate) fn at_end(&self) -> bool {
        self.cur.1 == Token::EndMarker
    }

    /// Records a syntax error at the current token, expecting one of the
    /// terminals `expected` (grammar names).
    fn error_here(&mut self, expected: &[&str]) {
        let expected = expected.iter().map(|e| format!("\"{e}\"")).collect();
        let (s, t, e) = self.cur;
        let error = if t == Token::EndMarker {
            ParseError::UnrecognizedEof {
                location: s,
                expected,
            }
        } else {
            ParseError::UnrecognizedToken {
                token: (s, t, e),
                expected,
            }
        };
        self.ctx.push_syntax_error(ErrorRecovery {
            error,
            dropped_tokens: Vec::new(),
        });
    }

    fn fail<T>(&mut self, expected: &[&str]) -> PResult<T> {
        self.error_here(expected);
        Err(Fail)
    }

    fn expect(&mut self, t: Token<'static>, name: &str) -> PResult<()> {
        if self.cur.1 == t {
            self.bump();
            Ok(())
        } else {
            self.fail(&[name])
        }
    }

    /// Skips tokens up to (not including) a `,` or the closer `close` at the
    /// current bracket depth.
    fn recover(&mut self, close: Token<'static>) {
        let mut depth = 0usize;
        loop {
            match self.cur.1 {
                Token::EndMarker | Token::Newline => return,
                Token::Comma if depth == 0 => return,
                t if depth == 0 && t == close => return,
                Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
                Token::RParen | Token::RBracket | Token::RBrace => {
                    if depth == 0 {
                        // A closer of an outer bracket (cannot happen with a
                        // balanced stream); stop rather than skip past it.
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips to the closer `close` at the current depth (commas included)
    /// and consumes it.
    fn skip_to_close(&mut self, close: Token<'static>) {
        loop {
            self.recover(close);
            match self.cur.1 {
                Token::Comma => self.bump(),
                t if t == close => {
                    self.bump();
                    return;
                }
                _ => return,
            }
        }
    }

    /// The rest of a comma-separated list in brackets, after its first item
    /// (already in `items`, starting at `first_start`), through the closer.
    /// Items that fail are replaced by `make_error` of their span. Returns
    /// whether a comma was seen and the end offset before the closer.
    fn rest_of_list<T>(
        &mut self,
        close: Token<'static>,
        close_name: &str,
        items: &mut Vec<T>,
        first_start: usize,
        parse_item: fn(&mut Self) -> PResult<T>,
        make_error: fn(Span) -> T,
    ) -> (bool, usize) {
        let mut item_start = first_start;
        let mut saw_comma = false;
        loop {
            match self.cur.1 {
                Token::Comma => {
                    self.bump();
                    saw_comma = true;
                    if self.cur.1 == close {
                        let before = self.prev_end;
                        self.bump();
                        return (true, before);
                    }
                    item_start = self.cur.0;
                    match parse_item(self) {
                        Ok(item) => items.push(item),
                        Err(Fail) => {
                            self.recover(close);
                            items.push(make_error(span(item_start, self.prev_end)));
                        }
                    }
                }
                t if t == close => {
                    let before = self.prev_end;
                    self.bump();
                    return (saw_comma, before);
                }
                Token::EndMarker | Token::Newline => return (saw_comma, self.prev_end),
                _ => {
                    let at = self.cur.0;
                    self.error_here(&[",", close_name]);
                    self.recover(close);
                    if let Some(last) = items.last_mut() {
                        *last = make_error(span(item_start, self.prev_end));
                    }
                    if self.cur.0 == at
                        && !matches!(self.cur.1, Token::Comma)
                        && self.cur.1 != close
                    {
                        // No progress (a closer of another kind, which the
                        // layout pass never lets through): end the list.
                        return (saw_comma, self.prev_end);
                    }
                }
            }
        }
    }

    /// Parses the first item of a list with recovery: on failure, skips to
    /// the next `,` or closer and returns an error item.
    fn first_item<T>(
        &mut self,
        close: Token<'static>,
        parse_item: fn(&mut Self) -> PResult<T>,
        make_error: fn(Span) -> T,
    ) -> (T, bool) {
        let start = self.cur.0;
        match parse_item(self) {
            Ok(item) => (item, true),
            Err(Fail) => {
                self.recover(close);
                (make_error(span(start, self.prev_end)), false)
            }
        }
    }

    // ------------------------------------------------------------ lists

    /// `testlist_star_expr`: items that may be starred; a tuple when there
    /// is a comma.
    pub(crate) fn testlist_star_expr(&mut self) -> PResult<Expr> {
        self.tuple_of(Self::test_or_star, |t| starts_test(t) || t == Token::Star)
    }

    /// Targets of `for` and comprehensions: `i, (a, b)`, `*rest`.
    pub(crate) fn expr_list(&mut self) -> PResult<Expr> {
        self.tuple_of(Self::expr_or_star, |t| {
            starts_operand(t) || t == Token::Star
        })
    }

    /// One item, or a tuple of items when a comma follows (a trailing comma
    /// is part of the tuple).
    fn tuple_of(
        &mut self,
        item: fn(&mut Self) -> PResult<Expr>,
        starts: fn(Token<'_>) -> bool,
    ) -> PResult<Expr> {
        let l = self.cur.0;
        let first = item(self)?;
        if self.cur.1 != Token::Comma {
            return Ok(first);
        }
        let mut elts = list_of(first);
        while self.cur.1 == Token::Comma {
            self.bump();
            if !starts(self.cur.1) {
                break;
            }
            elts.push(item(self)?);
        }
        Ok(Expr::new(ExprKind::Tuple(elts), span(l, self.prev_end)))
    }

    /// A starred expression at a `*`, else `other`.
    #[inline]
    fn or_star(&mut self, other: fn(&mut Self) -> PResult<Expr>) -> PResult<Expr> {
        if self.cur.1 == Token::Star {
            self.star_expr()
        } else {
            other(self)
        }
    }

    #[inline]
    fn test_or_star(&mut self) -> PResult<Expr> {
        self.or_star(Self::test)
    }

    #[inline]
    fn expr_or_star(&mut self) -> PResult<Expr> {
        self.or_star(Self::expr)
    }

    #[inline]
    fn named_expr_or_star(&mut self) -> PResult<Expr> {
        self.or_star(Self::named_expr_test)
    }

    /// The targets of `del`: a list of expressions (a trailing comma allowed).
    pub(crate) fn del_targets(&mut self) -> PResult<Vec<Expr>> {
        let mut targets = vec![self.expr_or_star()?];
        while self.cur.1 == Token::Comma {
            self.bump();
            if !(starts_operand(self.cur.1) || self.cur.1 == Token::Star) {
                break;
            }
            targets.push(self.expr_or_star()?);
        }
        Ok(targets)
    }

    /// An expression statement's value or an assignment's right-hand side:
    /// a `yield` expression or a `testlist_star_expr`.
    pub(crate) fn value(&mut self) -> PResult<Expr> {
        if self.cur.1 == Token::Yield {
            self.yield_expr()
        } else {
            self.testlist_star_expr()
        }
    }

    // ------------------------------------------------------------ tests

    fn star_expr(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        self.bump();
        let e = self.expr()?;
        Ok(Expr::new(
            ExprKind::Starred(Box::new(e)),
            span(l, self.prev_end),
        ))
    }

    /// `test [:= test]`.
    pub(crate) fn named_expr_test(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        let t = self.test()?;
        if self.cur.1 != Token::ColonEqual {
            return Ok(t);
        }
        self.bump();
        let v = self.test()?;
        Ok(self.ctx.named_expr(t, v, l, self.prev_end))
    }

    fn yield_expr(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        self.bump();
        if self.cur.1 == Token::From {
            self.bump();
            let e = self.test()?;
            return Ok(Expr::new(
                ExprKind::YieldFrom(Box::new(e)),
                span(l, self.prev_end),
            ));
        }
        let value = if starts_test(self.cur.1) || self.cur.1 == Token::Star {
            Some(Box::new(self.testlist_star_expr()?))
        } else {
            None
        };
        Ok(Expr::new(ExprKind::Yield(value), span(l, self.prev_end)))
    }

    /// Any expression but a starred one or `:=`.
    pub(crate) fn test(&mut self) -> PResult<Expr> {
        if self.at_lone_atom() {
            return self.atom();
        }
        if self.depth >= MAX_DEPTH {
            self.ctx.too_deep(self.cur.0, self.cur.2);
            return Err(Fail);
        }
        self.depth += 1;
        let res = self.test_inner();
        self.depth -= 1;
        res
    }

    fn test_inner(&mut self) -> PResult<Expr> {
        if self.cur.1 == Token::Lambda {
            return self.lambda();
        }
        let l = self.cur.0;
        let body = self.or_test()?;
        if self.cur.1 != Token::If {
            return Ok(body);
        }
        self.bump();
        let test = self.or_test()?;
        self.expect(Token::Else, "else")?;
        let orelse = self.test()?;
        Ok(Expr::new(
            ExprKind::IfExp {
                test: Box::new(test),
                body: Box::new(body),
                orelse: Box::new(orelse),
            },
            span(l, self.prev_end),
        ))
    }

    fn lambda(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        self.bump();
        let pl = self.cur.0;
        let mut items = Vec::new();
        if self.cur.1 != Token::Colon {
            loop {
                items.push(self.param_item(false)?);
                if self.cur.1 != Token::Comma {
                    break;
                }
                self.bump();
                if self.cur.1 == Token::Colon {
                    break;
                }
            }
        }
        let pr = if items.is_empty() { pl } else { self.prev_end };
        self.expect(Token::Colon, ":")?;
        let body = self.test()?;
        let params = self.ctx.params(items, pl, pr);
        Ok(Expr::new(
            ExprKind::Lambda {
                params: Box::new(params),
                body: Box::new(body),
            },
            span(l, self.prev_end),
        ))
    }

    /// The expression after `token` (an annotation's `:`, a default's `=`)
    /// when `allowed` and `token` comes next; `None` without consuming
    /// anything otherwise.
    fn test_after(&mut self, allowed: bool, token: Token<'_>) -> PResult<Option<Expr>> {
        if allowed && self.cur.1 == token {
            self.bump();
            Ok(Some(self.test()?))
        } else {
            Ok(None)
        }
    }

    /// One parameter of a `def` (with annotations) or a `lambda`.
    fn param_item(&mut self, annotated: bool) -> PResult<ParamItem> {
        let l = self.cur.0;
        match self.cur.1 {
            Token::Star => {
                self.bump();
                if !matches!(self.cur.1, Token::Name(_)) {
                    return Ok(ParamItem::Star(None, span(l, self.prev_end)));
                }
                let name = self.param_name()?;
                let annotation = if annotated && self.cur.1 == Token::Colon {
                    self.bump();
                    Some(self.test_or_star()?)
                } else {
                    None
                };
                let sp = span(l, self.prev_end);
                Ok(ParamItem::Star(
                    Some(Param {
                        name,
                        annotation,
                        default: None,
                        span: sp,
                    }),
                    sp,
                ))
            }
            Token::DoubleStar => {
                self.bump();
                let name = self.param_name()?;
                let annotation = self.test_after(annotated, Token::Colon)?;
                Ok(ParamItem::DoubleStar(Param {
                    name,
                    annotation,
                    default: None,
                    span: span(l, self.prev_end),
                }))
            }
            Token::Slash => {
                self.bump();
                Ok(ParamItem::Slash(span(l, self.prev_end)))
            }
            _ => {
                let name = self.param_name()?;
                let annotation = self.test_after(annotated, Token::Colon)?;
                let default = self.test_after(true, Token::Equal)?;
                Ok(ParamItem::Plain(Param {
                    name,
                    annotation,
                    default,
                    span: span(l, self.prev_end),
                }))
            }
        }
    }

    /// The name of a parameter (an error says so when it is missing).
    fn param_name(&mut self) -> PResult<Ident> {
        if matches!(self.cur.1, Token::Name(_)) {
            self.ident()
        } else {
            self.fail(&["parameter name"])
        }
    }

    fn ident(&mut self) -> PResult<Ident> {
        match self.cur {
            (l, Token::Name(n), r) => {
                self.bump();
                Ok(Ident {
                    name: self.ctx.name(n),
                    span: span(l, r),
                })
            }
            _ => self.fail(&["name"]),
        }
    }

    #[inline]
    fn or_test(&mut self) -> PResult<Expr> {
        self.bool_chain(Token::Or, BoolOp::Or, Self::and_test)
    }

    #[inline]
    fn and_test(&mut self) -> PResult<Expr> {
        self.bool_chain(Token::And, BoolOp::And, Self::not_test)
    }

    /// `operand (token operand)*` as one `BoolOp` node, or the lone operand.
    #[inline]
    fn bool_chain(
        &mut self,
        token: Token<'src>,
        op: BoolOp,
        operand: fn(&mut Self) -> PResult<Expr>,
    ) -> PResult<Expr> {
        let l = self.cur.0;
        let first = operand(self)?;
        if self.cur.1 != token {
            return Ok(first);
        }
        let mut values = Vec::with_capacity(2);
        values.push(first);
        while self.cur.1 == token {
            self.bump();
            values.push(operand(self)?);
        }
        Ok(Expr::new(
            ExprKind::BoolOp { op, values },
            span(l, self.prev_end),
        ))
    }

    #[inline]
    fn not_test(&mut self) -> PResult<Expr> {
        if self.cur.1 != Token::Not {
            return self.comparison();
        }
        let l = self.cur.0;
        self.bump();
        let e = self.not_test()?;
        Ok(Expr::new(
            ExprKind::UnaryOp {
                op: UnaryOp::Not,
                operand: Box::new(e),
            },
            span(l, self.prev_end),
        ))
    }

    /// Consumes a comparison operator, if one follows.
    #[inline]
    fn cmp_op(&mut self) -> PResult<Option<CmpOp>> {
        let op = match self.cur.1 {
            Token::EqEqual => CmpOp::Eq,
            Token::NotEqual => CmpOp::NotEq,
            Token::Less => CmpOp::Lt,
            Token::LessEqual => CmpOp::LtE,
            Token::Greater => CmpOp::Gt,
            Token::GreaterEqual => CmpOp::GtE,
            Token::In => CmpOp::In,
            Token::Not => {
                self.bump();
                self.expect(Token::In, "in")?;
                return Ok(Some(CmpOp::NotIn));
            }
            Token::Is => {
                self.bump();
                if self.cur.1 == Token::Not {
                    self.bump();
                    return Ok(Some(CmpOp::IsNot));
                }
                return Ok(Some(CmpOp::Is));
            }
            _ => return Ok(None),
        };
        self.bump();
        Ok(Some(op))
    }

    #[inline]
    fn comparison(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        let left = self.expr()?;
        let Some(mut op) = self.cmp_op()? else {
            return Ok(left);
        };
        let mut comparisons = Vec::new();
        loop {
            comparisons.push((op, self.expr()?));
            match self.cmp_op()? {
                Some(next) => op = next,
                None => break,
            }
        }
        Ok(Expr::new(
            ExprKind::Compare {
                left: Box::new(left),
                comparisons,
            },
            span(l, self.prev_end),
        ))
    }

    /// The binary operators from `|` down to `*`/`@`.
    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        if self.at_lone_atom() || (matches!(self.cur.1, Token::Name(_)) && self.peek() == Token::In)
        {
            return self.atom();
        }
        self.binary(1)
    }

    /// Precedence climbing: operators of level `min` and tighter, all
    /// left-associative.
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        if self.at_lone_atom() {
            return self.atom();
        }
        let l = self.cur.0;
        let mut left = self.factor()?;
        while let Some((op, level)) = binop_of(self.cur.1) {
            if level < min {
                break;
            }
            self.bump();
            let right = self.binary(level + 1)?;
            left = Expr::new(
                ExprKind::BinOp {
                    left: Box::new(left),
                    op,
                    right: Box::new(right),
                },
                span(l, self.prev_end),
            );
        }
        Ok(left)
    }

    #[inline]
    fn factor(&mut self) -> PResult<Expr> {
        let op = match self.cur.1 {
            Token::Plus => UnaryOp::UAdd,
            Token::Minus => UnaryOp::USub,
            Token::Tilde => UnaryOp::Invert,
            _ => return self.power(),
        };
        let l = self.cur.0;
        self.bump();
        let e = self.factor()?;
        Ok(Expr::new(
            ExprKind::UnaryOp {
                op,
                operand: Box::new(e),
            },
            span(l, self.prev_end),
        ))
    }

    #[inline]
    fn power(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        let base = if self.cur.1 == Token::Await {
            self.bump();
            let e = self.atom_expr()?;
            Expr::new(ExprKind::Await(Box::new(e)), span(l, self.prev_end))
        } else {
            self.atom_expr()?
        };
        if self.cur.1 != Token::DoubleStar {
            return Ok(base);
        }
        self.bump();
        let exp = self.factor()?;
        Ok(Expr::new(
            ExprKind::BinOp {
                left: Box::new(base),
                op: BinOp::Pow,
                right: Box::new(exp),
            },
            span(l, self.prev_end),
        ))
    }

    fn atom_expr(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        let mut e = self.atom()?;
        loop {
            match self.cur.1 {
                Token::LParen => {
                    self.bump();
                    let args = self.call_args();
                    self.ctx.check_args(&args);
                    e = Expr::new(
                        ExprKind::Call {
                            func: Box::new(e),
                            args,
                        },
                        span(l, self.prev_end),
                    );
                }
                Token::LBracket => {
                    self.bump();
                    let index = self.subscript_list();
                    e = Expr::new(
                        ExprKind::Subscript {
                            value: Box::new(e),
                            index: Box::new(index),
                        },
                        span(l, self.prev_end),
                    );
                }
                Token::Dot => {
                    self.bump();
                    let attr = self.ident()?;
                    e = Expr::new(
                        ExprKind::Attribute {
                            value: Box::new(e),
                            attr,
                        },
                        span(l, self.prev_end),
                    );
                }
                _ => return Ok(e),
            }
        }
    }

    // ------------------------------------------------------------ atoms

    fn atom(&mut self) -> PResult<Expr> {
        let (l, t, r) = self.cur;
        let kind = match t {
            Token::Name(n) => ExprKind::Name(self.ctx.name(n)),
            Token::Int(s) => {
                self.bump();
                return Ok(self.ctx.number(Num::Int(s), l, r));
            }
            Token::Float(s) => {
                self.bump();
                return Ok(self.ctx.number(Num::Float(s), l, r));
            }
            Token::Imaginary(s) => {
                self.bump();
                return Ok(self.ctx.number(Num::Imaginary(s), l, r));
            }
            Token::String(s) => {
                self.bump();
                if !matches!(self.cur.1, Token::String(_)) {
                    return Ok(self.ctx.strings(&[(l, s, r)]));
                }
                let mut parts = vec![(l, s, r)];
                while let (sl, Token::String(s), sr) = self.cur {
                    parts.push((sl, s, sr));
                    self.bump();
                }
                return Ok(self.ctx.strings(&parts));
            }
            Token::Ellipsis => ExprKind::Ellipsis,
            Token::None => ExprKind::None,
            Token::True => ExprKind::Bool(true),
            Token::False => ExprKind::Bool(false),
            Token::Error => ExprKind::Error,
            Token::LParen => return Ok(self.paren()),
            Token::LBracket => return Ok(self.list_display()),
            Token::LBrace => return Ok(self.brace_display()),
            _ => return self.fail(EXPR_START),
        };
        self.bump();
        Ok(Expr::new(kind, span(l, r)))
    }

    /// An element of a parenthesised group: `context as target` is set aside
    /// for a `with` statement (see `Ctx::as_item`).
    fn paren_elem(&mut self) -> PResult<Expr> {
        if self.cur.1 == Token::Star {
            return self.star_expr();
        }
        let l = self.cur.0;
        let t = self.test()?;
        match self.cur.1 {
            Token::ColonEqual => {
                self.bump();
                let v = self.test()?;
                Ok(self.ctx.named_expr(t, v, l, self.prev_end))
            }
            Token::As => {
                self.bump();
                let target = self.expr()?;
                Ok(self.ctx.as_item(t, target))
            }
            _ => Ok(t),
        }
    }

    /// After `(`: grouping, a tuple, a generator expression or `(yield)`.
    fn paren(&mut self) -> Expr {
        let l = self.cur.0;
        self.bump();
        match self.cur.1 {
            Token::RParen => {
                self.bump();
                return Expr::new(ExprKind::Tuple(Vec::new()), span(l, self.prev_end));
            }
            Token::Yield => {
                let start = self.cur.0;
                let e = match self.yield_expr() {
                    Ok(e) => e,
                    Err(Fail) => {
                        self.recover(Token::RParen);
                        Expr::error(span(start, self.prev_end))
                    }
                };
                if self.cur.1 == Token::RParen {
                    self.bump();
                    return e;
                }
                self.error_here(&[")"]);
                self.skip_to_close(Token::RParen);
                return Expr::error(span(l, self.prev_end));
            }
            _ => {}
        }
        let first_start = self.cur.0;
        let (first, ok) = self.first_item(Token::RParen, Self::paren_elem, Expr::error);
        match self.cur.1 {
            Token::RParen => {
                self.bump();
                first
            }
            Token::For | Token::Async if ok => {
                self.comprehension(l, Token::RParen, ")", |generators| ExprKind::GeneratorExp {
                    elt: Box::new(first),
                    generators,
                })
            }
            _ => {
                let mut elts = list_of(first);
                let (saw_comma, _) = self.rest_of_list(
                    Token::RParen,
                    ")",
                    &mut elts,
                    first_start,
                    Self::paren_elem,
                    Expr::error,
                );
                if !saw_comma && elts.len() == 1 {
                    // `(a b)`: the element became an error node.
                    return elts.pop().unwrap_or_else(|| Expr::error(span(l, l)));
                }
                Expr::new(ExprKind::Tuple(elts), span(l, self.prev_end))
            }
        }
    }

    /// The comprehension that began at `l` and whose element was parsed:
    /// `kind` of its `for ... in ...` clauses and the closer `close`, or an
    /// error expression (after recovering to the closer) when they are
    /// malformed or the closer does not follow.
    fn comprehension(
        &mut self,
        l: usize,
        close: Token<'static>,
        close_name: &str,
        kind: impl FnOnce(Vec<Comprehension>) -> ExprKind,
    ) -> Expr {
        let kind = self.comprehension_tail(close, close_name).map(kind);
        let span = span(l, self.prev_end);
        kind.map_or_else(|| Expr::error(span), |kind| Expr::new(kind, span))
    }

    fn comprehension_tail(
        &mut self,
        close: Token<'static>,
        close_name: &str,
    ) -> Option<Vec<Comprehension>> {
        let generators = match self.comp_for() {
            Ok(g) => g,
            Err(Fail) => {
                self.skip_to_close(close);
                return None;
            }
        };
        if self.cur.1 == close {
            self.bump();
            return Some(generators);
        }
        self.error_here(&[close_name]);
        self.skip_to_close(close);
        None
    }

    fn comp_for(&mut self) -> PResult<Vec<Comprehension>> {
        let mut generators = Vec::new();
        while matches!(self.cur.1, Token::For | Token::Async) {
            let l = self.cur.0;
            let is_async = self.cur.1 == Token::Async;
            if is_async {
                self.bump();
            }
            self.expect(Token::For, "for")?;
            let target = self.expr_list()?;
            self.ctx.check_target(&target, "for");
            self.expect(Token::In, "in")?;
            let iter = self.or_test()?;
            let mut ifs = Vec::new();
            while self.cur.1 == Token::If {
                self.bump();
                ifs.push(self.or_test()?);
            }
            generators.push(Comprehension {
                is_async,
                target,
                iter,
                ifs,
                span: span(l, self.prev_end),
            });
        }
        Ok(generators)
    }

    /// After `[`: a list display or a list comprehension.
    fn list_display(&mut self) -> Expr {
        let l = self.cur.0;
        self.bump();
        if self.cur.1 == Token::RBracket {
            self.bump();
            return Expr::new(ExprKind::List(Vec::new()), span(l, self.prev_end));
        }
        let first_start = self.cur.0;
        let (first, ok) = self.first_item(Token::RBracket, Self::named_expr_or_star, Expr::error);
        if ok && matches!(self.cur.1, Token::For | Token::Async) {
            return self.comprehension(l, Token::RBracket, "]", |generators| ExprKind::ListComp {
                elt: Box::new(first),
                generators,
            });
        }
        let mut elts = list_of(first);
        self.rest_of_list(
            Token::RBracket,
            "]",
            &mut elts,
            first_start,
            Self::named_expr_or_star,
            Expr::error,
        );
        Expr::new(ExprKind::List(elts), span(l, self.prev_end))
    }

    fn dict_item(&mut self) -> PResult<DictItem> {
        if self.cur.1 == Token::DoubleStar {
            self.bump();
            return Ok(DictItem::Unpack(self.expr()?));
        }
        let k = self.test()?;
        self.expect(Token::Colon, ":")?;
        let v = self.test()?;
        Ok(DictItem::KeyValue(k, v))
    }

    /// After `{`: a dict or set display or comprehension.
    fn brace_display(&mut self) -> Expr {
        let l = self.cur.0;
        self.bump();
        if self.cur.1 == Token::RBrace {
            self.bump();
            return Expr::new(ExprKind::Dict(Vec::new()), span(l, self.prev_end));
        }
        let first_start = self.cur.0;
        if self.cur.1 == Token::DoubleStar {
            return self.dict_rest(l, first_start, None);
        }
        let (first, ok) = self.first_item(Token::RBrace, Self::named_expr_or_star, Expr::error);
        if !ok {
            // The first item says nothing about the kind; a `:` in the
            // second item makes it a dict.
            return self.set_rest(l, first_start, first);
        }
        if self.cur.1 == Token::Colon {
            self.bump();
            let value = match self.test() {
                Ok(v) => v,
                Err(Fail) => {
                    self.recover(Token::RBrace);
                    let item = DictItem::KeyValue(
                        Expr::error(span(first_start, self.prev_end)),
                        Expr::error(span(self.prev_end, self.prev_end)),
                    );
                    return self.dict_rest(l, first_start, Some(item));
                }
            };
            if matches!(self.cur.1, Token::For | Token::Async) {
                return self.comprehension(l, Token::RBrace, "}", |generators| {
                    ExprKind::DictComp {
                        key: Box::new(first),
                        value: Box::new(value),
                        generators,
                    }
                });
            }
            return self.dict_rest(l, first_start, Some(DictItem::KeyValue(first, value)));
        }
        if matches!(self.cur.1, Token::For | Token::Async) {
            return self.comprehension(l, Token::RBrace, "}", |generators| ExprKind::SetComp {
                elt: Box::new(first),
                generators,
            });
        }
        self.set_rest(l, first_start, first)
    }

    /// The rest of a dict display whose first item (if not yet parsed, the
    /// current token starts it) is `first`.
    fn dict_rest(&mut self, l: usize, first_start: usize, first: Option<DictItem>) -> Expr {
        let first = match first {
            Some(item) => item,
            None => {
                self.first_item(Token::RBrace, Self::dict_item, dict_error)
                    .0
            }
        };
        let mut items = list_of(first);
        self.rest_of_list(
            Token::RBrace,
            "}",
            &mut items,
            first_start,
            Self::dict_item,
            dict_error,
        );
        Expr::new(ExprKind::Dict(items), span(l, self.prev_end))
    }

    fn set_rest(&mut self, l: usize, first_start: usize, first: Expr) -> Expr {
        let mut elts = list_of(first);
        self.rest_of_list(
            Token::RBrace,
            "}",
            &mut elts,
            first_start,
            Self::named_expr_or_star,
            Expr::error,
        );
        Expr::new(ExprKind::Set(elts), span(l, self.prev_end))
    }

    /// After the `(` of a call: the arguments through the `)`.
    pub(crate) fn call_args(&mut self) -> Vec<Arg> {
        if self.cur.1 == Token::RParen {
            self.bump();
            return Vec::new();
        }
        let first_start = self.cur.0;
        let (first, _) = self.first_item(Token::RParen, Self::argument, arg_error);
        let mut args = list_of(first);
        self.rest_of_list(
            Token::RParen,
            ")",
            &mut args,
            first_start,
            Self::argument,
            arg_error,
        );
        args
    }

    fn argument(&mut self) -> PResult<Arg> {
        let l = self.cur.0;
        match self.cur.1 {
            Token::Star => {
                self.bump();
                let e = self.test()?;
                return Ok(Arg {
                    kind: ArgKind::Star(e),
                    span: span(l, self.prev_end),
                });
            }
            Token::DoubleStar => {
                self.bump();
                let e = self.test()?;
                return Ok(Arg {
                    kind: ArgKind::DoubleStar(e),
                    span: span(l, self.prev_end),
                });
            }
            _ => {}
        }
        let t = self.test()?;
        let e = match self.cur.1 {
            Token::ColonEqual => {
                self.bump();
                let v = self.test()?;
                self.ctx.named_expr(t, v, l, self.prev_end)
            }
            Token::Equal => {
                self.bump();
                let v = self.test()?;
                return Ok(self.ctx.keyword_arg(t, v, l, self.prev_end));
            }
            Token::For | Token::Async => {
                let generators = self.comp_for()?;
                Expr::new(
                    ExprKind::GeneratorExp {
                        elt: Box::new(t),
                        generators,
                    },
                    span(l, self.prev_end),
                )
            }
            _ => t,
        };
        Ok(Arg {
            kind: ArgKind::Positional(e),
            span: span(l, self.prev_end),
        })
    }

    /// After the `[` of a subscript: the index through the `]`.
    fn subscript_list(&mut self) -> Expr {
        let l = self.cur.0;
        let (first, _) = self.first_item(Token::RBracket, Self::subscript, Expr::error);
        if self.cur.1 == Token::RBracket {
            self.bump();
            return first;
        }
        let mut elts = list_of(first);
        let (saw_comma, before) = self.rest_of_list(
            Token::RBracket,
            "]",
            &mut elts,
            l,
            Self::subscript,
            Expr::error,
        );
        if !saw_comma && elts.len() == 1 {
            return elts.pop().unwrap_or_else(|| Expr::error(span(l, l)));
        }
        Expr::new(ExprKind::Tuple(elts), span(l, before))
    }

    fn subscript(&mut self) -> PResult<Expr> {
        let l = self.cur.0;
        let lower = match self.cur.1 {
            Token::Star => return self.star_expr(),
            Token::Colon => None,
            _ => {
                let t = self.test()?;
                match self.cur.1 {
                    Token::ColonEqual => {
                        self.bump();
                        let v = self.test()?;
                        return Ok(self.ctx.named_expr(t, v, l, self.prev_end));
                    }
                    Token::Colon => Some(Box::new(t)),
                    _ => return Ok(t),
                }
            }
        };
        self.bump();
        let upper = if starts_test(self.cur.1) {
            Some(Box::new(self.test()?))
        } else {
            None
        };
        let step = if self.cur.1 == Token::Colon {
            self.bump();
            if starts_test(self.cur.1) {
                Some(Box::new(self.test()?))
            } else {
                None
            }
        } else {
            None
        };
        Ok(Expr::new(
            ExprKind::Slice { lower, upper, step },
            span(l, self.prev_end),
        ))
    }

    /// After the `(` of a `def`: the parameter items through the `)`.
    /// Malformed items are reported and left out.
    fn def_params(&mut self) -> Vec<ParamItem> {
        let mut items = Vec::new();
        loop {
            match self.cur.1 {
                Token::RParen => {
                    self.bump();
                    return items;
                }
                Token::EndMarker | Token::Newline => return items,
                _ => {}
            }
            let at = self.cur.0;
            match self.param_item(true) {
                Ok(item) => items.push(item),
                Err(Fail) => {
                    self.recover(Token::RParen);
                    if self.cur.0 == at && !matches!(self.cur.1, Token::Comma | Token::RParen) {
                        return items;
                    }
                }
            }
            match self.cur.1 {
                Token::Comma => self.bump(),
                Token::RParen => {}
                Token::EndMarker | Token::Newline => return items,
                _ => {
                    let at = self.cur.0;
                    self.error_here(&[",", ")"]);
                    self.recover(Token::RParen);
                    match self.cur.1 {
                        Token::Comma => self.bump(),
                        Token::RParen => {}
                        // No progress (see `rest_of_list`): end the list.
                        _ if self.cur.0 == at => return items,
                        _ => {}
                    }
                }
            }
        }
    }
}

/// A vector for a list that starts with `first`, with room for a few more
/// items (growing from one item would reallocate at once).
fn list_of<T>(first: T) -> Vec<T> {
    let mut v = Vec::with_capacity(4);
    v.push(first);
    v
}

fn arg_error(sp: Span) -> Arg {
    Arg {
        kind: ArgKind::Positional(Expr::error(sp)),
        span: sp,
    }
}

fn dict_error(sp: Span) -> DictItem {
    DictItem::KeyValue(Expr::error(sp), Expr::error(Span::new(sp.end, sp.end)))
}

// ---------------------------------------------------------------- chunker

/// Turns the layout tokens of a module into the token stream of the
/// statement grammar (see the module documentation).
pub(crate) struct Chunker<'a, 'src, I> {
    p: Parser<'a, 'src, I>,
    /// Tokens of the current logical line, ready for the statement parser.
    out: VecDeque<(usize, Tok<'src>, usize)>,
    /// Syntax errors recorded before the current line.
    errors_at_line_start: usize,
}

impl<'a, 'src, I: Iterator<Item = Spanned<'src>>> Iterator for Chunker<'a, 'src, I> {
    type Item = Result<(usize, Tok<'src>, usize), LexError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(t) = self.out.pop_front() {
                return Some(Ok(t));
            }
            if self.p.at_end() {
                return None;
            }
            self.line();
        }
    }
}

/// How an expression position is parsed.
#[derive(Clone, Copy)]
enum Kind {
    /// `if`/`while` conditions and decorators.
    NamedTest,
    /// A single `test`.
    Test,
    /// `for` targets.
    Targets,
    /// Values: `return`, `for ... in`, expression statements.
    List,
    /// A value that may also be a `yield` expression.
    Value,
}

impl<'a, 'src, I: Iterator<Item = Spanned<'src>>> Chunker<'a, 'src, I> {
    pub(crate) fn new(ctx: &'a mut Ctx<'src>, iter: I, end: usize) -> Self {
        Chunker {
            p: Parser::new(ctx, iter, end),
            out: VecDeque::new(),
            errors_at_line_start: 0,
        }
    }

    /// Passes the current token through.
    fn pass(&mut self) {
        let (l, t, r) = self.p.cur;
        self.out.push_back((l, Tok::T(t), r));
        self.p.bump();
    }

    /// Passes the current token through if it is `t`.
    fn pass_if(&mut self, t: Token<'static>) -> bool {
        if self.p.cur.1 == t {
            self.pass();
            true
        } else {
            false
        }
    }

    /// Parses an expression position into a chunk token; `false` when it
    /// failed (an error token was passed and the line is being skipped).
    fn chunk(&mut self, kind: Kind) -> bool {
        let l = self.p.cur.0;
        let res = match kind {
            Kind::NamedTest => self.p.named_expr_test(),
            Kind::Test => self.p.test(),
            Kind::Targets => self.p.expr_list(),
            Kind::List => self.p.testlist_star_expr(),
            Kind::Value => self.p.value(),
        };
        match res {
            Ok(e) => {
                self.out.push_back((l, Tok::Expr(e), self.p.prev_end));
                true
            }
            Err(Fail) => {
                self.fail_line(l);
                false
            }
        }
    }

    /// After a failed chunk: an error token (the statement grammar drops the
    /// statement without a second diagnostic), then the rest of the line.
    fn fail_line(&mut self, from: usize) {
        let at = self.p.cur.0;
        self.out.push_back((from.min(at), Tok::T(Token::Error), at));
        self.skip_line();
    }

    /// Passes the rest of the logical line through, up to and including its
    /// NEWLINE.
    fn skip_line(&mut self) {
        loop {
            match self.p.cur.1 {
                Token::EndMarker => return,
                Token::Newline => {
                    self.pass();
                    return;
                }
                _ => self.pass(),
            }
        }
    }

    /// A token the statement grammar does not expect here: passes the rest
    /// of the line through for the grammar to report. When the expression
    /// parser already reported an error on this line (and recovered inside
    /// brackets), that error explains this one too: an error token first
    /// keeps the grammar from phrasing a second diagnostic.
    fn unexpected(&mut self) {
        if self.p.ctx.syntax_error_count() > self.errors_at_line_start {
            self.fail_line(self.p.cur.0);
        } else {
            self.skip_line();
        }
    }

    /// Handles one logical line (or one INDENT/DEDENT).
    fn line(&mut self) {
        self.errors_at_line_start = self.p.ctx.syntax_error_count();
        match self.p.cur.1 {
            Token::Indent | Token::Dedent | Token::Newline => self.pass(),
            Token::EndMarker => {}
            Token::If | Token::Elif | Token::While => {
                self.pass();
                if self.chunk(Kind::NamedTest) {
                    self.colon_then_body();
                }
            }
            Token::Else | Token::Try | Token::Finally => {
                self.pass();
                self.colon_then_body();
            }
            Token::For => self.for_stmt(),
            Token::With => self.with_stmt(),
            Token::Def => self.def_stmt(),
            Token::Async => {
                self.pass();
                match self.p.cur.1 {
                    Token::For => self.for_stmt(),
                    Token::With => self.with_stmt(),
                    Token::Def => self.def_stmt(),
                    _ => self.unexpected(),
                }
            }
            Token::Except => {
                self.pass();
                if self.p.cur.1 != Token::Colon {
                    if !self.chunk(Kind::Test) {
                        return;
                    }
                    if self.pass_if(Token::As) && !self.pass_name() {
                        return self.unexpected();
                    }
                }
                self.colon_then_body();
            }
            Token::Class => {
                self.pass();
                if !self.pass_name() {
                    return self.unexpected();
                }
                if self.p.cur.1 == Token::LParen {
                    let l = self.p.cur.0;
                    self.p.bump();
                    let args = self.p.call_args();
                    self.p.ctx.check_args(&args);
                    self.out.push_back((l, Tok::Args(args), self.p.prev_end));
                }
                self.colon_then_body();
            }
            Token::At => {
                self.pass();
                if self.chunk(Kind::NamedTest) && !self.pass_if(Token::Newline) {
                    self.unexpected();
                }
            }
            _ => self.simple_stmts(),
        }
    }

    fn pass_name(&mut self) -> bool {
        if matches!(self.p.cur.1, Token::Name(_)) {
            self.pass();
            true
        } else {
            false
        }
    }

    fn colon_then_body(&mut self) {
        if !self.pass_if(Token::Colon) {
            return self.unexpected();
        }
        if self.p.cur.1 == Token::Newline {
            self.pass();
        } else {
            self.simple_stmts();
        }
    }

    fn for_stmt(&mut self) {
        self.pass();
        if !self.chunk(Kind::Targets) {
            return;
        }
        if !self.pass_if(Token::In) {
            return self.unexpected();
        }
        if self.chunk(Kind::List) {
            self.colon_then_body();
        }
    }

    fn with_stmt(&mut self) {
        let with_start = self.p.cur.0;
        self.pass();
        let l = self.p.cur.0;
        let mut items = Vec::new();
        loop {
            let item_l = self.p.cur.0;
            let context = match self.p.test() {
                Ok(c) => c,
                Err(Fail) => {
                    self.p.ctx.drop_as_items_from(with_start);
                    return self.fail_line(l);
                }
            };
            let target = if self.p.cur.1 == Token::As {
                self.p.bump();
                match self.p.expr() {
                    Ok(t) => {
                        self.p.ctx.check_target(&t, "with");
                        Some(t)
                    }
                    Err(Fail) => {
                        self.p.ctx.drop_as_items_from(with_start);
                        return self.fail_line(l);
                    }
                }
            } else {
                None
            };
            items.push(WithItem {
                context,
                target,
                span: span(item_l, self.p.prev_end),
            });
            if self.p.cur.1 != Token::Comma {
                break;
            }
            self.p.bump();
        }
        let items = self.p.ctx.with_items(items);
        self.out
            .push_back((l, Tok::WithItems(items), self.p.prev_end));
        self.colon_then_body();
    }

    fn def_stmt(&mut self) {
        self.pass();
        if !self.pass_name() {
            return self.unexpected();
        }
        let name_end = self.p.prev_end;
        if self.p.cur.1 != Token::LParen {
            return self.unexpected();
        }
        let l = self.p.cur.0;
        self.p.bump();
        let items = self.p.def_params();
        let params = self.p.ctx.params(items, name_end, self.p.prev_end);
        self.out
            .push_back((l, Tok::Params(Box::new(params)), self.p.prev_end));
        if self.pass_if(Token::Arrow) && !self.chunk(Kind::Test) {
            return;
        }
        self.colon_then_body();
    }

    /// Simple statements separated by `;`, through the NEWLINE.
    fn simple_stmts(&mut self) {
        loop {
            if !self.small_stmt() {
                return;
            }
            match self.p.cur.1 {
                Token::Semicolon => {
                    self.pass();
                    if self.p.cur.1 == Token::Newline {
                        self.pass();
                        return;
                    }
                }
                Token::Newline => {
                    self.pass();
                    return;
                }
                _ => return self.unexpected(),
            }
        }
    }

    /// One simple statement; `false` when the line is already handled
    /// (skipped after an error).
    fn small_stmt(&mut self) -> bool {
        match self.p.cur.1 {
            Token::Pass | Token::Break | Token::Continue => {
                self.pass();
                true
            }
            Token::Return => {
                self.pass();
                let t = self.p.cur.1;
                if starts_test(t) || t == Token::Star {
                    return self.chunk(Kind::List);
                }
                true
            }
            Token::Raise => {
                self.pass();
                if starts_test(self.p.cur.1) {
                    if !self.chunk(Kind::Test) {
                        return false;
                    }
                    if self.pass_if(Token::From) {
                        return self.chunk(Kind::Test);
                    }
                }
                true
            }
            Token::Global | Token::Nonlocal | Token::Import | Token::From => {
                // Names, dots, `as`, `*` and parentheses only: passed through.
                loop {
                    match self.p.cur.1 {
                        Token::Newline | Token::Semicolon | Token::EndMarker => return true,
                        _ => self.pass(),
                    }
                }
            }
            Token::Del => {
                self.pass();
                let l = self.p.cur.0;
                match self.p.del_targets() {
                    Ok(targets) => {
                        self.out
                            .push_back((l, Tok::Targets(targets), self.p.prev_end));
                        true
                    }
                    Err(Fail) => {
                        self.fail_line(l);
                        false
                    }
                }
            }
            Token::Assert => {
                self.pass();
                self.test_then(Token::Comma, Kind::Test)
            }
            t if starts_test(t) || matches!(t, Token::Star | Token::Yield) => self.expr_stmt(),
            _ => {
                self.unexpected();
                false
            }
        }
    }

    fn expr_stmt(&mut self) -> bool {
        if !self.chunk(Kind::Value) {
            return false;
        }
        match self.p.cur.1 {
            Token::Equal => {
                while self.pass_if(Token::Equal) {
                    if !self.chunk(Kind::Value) {
                        return false;
                    }
                }
                true
            }
            Token::PlusEqual
            | Token::MinusEqual
            | Token::StarEqual
            | Token::AtEqual
            | Token::SlashEqual
            | Token::PercentEqual
            | Token::DoubleStarEqual
            | Token::LeftShiftEqual
            | Token::RightShiftEqual
            | Token::VbarEqual
            | Token::CircumflexEqual
            | Token::AmperEqual
            | Token::DoubleSlashEqual => {
                self.pass();
                self.chunk(Kind::Value)
            }
            Token::Colon => {
                self.pass();
                self.test_then(Token::Equal, Kind::Value)
            }
            _ => true,
        }
    }

    /// A test, then optionally `sep` and a chunk of `kind` (`assert t, msg`
    /// and `x: t = value`).
    fn test_then(&mut self, sep: Token<'static>, kind: Kind) -> bool {
        if !self.chunk(Kind::Test) {
            return false;
        }
        if self.pass_if(sep) {
            return self.chunk(kind);
        }
        true
    }
}

/// Parses a whole token stream as one expression (a tuple if it has
/// top-level commas); `None` after a reported error.
pub(crate) fn expression<'src, I: Iterator<Item = Spanned<'src>>>(
    ctx: &mut Ctx<'src>,
    tokens: I,
    end: usize,
) -> Option<Expr> {
    let mut p = Parser::new(ctx, tokens, end);
    let e = p.testlist_star_expr().ok()?;
    if !p.at_end() {
        p.error_here(&[]);
        return None;
    }
    Some(e)
}
