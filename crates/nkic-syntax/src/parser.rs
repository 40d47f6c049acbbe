//! Glue between the token stream and the generated LR(1) statement
//! parser: the context the grammar actions and the expression parser use,
//! the semantic checks that keep the grammar unambiguous, and the mapping of
//! syntax errors to kernel-author messages.
//!
//! Nothing outside this module and `exprs.rs` names lalrpop types. Grammar
//! actions and the expression parser call methods of [`Ctx`], which record
//! diagnostics; syntax errors (those lalrpop recovers from with `!` in the
//! grammar and those of the expression parser, recorded in the same form)
//! are collected as raw `ErrorRecovery` values and turned into
//! [`Diagnostic`]s after the run, when the token list is at hand to phrase
//! them ("expected an expression after `=`").

use lalrpop_util::{ErrorRecovery, ParseError};
use nkic_diag::{Diagnostic, FileId, Span};

use crate::ast::*;
use crate::exprs::{self, Chunker, Tok};
use crate::layout::{self, Spanned};
use crate::literal;
use crate::nki::TopParser;
use crate::token::{LexError, Token};
use crate::{SPLIT_HELP, error_at};

/// A number literal token handed to [`Ctx::number`].
pub enum Num<'src> {
    Int(&'src str),
    Float(&'src str),
    Imaginary(&'src str),
}

/// One item of a parameter list before the order checks.
pub enum ParamItem {
    Plain(Param),
    /// `*name` or a bare `*` (with the span of the whole item).
    Star(Option<Param>, Span),
    DoubleStar(Param),
    /// `/`.
    Slash(Span),
}

/// The statements of one logical line: usually one, so without a vector.
pub enum Line {
    One(Box<Stmt>),
    Many(Vec<Stmt>),
}

impl Line {
    /// Appends the statements to `out`.
    pub(crate) fn push_into(self, out: &mut Vec<Stmt>) {
        match self {
            Line::One(s) => out.push(*s),
            Line::Many(v) => out.extend(v),
        }
    }

    pub(crate) fn into_vec(self) -> Vec<Stmt> {
        match self {
            Line::One(s) => {
                let mut v = Vec::with_capacity(4);
                v.push(*s);
                v
            }
            Line::Many(v) => v,
        }
    }

    /// Adds one more statement of the same line (after a `;`).
    pub(crate) fn push(self, stmt: Stmt) -> Line {
        let mut v = self.into_vec();
        v.push(stmt);
        Line::Many(v)
    }
}

/// The most `elif` branches of one `if` statement (each nests one level).
const MAX_ELIFS: usize = 1000;

/// A syntax error found by the expression parser, in the generated parser's
/// form.
pub(crate) type Recovery<'src> = ErrorRecovery<usize, Token<'src>, LexError>;

/// A syntax error the statement grammar recovered from.
type StmtRecovery<'src> = ErrorRecovery<usize, Tok<'src>, LexError>;

/// State shared by the expression parser or the grammar actions of one
/// parse (including the nested parses of f-string fields).
pub struct Ctx<'src> {
    pub(crate) src: &'src str,
    /// Diagnostics from actions and from decoding literals.
    pub(crate) diags: Vec<Diagnostic>,
    /// Raw syntax errors of the expression parser, phrased after the run.
    errors: Vec<Recovery<'src>>,
    /// Raw syntax errors the statement grammar recovered from.
    stmt_errors: Vec<StmtRecovery<'src>>,
    /// Regions of statements that were replaced by errors.
    error_regions: Vec<Span>,
    /// End offset of the last statement that was replaced by an error.
    last_error_end: Option<usize>,
    /// Nesting of f-string fields being parsed (bounded).
    fstring_depth: u32,
    /// Whether an expression nested too deeply for the parser was reported.
    too_deep_reported: bool,
    /// `context as target` items seen inside parentheses, waiting for their
    /// `with` statement: (span of the context, target).
    as_items: Vec<(Span, Expr)>,
    /// The names read so far, by [`name_hash`]: an identifier spelled
    /// again shares the first one's text (`Ctx::name`).
    names: hashbrown::HashTable<Name>,
}

/// Parses a whole file.
pub fn parse_module(src: &str) -> (Module, Vec<Diagnostic>) {
    let mut stream = layout::Stream::new(src, layout::Config::default());
    let mut ectx = Ctx::new(src);
    let mut sctx = Ctx::new(src);
    let result = {
        let chunker = Chunker::new(&mut ectx, &mut stream, src.len());
        let tokens = std::iter::once(Ok((0, Tok::T(Token::StartModule), 0)))
            .chain(chunker)
            .chain(std::iter::once(Ok((
                src.len(),
                Tok::T(Token::EndMarker),
                src.len(),
            ))));
        TopParser::new().parse(&mut sctx, tokens)
    };
    let mut diags = stream.into_diagnostics();
    // `as` items inside statements that were dropped are part of their error.
    let regions = std::mem::take(&mut sctx.error_regions);
    ectx.as_items
        .retain(|(span, _)| !regions.iter().any(|r| r.encloses(*span)));
    ectx.report_stray_as_items();
    let failed = result.is_err();
    if !ectx.errors.is_empty() || !sctx.stmt_errors.is_empty() || failed {
        // The token vector is needed only to phrase syntax errors; it is
        // rebuilt then instead of being kept for every parse.
        let tokens = layout::tokenize(src, layout::Config::default()).0;
        for rec in std::mem::take(&mut ectx.errors) {
            if let Some(diag) = describe(&rec.error, &tokens, src) {
                diags.push(diag);
            }
        }
        let stmt_errors = std::mem::take(&mut sctx.stmt_errors);
        let fatal = result.as_ref().err().cloned();
        for err in stmt_errors.into_iter().map(|r| r.error).chain(fatal) {
            let err = raw_error(err, &tokens);
            if let Some(diag) = describe(&err, &tokens, src) {
                diags.push(diag);
            }
        }
    }
    let module = match result {
        Ok(module) => module,
        Err(_) => Module {
            body: Vec::new(),
            span: Span::from_range(0..src.len()),
            host_code: Vec::new(),
        },
    };
    if ectx.too_deep_reported {
        // The parser's depth limit and the layout pass's operator limit may
        // both cut the same line: keep the first report of that line.
        let first = ectx
            .diags
            .iter()
            .filter(|d| d.code == "E0018")
            .find_map(|d| d.primary.as_ref().map(|p| p.span.start as usize));
        if let Some(first) = first {
            diags.retain(|d| {
                let Some(at) = d.primary.as_ref().map(|p| p.span.start as usize) else {
                    return true;
                };
                !(d.code == "E0018"
                    && at >= first
                    && !src[first..at.min(src.len())].contains(['\n', '\r']))
            });
        }
    }
    diags.append(&mut ectx.diags);
    diags.append(&mut sctx.diags);
    sort_diagnostics(&mut diags);
    (module, diags)
}

/// Maps an error of the statement grammar to one over layout tokens: a chunk
/// token becomes the layout token it starts with.
fn raw_error<'src>(
    err: ParseError<usize, Tok<'src>, LexError>,
    tokens: &[Spanned<'src>],
) -> ParseError<usize, Token<'src>, LexError> {
    let at = |s: usize| {
        let i = tokens.partition_point(|t| t.0 < s);
        tokens.get(i).map_or(Token::Error, |t| t.1)
    };
    match err {
        ParseError::UnrecognizedToken {
            token: (s, tok, e),
            expected,
        } => ParseError::UnrecognizedToken {
            token: (s, raw_token(tok).unwrap_or_else(|| at(s)), e),
            expected,
        },
        ParseError::ExtraToken { token: (s, tok, e) } => ParseError::ExtraToken {
            token: (s, raw_token(tok).unwrap_or_else(|| at(s)), e),
        },
        ParseError::InvalidToken { location } => ParseError::InvalidToken { location },
        ParseError::UnrecognizedEof { location, expected } => {
            ParseError::UnrecognizedEof { location, expected }
        }
        ParseError::User { error } => ParseError::User { error },
    }
}

/// The layout token of a pass-through token; `None` for a chunk.
fn raw_token(tok: Tok<'_>) -> Option<Token<'_>> {
    match tok {
        Tok::T(t) => Some(t),
        _ => None,
    }
}

/// Parses `src` as one expression (a tuple if it has top-level commas).
pub fn parse_expression(src: &str) -> (Expr, Vec<Diagnostic>) {
    let mut ctx = Ctx::new(src);
    let expr = ctx.parse_sub_expression(0, src.len());
    ctx.report_stray_as_items();
    let mut diags = std::mem::take(&mut ctx.diags);
    sort_diagnostics(&mut diags);
    (expr, diags)
}

/// Orders diagnostics by position (then code), so output is deterministic
/// and reads top to bottom.
fn sort_diagnostics(diags: &mut [Diagnostic]) {
    diags.sort_by_key(|d| {
        (
            d.primary.as_ref().map(|l| (l.span.start, l.span.end)),
            d.code,
        )
    });
}

impl<'src> Ctx<'src> {
    fn new(src: &'src str) -> Ctx<'src> {
        Ctx {
            src,
            diags: Vec::new(),
            errors: Vec::new(),
            stmt_errors: Vec::new(),
            error_regions: Vec::new(),
            last_error_end: None,
            fstring_depth: 0,
            too_deep_reported: false,
            as_items: Vec::new(),
            names: hashbrown::HashTable::new(),
        }
    }

    /// The [`Name`] spelled `text`: the one made at its first occurrence
    /// in this file, so that a file allocates each identifier's text once.
    pub(crate) fn name(&mut self, text: &str) -> Name {
        let hash = name_hash(text);
        self.names
            .entry(hash, |n| n.as_str() == text, Name::key_hash)
            .or_insert_with(|| Name::with_hash(text, hash))
            .get()
            .clone()
    }

    fn error(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) {
        self.diags
            .push(Diagnostic::error(code, message).with_primary(FileId::default(), span, label));
    }

    /// Parses `src[start..end]` as an expression with implicit line joining
    /// (the expression of an f-string field).
    pub(crate) fn parse_sub_expression(&mut self, start: usize, end: usize) -> Expr {
        let span = Span::from_range(start..end);
        let text = &self.src[start..end];
        if text.trim().is_empty() {
            self.error(
                "E0014",
                "empty expression in f-string",
                span,
                "expected an expression inside the braces",
            );
            return Expr::error(span);
        }
        if self.fstring_depth >= 8 {
            self.error(
                "E0014",
                "f-strings are nested too deeply",
                span,
                "nested more than 8 levels here",
            );
            return Expr::error(span);
        }
        let (tokens, diags) = layout::tokenize(
            text,
            layout::Config {
                inside_brackets: true,
            },
        );
        let shifted: Vec<Spanned<'src>> = tokens
            .into_iter()
            .map(|(s, t, e)| (s + start, t, e + start))
            .collect();
        for diag in diags {
            self.diags.push(shift_diagnostic(diag, start));
        }
        self.fstring_depth += 1;
        let first_error = self.errors.len();
        let out = exprs::expression(self, shifted.iter().copied(), end);
        self.fstring_depth -= 1;
        // The errors of this field are phrased with its own tokens: the
        // file's tokens see the whole literal as one string.
        let errors: Vec<Recovery<'src>> = self.errors.drain(first_error..).collect();
        for rec in &errors {
            if let Some(diag) = describe(&rec.error, &shifted, self.src) {
                self.diags.push(diag);
            }
        }
        out.unwrap_or_else(|| Expr::error(span))
    }

    /// How many syntax errors the expression parser has recorded.
    pub(crate) fn syntax_error_count(&self) -> usize {
        self.errors.len()
    }

    /// Reports an expression nested deeper than the parser recurses (once
    /// per parse; later ones fail silently, as the first explains them).
    pub(crate) fn too_deep(&mut self, start: usize, end: usize) {
        if self.too_deep_reported {
            return;
        }
        self.too_deep_reported = true;
        self.diags.push(
            error_at(
                "E0018",
                "expression is nested too deeply",
                start..end,
                "too many nested expressions at this point",
            )
            .with_help(SPLIT_HELP),
        );
    }

    /// Records a syntax error of the expression parser.
    pub(crate) fn push_syntax_error(&mut self, rec: Recovery<'src>) {
        self.errors.push(rec);
    }

    /// Forgets the `as` items from `start` on (their statement failed).
    pub(crate) fn drop_as_items_from(&mut self, start: usize) {
        self.as_items
            .retain(|(span, _)| (span.start as usize) < start);
    }

    // ------------------------------------------------------------ recovery

    pub(crate) fn error_stmt(
        &mut self,
        rec: StmtRecovery<'src>,
        l: usize,
        r: usize,
        body: Vec<Stmt>,
    ) -> Stmt {
        let end = r.max(l);
        self.last_error_end = Some(end);
        // The statement's chunks are dropped with it.
        self.stmt_errors.push(ErrorRecovery {
            error: rec.error,
            dropped_tokens: Vec::new(),
        });
        let region = Span::from_range(l..end);
        self.error_regions.push(region);
        Stmt::new(StmtKind::Error(body), region)
    }

    /// Whether an INDENT at `offset` directly follows a statement that was
    /// replaced by an error (then the indented block is the broken
    /// statement's body and needs no second diagnostic).
    pub(crate) fn follows_error(&self, offset: usize) -> bool {
        let Some(end) = self.last_error_end else {
            return false;
        };
        end <= offset && only_trivia(&self.src[end.min(offset)..offset])
    }

    pub(crate) fn unexpected_indent(
        &mut self,
        (at, follows_error): (usize, bool),
        body: Vec<Stmt>,
    ) -> Stmt {
        let end = body.last().map_or(at, |s| s.span.end as usize);
        if !follows_error {
            self.diags.push(
                unexpected_indent(self.src, at)
                    .with_help("only lines after a `:` (a block) start a deeper indentation"),
            );
        }
        Stmt::new(StmtKind::Error(body), Span::from_range(at..end))
    }

    // ------------------------------------------------------------ statements

    /// Sets aside the target of `context as target` inside parentheses and
    /// returns the context (see `ParenElem` in the grammar).
    pub(crate) fn as_item(&mut self, context: Expr, target: Expr) -> Expr {
        self.check_target(&target, "with");
        self.as_items.push((context.span, target));
        context
    }

    /// Expands a parenthesised group of context managers,
    /// `with (a as b, c):`, into its items (Python 3.10 syntax).
    pub(crate) fn with_items(&mut self, items: Vec<WithItem>) -> Vec<WithItem> {
        let [item] = items.as_slice() else {
            return items;
        };
        if item.target.is_some() {
            return items;
        }
        // As in Python 3.10, a parenthesised tuple is a group of context
        // managers, and so is a parenthesised `a as b`.
        // (A tuple in double parentheses, `with ((a, b)):`, stays one item:
        // then the item starts before the tuple's own parenthesis.)
        let elements: Vec<&Expr> = match &item.context.kind {
            ExprKind::Tuple(elts)
                if !elts.is_empty() && item.span.start == item.context.span.start =>
            {
                elts.iter().collect()
            }
            _ if self
                .as_items
                .iter()
                .any(|(span, _)| *span == item.context.span) =>
            {
                vec![&item.context]
            }
            _ => return items,
        };
        let mut out = Vec::with_capacity(elements.len());
        for e in elements {
            let target = self
                .as_items
                .iter()
                .position(|(span, _)| *span == e.span)
                .map(|i| self.as_items.swap_remove(i).1);
            let end = target.as_ref().map_or(e.span.end, |t| t.span.end);
            out.push(WithItem {
                context: e.clone(),
                target,
                span: Span::new(e.span.start, end),
            });
        }
        out
    }

    /// Reports the `as` items no `with` statement took back: they were
    /// misplaced.
    pub(crate) fn report_stray_as_items(&mut self) {
        for (span, target) in std::mem::take(&mut self.as_items) {
            self.diags.push(
                Diagnostic::error("E0010", "`as` is not allowed here")
                    .with_primary(
                        FileId::default(),
                        Span::new(span.start, target.span.end),
                        "`as` inside parentheses",
                    )
                    .with_help("`as` names a value only in `with`, `import` and `except`"),
            );
        }
    }

    pub(crate) fn module(&mut self, body: Vec<Stmt>, l: usize, r: usize) -> Module {
        let host_code = body
            .iter()
            .enumerate()
            .filter(|(i, s)| is_host_stmt(s, *i == 0))
            .map(|(i, _)| i)
            .collect();
        let _ = (l, r);
        Module {
            body,
            span: Span::from_range(0..self.src.len()),
            host_code,
        }
    }

    pub(crate) fn assign(&mut self, targets: Vec<Expr>, value: Expr, l: usize, r: usize) -> Stmt {
        for t in &targets {
            self.check_target(t, "assign");
        }
        Stmt::new(StmtKind::Assign { targets, value }, Span::from_range(l..r))
    }

    pub(crate) fn import_from(
        &mut self,
        level: u32,
        module: Option<Ident>,
        names: Vec<Alias>,
        l: usize,
        r: usize,
    ) -> Stmt {
        let span = Span::from_range(l..r);
        if level == 0 && module.is_none() {
            self.error(
                "E0010",
                "expected a module name after `from`",
                span,
                "`from` needs a module or a relative `.`",
            );
        }
        Stmt::new(
            StmtKind::ImportFrom {
                module,
                names,
                level,
            },
            span,
        )
    }

    pub(crate) fn decorate(&mut self, decorators: Vec<Expr>, mut stmt: Stmt, l: usize) -> Stmt {
        match &mut stmt.kind {
            StmtKind::FunctionDef(def) => def.decorators = decorators,
            StmtKind::ClassDef(def) => def.decorators = decorators,
            _ => {}
        }
        stmt.span = Span::new(l as u32, stmt.span.end);
        stmt
    }

    pub(crate) fn if_chain(
        &mut self,
        l: usize,
        test: Expr,
        body: Vec<Stmt>,
        elifs: Vec<(usize, Expr, Vec<Stmt>)>,
        orelse: Option<Vec<Stmt>>,
    ) -> Stmt {
        // A chain of `elif`s becomes nested `If`s; bound the nesting like
        // the layout pass bounds expressions, so that walks over the tree
        // cannot overflow the stack.
        let mut elifs = elifs;
        if elifs.len() > MAX_ELIFS {
            let (at, _, _) = &elifs[MAX_ELIFS];
            self.error(
                "E0018",
                "`if` statement has too many `elif` branches",
                Span::from_range(*at..*at + 4),
                format!("more than {MAX_ELIFS} `elif` branches at this point"),
            );
            elifs.truncate(MAX_ELIFS);
        }
        // Build from the innermost `elif` outwards.
        let mut tail = orelse.unwrap_or_default();
        for (el, etest, ebody) in elifs.into_iter().rev() {
            let span = self.block_span(el, &etest, &ebody, &tail);
            tail = vec![Stmt::new(
                StmtKind::If {
                    test: etest,
                    body: ebody,
                    orelse: tail,
                },
                span,
            )];
        }
        let span = self.block_span(l, &test, &body, &tail);
        Stmt::new(
            StmtKind::If {
                test,
                body,
                orelse: tail,
            },
            span,
        )
    }

    /// The span of a compound statement: from its keyword to the end of its
    /// last nested statement (not including trailing blank lines).
    pub(crate) fn block_span(
        &self,
        l: usize,
        header: &Expr,
        body: &[Stmt],
        orelse: &[Stmt],
    ) -> Span {
        let end = orelse
            .last()
            .or(body.last())
            .map_or(header.span.end, |s| s.span.end);
        Span::new(l as u32, end)
    }

    pub(crate) fn try_stmt(
        &mut self,
        l: usize,
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    ) -> Stmt {
        let end = finalbody
            .last()
            .or(orelse.last())
            .map(|s| s.span.end)
            .or(handlers.last().map(|h| h.span.end))
            .or(body.last().map(|s| s.span.end))
            .unwrap_or(l as u32);
        Stmt::new(
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            },
            Span::new(l as u32, end),
        )
    }

    pub(crate) fn func_def(
        &mut self,
        l: usize,
        is_async: bool,
        name: Ident,
        params: Params,
        returns: Option<Expr>,
        body: Vec<Stmt>,
    ) -> Stmt {
        let end = body.last().map_or(params.span.end, |s| s.span.end);
        let def = FunctionDef {
            is_async,
            decorators: Vec::new(),
            name,
            params,
            returns,
            body,
        };
        Stmt::new(
            StmtKind::FunctionDef(Box::new(def)),
            Span::new(l as u32, end),
        )
    }

    /// Sorts parameter items into a [`Params`] and checks their order.
    pub(crate) fn params(&mut self, items: Vec<ParamItem>, l: usize, r: usize) -> Params {
        let mut params = Params {
            span: Span::from_range(l..r),
            ..Params::default()
        };
        let mut seen_star = false;
        let mut seen_default = false;
        let mut seen_slash = false;
        let mut bare_star = None;
        for item in items {
            if params.kwarg.is_some() {
                let span = item_span(&item);
                self.error(
                    "E0015",
                    "parameters cannot follow `**` parameters",
                    span,
                    "this parameter comes after `**`",
                );
                continue;
            }
            match item {
                ParamItem::Plain(p) => {
                    if seen_star {
                        params.kwonly.push(p);
                    } else {
                        if p.default.is_some() {
                            seen_default = true;
                        } else if seen_default {
                            self.error(
                                "E0015",
                                "a parameter without a default follows a parameter with a default",
                                p.span,
                                "this parameter needs a default value",
                            );
                        }
                        params.args.push(p);
                    }
                }
                ParamItem::Star(p, span) => {
                    if seen_star {
                        self.error(
                            "E0015",
                            "`*` can appear only once in a parameter list",
                            span,
                            "second `*` here",
                        );
                    }
                    seen_star = true;
                    if p.is_none() {
                        bare_star = Some(span);
                    }
                    params.vararg = p;
                }
                ParamItem::DoubleStar(p) => params.kwarg = Some(p),
                ParamItem::Slash(span) => {
                    if seen_slash || seen_star || params.args.is_empty() {
                        self.error(
                            "E0015",
                            "`/` must follow at least one positional parameter",
                            span,
                            "misplaced `/`",
                        );
                    } else {
                        seen_slash = true;
                        params.posonly = std::mem::take(&mut params.args);
                    }
                }
            }
        }
        if let Some(span) = bare_star
            && params.kwonly.is_empty()
        {
            self.error(
                "E0015",
                "a bare `*` must be followed by keyword-only parameters",
                span,
                "no parameter follows this `*`",
            );
        }
        // Every parameter name may appear once.
        let all: Vec<&Param> = params.iter().collect();
        for (i, p) in all.iter().enumerate() {
            if let Some(first) = all[..i].iter().find(|q| q.name.name == p.name.name) {
                self.diags.push(
                    Diagnostic::error("E0015", format!("duplicate parameter `{}`", p.name.name))
                        .with_primary(FileId::default(), p.name.span, "declared again here")
                        .with_secondary(FileId::default(), first.name.span, "first declared here"),
                );
            }
        }
        params
    }

    // ------------------------------------------------------------ checks

    /// Checks that `target` can be assigned to (`verb`: "assign", "delete",
    /// "for", "with").
    pub(crate) fn check_target(&mut self, target: &Expr, verb: &str) {
        match &target.kind {
            ExprKind::Name(_)
            | ExprKind::Attribute { .. }
            | ExprKind::Subscript { .. }
            | ExprKind::Error => {}
            ExprKind::Tuple(elts) | ExprKind::List(elts) => {
                for e in elts {
                    self.check_target(e, verb);
                }
            }
            ExprKind::Starred(inner) if verb != "delete" => self.check_target(inner, verb),
            other => {
                let what = describe_expr_kind(other);
                let message = match verb {
                    "delete" => format!("cannot delete {what}"),
                    _ => format!("cannot assign to {what}"),
                };
                self.error(
                    "E0020",
                    message,
                    target.span,
                    "not a name, attribute or subscript",
                );
            }
        }
    }

    pub(crate) fn check_targets(&mut self, targets: &[Expr], verb: &str) {
        for t in targets {
            self.check_target(t, verb);
        }
    }

    pub(crate) fn check_aug_target(&mut self, target: &Expr) {
        self.check_single_target(
            target,
            |what| format!("cannot use augmented assignment on {what}"),
            "augmented assignment needs a single name, attribute or subscript",
        );
    }

    pub(crate) fn check_ann_target(&mut self, target: &Expr) {
        self.check_single_target(
            target,
            |what| format!("cannot annotate {what}"),
            "only a single name, attribute or subscript can be annotated",
        );
    }

    /// E0020 unless `target` is a single name, attribute or subscript:
    /// `message` of the expression's description, labelled `label`.
    fn check_single_target(
        &mut self,
        target: &Expr,
        message: impl Fn(&str) -> String,
        label: &str,
    ) {
        match &target.kind {
            ExprKind::Name(_)
            | ExprKind::Attribute { .. }
            | ExprKind::Subscript { .. }
            | ExprKind::Error => {}
            other => {
                let what = describe_expr_kind(other);
                self.error("E0020", message(what), target.span, label);
            }
        }
    }

    /// Checks the order of call arguments: positional arguments cannot
    /// follow keyword arguments, and `*x` cannot follow `**y`.
    pub(crate) fn check_args(&mut self, args: &[Arg]) {
        let mut seen_keyword = false;
        let mut seen_double_star = false;
        for arg in args {
            match &arg.kind {
                // An argument that failed to parse has been reported.
                ArgKind::Positional(Expr {
                    kind: ExprKind::Error,
                    ..
                }) => {}
                ArgKind::Positional(_) if seen_double_star || seen_keyword => {
                    let after = if seen_double_star {
                        "`**` arguments"
                    } else {
                        "keyword arguments"
                    };
                    self.error(
                        "E0016",
                        format!("a positional argument follows {after}"),
                        arg.span,
                        "move this argument before the keyword arguments",
                    );
                }
                ArgKind::Star(_) if seen_double_star => {
                    self.error(
                        "E0016",
                        "`*` unpacking follows `**` unpacking",
                        arg.span,
                        "move this before the `**` argument",
                    );
                }
                ArgKind::Keyword(name, _) => {
                    seen_keyword = true;
                    let first = args.iter().find_map(|a| match &a.kind {
                        ArgKind::Keyword(n, _) if n.name == name.name => Some(n.span),
                        _ => None,
                    });
                    if let Some(first) = first.filter(|&f| f != name.span) {
                        self.diags.push(
                            Diagnostic::error(
                                "E0016",
                                format!("keyword argument `{}` is repeated", name.name),
                            )
                            .with_primary(FileId::default(), name.span, "given again here")
                            .with_secondary(
                                FileId::default(),
                                first,
                                "first given here",
                            ),
                        );
                    }
                }
                ArgKind::DoubleStar(_) => seen_double_star = true,
                _ => {}
            }
        }
    }

    pub(crate) fn keyword_arg(&mut self, key: Expr, value: Expr, l: usize, r: usize) -> Arg {
        let span = Span::from_range(l..r);
        match key.kind {
            ExprKind::Name(name) => Arg {
                kind: ArgKind::Keyword(
                    Ident {
                        name,
                        span: key.span,
                    },
                    value,
                ),
                span,
            },
            ExprKind::Error => Arg {
                kind: ArgKind::Positional(Expr::error(span)),
                span,
            },
            other => {
                let what = describe_expr_kind(&other);
                self.diags.push(
                    Diagnostic::error(
                        "E0017",
                        format!("expected a parameter name before `=`, found {what}"),
                    )
                    .with_primary(
                        FileId::default(),
                        key.span,
                        "a keyword argument needs a plain name here",
                    )
                    .with_help("to compare, write `==`"),
                );
                Arg {
                    kind: ArgKind::Positional(Expr::error(span)),
                    span,
                }
            }
        }
    }

    pub(crate) fn named_expr(&mut self, target: Expr, value: Expr, l: usize, r: usize) -> Expr {
        let span = Span::from_range(l..r);
        if !matches!(target.kind, ExprKind::Name(_) | ExprKind::Error) {
            let what = describe_expr_kind(&target.kind);
            self.error(
                "E0020",
                format!("cannot use `:=` to assign to {what}"),
                target.span,
                "`:=` needs a plain name on its left",
            );
        }
        Expr::new(
            ExprKind::NamedExpr {
                target: Box::new(target),
                value: Box::new(value),
            },
            span,
        )
    }

    // ------------------------------------------------------------ expressions

    pub(crate) fn number(&mut self, num: Num<'src>, l: usize, r: usize) -> Expr {
        let span = Span::from_range(l..r);
        let kind = match num {
            Num::Int(text) => match literal::parse_int(text) {
                Ok(v) => ExprKind::Int(v),
                Err(msg) => {
                    self.error("E0006", msg, span, "invalid integer literal");
                    ExprKind::Error
                }
            },
            Num::Float(text) => ExprKind::Float(literal::parse_float(text)),
            Num::Imaginary(text) => {
                ExprKind::Imaginary(literal::parse_float(&text[..text.len() - 1]))
            }
        };
        Expr::new(kind, span)
    }

    /// Builds the expression for one or more adjacent string literals.
    pub(crate) fn strings(&mut self, parts: &[(usize, &'src str, usize)]) -> Expr {
        literal::strings(self, parts)
    }
}

/// Shifts every label of `diag` by `offset` bytes.
fn shift_diagnostic(mut diag: Diagnostic, offset: usize) -> Diagnostic {
    let shift = |span: Span| Span::new(span.start + offset as u32, span.end + offset as u32);
    if let Some(p) = &mut diag.primary {
        p.span = shift(p.span);
    }
    for s in &mut diag.secondary {
        s.span = shift(s.span);
    }
    diag
}

fn item_span(item: &ParamItem) -> Span {
    match item {
        ParamItem::Plain(p) | ParamItem::DoubleStar(p) => p.span,
        ParamItem::Star(_, span) | ParamItem::Slash(span) => *span,
    }
}

/// Whether `text` holds only whitespace, comments and line breaks.
fn only_trivia(text: &str) -> bool {
    let mut in_comment = false;
    for c in text.chars() {
        match c {
            '\n' | '\r' => in_comment = false,
            _ if in_comment => {}
            '#' => in_comment = true,
            ' ' | '\t' | '\x0C' | '\\' => {}
            _ => return false,
        }
    }
    true
}

/// A phrase for an expression kind in messages ("a function call").
fn describe_expr_kind(kind: &ExprKind) -> &'static str {
    match kind {
        ExprKind::BoolOp { .. } => "a boolean expression",
        ExprKind::NamedExpr { .. } => "a `:=` expression",
        ExprKind::BinOp { .. } => "an operator expression",
        ExprKind::UnaryOp { .. } => "an operator expression",
        ExprKind::Lambda { .. } => "a lambda",
        ExprKind::IfExp { .. } => "a conditional expression",
        ExprKind::Dict(_) => "a dict display",
        ExprKind::Set(_) => "a set display",
        ExprKind::ListComp { .. } => "a list comprehension",
        ExprKind::SetComp { .. } => "a set comprehension",
        ExprKind::DictComp { .. } => "a dict comprehension",
        ExprKind::GeneratorExp { .. } => "a generator expression",
        ExprKind::Await(_) => "an `await` expression",
        ExprKind::Yield(_) | ExprKind::YieldFrom(_) => "a `yield` expression",
        ExprKind::Compare { .. } => "a comparison",
        ExprKind::Call { .. } => "a function call",
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Imaginary(_) => "a number",
        ExprKind::Str(_) | ExprKind::Bytes(_) | ExprKind::FString(_) => "a string",
        ExprKind::Bool(_) => "a boolean literal",
        ExprKind::None => "`None`",
        ExprKind::Ellipsis => "`...`",
        ExprKind::Attribute { .. } => "an attribute",
        ExprKind::Subscript { .. } => "a subscript",
        ExprKind::Starred(_) => "a starred expression",
        ExprKind::Name(_) => "a name",
        ExprKind::List(_) => "a list",
        ExprKind::Tuple(_) => "a tuple",
        ExprKind::Slice { .. } => "a slice",
        ExprKind::Error => "an invalid expression",
    }
}

/// E0012 for the indented line whose indentation ends at byte `at`.
fn unexpected_indent(src: &str, at: usize) -> Diagnostic {
    let line_start = src[..at].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    error_at(
        "E0012",
        "unexpected indent",
        line_start..at,
        "this line is indented more than the previous one",
    )
}

// ---------------------------------------------------------------- host code

/// Whether a top-level statement is host code (see `ast` module docs).
fn is_host_stmt(stmt: &Stmt, first: bool) -> bool {
    match &stmt.kind {
        StmtKind::Import(_)
        | StmtKind::ImportFrom { .. }
        | StmtKind::FunctionDef(_)
        | StmtKind::ClassDef(_) => false,
        StmtKind::Expr(e) if first && matches!(e.kind, ExprKind::Str(_)) => false,
        StmtKind::Assign { value, .. } => !is_constant_expr(value),
        StmtKind::AnnAssign { value, .. } => value.as_ref().is_some_and(|v| !is_constant_expr(v)),
        StmtKind::Error(_) => false,
        _ => true,
    }
}

/// Whether `expr` is built from literals, names, attributes, subscripts,
/// operators and displays only.
fn is_constant_expr(expr: &Expr) -> bool {
    match &expr.kind {
        crate::leaf_exprs!() => true,
        ExprKind::FString(parts) => parts.iter().all(|p| match p {
            FStringPart::Literal(_) => true,
            FStringPart::Field(f) => is_constant_expr(&f.value),
        }),
        ExprKind::Attribute { value, .. } => is_constant_expr(value),
        ExprKind::Subscript { value, index } => is_constant_expr(value) && is_constant_expr(index),
        ExprKind::BinOp { left, right, .. } => is_constant_expr(left) && is_constant_expr(right),
        ExprKind::UnaryOp { operand, .. } => is_constant_expr(operand),
        ExprKind::BoolOp { values, .. } => values.iter().all(is_constant_expr),
        ExprKind::Compare { left, comparisons } => {
            is_constant_expr(left) && comparisons.iter().all(|(_, e)| is_constant_expr(e))
        }
        ExprKind::IfExp { test, body, orelse } => {
            is_constant_expr(test) && is_constant_expr(body) && is_constant_expr(orelse)
        }
        ExprKind::Tuple(elts) | ExprKind::List(elts) | ExprKind::Set(elts) => {
            elts.iter().all(is_constant_expr)
        }
        ExprKind::Dict(items) => items.iter().all(|item| match item {
            DictItem::KeyValue(k, v) => is_constant_expr(k) && is_constant_expr(v),
            DictItem::Unpack(e) => is_constant_expr(e),
        }),
        ExprKind::Starred(e) => is_constant_expr(e),
        ExprKind::Slice { lower, upper, step } => [lower, upper, step]
            .into_iter()
            .all(|p| p.as_deref().is_none_or(is_constant_expr)),
        _ => false,
    }
}

// ---------------------------------------------------------------- messages

/// Turns a parser error into a diagnostic in kernel-author words, or `None`
/// when the error is a consequence of one already reported (an invalid
/// character, an unclosed bracket).
fn describe(
    err: &ParseError<usize, Token<'_>, LexError>,
    tokens: &[Spanned<'_>],
    src: &str,
) -> Option<Diagnostic> {
    let (start, found, end, expected): (usize, Option<Token<'_>>, usize, &[String]) = match err {
        ParseError::UnrecognizedToken {
            token: (s, t, e),
            expected,
        } => (*s, Some(*t), *e, expected),
        ParseError::UnrecognizedEof { location, expected } => {
            (*location, None, *location, expected)
        }
        ParseError::ExtraToken { token: (s, t, e) } => (*s, Some(*t), *e, &[]),
        ParseError::InvalidToken { location } => (*location, None, *location, &[]),
        ParseError::User { .. } => return None,
    };
    // A zero-width closing bracket was inserted by the layout pass for an
    // unclosed bracket it reported.
    if start == end && matches!(found, Some(Token::RParen | Token::RBracket | Token::RBrace)) {
        return None;
    }
    let found = found.filter(|t| *t != Token::EndMarker);
    // The last real token before the error, and the first token of its
    // logical line (which names the statement).
    let idx = tokens.partition_point(|t| t.0 < start);
    let line_begin = tokens[..idx]
        .iter()
        .rposition(|t| matches!(t.1, Token::Newline | Token::Indent | Token::Dedent))
        .map_or(0, |i| i + 1);
    // An invalid character earlier on the same line was reported by the
    // lexer and explains this error too.
    if matches!(found, Some(Token::Error))
        || tokens[line_begin..idx].iter().any(|t| t.1 == Token::Error)
    {
        return None;
    }
    let prev = tokens[..idx]
        .iter()
        .rev()
        .find(|t| !matches!(t.1, Token::Indent | Token::Dedent));
    let prev2 = tokens[..idx]
        .iter()
        .rev()
        .filter(|t| !matches!(t.1, Token::Indent | Token::Dedent))
        .nth(1);
    let line_first = line_keyword(tokens, idx);
    let set = ExpectedSet::new(expected);
    let found_desc = match found {
        None => "end of file".to_string(),
        Some(t) => describe_token(t),
    };

    // The place to point at: the unexpected token, or just after the
    // previous token when the unexpected thing is a line or file end.
    let at_end = matches!(found, None | Some(Token::Newline | Token::Dedent));
    let primary = if at_end {
        match prev {
            Some(p) => point_after(src, p.2),
            None => Span::from_range(start..end),
        }
    } else {
        Span::from_range(start..end)
    };
    let after = prev.map(|p| describe_token_short(p.1));
    let at_stmt_start = prev.is_none_or(|p| p.1 == Token::Newline);
    let error = |message: String, label: String| {
        Diagnostic::error("E0010", message).with_primary(FileId::default(), primary, label)
    };

    if found == Some(Token::Indent) {
        return Some(unexpected_indent(src, start));
    }
    if set.only_indent() {
        // The header is on the line before the error token.
        let header_line = line_keyword(tokens, idx.saturating_sub(1));
        let header = header_line.map_or("this line", |(t, _)| block_owner(t));
        let mut diag = Diagnostic::error(
            "E0013",
            format!("expected an indented block after {header}"),
        )
        .with_primary(
            FileId::default(),
            primary,
            "expected an indented block here",
        )
        .with_help("indent the body of the block, for example by 4 spaces");
        if let Some((t, span)) = header_line {
            diag = diag.with_secondary(
                FileId::default(),
                span,
                format!("this `{}` needs a body", t.text()),
            );
        }
        return Some(diag);
    }
    if set.has("def") && set.has("class") && !set.has_expression() {
        let mut diag = error(
            format!("expected `def` or `class` after a decorator, found {found_desc}"),
            "a decorator must be followed by a function or class definition".to_string(),
        );
        if let Some(at) = tokens[..idx].iter().rev().find(|t| t.1 == Token::At) {
            diag = diag.with_secondary(
                FileId::default(),
                Span::from_range(at.0..at.2),
                "this decorator",
            );
        }
        return Some(diag);
    }
    // A keyword where a name is needed: `class = 1`, `def f(lambda=1)`.
    if let Some(t) = found
        && t.is_keyword()
        && (set.has("name") || set.has("parameter name"))
        && !set.has_expression()
    {
        let what = if set.has("parameter name") {
            "a parameter name"
        } else {
            "a name"
        };
        return Some(
            error(
                format!("expected {what}, found keyword `{}`", t.text()),
                "keywords cannot be used as names".to_string(),
            )
            .with_help(format!(
                "`{}` is a Python keyword; choose another name",
                t.text()
            )),
        );
    }
    if let (Some(kw), Some(p)) = (prev.map(|p| p.1), found)
        && kw.is_keyword()
        && at_stmt_start_of(tokens, idx.saturating_sub(1))
        && matches!(
            p,
            Token::Equal | Token::Dot | Token::LParen | Token::LBracket
        )
        && !matches!(
            kw,
            Token::None
                | Token::True
                | Token::False
                | Token::Lambda
                | Token::Yield
                | Token::Await
                | Token::Not
        )
    {
        return Some(
            error(
                format!("unexpected {found_desc} after keyword `{}`", kw.text()),
                "not valid here".to_string(),
            )
            .with_help(format!(
                "`{}` is a Python keyword and cannot be used as a name",
                kw.text()
            )),
        );
    }
    if at_stmt_start && let Some(t) = found {
        let message = match t {
            Token::Else => "`else` without a matching `if`, `for`, `while` or `try`".to_string(),
            Token::Elif => "`elif` without a matching `if`".to_string(),
            Token::Except => "`except` without a matching `try`".to_string(),
            Token::Finally => "`finally` without a matching `try`".to_string(),
            t => format!(
                "unexpected {} at the start of a statement",
                describe_token(t)
            ),
        };
        let label = match t {
            Token::Else | Token::Elif | Token::Except | Token::Finally => {
                "check the indentation of this line and of the block it continues"
            }
            _ => "a statement cannot start here",
        };
        return Some(error(message, label.to_string()));
    }
    if let Some((Token::For, _)) = line_first
        && set.has("in")
        && !set.has(":")
        && !at_end
    {
        return Some(
            error(
                format!("expected `in` after the `for` target, found {found_desc}"),
                "expected `in`".to_string(),
            )
            .with_help("write the loop as `for name in iterable:`"),
        );
    }
    if set.has(":")
        && let Some((kw, kw_span)) = line_first
        && let Some(what) = colon_context(kw)
        && !set.has_expression()
    {
        let message = format!("expected `:` after {what}");
        let label = if at_end {
            "expected `:` here".to_string()
        } else {
            format!("expected `:`, found {found_desc}")
        };
        let mut diag = error(message, label).with_secondary(
            FileId::default(),
            kw_span,
            format!("this `{}` statement", kw.text()),
        );
        match (kw, found) {
            (Token::If | Token::Elif | Token::While, Some(Token::Equal)) => {
                diag = diag.with_help("use `==` to compare")
            }
            (Token::Else, Some(Token::If)) => {
                diag = diag.with_help("use `elif` for another condition")
            }
            _ => {}
        }
        return Some(diag);
    }
    if set.has_expression() {
        let message = match &after {
            Some(a) => format!("expected an expression after {a}"),
            None => "expected an expression".to_string(),
        };
        let label = if at_end {
            "expected an expression here".to_string()
        } else {
            format!("expected an expression, found {found_desc}")
        };
        let mut diag = error(message, label);
        match (prev2.map(|t| t.1), prev.map(|t| t.1), found) {
            (_, Some(Token::Amper), Some(Token::Amper)) => {
                diag = diag.with_help("use `and` for a logical and")
            }
            (_, Some(Token::Vbar), Some(Token::Vbar)) => {
                diag = diag.with_help("use `or` for a logical or")
            }
            (Some(Token::Plus), Some(Token::Plus), _) => {
                diag = diag.with_help("Python has no `++`; write `x += 1`")
            }
            (Some(Token::Minus), Some(Token::Minus), _) => {
                diag = diag.with_help("Python has no `--`; write `x -= 1`")
            }
            (_, _, Some(t))
                if t.is_keyword()
                    && !matches!(t, Token::Else | Token::For | Token::If | Token::In) =>
            {
                diag = diag.with_help(format!(
                    "`{}` is a Python keyword and cannot be used as a name",
                    t.text()
                ));
            }
            _ => {}
        }
        return Some(diag);
    }
    // Two operands side by side outside brackets, where the statement could
    // only continue with an operator, `=` or the end of the line.
    if set.has("newline")
        && !set.has(",")
        && matches!(
            found,
            Some(
                Token::Name(_)
                    | Token::Int(_)
                    | Token::Float(_)
                    | Token::Imaginary(_)
                    | Token::String(_)
            )
        )
        && ends_operand(prev.map(|p| p.1))
        && !(prev.map(|p| p.1) == Some(Token::Name("print"))
            && at_stmt_start_of(tokens, idx.saturating_sub(1)))
    {
        return Some(
            error(
                format!("unexpected {found_desc} after an expression"),
                "expected an operator or the end of the statement before this".to_string(),
            )
            .with_help("is an operator or a `,` missing before this?"),
        );
    }
    let wanted = set.describe();
    let message = match (&wanted, found) {
        (Some(w), Some(Token::Newline) | None) => match &after {
            Some(a) => format!("expected {w} after {a}"),
            None => format!("expected {w}"),
        },
        (Some(w), _) => format!("expected {w}, found {found_desc}"),
        (None, Some(Token::Newline)) => match &after {
            Some(a) => format!("unexpected end of line after {a}"),
            None => "unexpected end of line".to_string(),
        },
        (None, _) => format!("unexpected {found_desc}"),
    };
    let label = match &wanted {
        Some(w) => format!("expected {w}"),
        None => "not valid here".to_string(),
    };
    if prev.map(|p| p.1) == Some(Token::Name("print"))
        && at_stmt_start_of(tokens, idx.saturating_sub(1))
        && matches!(
            found,
            Some(Token::String(_) | Token::Name(_) | Token::Int(_) | Token::Float(_))
        )
    {
        return Some(
            error(
                "missing parentheses in call to `print`".to_string(),
                "`print` is a function in Python 3".to_string(),
            )
            .with_help("write `print(...)`"),
        );
    }
    // `def name:` without a parameter list.
    if set.has("params") {
        let name = match prev.map(|p| p.1) {
            Some(Token::Name(n)) => n,
            _ => "name",
        };
        return Some(
            error(
                format!("expected `(` after the function name, found {found_desc}"),
                "a function definition needs a parameter list in parentheses".to_string(),
            )
            .with_help(format!(
                "write `def {name}():` when the function takes no parameters"
            )),
        );
    }
    // `x := 1` as a statement.
    if found == Some(Token::ColonEqual) && set.has("newline") {
        return Some(
            error(
                "`:=` cannot be used as an assignment statement".to_string(),
                "use `=` here".to_string(),
            )
            .with_help("`:=` assigns only inside an expression, in parentheses"),
        );
    }
    let mut diag = error(message, label);
    // A key and its value side by side in a dict display.
    if set.names == [":"]
        && matches!(
            found,
            Some(Token::Name(_) | Token::Int(_) | Token::Float(_) | Token::String(_))
        )
        && ends_operand(prev.map(|p| p.1))
    {
        diag = diag.with_help("is a `:` missing before this?");
    }
    if found == Some(Token::ColonEqual) {
        diag = diag
            .with_help("use `=` to assign; `:=` assigns only inside an expression, in parentheses");
    }
    // Two operands side by side inside brackets: most likely a missing comma.
    if set.has(",")
        && matches!(
            found,
            Some(Token::Name(_) | Token::Int(_) | Token::Float(_) | Token::String(_))
        )
        && ends_operand(prev.map(|p| p.1))
    {
        diag = diag.with_help("is a `,` missing before this?");
    }
    Some(diag)
}

/// Whether the token at index `i` is the first of its logical line.
fn at_stmt_start_of(tokens: &[Spanned<'_>], i: usize) -> bool {
    i == 0
        || tokens
            .get(i - 1)
            .is_some_and(|t| matches!(t.1, Token::Newline | Token::Indent | Token::Dedent))
}

/// Whether a token can end an operand (see [`Token::ends_operand`]).
fn ends_operand(t: Option<Token<'_>>) -> bool {
    t.is_some_and(|t| t.ends_operand())
}

/// A one-character span just after `offset` when the next character is on
/// the same line, else an empty span there.
fn point_after(src: &str, offset: usize) -> Span {
    match src[offset.min(src.len())..].chars().next() {
        Some(c) if c != '\n' && c != '\r' => Span::from_range(offset..offset + c.len_utf8()),
        _ => Span::from_range(offset..offset),
    }
}

/// The first token of the logical line containing token index `idx`, when it
/// is a keyword (with its span).
fn line_keyword(tokens: &[Spanned<'_>], idx: usize) -> Option<(Token<'static>, Span)> {
    let mut i = idx.min(tokens.len());
    while i > 0
        && !matches!(
            tokens[i - 1].1,
            Token::Newline | Token::Indent | Token::Dedent
        )
    {
        i -= 1;
    }
    let (s, t, e) = tokens.get(i)?;
    let t = match t {
        Token::If => Token::If,
        Token::Elif => Token::Elif,
        Token::Else => Token::Else,
        Token::While => Token::While,
        Token::For => Token::For,
        Token::Def => Token::Def,
        Token::Class => Token::Class,
        Token::With => Token::With,
        Token::Try => Token::Try,
        Token::Except => Token::Except,
        Token::Finally => Token::Finally,
        Token::Async => Token::Async,
        _ => return None,
    };
    Some((t, Span::from_range(*s..*e)))
}

/// What an indented block is expected after, per statement keyword.
fn block_owner(kw: Token<'_>) -> &'static str {
    match kw {
        Token::If => "the `if` statement",
        Token::Elif => "`elif`",
        Token::Else => "`else`",
        Token::While => "the `while` loop",
        Token::For => "the `for` loop",
        Token::Def | Token::Async => "the function definition",
        Token::Class => "the class definition",
        Token::With => "the `with` statement",
        Token::Try => "`try`",
        Token::Except => "`except`",
        Token::Finally => "`finally`",
        _ => "this line",
    }
}

/// What a `:` is expected after, per statement keyword.
fn colon_context(kw: Token<'_>) -> Option<&'static str> {
    Some(match kw {
        Token::If => "the `if` condition",
        Token::Elif => "the `elif` condition",
        Token::While => "the `while` condition",
        Token::For => "the `for` loop header",
        Token::Def => "the function signature",
        Token::Class => "the class header",
        Token::With => "the `with` items",
        Token::Else => "`else`",
        Token::Try => "`try`",
        Token::Except => "the `except` clause",
        Token::Finally => "`finally`",
        _ => return None,
    })
}

/// How a found token is named in a message ("unexpected …", "found …").
fn describe_token(t: Token<'_>) -> String {
    match t {
        Token::Newline => "end of line".to_string(),
        Token::Dedent => "end of the block".to_string(),
        Token::Indent => "indented block".to_string(),
        Token::EndMarker => "end of file".to_string(),
        Token::String(s) => format!("string {}", shorten(s)),
        Token::Int(s) | Token::Float(s) | Token::Imaginary(s) => format!("number `{s}`"),
        Token::Name(s) => format!("name `{s}`"),
        t if t.is_keyword() => format!("keyword `{}`", t.text()),
        t => format!("`{}`", t.text()),
    }
}

/// A token's text in backquotes, cut to a readable length.
fn shorten(text: &str) -> String {
    if text.chars().count() > 24 || text.contains(['\n', '\r']) {
        let head: String = text
            .chars()
            .take_while(|c| *c != '\n' && *c != '\r')
            .take(20)
            .collect();
        format!("`{head}…`")
    } else {
        format!("`{text}`")
    }
}

/// How the token before an error is named ("after `=`").
fn describe_token_short(t: Token<'_>) -> String {
    match t {
        Token::String(_) => "a string".to_string(),
        Token::Newline => "the end of the line".to_string(),
        t => shorten(t.text()),
    }
}

/// The set of terminals the parser would have accepted, in grammar names.
struct ExpectedSet<'a> {
    names: Vec<&'a str>,
}

impl<'a> ExpectedSet<'a> {
    fn new(expected: &'a [String]) -> ExpectedSet<'a> {
        let names = expected
            .iter()
            .map(|s| s.trim_matches('"'))
            .map(|s| s.strip_prefix('\\').unwrap_or(s))
            .collect();
        ExpectedSet { names }
    }

    fn has(&self, name: &str) -> bool {
        self.names.contains(&name)
    }

    /// Whether an expression could start here: both a name and a number are
    /// acceptable.
    fn has_expression(&self) -> bool {
        self.has("expr") || (self.has("name") && self.has("int"))
    }

    fn only_indent(&self) -> bool {
        self.names == ["indent"]
    }

    /// A short phrase listing what was expected, or `None` when the list is
    /// long (then naming the unexpected token says more).
    fn describe(&self) -> Option<String> {
        let mut items: Vec<String> = Vec::new();
        let operators = [
            "+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "&", "|", "^", "<", ">", "<=",
            ">=", "==", "!=",
        ];
        if self.names.iter().filter(|n| operators.contains(n)).count() > 2 {
            return None;
        }
        for name in &self.names {
            let item = match *name {
                "name" => "a name".to_string(),
                "parameter name" => "a parameter name".to_string(),
                "expr" | "targets" | "with items" => "an expression".to_string(),
                "params" | "args" => "`(`".to_string(),
                "newline" => "the end of the line".to_string(),
                "indent" => "an indented block".to_string(),
                "dedent" | "end marker" | "lex error" | "start module" | "start expression" => {
                    continue;
                }
                "string" => "a string".to_string(),
                "int" | "float" | "imaginary" => "a number".to_string(),
                other => format!("`{other}`"),
            };
            if !items.contains(&item) {
                items.push(item);
            }
        }
        match items.len() {
            0 => None,
            1 => Some(items.remove(0)),
            2..=3 => {
                let last = items.pop().unwrap_or_default();
                Some(format!("{} or {last}", items.join(", ")))
            }
            _ => None,
        }
    }
}
