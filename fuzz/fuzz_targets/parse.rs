//! Fuzzes the front end: any input must lex, lay out and parse without a
//! panic, with the structural invariants intact, and a clean parse must
//! survive the unparse round trip.
//!
//! Run with `cargo +nightly fuzz run parse` from `fuzz/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    let (tokens, _) = nkic_syntax::lex(&src);
    if let Err(msg) = nkic_syntax::layout::check_tokens(&src, &tokens) {
        panic!("layout invariant broken: {msg}");
    }
    let (module, diags) = nkic_syntax::parse(&src);
    if let Err(msg) = nkic_syntax::check_structure(&module) {
        panic!("AST structure broken: {msg}");
    }
    let _ = nkic_syntax::dump_ast(&module);
    let printed = nkic_syntax::unparse(&module);
    let (again, _) = nkic_syntax::parse(&printed);
    if diags.is_empty() {
        assert!(again.without_spans() == module.without_spans(), "unparse round trip differs:\n{printed}");
    }
});
