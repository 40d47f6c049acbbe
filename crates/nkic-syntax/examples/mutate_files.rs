//! Robustness check on real code: parses many mutated copies of the files
//! named on the command line (or listed with `--list`), each with a few bytes
//! deleted, duplicated or replaced at pseudo-random places, and checks that
//! nothing panics and the structural invariants hold. A development aid; the
//! random sequence is fixed, so runs are reproducible.

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        let list =
            std::fs::read_to_string(args.get(1).map_or("", String::as_str)).unwrap_or_default();
        args = list.lines().map(str::to_string).collect();
    }
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let pieces = [
        " ", "\n", "(", ")", "[", "]", ":", ",", "=", "\t", "'", "\"", "f'{", "}", "\\", "#",
        "if ", "    ",
    ];
    let mut n_runs = 0;
    for path in &args {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        for _ in 0..20 {
            let mut src = text.clone();
            for _ in 0..3 {
                let mut at = (next() as usize) % src.len().max(1);
                while !src.is_char_boundary(at) {
                    at -= 1;
                }
                match next() % 3 {
                    0 => {
                        let mut end = (at + 1 + (next() as usize) % 8).min(src.len());
                        while !src.is_char_boundary(end) {
                            end += 1;
                        }
                        src.replace_range(at..end, "");
                    }
                    1 => src.insert_str(at, pieces[(next() as usize) % pieces.len()]),
                    _ => {
                        let mut end = (at + 1).min(src.len());
                        while !src.is_char_boundary(end) {
                            end += 1;
                        }
                        src.replace_range(at..end, pieces[(next() as usize) % pieces.len()]);
                    }
                }
            }
            let (tokens, _) = nkic_syntax::lex(&src);
            if let Err(msg) = nkic_syntax::layout::check_tokens(&src, &tokens) {
                println!("{path}: layout invariant broken: {msg}");
            }
            let (module, _) = nkic_syntax::parse(&src);
            if let Err(msg) = nkic_syntax::check_structure(&module) {
                println!("{path}: structure broken: {msg}");
            }
            let printed = nkic_syntax::unparse(&module);
            let _ = nkic_syntax::parse(&printed);
            n_runs += 1;
        }
    }
    println!("{n_runs} mutated parses checked");
}
