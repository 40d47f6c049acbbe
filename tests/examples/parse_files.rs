//! Parses every `.py` file below the given paths and reports the ones with diagnostics.
//!
//! Usage: `cargo run -p nkic-tests --example parse_files -- [--quiet]
//! [--unparse-to DIR] PATH...` (or `tests/tools/parse_external.sh DIR...`).
//! A path may be a file or a directory, which is walked recursively in sorted
//! order. For each file with diagnostics the rendered diagnostics are printed
//! (only a one-line summary with `--quiet`); a panic in the parser is caught
//! and reported as such. A final line counts the files, and the exit status is
//! 0 only when every file parsed cleanly.
//!
//! With `--unparse-to DIR`, every file that parsed cleanly is printed back
//! with `nkic_syntax::unparse` into `DIR`, under its path as given with `%`
//! written `%25` and `/` written `%2F` (see `tools/compare_with_cpython.py`, which checks that
//! CPython reads the original and the printed file as the same tree).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use nkic_diag::{RenderConfig, SourceMap, render};

fn main() -> ExitCode {
    let mut quiet = false;
    let mut unparse_to = None;
    let mut roots = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--quiet" {
            quiet = true;
        } else if arg == "--unparse-to" {
            let Some(dir) = args.next() else {
                eprintln!("error: --unparse-to needs a directory");
                return ExitCode::from(2);
            };
            unparse_to = Some(PathBuf::from(dir));
        } else {
            roots.push(PathBuf::from(arg));
        }
    }
    if roots.is_empty() {
        eprintln!("usage: parse_files [--quiet] [--unparse-to DIR] PATH...");
        return ExitCode::from(2);
    }
    if let Some(dir) = &unparse_to
        && let Err(err) = std::fs::create_dir_all(dir)
    {
        eprintln!("error: cannot create {}: {err}", dir.display());
        return ExitCode::from(2);
    }

    let mut files = Vec::new();
    for root in &roots {
        if let Err(err) = collect_py_files(root, &mut files) {
            eprintln!("error: cannot read {}: {err}", root.display());
            return ExitCode::from(2);
        }
    }

    // The parser's own panic message would interleave with the report, so
    // panics are caught and reported per file instead.
    std::panic::set_hook(Box::new(|_| {}));

    let mut n_with_diags = 0usize;
    let mut n_panics = 0usize;
    let mut n_unreadable = 0usize;
    for path in &files {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) => {
                println!("UNREADABLE {}: {err}", path.display());
                n_unreadable += 1;
                continue;
            }
        };
        let parsed = std::panic::catch_unwind(|| {
            let (module, diags) = nkic_syntax::parse(&text);
            let printed = diags.is_empty().then(|| nkic_syntax::unparse(&module));
            (printed, diags)
        });
        let diags = match parsed {
            Ok((printed, diags)) => {
                if let (Some(dir), Some(printed)) = (&unparse_to, printed) {
                    let flat = path
                        .to_string_lossy()
                        .replace('%', "%25")
                        .replace('/', "%2F");
                    if let Err(err) = std::fs::write(dir.join(flat), printed) {
                        eprintln!("error: cannot write the unparsed {}: {err}", path.display());
                        return ExitCode::from(2);
                    }
                }
                diags
            }
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_owned());
                println!("PANIC {}: {message}", path.display());
                n_panics += 1;
                continue;
            }
        };
        if diags.is_empty() {
            continue;
        }
        n_with_diags += 1;
        let n_errors = diags.iter().filter(|diag| diag.is_error()).count();
        println!(
            "DIAGNOSTICS {}: {} error(s), {} other",
            path.display(),
            n_errors,
            diags.len() - n_errors
        );
        if !quiet {
            let mut sources = SourceMap::new();
            let file = sources.add(path.display().to_string(), text.clone());
            for diag in diags {
                print!(
                    "{}",
                    render(&diag.in_file(file), &sources, RenderConfig::default())
                );
            }
            println!();
        }
    }

    println!(
        "{} files, {} clean, {} with diagnostics, {} panics, {} unreadable",
        files.len(),
        files.len() - n_with_diags - n_panics - n_unreadable,
        n_with_diags,
        n_panics,
        n_unreadable
    );
    if n_with_diags + n_panics + n_unreadable == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Appends `path` if it is a file, or every `.py` file below it (sorted) if it is a directory.
fn collect_py_files(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !path.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries = std::fs::read_dir(path)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<std::io::Result<Vec<_>>>()?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect_py_files(&entry, out)?;
        } else if entry.extension().is_some_and(|ext| ext == "py") {
            out.push(entry);
        }
    }
    Ok(())
}
