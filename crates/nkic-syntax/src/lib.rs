//! Lexer, layout pass, parser and AST of the NKI kernel language: the Python
//! subset that NKI kernels and the host code around them are written in.
//!
//! Pipeline: [`token`] (a logos lexer for physical tokens) → [`layout`]
//! (NEWLINE / INDENT / DEDENT, implicit line joining, bracket recovery) → the
//! chunker and hand-written expression parser of `exprs.rs`, which parses
//! every expression and hands it on as one token → the LR(1) statement
//! parser generated from `grammar/nki.lalrpop` (glue and error messages in
//! `parser.rs`) → [`ast`].
//!
//! # API
//!
//! - [`parse`] a file, [`parse_expression`] an expression;
//! - [`lex`] for the logical token stream, [`dump_tokens`], [`dump_ast`] and
//!   [`dump_expr`] for stable text dumps, [`unparse`] / [`unparse_expr`] back
//!   to Python source;
//! - [`check_structure`] and [`layout::check_tokens`], the structural
//!   validators that tests run on every input;
//! - [`ast::Module::without_spans`] to compare trees from different texts and
//!   [`ast::Module::host_code`] for the host-code marking (rule in [`ast`]).
//!
//! # Coverage
//!
//! The grammar covers Python 3.11 syntax except `match`, `type` statements
//! and `except*`. F-string fields may contain strings with the same quote as the
//! literal (Python 3.12). Every `.py` file of aws-neuron/nki-samples,
//! aws-neuron/nki-library and the `nki/` folder of aws-neuron/aws-neuron-sdk
//! that CPython accepts parses without a diagnostic, to a tree that unparses
//! to source CPython reads as the same AST.
//!
//! # Error recovery
//!
//! The layout pass repairs what it can see (unclosed and mismatched
//! brackets, bad dedents, expressions nested more than 1000 deep) and reports
//! each once. Inside brackets the expression parser recovers per element: a
//! broken argument, list element, dict entry or subscript becomes
//! [`ast::ExprKind::Error`] and the next one is parsed normally, so several
//! mistakes in one multi-line call are all reported. Outside brackets the
//! statement parser recovers per logical line: a broken statement becomes
//! [`ast::StmtKind::Error`], keeping the indented block that follows a broken
//! header. So each independent mistake gets one diagnostic, phrased for a
//! kernel author ("expected an expression after `=`").
//!
//! # Performance
//!
//! `cargo bench -p nkic-syntax --bench parse` measures lex + layout + parse on
//! a generated kernel file of 4 MB (`benches/workload/generate.rs`); the target
//! is 20 MB/s on one core. On a shared machine, count instructions instead:
//! `valgrind --tool=callgrind --toggle-collect='parse_workload::main'` on the
//! `parse_workload` example (400 kB, one parse and drop) divided by the file
//! size gives instructions per byte, stable to a fraction of a percent. What
//! keeps it low: expressions never go through the LR automaton (one chunk
//! token each instead of several reductions per operand), an operand that the
//! next token cannot continue skips the precedence chain, the layout pass has
//! a fast path for tokens in the middle of a line, literals are decoded
//! without intermediate copies, and lists are allocated once with room for a
//! few items. Allocation (one per name, node box and list) is now the largest
//! single cost. Every name also carries its hash for the specializer's
//! scopes (`ast::Name::key_hash`): 2.4 % more instructions per byte (229 →
//! 235 on 2026-12-06), paid back many times over by name lookups.
//!
//! # Invariants
//!
//! - this crate knows nothing of NKI semantics or the machine; it parses any
//!   file of the Python subset, and meaning begins in `nkic-specialize`;
//! - parsing never fails and never panics: [`parse`] always returns a module
//!   (with error nodes for recovered regions) plus every diagnostic;
//! - the layout pass always yields balanced INDENT/DEDENT and brackets, and
//!   the depth of a tree is bounded, so recursive walks cannot overflow;
//! - diagnostics carry labels in `FileId::default()`; callers move them into
//!   their file with `Diagnostic::in_file`;
//! - offsets are UTF-8 byte offsets;
//! - nothing outside this crate sees lalrpop types.
//!
//! Diagnostic codes E0001–E0099 belong to this crate (see `DIAGNOSTICS.md`).

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused_qualifications, unused)]
    nki
);

pub mod ast;
mod dump;
mod exprs;
mod fstring;
pub mod layout;
mod literal;
mod parser;
pub mod token;
mod unicode_names;
mod unparse;
mod visit;

#[cfg(test)]
mod tests;

use nkic_diag::{Diagnostic, FileId, Span};

/// An error with its primary label at the bytes `range` (this crate sees
/// one file, `FileId::default()`; callers place its diagnostics in theirs).
pub(crate) fn error_at(
    code: &'static str,
    message: impl Into<String>,
    range: std::ops::Range<usize>,
    label: impl Into<String>,
) -> Diagnostic {
    Diagnostic::error(code, message).with_primary(FileId::default(), Span::from_range(range), label)
}

/// The help of the errors about expressions nested too deeply.
pub(crate) const SPLIT_HELP: &str = "split the expression into several statements";

pub use layout::Spanned;
pub use visit::{Node, children};

/// Parses a whole file. Never fails: syntax errors become diagnostics and
/// error nodes in the returned module.
pub fn parse(src: &str) -> (ast::Module, Vec<Diagnostic>) {
    parser::parse_module(src)
}

/// Parses `src` as a single expression (a tuple if it has top-level commas),
/// with implicit line joining throughout.
pub fn parse_expression(src: &str) -> (ast::Expr, Vec<Diagnostic>) {
    parser::parse_expression(src)
}

/// Lexes `src` and runs the layout pass: the logical token stream the parser
/// reads (with NEWLINE, INDENT and DEDENT), plus lexical diagnostics.
pub fn lex(src: &str) -> (Vec<(usize, token::Token<'_>, usize)>, Vec<Diagnostic>) {
    layout::tokenize(src, layout::Config::default())
}

/// The logical tokens of `src`, one per line as `start..end Kind text`.
pub fn dump_tokens(src: &str) -> String {
    dump::tokens(&lex(src).0)
}

/// The AST as an indented tree with spans, one node per line.
pub fn dump_ast(module: &ast::Module) -> String {
    dump::module(module)
}

/// One expression as an indented tree with spans.
pub fn dump_expr(expr: &ast::Expr) -> String {
    dump::expr(expr)
}

/// Python source for `module`; `parse(unparse(m))` equals `m` with spans
/// erased (compare with [`ast::Module::without_spans`]).
pub fn unparse(module: &ast::Module) -> String {
    unparse::module(module)
}

/// Checks the structural invariants of a parsed module (spans well-formed,
/// children within parents, statements in order, host-code indices valid).
/// Run by tests on every fixture; an `Err` is a parser bug.
pub fn check_structure(module: &ast::Module) -> Result<(), String> {
    visit::check_structure(module)
}

/// Python source for one expression.
pub fn unparse_expr(expr: &ast::Expr) -> String {
    unparse::expr(expr)
}
