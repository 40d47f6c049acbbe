//! Parses every file named on the command line (or listed, one path per line,
//! in a file given with `--list`) and prints the rendered diagnostics and a
//! summary. A development aid for running the parser over real code bases.

use nkic_diag::{RenderConfig, SourceMap, render};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut check_roundtrip = false;
    if let Some(pos) = args.iter().position(|a| a == "--roundtrip") {
        args.remove(pos);
        check_roundtrip = true;
    }
    let mut unparse_dir = None;
    if let Some(pos) = args.iter().position(|a| a == "--unparse-to") {
        args.remove(pos);
        unparse_dir = Some(args.remove(pos));
    }
    if args.first().map(String::as_str) == Some("--list") {
        let list =
            std::fs::read_to_string(args.get(1).map_or("", String::as_str)).unwrap_or_default();
        args = list.lines().map(str::to_string).collect();
    }
    let (mut n_files, mut n_bad, mut n_roundtrip_bad) = (0, 0, 0);
    for path in &args {
        let Ok(text) = std::fs::read_to_string(path) else {
            eprintln!("cannot read {path}");
            continue;
        };
        n_files += 1;
        let (module, diags) = nkic_syntax::parse(&text);
        if let Some(dir) = &unparse_dir {
            let name = path.replace('/', "__");
            let _ = std::fs::write(format!("{dir}/{name}"), nkic_syntax::unparse(&module));
        }
        if let Err(msg) = nkic_syntax::check_structure(&module) {
            println!("structure check failed in {path}: {msg}");
        }
        if !diags.is_empty() {
            n_bad += 1;
            let mut map = SourceMap::new();
            let id = map.add(path.clone(), text.clone());
            for d in diags {
                println!("{}", render(&d.in_file(id), &map, RenderConfig::default()));
            }
        } else if check_roundtrip {
            let printed = nkic_syntax::unparse(&module);
            let (again, diags2) = nkic_syntax::parse(&printed);
            if !diags2.is_empty() || again.without_spans() != module.without_spans() {
                n_roundtrip_bad += 1;
                println!("round trip differs: {path} ({} diagnostics)", diags2.len());
            }
        }
    }
    println!("{n_files} files, {n_bad} with diagnostics, {n_roundtrip_bad} round-trip failures");
}
