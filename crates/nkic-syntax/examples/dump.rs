//! Prints the tokens, the AST and the diagnostics of one file: a development
//! aid for looking at what the front end makes of an input.

fn main() {
    let path = std::env::args().nth(1).unwrap_or_default();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let (module, diags) = nkic_syntax::parse(&text);
    if std::env::args().any(|a| a == "--tokens") {
        print!("{}", nkic_syntax::dump_tokens(&text));
    }
    print!("{}", nkic_syntax::dump_ast(&module));
    for d in diags {
        println!(
            "{} {} {:?}",
            d.code,
            d.message,
            d.primary.as_ref().map(|l| l.span)
        );
    }
}
