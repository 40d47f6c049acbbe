//! The golden corpus of the front end, driven by one `check_<stage>` helper per stage.
//!
//! - `lex/*.py`: the token dump (after the layout pass) is snapshotted, and the
//!   token stream must pass the token validators with no diagnostics.
//! - `parse/ok/*.py`: the AST dump is snapshotted; the file must parse with no
//!   diagnostics, pass the token and AST validators, and survive the round trip
//!   AST → source → AST (compared with spans erased), with the printer at a
//!   fixpoint on its own output.
//! - `parse/err/*.py`: the AST dump (with its error nodes) and the rendered
//!   diagnostics (terminal text, then JSON lines) are snapshotted together.
//!   At least one error is required; a file named `*_<n>errors.py` must yield
//!   exactly `n` errors. The layout and span invariants hold on bad input too.
//!
//! The validators:
//! - tokens: spans lie in the file, in order and without overlap; a token with
//!   a payload spells exactly its source text; INDENT/DEDENT never go below
//!   zero and balance at the end; no NEWLINE appears inside brackets (ok files);
//! - AST: every span lies in the file, every child span lies in its parent's
//!   span, and the children of a node appear in source order without overlap.
//!
//! Three coverage tests keep the corpus honest: it has the sizes the
//! front-end issue asks for, the lexer fixtures contain every token kind, and
//! the well-formed fixtures contain every grammar construct (each operator,
//! statement form, parameter kind, f-string feature; see
//! `EXPECTED_CONSTRUCTS`). Deleting the last fixture of a construct fails them.
//!
//! `docs/testing.md` explains how to add a fixture and review its snapshot.

use std::collections::BTreeSet;
use std::path::Path;

use nkic_diag::{Diagnostic, RenderConfig, SourceMap, Span, render, render_json};
use nkic_syntax::ast::{
    Arg, ArgKind, Comprehension, DictItem, ExceptHandler, Expr, ExprKind, FStringPart, Module,
    Params, Stmt, StmtKind, WithItem,
};
use nkic_syntax::token::Token;

#[test]
fn lex() {
    run_glob("lex/*.py", check_lex, |pattern, f| insta::glob!(pattern, f));
}

#[test]
fn parse_ok() {
    run_glob("parse/ok/*.py", check_parse_ok, |pattern, f| {
        insta::glob!(pattern, f)
    });
}

#[test]
fn parse_err() {
    run_glob("parse/err/*.py", check_parse_err, |pattern, f| {
        insta::glob!(pattern, f)
    });
}

/// Runs `check` on every fixture matching `pattern`, then fails once listing
/// every fixture whose validators failed.
///
/// insta's `glob!` stops at the first panic, so each fixture's check runs
/// under `catch_unwind`: one broken fixture does not hide the others. Snapshot
/// mismatches are collected by insta itself and reported after the glob.
fn run_glob(
    pattern: &'static str,
    check: fn(&Path),
    glob: impl FnOnce(&'static str, &mut dyn FnMut(&Path)),
) {
    let mut failed = Vec::new();
    glob(pattern, &mut |path: &Path| {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(path)));
        if outcome.is_err() {
            // Printed now as well: a snapshot failure in the same glob makes
            // insta panic before the summary below is reached.
            let name = Fixture::relative_name(path);
            eprintln!("FIXTURE FAILED: {name}");
            failed.push(name);
        }
    });
    assert!(
        failed.is_empty(),
        "{} fixture(s) failed their checks (details above):\n  {}",
        failed.len(),
        failed.join("\n  ")
    );
}

/// Token dump of a lexer fixture; the fixture must lex cleanly.
///
/// Lexer fixtures are valid Python too, so they must also parse cleanly and
/// survive the round trip (which exercises the printer on every kind of
/// literal); only their token dump is snapshotted.
fn check_lex(path: &Path) {
    let fixture = Fixture::read(path);
    let (tokens, diags) = nkic_syntax::lex(&fixture.text);
    fixture.assert_no_diagnostics("lexing", &diags);
    check_tokens(&fixture, &tokens, BracketRule::NoNewlineInside);
    let (module, diags) = nkic_syntax::parse(&fixture.text);
    fixture.assert_no_diagnostics("parsing", &diags);
    check_ast_spans(&fixture, &module);
    check_round_trip(&fixture, &module);
    insta::assert_snapshot!(nkic_syntax::dump_tokens(&fixture.text));
}

/// AST dump of a well-formed fixture, plus validators and the round trip.
fn check_parse_ok(path: &Path) {
    let fixture = Fixture::read(path);
    let (tokens, lex_diags) = nkic_syntax::lex(&fixture.text);
    fixture.assert_no_diagnostics("lexing", &lex_diags);
    check_tokens(&fixture, &tokens, BracketRule::NoNewlineInside);

    let (module, diags) = nkic_syntax::parse(&fixture.text);
    fixture.assert_no_diagnostics("parsing", &diags);
    check_ast_spans(&fixture, &module);
    check_round_trip(&fixture, &module);
    insta::assert_snapshot!(nkic_syntax::dump_ast(&module));
}

/// AST dump and rendered diagnostics of a malformed fixture.
fn check_parse_err(path: &Path) {
    let fixture = Fixture::read(path);
    let (tokens, _) = nkic_syntax::lex(&fixture.text);
    check_tokens(&fixture, &tokens, BracketRule::Unchecked);

    let (module, diags) = nkic_syntax::parse(&fixture.text);
    let n_errors = diags.iter().filter(|diag| diag.is_error()).count();
    assert!(
        n_errors >= 1,
        "{}: a malformed fixture produced no error",
        fixture.name
    );
    if let Some(expected) = expected_error_count(&fixture.name) {
        assert_eq!(
            n_errors,
            expected,
            "{}: the file name promises {expected} errors, the parser reported:\n{}",
            fixture.name,
            fixture.render_text(&diags)
        );
    }
    for diag in &diags {
        if let Some(primary) = &diag.primary {
            fixture.assert_in_file(primary.span, "a diagnostic's primary label");
        }
        for label in &diag.secondary {
            fixture.assert_in_file(label.span, "a diagnostic's secondary label");
        }
    }
    check_ast_spans(&fixture, &module);

    let mut out = nkic_syntax::dump_ast(&module);
    out.push_str("\n----- diagnostics -----\n");
    out.push_str(&fixture.render_text(&diags));
    out.push_str("\n----- json -----\n");
    out.push_str(&fixture.render_json(&diags));
    insta::assert_snapshot!(out);
}

/// The corpus sizes the front-end issue asks for: at least 60 files of
/// syntax corpus (lexer and well-formed fixtures) and 30 malformed files.
#[test]
fn corpus_is_large_enough() {
    let n_lex = fixture_paths("lex").len();
    let n_ok = fixture_paths("parse/ok").len();
    let n_err = fixture_paths("parse/err").len();
    assert!(n_lex + n_ok >= 60, "only {n_lex} + {n_ok} syntax fixtures");
    assert!(n_err >= 30, "only {n_err} malformed fixtures");
    let several: Vec<usize> = fixture_paths("parse/err")
        .iter()
        .filter_map(|path| expected_error_count(&Fixture::relative_name(path)))
        .collect();
    for n in [2, 3, 5] {
        assert!(
            several.contains(&n),
            "no malformed fixture named *_{n}errors.py"
        );
    }
}

/// Every token kind appears in the lexer corpus.
#[test]
fn lex_corpus_covers_every_token() {
    let mut seen = BTreeSet::new();
    for path in fixture_paths("lex") {
        let fixture = Fixture::read(&path);
        for (_, token, _) in nkic_syntax::lex(&fixture.text).0 {
            seen.insert(token.fixed_text().unwrap_or(token.kind_name()));
        }
    }
    let missing: Vec<&str> = EXPECTED_TOKENS
        .iter()
        .copied()
        .filter(|token| !seen.contains(token))
        .collect();
    assert!(
        missing.is_empty(),
        "no lexer fixture contains these tokens: {missing:?}"
    );
}

/// Every construct of the grammar appears in the well-formed corpus.
#[test]
fn parse_corpus_covers_every_construct() {
    let mut seen = BTreeSet::new();
    for path in fixture_paths("parse/ok") {
        let fixture = Fixture::read(&path);
        let (module, _) = nkic_syntax::parse(&fixture.text);
        seen.extend(check_ast_spans(&fixture, &module));
    }
    let missing: Vec<&str> = EXPECTED_CONSTRUCTS
        .iter()
        .copied()
        .filter(|construct| !seen.contains(*construct))
        .collect();
    assert!(
        missing.is_empty(),
        "no well-formed fixture contains these constructs: {missing:?}"
    );
}

/// The `.py` files of a corpus directory below `tests/`, sorted.
fn fixture_paths(dir: &str) -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()));
    let mut paths: Vec<_> = entries
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
        .collect();
    paths.sort();
    paths
}

/// Token kinds the lexer corpus must contain: every keyword, operator and
/// delimiter by its text, and the payload and layout kinds by name.
const EXPECTED_TOKENS: &[&str] = &[
    "Name", "Int", "Float", "String", "Newline", "Indent", "Dedent", "False", "None", "True",
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
    "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "(", ")",
    "[", "]", "{", "}", ",", ":", ";", ".", "...", "->", ":=", "=", "+", "-", "*", "**", "/", "//",
    "%", "@", "<<", ">>", "&", "|", "^", "~", "<", ">", "<=", ">=", "==", "!=", "+=", "-=", "*=",
    "**=", "/=", "//=", "%=", "@=", "<<=", ">>=", "&=", "|=", "^=",
];

/// Constructs the well-formed corpus must contain (names from
/// [`stmt_constructs`], [`expr_constructs`] and the walker).
const EXPECTED_CONSTRUCTS: &[&str] = &[
    // Statements.
    "def",
    "decorator",
    "return annotation",
    "async def",
    "class",
    "class bases",
    "class decorator",
    "return",
    "bare return",
    "del",
    "assignment",
    "chained assignment",
    "tuple target",
    "list target",
    "starred target",
    "subscript target",
    "attribute target",
    "annotated assignment",
    "annotation without value",
    "for",
    "for-else",
    "async for",
    "while",
    "while-else",
    "if",
    "else",
    "elif",
    "with",
    "with-as",
    "with several items",
    "async with",
    "raise",
    "bare raise",
    "raise from",
    "try",
    "except",
    "except as",
    "bare except",
    "try-else",
    "finally",
    "assert",
    "assert with message",
    "import",
    "import as",
    "from import",
    "relative import",
    "import *",
    "global",
    "nonlocal",
    "expression statement",
    "pass",
    "break",
    "continue",
    "host code",
    // Augmented assignment, every operator.
    "augmented +=",
    "augmented -=",
    "augmented *=",
    "augmented @=",
    "augmented /=",
    "augmented %=",
    "augmented **=",
    "augmented <<=",
    "augmented >>=",
    "augmented |=",
    "augmented ^=",
    "augmented &=",
    "augmented //=",
    // Expressions.
    "and",
    "or",
    ":=",
    "binary +",
    "binary -",
    "binary *",
    "binary @",
    "binary /",
    "binary %",
    "binary **",
    "binary <<",
    "binary >>",
    "binary |",
    "binary ^",
    "binary &",
    "binary //",
    "unary ~",
    "unary not",
    "unary +",
    "unary -",
    "lambda",
    "conditional expression",
    "dict display",
    "dict unpacking",
    "set display",
    "list comprehension",
    "set comprehension",
    "dict comprehension",
    "generator expression",
    "nested comprehension clauses",
    "comprehension condition",
    "await",
    "yield",
    "yield from",
    "comparison ==",
    "comparison !=",
    "comparison <",
    "comparison <=",
    "comparison >",
    "comparison >=",
    "comparison is",
    "comparison is not",
    "comparison in",
    "comparison not in",
    "chained comparison",
    "call",
    "positional argument",
    "*argument",
    "keyword argument",
    "**argument",
    "int",
    "float",
    "imaginary",
    "string",
    "bytes",
    "f-string",
    "f-string conversion !r",
    "f-string conversion !s",
    "f-string conversion !a",
    "f-string format spec",
    "f-string debug field",
    "bool",
    "None",
    "...",
    "attribute",
    "subscript",
    "starred",
    "name",
    "list display",
    "tuple",
    "slice",
    "slice with step",
    // Parameters.
    "positional-only parameter",
    "*args parameter",
    "keyword-only parameter",
    "**kwargs parameter",
    "annotated parameter",
    "parameter default",
];

/// The constructs a statement shows (see [`EXPECTED_CONSTRUCTS`]).
fn stmt_constructs(kind: &StmtKind) -> Vec<String> {
    let mut out: Vec<&str> = Vec::new();
    match kind {
        StmtKind::FunctionDef(def) => {
            out.push(if def.is_async { "async def" } else { "def" });
            if !def.decorators.is_empty() {
                out.push("decorator");
            }
            if def.returns.is_some() {
                out.push("return annotation");
            }
        }
        StmtKind::ClassDef(class) => {
            out.push("class");
            if !class.bases.is_empty() {
                out.push("class bases");
            }
            if !class.decorators.is_empty() {
                out.push("class decorator");
            }
        }
        StmtKind::Return(value) => out.push(if value.is_some() {
            "return"
        } else {
            "bare return"
        }),
        StmtKind::Delete(_) => out.push("del"),
        StmtKind::Assign { targets, .. } => {
            out.push("assignment");
            if targets.len() > 1 {
                out.push("chained assignment");
            }
            for target in targets {
                match &target.kind {
                    ExprKind::Tuple(items) | ExprKind::List(items) => {
                        out.push(if matches!(target.kind, ExprKind::Tuple(_)) {
                            "tuple target"
                        } else {
                            "list target"
                        });
                        if items
                            .iter()
                            .any(|item| matches!(item.kind, ExprKind::Starred(_)))
                        {
                            out.push("starred target");
                        }
                    }
                    ExprKind::Subscript { .. } => out.push("subscript target"),
                    ExprKind::Attribute { .. } => out.push("attribute target"),
                    _ => {}
                }
            }
        }
        StmtKind::AugAssign { op, .. } => {
            return vec![format!("augmented {}=", op.as_str())];
        }
        StmtKind::AnnAssign { value, .. } => out.push(if value.is_some() {
            "annotated assignment"
        } else {
            "annotation without value"
        }),
        StmtKind::For {
            is_async, orelse, ..
        } => {
            out.push(if *is_async { "async for" } else { "for" });
            if !orelse.is_empty() {
                out.push("for-else");
            }
        }
        StmtKind::While { orelse, .. } => {
            out.push("while");
            if !orelse.is_empty() {
                out.push("while-else");
            }
        }
        StmtKind::If { orelse, .. } => {
            out.push("if");
            match orelse.as_slice() {
                [] => {}
                [only] if matches!(only.kind, StmtKind::If { .. }) => out.push("elif"),
                _ => out.push("else"),
            }
        }
        StmtKind::With {
            is_async, items, ..
        } => {
            out.push(if *is_async { "async with" } else { "with" });
            if items.iter().any(|item| item.target.is_some()) {
                out.push("with-as");
            }
            if items.len() > 1 {
                out.push("with several items");
            }
        }
        StmtKind::Raise { exc, cause } => {
            out.push(if exc.is_some() { "raise" } else { "bare raise" });
            if cause.is_some() {
                out.push("raise from");
            }
        }
        StmtKind::Try {
            handlers,
            orelse,
            finalbody,
            ..
        } => {
            out.push("try");
            for handler in handlers {
                out.push(if handler.type_.is_some() {
                    "except"
                } else {
                    "bare except"
                });
                if handler.name.is_some() {
                    out.push("except as");
                }
            }
            if !orelse.is_empty() {
                out.push("try-else");
            }
            if !finalbody.is_empty() {
                out.push("finally");
            }
        }
        StmtKind::Assert { msg, .. } => {
            out.push("assert");
            if msg.is_some() {
                out.push("assert with message");
            }
        }
        StmtKind::Import(aliases) => {
            out.push("import");
            if aliases.iter().any(|alias| alias.asname.is_some()) {
                out.push("import as");
            }
        }
        StmtKind::ImportFrom { names, level, .. } => {
            out.push("from import");
            if *level > 0 {
                out.push("relative import");
            }
            if names.iter().any(|alias| alias.name.name == "*") {
                out.push("import *");
            }
        }
        StmtKind::Global(_) => out.push("global"),
        StmtKind::Nonlocal(_) => out.push("nonlocal"),
        StmtKind::Expr(_) => out.push("expression statement"),
        StmtKind::Pass => out.push("pass"),
        StmtKind::Break => out.push("break"),
        StmtKind::Continue => out.push("continue"),
        StmtKind::Error(_) => out.push("error statement"),
    }
    out.into_iter().map(str::to_owned).collect()
}

/// The constructs an expression shows (see [`EXPECTED_CONSTRUCTS`]).
fn expr_constructs(kind: &ExprKind) -> Vec<String> {
    let name = match kind {
        ExprKind::BoolOp { op, .. } => op.as_str().to_owned(),
        ExprKind::NamedExpr { .. } => ":=".to_owned(),
        ExprKind::BinOp { op, .. } => format!("binary {}", op.as_str()),
        ExprKind::UnaryOp { op, .. } => format!("unary {}", op.as_str()),
        ExprKind::Lambda { .. } => "lambda".to_owned(),
        ExprKind::IfExp { .. } => "conditional expression".to_owned(),
        ExprKind::Dict(items) => {
            let mut out = vec!["dict display".to_owned()];
            if items.iter().any(|item| matches!(item, DictItem::Unpack(_))) {
                out.push("dict unpacking".to_owned());
            }
            return out;
        }
        ExprKind::Set(_) => "set display".to_owned(),
        ExprKind::ListComp { .. } => "list comprehension".to_owned(),
        ExprKind::SetComp { .. } => "set comprehension".to_owned(),
        ExprKind::DictComp { .. } => "dict comprehension".to_owned(),
        ExprKind::GeneratorExp { .. } => "generator expression".to_owned(),
        ExprKind::Await(_) => "await".to_owned(),
        ExprKind::Yield(_) => "yield".to_owned(),
        ExprKind::YieldFrom(_) => "yield from".to_owned(),
        ExprKind::Compare { comparisons, .. } => {
            let mut out: Vec<String> = comparisons
                .iter()
                .map(|(op, _)| format!("comparison {}", op.as_str()))
                .collect();
            if comparisons.len() > 1 {
                out.push("chained comparison".to_owned());
            }
            return out;
        }
        ExprKind::Call { .. } => "call".to_owned(),
        ExprKind::Int(_) => "int".to_owned(),
        ExprKind::Float(_) => "float".to_owned(),
        ExprKind::Imaginary(_) => "imaginary".to_owned(),
        ExprKind::Str(_) => "string".to_owned(),
        ExprKind::Bytes(_) => "bytes".to_owned(),
        ExprKind::FString(_) => "f-string".to_owned(),
        ExprKind::Bool(_) => "bool".to_owned(),
        ExprKind::None => "None".to_owned(),
        ExprKind::Ellipsis => "...".to_owned(),
        ExprKind::Attribute { .. } => "attribute".to_owned(),
        ExprKind::Subscript { .. } => "subscript".to_owned(),
        ExprKind::Starred(_) => "starred".to_owned(),
        ExprKind::Name(_) => "name".to_owned(),
        ExprKind::List(_) => "list display".to_owned(),
        ExprKind::Tuple(_) => "tuple".to_owned(),
        ExprKind::Slice { step, .. } => {
            let mut out = vec!["slice".to_owned()];
            if step.is_some() {
                out.push("slice with step".to_owned());
            }
            return out;
        }
        ExprKind::Error => "error expression".to_owned(),
    };
    vec![name]
}

proptest::proptest! {
    #![proptest_config(property_config(256))]

    /// The validators hold on malformed input too: well-formed fixtures are
    /// broken in the ways editing breaks code (a deleted range, an inserted
    /// bracket, quote, colon, indent or stray character, a duplicated or
    /// dropped line, a truncated file), and the mutant must still lex and parse
    /// without panicking, with balanced INDENT/DEDENT, every span (tokens, tree,
    /// diagnostic labels) inside the file and the tree's spans nested.
    #[test]
    fn mutated_fixtures_keep_invariants(mutant in mutant()) {
        let (tokens, _) = nkic_syntax::lex(&mutant.text);
        check_tokens(&mutant, &tokens, BracketRule::Unchecked);
        let (module, diags) = nkic_syntax::parse(&mutant.text);
        check_ast_spans(&mutant, &module);
        for diag in &diags {
            for label in diag.primary.iter().chain(&diag.secondary) {
                mutant.assert_in_file(label.span, "a diagnostic label");
            }
        }
    }
}

/// The configuration of this file's property tests.
///
/// CI runs a fixed set of cases (a fixed seed), so a run is reproducible and
/// a red CI always means a change broke something. To explore further, set
/// `PROPTEST_CASES` (more cases) and `PROPTEST_RNG_SEED` (another seed, any
/// number), which override the defaults here.
fn property_config(cases: u32) -> proptest::test_runner::Config {
    let mut config = proptest::test_runner::Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = proptest::test_runner::RngSeed::Fixed(0x6e6b_6963);
    }
    config
}

/// Snippets inserted by [`mutant`]: the characters whose absence or excess
/// breaks Python code in interesting ways.
const MUTATION_SNIPPETS: &[&str] = &[
    ":", "(", ")", "[", "]", "{", "}", ",", "=", "==", "\"", "'", "\"\"\"", "f\"{", "}", "\\",
    "\n", "\n    ", "    ", "\t", "#", "if ", "else:", "lambda", "def ", "@", "$", "\u{201c}",
    "\u{2212}", "0x", "1_", ".", "...", "*", "**", ":=", "->", ";", "\r\n",
];

/// A well-formed fixture with one random edit; its name says which.
fn mutant() -> impl proptest::strategy::Strategy<Value = Fixture> {
    use proptest::prelude::*;
    let sources: Vec<(String, String)> = fixture_paths("parse/ok")
        .iter()
        .map(|path| {
            let fixture = Fixture::read(path);
            (fixture.name, fixture.text)
        })
        .collect();
    (
        proptest::sample::select(sources),
        0..6u8,
        any::<proptest::sample::Index>(),
        any::<proptest::sample::Index>(),
        proptest::sample::select(MUTATION_SNIPPETS),
    )
        .prop_map(|((name, text), kind, first, second, snippet)| {
            let at = floor_char_boundary(&text, first.index(text.len() + 1));
            let other = floor_char_boundary(&text, second.index(text.len() + 1));
            let (lo, hi) = (at.min(other), at.max(other));
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let line = first.index(lines.len().max(1));
            let (edit, mutated) = match kind {
                0 => {
                    let hi = floor_char_boundary(&text, hi.min(lo + 24));
                    (
                        format!("deleted {lo}..{hi}"),
                        format!("{}{}", &text[..lo], &text[hi..]),
                    )
                }
                1 => (
                    format!("inserted {snippet:?} at {at}"),
                    format!("{}{snippet}{}", &text[..at], &text[at..]),
                ),
                2 => {
                    let mut out = lines.clone();
                    if let Some(copy) = lines.get(line) {
                        out.insert(line, copy);
                    }
                    (format!("duplicated line {line}"), out.concat())
                }
                3 => {
                    let mut out = lines.clone();
                    if line < out.len() {
                        out.remove(line);
                    }
                    (format!("dropped line {line}"), out.concat())
                }
                4 => (format!("truncated at {at}"), text[..at].to_owned()),
                _ => (
                    format!("replaced {lo}..{hi} with {snippet:?}"),
                    format!(
                        "{}{snippet}{}",
                        &text[..lo],
                        &text[floor_char_boundary(&text, hi.min(lo + 8))..]
                    ),
                ),
            };
            Fixture {
                name: format!("{name} ({edit})"),
                text: mutated,
            }
        })
}

/// The largest char boundary of `text` at or below `index`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A fixture file: its text and its name relative to the `tests/` directory.
#[derive(Clone, Debug)]
struct Fixture {
    name: String,
    text: String,
}

impl Fixture {
    /// The path relative to the `tests/` directory, with `/` on every
    /// platform so that snapshots do not depend on it.
    ///
    /// The `tests/` directory is found as the fixture's nearest ancestor that
    /// holds this harness, not from `CARGO_MANIFEST_DIR`: insta may locate the
    /// fixtures through another spelling of the same directory (a workspace
    /// root given by `INSTA_WORKSPACE_ROOT`, a copy of the checkout), and an
    /// absolute path must never reach a snapshot.
    fn relative_name(path: &Path) -> String {
        let root = path
            .ancestors()
            .find(|dir| dir.join("golden.rs").is_file())
            .unwrap_or_else(|| panic!("fixture {} is not below tests/", path.display()));
        let relative = path.strip_prefix(root).unwrap_or(path);
        relative
            .components()
            .map(|part| part.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    fn read(path: &Path) -> Fixture {
        let name = Fixture::relative_name(path);
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|err| panic!("cannot read fixture {name}: {err}"));
        Fixture { name, text }
    }

    fn len(&self) -> u32 {
        u32::try_from(self.text.len()).expect("fixtures are far smaller than 4 GiB")
    }

    fn sources(&self) -> (SourceMap, nkic_diag::FileId) {
        let mut sources = SourceMap::new();
        let file = sources.add(self.name.clone(), self.text.clone());
        (sources, file)
    }

    /// Terminal rendering (no colour, ASCII) of every diagnostic, in order.
    fn render_text(&self, diags: &[Diagnostic]) -> String {
        let (sources, file) = self.sources();
        let mut out = String::new();
        for diag in diags {
            out.push_str(&render(
                &diag.clone().in_file(file),
                &sources,
                RenderConfig::default(),
            ));
        }
        out
    }

    /// JSON-lines rendering of every diagnostic, in order.
    fn render_json(&self, diags: &[Diagnostic]) -> String {
        let (sources, file) = self.sources();
        let mut out = String::new();
        for diag in diags {
            out.push_str(&render_json(&diag.clone().in_file(file), &sources));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    fn assert_no_diagnostics(&self, stage: &str, diags: &[Diagnostic]) {
        assert!(
            diags.is_empty(),
            "{}: {stage} a well-formed fixture produced diagnostics:\n{}",
            self.name,
            self.render_text(diags)
        );
    }

    fn assert_in_file(&self, span: Span, what: &str) {
        assert!(
            span.start <= span.end && span.end <= self.len(),
            "{}: {what} has span {span:?} outside the file (length {})",
            self.name,
            self.len()
        );
    }
}

/// The `n` of a fixture named `*_<n>errors.py`.
fn expected_error_count(name: &str) -> Option<usize> {
    let stem = name.rsplit('/').next()?.strip_suffix("errors.py")?;
    let digits = stem.rsplit('_').next()?;
    digits.parse().ok()
}

/// Whether a NEWLINE inside brackets is a validator failure.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BracketRule {
    /// Well-formed input: the layout pass must drop every newline in brackets.
    NoNewlineInside,
    /// Malformed input: an unclosed bracket may legitimately end in a NEWLINE.
    Unchecked,
}

/// The token-stream validators (see the module documentation).
fn check_tokens(fixture: &Fixture, tokens: &[(usize, Token<'_>, usize)], rule: BracketRule) {
    let name = &fixture.name;
    let len = fixture.text.len();
    let mut prev_end = 0;
    let mut indent_depth = 0usize;
    let mut bracket_depth = 0usize;
    for (index, (start, token, end)) in tokens.iter().enumerate() {
        let (start, end) = (*start, *end);
        assert!(
            start <= end && end <= len,
            "{name}: token #{index} {token:?} has span {start}..{end} outside the file (length {len})"
        );
        assert!(
            start >= prev_end,
            "{name}: token #{index} {token:?} at {start}..{end} overlaps or precedes the previous token ending at {prev_end}"
        );
        prev_end = end;
        if let Some(payload) = payload_text(token) {
            assert_eq!(
                payload,
                &fixture.text[start..end],
                "{name}: token #{index} {token:?} does not spell its source text"
            );
        }
        match token {
            Token::Indent => indent_depth += 1,
            Token::Dedent => {
                assert!(
                    indent_depth > 0,
                    "{name}: token #{index} is a DEDENT with no open INDENT"
                );
                indent_depth -= 1;
            }
            Token::LParen | Token::LBracket | Token::LBrace => bracket_depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace => {
                bracket_depth = bracket_depth.saturating_sub(1);
            }
            Token::Newline if rule == BracketRule::NoNewlineInside => {
                assert_eq!(
                    bracket_depth, 0,
                    "{name}: token #{index} is a NEWLINE inside brackets at {start}"
                );
            }
            _ => {}
        }
        if matches!(token, Token::Indent | Token::Dedent) {
            assert_eq!(
                start, end,
                "{name}: token #{index} {token:?} is synthetic and must be zero-width"
            );
        }
    }
    assert_eq!(
        indent_depth, 0,
        "{name}: {indent_depth} INDENT token(s) are never closed by a DEDENT"
    );
}

/// The source text a payload-carrying token must spell.
fn payload_text<'src>(token: &Token<'src>) -> Option<&'src str> {
    match token {
        Token::Name(text)
        | Token::Int(text)
        | Token::Float(text)
        | Token::Imaginary(text)
        | Token::String(text) => Some(text),
        _ => None,
    }
}

/// Unparse, re-parse, compare with spans erased; the printer must be at a fixpoint.
fn check_round_trip(fixture: &Fixture, module: &Module) {
    let printed = nkic_syntax::unparse(module);
    let (reparsed, diags) = nkic_syntax::parse(&printed);
    assert!(
        diags.is_empty(),
        "{}: the unparsed source does not parse:\n{printed}\n{}",
        fixture.name,
        Fixture {
            name: format!("{} (unparsed)", fixture.name),
            text: printed.clone(),
        }
        .render_text(&diags)
    );
    assert!(
        reparsed.without_spans() == module.without_spans(),
        "{}: the round trip changed the tree; unparsed source:\n{printed}\n\
         original dump:\n{}\nre-parsed dump:\n{}",
        fixture.name,
        nkic_syntax::dump_ast(module),
        nkic_syntax::dump_ast(&reparsed)
    );
    let reprinted = nkic_syntax::unparse(&reparsed);
    assert_eq!(
        reprinted, printed,
        "{}: printing the re-parsed tree gives different text",
        fixture.name
    );
}

/// The AST span validator (see the module documentation), then the syntax
/// crate's own structure check (which also covers the host-code indices).
///
/// Returns the constructs the tree contains, for the coverage test.
fn check_ast_spans(fixture: &Fixture, module: &Module) -> BTreeSet<String> {
    if let Err(problem) = nkic_syntax::check_structure(module) {
        panic!("{}: structure check failed: {problem}", fixture.name);
    }
    fixture.assert_in_file(module.span, "the module");
    let mut walker = SpanWalker {
        fixture,
        path: Vec::new(),
        seen: BTreeSet::new(),
    };
    walker.block(module.span, &module.body, "module body");
    if !module.host_code.is_empty() {
        walker.seen.insert("host code".to_owned());
    }
    walker.seen
}

/// Walks the tree checking that children nest in their parents in source order.
///
/// Each `enter_*` checks a node against its parent span and the end of its
/// previous sibling; `path` names the nodes above, for the failure message.
struct SpanWalker<'a> {
    fixture: &'a Fixture,
    path: Vec<String>,
    /// The constructs met so far (see [`construct_names`]).
    seen: BTreeSet<String>,
}

/// The running state of one parent while its children are visited.
struct Siblings {
    parent: Span,
    prev_end: u32,
}

impl Siblings {
    fn new(parent: Span) -> Siblings {
        Siblings {
            parent,
            prev_end: parent.start,
        }
    }
}

impl SpanWalker<'_> {
    fn fail(&self, message: String) -> ! {
        panic!(
            "{}: {message}\n  at: {}",
            self.fixture.name,
            self.path.join(" > ")
        )
    }

    /// Checks `span` of a child called `what` against its parent and siblings.
    fn child(&mut self, sibs: &mut Siblings, span: Span, what: &str) {
        self.fixture.assert_in_file(span, what);
        if !sibs.parent.encloses(span) {
            self.fail(format!(
                "{what} at {span:?} is not inside its parent at {:?}",
                sibs.parent
            ));
        }
        if span.start < sibs.prev_end {
            self.fail(format!(
                "{what} at {span:?} starts before its previous sibling ends at {}",
                sibs.prev_end
            ));
        }
        sibs.prev_end = span.end;
    }

    fn block(&mut self, parent: Span, body: &[Stmt], what: &str) {
        let mut sibs = Siblings::new(parent);
        self.stmts(&mut sibs, body, what);
    }

    fn stmts(&mut self, sibs: &mut Siblings, body: &[Stmt], what: &str) {
        for stmt in body {
            self.child(sibs, stmt.span, what);
            self.path.push(format!("{what} statement {:?}", stmt.span));
            self.stmt(stmt);
            self.path.pop();
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        self.seen.extend(stmt_constructs(&stmt.kind));
        let mut s = Siblings::new(stmt.span);
        match &stmt.kind {
            StmtKind::FunctionDef(def) => {
                self.exprs(&mut s, &def.decorators, "decorator");
                self.child(&mut s, def.name.span, "function name");
                self.params(&mut s, &def.params);
                self.opt_expr(&mut s, def.returns.as_ref(), "return annotation");
                self.stmts(&mut s, &def.body, "function body");
            }
            StmtKind::ClassDef(class) => {
                self.exprs(&mut s, &class.decorators, "decorator");
                self.child(&mut s, class.name.span, "class name");
                self.args(&mut s, &class.bases);
                self.stmts(&mut s, &class.body, "class body");
            }
            StmtKind::Return(value) => self.opt_expr(&mut s, value.as_ref(), "returned value"),
            StmtKind::Delete(targets) => self.exprs(&mut s, targets, "del target"),
            StmtKind::Assign { targets, value } => {
                self.exprs(&mut s, targets, "assignment target");
                self.expr(&mut s, value, "assigned value");
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(&mut s, target, "augmented target");
                self.expr(&mut s, value, "augmented value");
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                self.expr(&mut s, target, "annotated target");
                self.expr(&mut s, annotation, "annotation");
                self.opt_expr(&mut s, value.as_ref(), "annotated value");
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
                ..
            } => {
                self.expr(&mut s, target, "for target");
                self.expr(&mut s, iter, "for iterable");
                self.stmts(&mut s, body, "for body");
                self.stmts(&mut s, orelse, "for else");
            }
            StmtKind::While { test, body, orelse } | StmtKind::If { test, body, orelse } => {
                self.expr(&mut s, test, "condition");
                self.stmts(&mut s, body, "body");
                self.stmts(&mut s, orelse, "else branch");
            }
            StmtKind::With { items, body, .. } => {
                for item in items {
                    self.with_item(&mut s, item);
                }
                self.stmts(&mut s, body, "with body");
            }
            StmtKind::Raise { exc, cause } => {
                self.opt_expr(&mut s, exc.as_ref(), "raised exception");
                self.opt_expr(&mut s, cause.as_ref(), "raise cause");
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.stmts(&mut s, body, "try body");
                for handler in handlers {
                    self.handler(&mut s, handler);
                }
                self.stmts(&mut s, orelse, "try else");
                self.stmts(&mut s, finalbody, "finally body");
            }
            StmtKind::Assert { test, msg } => {
                self.expr(&mut s, test, "assert condition");
                self.opt_expr(&mut s, msg.as_ref(), "assert message");
            }
            StmtKind::Import(aliases) => {
                for alias in aliases {
                    self.child(&mut s, alias.span, "import alias");
                }
            }
            StmtKind::ImportFrom { module, names, .. } => {
                if let Some(module) = module {
                    self.child(&mut s, module.span, "imported module");
                }
                for alias in names {
                    self.child(&mut s, alias.span, "import alias");
                }
            }
            StmtKind::Global(names) | StmtKind::Nonlocal(names) => {
                for name in names {
                    self.child(&mut s, name.span, "declared name");
                }
            }
            StmtKind::Expr(value) => self.expr(&mut s, value, "expression statement"),
            StmtKind::Error(inner) => self.stmts(&mut s, inner, "recovered statement"),
            StmtKind::Pass | StmtKind::Break | StmtKind::Continue => {}
        }
    }

    fn with_item(&mut self, sibs: &mut Siblings, item: &WithItem) {
        self.child(sibs, item.span, "with item");
        let mut s = Siblings::new(item.span);
        self.expr(&mut s, &item.context, "context manager");
        self.opt_expr(&mut s, item.target.as_ref(), "with target");
    }

    fn handler(&mut self, sibs: &mut Siblings, handler: &ExceptHandler) {
        self.child(sibs, handler.span, "except handler");
        let mut s = Siblings::new(handler.span);
        self.opt_expr(&mut s, handler.type_.as_ref(), "exception type");
        if let Some(name) = &handler.name {
            self.child(&mut s, name.span, "exception name");
        }
        self.stmts(&mut s, &handler.body, "except body");
    }

    fn params(&mut self, sibs: &mut Siblings, params: &Params) {
        self.child(sibs, params.span, "parameter list");
        let mut s = Siblings::new(params.span);
        let all = params
            .posonly
            .iter()
            .chain(&params.args)
            .chain(&params.vararg)
            .chain(&params.kwonly)
            .chain(&params.kwarg);
        let kinds = [
            ("positional-only parameter", params.posonly.is_empty()),
            ("*args parameter", params.vararg.is_none()),
            ("keyword-only parameter", params.kwonly.is_empty()),
            ("**kwargs parameter", params.kwarg.is_none()),
        ];
        for (kind, absent) in kinds {
            if !absent {
                self.seen.insert(kind.to_owned());
            }
        }
        for param in all {
            if param.annotation.is_some() {
                self.seen.insert("annotated parameter".to_owned());
            }
            if param.default.is_some() {
                self.seen.insert("parameter default".to_owned());
            }
            self.child(&mut s, param.span, "parameter");
            let mut ps = Siblings::new(param.span);
            self.child(&mut ps, param.name.span, "parameter name");
            self.opt_expr(&mut ps, param.annotation.as_ref(), "parameter annotation");
            self.opt_expr(&mut ps, param.default.as_ref(), "parameter default");
        }
    }

    fn args(&mut self, sibs: &mut Siblings, args: &[Arg]) {
        for arg in args {
            self.seen.insert(
                match arg.kind {
                    ArgKind::Positional(_) => "positional argument",
                    ArgKind::Star(_) => "*argument",
                    ArgKind::Keyword(..) => "keyword argument",
                    ArgKind::DoubleStar(_) => "**argument",
                }
                .to_owned(),
            );
            self.child(sibs, arg.span, "argument");
            let mut s = Siblings::new(arg.span);
            match &arg.kind {
                ArgKind::Positional(value) | ArgKind::Star(value) | ArgKind::DoubleStar(value) => {
                    self.expr(&mut s, value, "argument value");
                }
                ArgKind::Keyword(name, value) => {
                    self.child(&mut s, name.span, "keyword name");
                    self.expr(&mut s, value, "keyword value");
                }
            }
        }
    }

    fn exprs(&mut self, sibs: &mut Siblings, exprs: &[Expr], what: &str) {
        for expr in exprs {
            self.expr(sibs, expr, what);
        }
    }

    fn opt_expr(&mut self, sibs: &mut Siblings, expr: Option<&Expr>, what: &str) {
        if let Some(expr) = expr {
            self.expr(sibs, expr, what);
        }
    }

    fn comprehensions(&mut self, sibs: &mut Siblings, generators: &[Comprehension]) {
        if generators.len() > 1 {
            self.seen.insert("nested comprehension clauses".to_owned());
        }
        for generator in generators {
            if !generator.ifs.is_empty() {
                self.seen.insert("comprehension condition".to_owned());
            }
            self.child(sibs, generator.span, "comprehension clause");
            let mut s = Siblings::new(generator.span);
            self.expr(&mut s, &generator.target, "comprehension target");
            self.expr(&mut s, &generator.iter, "comprehension iterable");
            self.exprs(&mut s, &generator.ifs, "comprehension condition");
        }
    }

    fn fstring_parts(&mut self, sibs: &mut Siblings, parts: &[FStringPart]) {
        for part in parts {
            if let FStringPart::Field(field) = part {
                if let Some(conversion) = field.conversion {
                    self.seen
                        .insert(format!("f-string conversion !{conversion}"));
                }
                if field.format_spec.is_some() {
                    self.seen.insert("f-string format spec".to_owned());
                }
                if field.debug_text.is_some() {
                    self.seen.insert("f-string debug field".to_owned());
                }
                self.child(sibs, field.span, "f-string field");
                let mut s = Siblings::new(field.span);
                self.expr(&mut s, &field.value, "f-string field value");
                if let Some(spec) = &field.format_spec {
                    self.fstring_parts(&mut s, spec);
                }
            }
        }
    }

    fn expr(&mut self, sibs: &mut Siblings, expr: &Expr, what: &str) {
        self.seen.extend(expr_constructs(&expr.kind));
        self.child(sibs, expr.span, what);
        self.path.push(format!("{what} {:?}", expr.span));
        let mut s = Siblings::new(expr.span);
        match &expr.kind {
            ExprKind::BoolOp { values, .. } => self.exprs(&mut s, values, "operand"),
            ExprKind::NamedExpr { target, value } => {
                self.expr(&mut s, target, "walrus target");
                self.expr(&mut s, value, "walrus value");
            }
            ExprKind::BinOp { left, right, .. } => {
                self.expr(&mut s, left, "left operand");
                self.expr(&mut s, right, "right operand");
            }
            ExprKind::UnaryOp { operand, .. } => self.expr(&mut s, operand, "operand"),
            ExprKind::Lambda { params, body } => {
                // A lambda without parameters has an empty parameter span.
                if !(params.span.is_empty() && params.args.is_empty()) {
                    self.params(&mut s, params);
                }
                self.expr(&mut s, body, "lambda body");
            }
            ExprKind::IfExp { test, body, orelse } => {
                // Source order is `body if test else orelse`.
                self.expr(&mut s, body, "conditional value");
                self.expr(&mut s, test, "conditional test");
                self.expr(&mut s, orelse, "conditional alternative");
            }
            ExprKind::Dict(items) => {
                for item in items {
                    match item {
                        DictItem::KeyValue(key, value) => {
                            self.expr(&mut s, key, "dict key");
                            self.expr(&mut s, value, "dict value");
                        }
                        DictItem::Unpack(value) => self.expr(&mut s, value, "dict unpacking"),
                    }
                }
            }
            ExprKind::Set(items) | ExprKind::List(items) | ExprKind::Tuple(items) => {
                self.exprs(&mut s, items, "element");
            }
            ExprKind::ListComp { elt, generators }
            | ExprKind::SetComp { elt, generators }
            | ExprKind::GeneratorExp { elt, generators } => {
                self.expr(&mut s, elt, "comprehension element");
                self.comprehensions(&mut s, generators);
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => {
                self.expr(&mut s, key, "comprehension key");
                self.expr(&mut s, value, "comprehension value");
                self.comprehensions(&mut s, generators);
            }
            ExprKind::Await(value) | ExprKind::YieldFrom(value) | ExprKind::Starred(value) => {
                self.expr(&mut s, value, "operand");
            }
            ExprKind::Yield(value) => self.opt_expr(&mut s, value.as_deref(), "yielded value"),
            ExprKind::Compare { left, comparisons } => {
                self.expr(&mut s, left, "compared operand");
                for (_, right) in comparisons {
                    self.expr(&mut s, right, "compared operand");
                }
            }
            ExprKind::Call { func, args } => {
                self.expr(&mut s, func, "callee");
                self.args(&mut s, args);
            }
            ExprKind::FString(parts) => self.fstring_parts(&mut s, parts),
            ExprKind::Attribute { value, attr } => {
                self.expr(&mut s, value, "attribute base");
                self.child(&mut s, attr.span, "attribute name");
            }
            ExprKind::Subscript { value, index } => {
                self.expr(&mut s, value, "subscripted value");
                self.expr(&mut s, index, "index");
            }
            ExprKind::Slice { lower, upper, step } => {
                self.opt_expr(&mut s, lower.as_deref(), "slice lower bound");
                self.opt_expr(&mut s, upper.as_deref(), "slice upper bound");
                self.opt_expr(&mut s, step.as_deref(), "slice step");
            }
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Imaginary(_)
            | ExprKind::Str(_)
            | ExprKind::Bytes(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Ellipsis
            | ExprKind::Name(_)
            | ExprKind::Error => {}
        }
        self.path.pop();
    }
}
