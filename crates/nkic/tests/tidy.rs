//! Hygiene rules of the house style, enforced as ordinary tests.

use std::path::{Path, PathBuf};

mod common;

use common::root as workspace_root;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') && name != "snapshots" {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Every Rust source file starts with a `//!` comment saying what it owns.
#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["crates", "tests", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 5,
        "found only {} Rust files under {}",
        files.len(),
        root.display()
    );
    let missing: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|path| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` module doc: {missing:#?}"
    );
}

/// The README's test command is exactly what CI runs.
#[test]
fn ci_runs_the_readme_test_command() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md exists");
    let ci = std::fs::read_to_string(root.join(".ci/run")).expect(".ci/run exists");
    let command = "tools/test.sh";
    assert!(
        readme.contains(&format!("    {command}\n")),
        "README lacks `{command}`"
    );
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with('#') && !l.starts_with("set ") && !l.starts_with("cd ")
        })
        .collect();
    assert_eq!(ci_commands, vec![command]);
    // The command runs the Rust tests and the Python package's tests.
    let script = std::fs::read_to_string(root.join(command)).expect("tools/test.sh exists");
    for part in [
        "cargo test --workspace --locked",
        "maturin\" develop --locked",
        "-m pytest crates/nkic-python/tests",
    ] {
        assert!(script.contains(part), "tools/test.sh lacks `{part}`");
    }
}

/// Every diagnostic code the sources use is indexed in `docs/diagnostics.md`.
#[test]
fn every_diagnostic_code_is_documented() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/diagnostics.md"))
        .expect("docs/diagnostics.md exists");
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let mut missing = std::collections::BTreeSet::new();
    for path in files {
        let path_text = path.to_string_lossy();
        // Unit tests and test files may use made-up codes.
        if path_text.contains("/tests/")
            || path_text.ends_with("tests.rs")
            || path_text.contains("nkic-diag")
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let bytes = text.as_bytes();
        for i in 0..bytes.len().saturating_sub(6) {
            let is_code = bytes[i] == b'"'
                && matches!(bytes[i + 1], b'E' | b'I')
                && bytes[i + 2..i + 6].iter().all(u8::is_ascii_digit)
                && bytes[i + 6] == b'"';
            if is_code {
                let code = &text[i + 1..i + 6];
                if !doc.contains(&format!("| {code} |")) {
                    missing.insert(code.to_owned());
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "codes missing from docs/diagnostics.md: {missing:?}"
    );
}
