//! Unit tests of the layout pass: indentation, tabs, dedent errors, bracket
//! joining and recovery, continuation lines, end-of-file handling and the
//! structural invariants on malformed input.

use super::*;

/// The token kinds of `src` in a compact form: names and literals by text,
/// synthetic tokens in angle brackets.
fn kinds(src: &str) -> Vec<String> {
    tokenize(src, Config::default())
        .0
        .iter()
        .map(|(_, t, _)| match t {
            Token::Newline => "NL".to_string(),
            Token::Indent => "IN".to_string(),
            Token::Dedent => "DE".to_string(),
            t => t.text().to_string(),
        })
        .collect()
}

fn codes(src: &str) -> Vec<&'static str> {
    tokenize(src, Config::default())
        .1
        .iter()
        .map(|d| d.code)
        .collect()
}

/// Checks the invariants promised by the module documentation.
fn check_invariants(src: &str) {
    let (tokens, _) = tokenize(src, Config::default());
    if let Err(msg) = check_tokens(src, &tokens) {
        panic!("layout invariant broken for {src:?}: {msg}");
    }
}

#[test]
fn simple_block() {
    let src = "if x:\n    y = 1\nz\n";
    assert_eq!(
        kinds(src),
        [
            "if", "x", ":", "NL", "IN", "y", "=", "1", "NL", "DE", "z", "NL"
        ]
    );
    check_invariants(src);
}

#[test]
fn blank_and_comment_lines_are_ignored() {
    let src = "def f():\n\n    # comment\n  \n    return 1\n# trailing\n\n";
    assert_eq!(
        kinds(src),
        [
            "def", "f", "(", ")", ":", "NL", "IN", "return", "1", "NL", "DE"
        ]
    );
}

#[test]
fn dedents_at_end_of_file_without_final_newline() {
    let src = "for i in r:\n    if i:\n        pass";
    assert_eq!(
        kinds(src),
        [
            "for", "i", "in", "r", ":", "NL", "IN", "if", "i", ":", "NL", "IN", "pass", "NL", "DE",
            "DE"
        ]
    );
    let (tokens, _) = tokenize(src, Config::default());
    // Synthetic end-of-file tokens sit at the end of the input.
    assert!(
        tokens
            .iter()
            .rev()
            .take(3)
            .all(|(s, _, e)| *s == src.len() && *e == src.len())
    );
}

#[test]
fn multiple_dedents_in_one_step() {
    let src = "a:\n b:\n  c\nd\n";
    assert_eq!(
        kinds(src),
        [
            "a", ":", "NL", "IN", "b", ":", "NL", "IN", "c", "NL", "DE", "DE", "d", "NL"
        ]
    );
}

#[test]
fn tab_goes_to_next_multiple_of_eight() {
    // A tab and eight spaces are the same column; so are 4 spaces + tab.
    let src = "if x:\n\ty\n        z\n";
    assert_eq!(
        kinds(src),
        ["if", "x", ":", "NL", "IN", "y", "NL", "z", "NL", "DE"]
    );
    // Tab size 1 and 8 disagree about `z` relative to `y`: reported.
    assert_eq!(codes(src), ["E0009"]);
    let src = "if x:\n\ty\n\tz\n";
    assert!(codes(src).is_empty());
    let src = "if x:\n    \ty\n\tz\n";
    assert_eq!(
        kinds(src),
        ["if", "x", ":", "NL", "IN", "y", "NL", "z", "NL", "DE"]
    );
}

#[test]
fn inconsistent_dedent_is_reported_with_span() {
    let src = "if x:\n    y\n  z\n";
    let (tokens, diags) = tokenize(src, Config::default());
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "E0003");
    let span = diags[0].primary.as_ref().map(|l| l.span);
    assert_eq!(span, Some(Span::new(12, 14)));
    // Treated as the enclosing level: one DEDENT, then `z`.
    let k: Vec<_> = tokens.iter().map(|t| t.1).collect();
    assert!(k.windows(2).any(|w| w == [Token::Dedent, Token::Name("z")]));
    check_invariants(src);
}

#[test]
fn newlines_inside_brackets_are_joined() {
    let src = "x = f(a,\n      b,\n\n  c)\ny\n";
    assert_eq!(
        kinds(src),
        [
            "x", "=", "f", "(", "a", ",", "b", ",", "c", ")", "NL", "y", "NL"
        ]
    );
}

#[test]
fn backslash_continuation_joins_lines() {
    let src = "x = 1 + \\\n        2\ny\n";
    assert_eq!(kinds(src), ["x", "=", "1", "+", "2", "NL", "y", "NL"]);
    let src = "x = 1 + \\\r\n 2\r\n";
    assert_eq!(kinds(src), ["x", "=", "1", "+", "2", "NL"]);
}

#[test]
fn triple_quoted_string_hides_its_newlines() {
    let src = "def f():\n    \"\"\"doc\n\nmore\n\"\"\"\n    return\n";
    assert_eq!(
        kinds(src),
        [
            "def",
            "f",
            "(",
            ")",
            ":",
            "NL",
            "IN",
            "\"\"\"doc\n\nmore\n\"\"\"",
            "NL",
            "return",
            "NL",
            "DE"
        ]
    );
}

#[test]
fn unclosed_bracket_is_closed_at_end_of_file() {
    let src = "x = f(a, [1\n";
    let (tokens, diags) = tokenize(src, Config::default());
    assert_eq!(
        diags.iter().map(|d| d.code).collect::<Vec<_>>(),
        ["E0004", "E0004"]
    );
    let k: Vec<_> = tokens.iter().map(|t| t.1).collect();
    assert_eq!(
        &k[k.len() - 3..],
        [Token::RBracket, Token::RParen, Token::Newline]
    );
    check_invariants(src);
}

#[test]
fn unclosed_bracket_is_closed_before_statement_keyword() {
    let src = "def f():\n    x = g(1\n    return x\n";
    let (tokens, diags) = tokenize(src, Config::default());
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "E0004");
    // Noticed after the last token of the line; the opener is labelled.
    assert_eq!(
        diags[0].primary.as_ref().map(|l| l.span),
        Some(Span::new(20, 20))
    );
    assert_eq!(diags[0].secondary[0].span, Span::new(18, 19));
    let k: Vec<_> = tokens.iter().map(|t| t.1).collect();
    assert!(
        k.windows(3)
            .any(|w| w == [Token::RParen, Token::Newline, Token::Return])
    );
    check_invariants(src);
}

#[test]
fn unclosed_bracket_is_closed_before_assignment_line() {
    let src = "a = f(x[1]\nb = 2\n";
    assert_eq!(
        kinds(src),
        [
            "a", "=", "f", "(", "x", "[", "1", "]", ")", "NL", "b", "=", "2", "NL"
        ]
    );
    assert_eq!(codes(src), ["E0004"]);
    // A keyword argument on its own line is not mistaken for a statement.
    let src = "a = f(x,\nb = 2)\n";
    assert!(codes(src).is_empty());
}

#[test]
fn mismatched_closers() {
    // `]` closes the outer `[`, so the inner `(` is reported as unclosed.
    let src = "x = [f(1]\n";
    assert_eq!(kinds(src), ["x", "=", "[", "f", "(", "1", ")", "]", "NL"]);
    assert_eq!(codes(src), ["E0004"]);
    // A closer with no opener is reported and dropped.
    let src = "x = 1)\n";
    assert_eq!(kinds(src), ["x", "=", "1", "NL"]);
    assert_eq!(codes(src), ["E0005"]);
    check_invariants(src);
}

#[test]
fn lexical_errors_become_error_tokens() {
    let src = "x = 1 $ 2\ns = 'abc\n";
    let (tokens, diags) = tokenize(src, Config::default());
    assert_eq!(
        diags.iter().map(|d| d.code).collect::<Vec<_>>(),
        ["E0001", "E0002"]
    );
    assert_eq!(tokens.iter().filter(|t| t.1 == Token::Error).count(), 2);
    check_invariants(src);
}

#[test]
fn inside_brackets_mode_has_no_layout_tokens() {
    let (tokens, _) = tokenize(
        "a +\n  b",
        Config {
            inside_brackets: true,
        },
    );
    assert!(
        tokens
            .iter()
            .all(|t| !matches!(t.1, Token::Newline | Token::Indent | Token::Dedent))
    );
    assert_eq!(tokens.len(), 3);
}

#[test]
fn indent_at_first_line_is_balanced() {
    let src = "  x\ny\n";
    assert_eq!(kinds(src), ["IN", "x", "NL", "DE", "y", "NL"]);
    check_invariants(src);
}

#[test]
fn too_deep_line_is_skipped_with_balanced_brackets() {
    let src = format!("x = f([{}1, (2)], 3) + 4\ny = 5\n", "1 + ".repeat(2000));
    check_invariants(&src);
    let (tokens, diags) = tokenize(&src, Config::default());
    assert_eq!(diags.iter().map(|d| d.code).collect::<Vec<_>>(), ["E0018"]);
    assert_eq!(tokens.iter().filter(|t| t.1 == Token::Error).count(), 1);
    // The closers of the brackets opened before the cut are kept.
    let tail: Vec<_> = tokens.iter().rev().take(7).map(|t| t.1).collect();
    assert_eq!(
        tail,
        [
            Token::Newline,
            Token::Int("5"),
            Token::Equal,
            Token::Name("y"),
            Token::Newline,
            Token::RParen,
            Token::RBracket
        ]
    );
}

#[test]
fn invariants_hold_on_malformed_inputs() {
    for src in [
        "",
        "\n\n",
        "(",
        ")]}",
        "if x:\n  (\n    y\n z\n",
        "def f(:\n\treturn [\n  1,\n",
        "'''abc",
        "f'{x'\n  y\n",
        "\t\t x\n y\n\t z\n",
        "a\\\n",
        "x = (\ndef g():\n    pass\n",
        "\u{feff}x\r\n  y\r  z\n",
    ] {
        check_invariants(src);
    }
}
