//! Property tests: the lexer, the layout pass and the parser never panic, and
//! their structural invariants hold, on random bytes and on random soups of
//! Python tokens (which reach far deeper into the grammar than bytes do).
//! Case counts are bounded so the suite runs in a few seconds.

use proptest::prelude::*;

/// Tokens and fragments that random soups are made of.
const VOCAB: &[&str] = &[
    "def",
    "class",
    "if",
    "elif",
    "else",
    "for",
    "while",
    "in",
    "not",
    "is",
    "and",
    "or",
    "return",
    "yield",
    "lambda",
    "import",
    "from",
    "as",
    "with",
    "try",
    "except",
    "finally",
    "raise",
    "assert",
    "del",
    "pass",
    "break",
    "continue",
    "global",
    "nonlocal",
    "async",
    "await",
    "None",
    "True",
    "False",
    "x",
    "nl",
    "tile",
    "é",
    "0",
    "1_0",
    "0x1f",
    "1.5e3",
    ".5",
    "2j",
    "'s'",
    "\"t\"",
    "'''m\nl'''",
    "f'{x}'",
    "f\"{a!r:>{w}}\"",
    "rb'\\x00'",
    "f'{'",
    "'open",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ";",
    ".",
    "...",
    "->",
    ":=",
    "=",
    "==",
    "+",
    "-",
    "*",
    "**",
    "/",
    "//",
    "%",
    "@",
    "<<",
    ">>",
    "&",
    "|",
    "^",
    "~",
    "<",
    ">",
    "<=",
    ">=",
    "!=",
    "+=",
    "**=",
    "//=",
    "@=",
    "\n",
    "\n    ",
    "\n        ",
    "\n\t",
    "\n  ",
    " ",
    "\\\n",
    "#c\n",
    "$",
    "?",
    "\r\n",
];

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(0..VOCAB.len(), 0..80).prop_map(|idx| {
        let mut out = String::new();
        for i in idx {
            out.push_str(VOCAB[i]);
            out.push(' ');
        }
        out
    })
}

fn check(src: &str) {
    let (tokens, _) = nkic_syntax::lex(src);
    if let Err(msg) = nkic_syntax::layout::check_tokens(src, &tokens) {
        panic!("layout invariant broken for {src:?}: {msg}");
    }
    let _ = nkic_syntax::dump_tokens(src);
    let (module, diags) = nkic_syntax::parse(src);
    if let Err(msg) = nkic_syntax::check_structure(&module) {
        panic!("AST structure broken for {src:?}: {msg}");
    }
    for d in &diags {
        let primary = d.primary.as_ref().map(|l| l.span);
        assert!(
            primary.is_some_and(|s| s.end as usize <= src.len()),
            "diagnostic span outside the input: {d:?}"
        );
    }
    let _ = nkic_syntax::dump_ast(&module);
    // Unparsing any tree (error nodes included) gives text that parses.
    let printed = nkic_syntax::unparse(&module);
    let (again, _) = nkic_syntax::parse(&printed);
    if diags.is_empty() {
        assert_eq!(
            again.without_spans(),
            module.without_spans(),
            "round trip differs for {src:?}:\n{printed}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        check(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_ascii_never_panics(src in "[ -~\n\t]{0,200}") {
        check(&src);
    }

    #[test]
    fn token_soups_never_panic(src in soup()) {
        check(&src);
    }
}
