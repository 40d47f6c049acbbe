//! Property test: random valid programs survive unparse and re-parse unchanged.
//!
//! A small generator writes Python source in which every compound expression
//! is parenthesised, so the text is valid whatever the operators' precedence.
//! The parser must accept it without diagnostics; printing the tree must give
//! source that parses back to the same tree (spans erased); and printing that
//! tree again must give the same text. Because the generated parentheses
//! disappear in the tree, the printer has to put back exactly the ones
//! precedence needs, which is what this test probes (`-x ** 2` versus
//! `(-x) ** 2`, `a if b else c` as an operand, lambdas in conditionals, chained
//! comparisons versus parenthesised ones, tuples in subscripts).
//!
//! A third property checks the layout pass: rewriting a generated program's
//! layout (line breaks and comments inside brackets, blank and comment-only
//! lines at any indentation, backslash continuations) leaves its tree as it was.

use proptest::prelude::*;
use proptest::strategy::Union;

proptest! {
    #![proptest_config(property_config(256))]

    #[test]
    fn expressions_round_trip(src in expr_stmt_source()) {
        check_round_trip(&src)?;
    }

    #[test]
    fn programs_round_trip(src in program()) {
        check_round_trip(&src)?;
    }

    #[test]
    fn layout_does_not_change_the_tree(
        src in program(),
        choices in proptest::collection::vec(any::<u8>(), 256),
    ) {
        check_layout_invariance(&src, &choices)?;
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

/// The property: comments, blank lines, line breaks inside brackets and
/// backslash continuations do not change the tree.
fn check_layout_invariance(src: &str, choices: &[u8]) -> Result<(), TestCaseError> {
    let reformatted = reformat(src, choices);
    let (module, diags) = nkic_syntax::parse(src);
    prop_assert!(
        diags.is_empty(),
        "generated source does not parse:\n{src}\n{diags:#?}"
    );
    let (reformatted_module, diags) = nkic_syntax::parse(&reformatted);
    prop_assert!(
        diags.is_empty(),
        "reformatted source does not parse:\n{reformatted}\n--- from ---\n{src}\n{diags:#?}"
    );
    prop_assert!(
        reformatted_module.without_spans() == module.without_spans(),
        "reformatting changed the tree:\n{reformatted}\n--- from ---\n{src}"
    );
    Ok(())
}

/// Rewrites the layout of generated source without changing its meaning.
///
/// Outside string literals, and driven by `choices` (cycled): inside
/// brackets, a line break with arbitrary indentation (sometimes after a
/// comment) follows an opening bracket or a comma; ` = ` of an assignment may
/// become ` = \` plus a line break; a line may get a trailing comment; and
/// blank lines or comment-only lines at arbitrary indentation go between
/// lines. The generator's strings hold no line breaks and no `#`.
fn reformat(src: &str, choices: &[u8]) -> String {
    let mut choice = choices.iter().copied().cycle();
    let mut next = move || choice.next().unwrap_or(0);
    let mut out = String::new();
    for line in src.lines() {
        match next() % 8 {
            0 => out.push('\n'),
            1 => {
                let indent = " ".repeat(usize::from(next() % 13));
                out.push_str(&format!("{indent}# a comment-only line\n"));
            }
            _ => {}
        }
        let mut depth = 0usize;
        // The quote that closes the current string and whether it is triple.
        let mut quote: Option<(char, bool)> = None;
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            out.push(c);
            if let Some((q, triple)) = quote {
                if c == '\\' {
                    if let Some(&escaped) = chars.get(i + 1) {
                        out.push(escaped);
                        i += 1;
                    }
                } else if c == q {
                    if !triple {
                        quote = None;
                    } else if chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q) {
                        out.push(q);
                        out.push(q);
                        i += 2;
                        quote = None;
                    }
                }
                i += 1;
                continue;
            }
            match c {
                '"' | '\'' => {
                    let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
                    if triple {
                        out.push(c);
                        out.push(c);
                        i += 2;
                    }
                    quote = Some((c, triple));
                }
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            let opens_or_separates = matches!(c, '(' | '[' | '{' | ',');
            if depth > 0 && opens_or_separates {
                match next() % 6 {
                    0 => out.push_str(&format!("\n{}", " ".repeat(usize::from(next() % 17)))),
                    1 => out.push_str(&format!(
                        "  # inside brackets\n{}",
                        " ".repeat(usize::from(next() % 17))
                    )),
                    _ => {}
                }
            }
            let assignment = depth == 0
                && c == '='
                && i > 0
                && chars[i - 1] == ' '
                && chars.get(i + 1) == Some(&' ');
            if assignment && next() % 3 == 0 {
                out.push_str(&format!(" \\\n{}", " ".repeat(usize::from(next() % 9))));
            }
            i += 1;
        }
        if next() % 5 == 0 {
            out.push_str("  # trailing comment");
        }
        out.push('\n');
    }
    out
}

/// The property: clean parse, then a stable unparse/re-parse round trip.
fn check_round_trip(src: &str) -> Result<(), TestCaseError> {
    let (module, diags) = nkic_syntax::parse(src);
    prop_assert!(
        diags.is_empty(),
        "generated source does not parse:\n{src}\n{diags:#?}"
    );
    let printed = nkic_syntax::unparse(&module);
    let (reparsed, diags) = nkic_syntax::parse(&printed);
    prop_assert!(
        diags.is_empty(),
        "unparsed source does not parse:\n{src}\n--- unparsed ---\n{printed}\n{diags:#?}"
    );
    prop_assert!(
        reparsed.without_spans() == module.without_spans(),
        "round trip changed the tree:\n{src}\n--- unparsed ---\n{printed}\n--- before ---\n{}\n--- after ---\n{}",
        nkic_syntax::dump_ast(&module),
        nkic_syntax::dump_ast(&reparsed)
    );
    let reprinted = nkic_syntax::unparse(&reparsed);
    prop_assert_eq!(
        reprinted,
        printed,
        "the printer is not at a fixpoint on:\n{}",
        src
    );
    Ok(())
}

const NAMES: &[&str] = &["a", "b", "x", "tile", "nl", "i", "α", "名前", "_p"];

const INTS: &[&str] = &[
    "0",
    "7",
    "128",
    "1_000",
    "0xff",
    "0o17",
    "0b1010",
    "340282366920938463463374607431768211455",
];

const FLOATS: &[&str] = &[
    "1.0", "1.", ".5", "1e-5", "2.5e+3", "1_0.5", "6.02e23", "1e308", "0.1",
];

const STRINGS: &[&str] = &[
    r#""plain""#,
    r#"'single'"#,
    r#""tab\tand\nnewline""#,
    r#""quote \" inside""#,
    r#"'it\'s'"#,
    r#""back\\slash""#,
    r#"r"raw\d""#,
    r#""""triple""""#,
    r#""ünï 名""#,
    r#""" """#,
    r#""implicit " 'concatenation'"#,
    r#"f"{x}""#,
    r#"f"tile_{i}_{a + 1}""#,
    r#"f"{x!r:>8} {{lit}}""#,
];

const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^", "and", "or", "<", ">",
    "==", ">=", "<=", "!=", "in", "not in", "is", "is not",
];

const UNOPS: &[&str] = &["-", "+", "~", "not "];

const AUG_OPS: &[&str] = &[
    "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "<<=", ">>=", "&=", "|=", "^=",
];

fn pick(items: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    proptest::sample::select(items).prop_map(str::to_owned)
}

fn name() -> impl Strategy<Value = String> + Clone {
    pick(NAMES)
}

fn atom() -> BoxedStrategy<String> {
    prop_oneof![
        3 => name(),
        2 => pick(INTS),
        1 => pick(FLOATS),
        1 => pick(STRINGS),
        1 => pick(&["True", "False", "None", "..."]),
    ]
    .boxed()
}

/// A comma-separated list of 1..=max items, optionally with a trailing comma.
fn comma_list(item: BoxedStrategy<String>, max: usize) -> impl Strategy<Value = String> + Clone {
    (proptest::collection::vec(item, 1..=max), any::<bool>()).prop_map(|(items, trailing)| {
        let mut out = items.join(", ");
        if trailing {
            out.push(',');
        }
        out
    })
}

/// A subscript index: an expression, a slice, or a tuple of them.
fn index(e: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let bound = proptest::option::of(e.clone());
    let slice = (bound.clone(), bound.clone(), proptest::option::of(bound)).prop_map(
        |(lower, upper, step)| {
            let mut out = format!(
                "{}:{}",
                lower.unwrap_or_default(),
                upper.unwrap_or_default()
            );
            if let Some(step) = step {
                out.push(':');
                out.push_str(&step.unwrap_or_default());
            }
            out
        },
    );
    let item = prop_oneof![2 => e, 2 => slice, 1 => Just("...".to_owned())].boxed();
    comma_list(item, 3).boxed()
}

/// Call arguments: positional and `*` arguments, then keyword and `**` ones,
/// each keyword given once.
fn call_args(e: BoxedStrategy<String>) -> BoxedStrategy<String> {
    // Each argument carries its rank in the order Python requires and, for a
    // keyword argument, its name.
    let arg = prop_oneof![
        3 => e.clone().prop_map(|v| (0, None, v)),
        1 => e.clone().prop_map(|v| (0, None, format!("*{v}"))),
        1 => (name(), e.clone()).prop_map(|(k, v)| (1, Some(k.clone()), format!("{k}={v}"))),
        1 => e.prop_map(|v| (2, None, format!("**{v}"))),
    ]
    .boxed();
    proptest::collection::vec(arg, 0..4)
        .prop_map(|mut args| {
            args.sort_by_key(|(rank, _, _)| *rank);
            let mut keywords = Vec::new();
            let mut out = Vec::new();
            for (_, keyword, text) in args {
                if let Some(keyword) = keyword {
                    if keywords.contains(&keyword) {
                        continue;
                    }
                    keywords.push(keyword);
                }
                out.push(text);
            }
            out.join(", ")
        })
        .boxed()
}

fn lambda_params() -> BoxedStrategy<String> {
    prop_oneof![
        Just(String::new()),
        Just("x".to_owned()),
        Just("x, y=1".to_owned()),
        Just("*args, **kw".to_owned()),
        Just("a, *, key=None".to_owned()),
    ]
    .boxed()
}

/// A fully parenthesised expression.
fn expr() -> BoxedStrategy<String> {
    atom()
        .prop_recursive(4, 48, 4, |e| {
            let targets = name();
            Union::new_weighted(vec![
                (
                    6,
                    (e.clone(), pick(BINOPS), e.clone())
                        .prop_map(|(l, op, r)| format!("({l} {op} {r})"))
                        .boxed(),
                ),
                (
                    3,
                    (pick(UNOPS), e.clone())
                        .prop_map(|(op, v)| format!("({op}{v})"))
                        .boxed(),
                ),
                (
                    2,
                    (e.clone(), e.clone(), e.clone())
                        .prop_map(|(b, t, o)| format!("({b} if {t} else {o})"))
                        .boxed(),
                ),
                (
                    1,
                    (lambda_params(), e.clone())
                        .prop_map(|(p, b)| {
                            if p.is_empty() {
                                format!("(lambda: {b})")
                            } else {
                                format!("(lambda {p}: {b})")
                            }
                        })
                        .boxed(),
                ),
                (
                    3,
                    (e.clone(), call_args(e.clone()))
                        .prop_map(|(f, args)| format!("({f})({args})"))
                        .boxed(),
                ),
                (
                    3,
                    (e.clone(), index(e.clone()))
                        .prop_map(|(v, i)| format!("({v})[{i}]"))
                        .boxed(),
                ),
                (
                    2,
                    (e.clone(), name())
                        .prop_map(|(v, attr)| format!("({v}).{attr}"))
                        .boxed(),
                ),
                (
                    1,
                    proptest::collection::vec(e.clone(), 0..4)
                        .prop_map(|items| format!("[{}]", items.join(", ")))
                        .boxed(),
                ),
                (
                    1,
                    comma_list(e.clone(), 3)
                        .prop_map(|items| {
                            // One element needs its comma to stay a tuple.
                            if items.contains(',') {
                                format!("({items})")
                            } else {
                                format!("({items},)")
                            }
                        })
                        .boxed(),
                ),
                (
                    1,
                    comma_list(e.clone(), 3)
                        .prop_map(|items| format!("{{{items}}}"))
                        .boxed(),
                ),
                (
                    1,
                    proptest::collection::vec((e.clone(), e.clone()), 0..3)
                        .prop_map(|pairs| {
                            let items: Vec<String> =
                                pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                            format!("{{{}}}", items.join(", "))
                        })
                        .boxed(),
                ),
                (
                    1,
                    (
                        e.clone(),
                        targets.clone(),
                        e.clone(),
                        proptest::option::of(e.clone()),
                        0..4usize,
                    )
                        .prop_map(|(elt, var, iter, cond, kind)| {
                            let cond = cond.map(|c| format!(" if {c}")).unwrap_or_default();
                            let clause = format!("for {var} in {iter}{cond}");
                            match kind {
                                0 => format!("[{elt} {clause}]"),
                                1 => format!("{{{elt} {clause}}}"),
                                2 => format!("{{{elt}: {elt} {clause}}}"),
                                _ => format!("({elt} {clause})"),
                            }
                        })
                        .boxed(),
                ),
                (
                    1,
                    (targets, e.clone())
                        .prop_map(|(t, v)| format!("({t} := {v})"))
                        .boxed(),
                ),
                (
                    1,
                    (e.clone(), e)
                        .prop_map(|(a, b)| format!("[*{a}, {b}]"))
                        .boxed(),
                ),
            ])
            .boxed()
        })
        .boxed()
}

/// One expression statement.
fn expr_stmt_source() -> impl Strategy<Value = String> {
    expr().prop_map(|e| format!("{e}\n"))
}

/// An assignment target: a name, attribute, subscript or unpacking pattern.
fn target() -> BoxedStrategy<String> {
    prop_oneof![
        4 => name(),
        1 => (name(), name()).prop_map(|(v, a)| format!("{v}.{a}")),
        1 => (name(), expr()).prop_map(|(v, i)| format!("{v}[{i}]")),
        1 => (name(), name()).prop_map(|(a, b)| format!("{a}, {b}")),
        1 => (name(), name()).prop_map(|(a, b)| format!("[{a}, *{b}]")),
    ]
    .boxed()
}

/// A simple statement (one logical line, no newline).
fn simple_stmt() -> BoxedStrategy<String> {
    prop_oneof![
        3 => expr(),
        3 => (proptest::collection::vec(target(), 1..3), expr())
            .prop_map(|(targets, value)| format!("{} = {value}", targets.join(" = "))),
        1 => (name(), pick(AUG_OPS), expr()).prop_map(|(t, op, v)| format!("{t} {op} {v}")),
        1 => (name(), expr(), proptest::option::of(expr())).prop_map(|(t, ann, v)| match v {
            Some(v) => format!("{t}: {ann} = {v}"),
            None => format!("{t}: {ann}"),
        }),
        1 => Just("pass".to_owned()),
        1 => Just("break".to_owned()),
        1 => Just("continue".to_owned()),
        1 => proptest::option::of(expr())
            .prop_map(|v| v.map(|v| format!("return {v}")).unwrap_or_else(|| "return".to_owned())),
        1 => (expr(), proptest::option::of(expr())).prop_map(|(t, m)| match m {
            Some(m) => format!("assert {t}, {m}"),
            None => format!("assert {t}"),
        }),
        1 => (name(), name()).prop_map(|(a, b)| format!("del {a}, {b}")),
        1 => (name(), name()).prop_map(|(a, b)| format!("global {a}, {b}")),
        1 => name().prop_map(|a| format!("nonlocal {a}")),
        1 => (name(), name()).prop_map(|(a, b)| format!("import {a}.{b} as {b}")),
        1 => (0..3usize, name(), name())
            .prop_map(|(dots, m, n)| format!("from {}{m} import ({n} as {m}, {n})", ".".repeat(dots))),
        1 => (expr(), proptest::option::of(expr())).prop_map(|(e, c)| match c {
            Some(c) => format!("raise {e} from {c}"),
            None => format!("raise {e}"),
        }),
    ]
    .boxed()
}

/// A list of statements, each line indented by `indent` levels of 4 spaces.
fn block(depth: u32) -> BoxedStrategy<Vec<Vec<String>>> {
    let simple = simple_stmt().prop_map(|s| vec![s]).boxed();
    if depth == 0 {
        return proptest::collection::vec(simple, 1..4).boxed();
    }
    let stmt = prop_oneof![1 => simple, 1 => compound(depth - 1)].boxed();
    proptest::collection::vec(stmt, 1..5).boxed()
}

/// Indents every line of a nested block by one level.
fn indent(lines: Vec<Vec<String>>) -> Vec<String> {
    lines
        .into_iter()
        .flatten()
        .map(|line| format!("    {line}"))
        .collect()
}

/// A compound statement as its lines (header, then indented bodies).
fn compound(depth: u32) -> BoxedStrategy<Vec<String>> {
    let body = || block(depth);
    prop_oneof![
        (expr(), body(), proptest::option::of(body())).prop_map(|(test, b, orelse)| {
            let mut lines = vec![format!("if {test}:")];
            lines.extend(indent(b));
            if let Some(o) = orelse {
                lines.push("else:".to_owned());
                lines.extend(indent(o));
            }
            lines
        }),
        (expr(), expr(), body(), body()).prop_map(|(test, elif_test, b, e)| {
            let mut lines = vec![format!("if {test}:")];
            lines.extend(indent(b));
            lines.push(format!("elif {elif_test}:"));
            lines.extend(indent(e));
            lines
        }),
        (target(), expr(), body(), proptest::option::of(body())).prop_map(|(t, it, b, orelse)| {
            let mut lines = vec![format!("for {t} in {it}:")];
            lines.extend(indent(b));
            if let Some(o) = orelse {
                lines.push("else:".to_owned());
                lines.extend(indent(o));
            }
            lines
        }),
        (expr(), body()).prop_map(|(test, b)| {
            let mut lines = vec![format!("while {test}:")];
            lines.extend(indent(b));
            lines
        }),
        (
            name(),
            lambda_params(),
            proptest::option::of(expr()),
            body()
        )
            .prop_map(|(n, params, returns, b)| {
                let returns = returns.map(|r| format!(" -> {r}")).unwrap_or_default();
                let mut lines = vec![format!("@{n}"), format!("def {n}({params}){returns}:")];
                lines.extend(indent(b));
                lines
            }),
        (name(), name(), body()).prop_map(|(n, base, b)| {
            let mut lines = vec![format!("class {n}({base}):")];
            lines.extend(indent(b));
            lines
        }),
        (expr(), name(), any::<bool>(), body()).prop_map(|(ctx, n, parenthesised, b)| {
            let header = if parenthesised {
                format!("with ({ctx} as {n}, {ctx},):")
            } else {
                format!("with {ctx} as {n}, {ctx}:")
            };
            let mut lines = vec![header];
            lines.extend(indent(b));
            lines
        }),
        (body(), name(), body(), body()).prop_map(|(b, n, h, f)| {
            let mut lines = vec!["try:".to_owned()];
            lines.extend(indent(b));
            lines.push(format!("except {n} as {n}:"));
            lines.extend(indent(h));
            lines.push("finally:".to_owned());
            lines.extend(indent(f));
            lines
        }),
    ]
    .boxed()
}

/// A whole module.
fn program() -> impl Strategy<Value = String> {
    block(3).prop_map(|stmts| {
        let mut out = String::new();
        for line in stmts.into_iter().flatten() {
            out.push_str(&line);
            out.push('\n');
        }
        out
    })
}
