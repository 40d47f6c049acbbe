//! Golden tests of the specializer, one `check` helper per kind of fixture.
//!
//! - `kernels/ok/*.py` must specialize without errors (using their
//!   `# nkic:` directives); every kernel must pass the IR verifier, and the
//!   snapshot holds each program instance's `--emit ir` text, then the
//!   compile-time prints, then any warnings.
//! - `kernels/err/*.py` must fail; the snapshot holds the rendered
//!   diagnostics (plain text, no colour). The first line of the fixture
//!   names the expected code: `# expect: E0209`.
//!
//! A `# kernel: NAME` line selects the kernel, as `--kernel NAME` does, and
//! a `# budget: steps=N bytes=N` line lowers the evaluation budget, as
//! `--max-steps` and `--max-value-bytes` do (so budget fixtures run fast).
//!
//! Modules the fixtures import are read from `kernels/` (the loader is the
//! only IO; the specializer does none).

use std::path::{Path, PathBuf};

use nkic_diag::{RenderConfig, SourceMap, render_all};
use nkic_specialize::{SpecializeConfig, SpecializeResult, specialize};

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

/// Specializes the fixture at `path` (relative names keep snapshots stable).
fn run(path: &Path) -> (SpecializeResult, SourceMap) {
    let dir = kernels_dir();
    let rel = path.strip_prefix(&dir).unwrap_or(path);
    let name = rel.to_string_lossy().replace('\\', "/");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut sources = SourceMap::new();
    let file = sources.add(name, text.as_str());
    let loader = |p: &str| std::fs::read_to_string(dir.join(p)).ok();
    // A `# kernel: NAME` line picks the kernel, as `--kernel` does.
    let kernel = text
        .lines()
        .find_map(|l| l.strip_prefix("# kernel: "))
        .map(|k| k.trim().to_owned());
    let mut config = SpecializeConfig {
        record_facts: true,
        kernel,
        ..SpecializeConfig::default()
    };
    let budget = text.lines().find_map(|l| l.strip_prefix("# budget: "));
    for item in budget.unwrap_or_default().split_whitespace() {
        match item.split_once('=') {
            Some(("steps", n)) => config.max_steps = n.parse().expect("a step count"),
            Some(("bytes", n)) => config.max_value_bytes = n.parse().expect("a byte count"),
            _ => panic!("{}: bad budget item `{item}`", path.display()),
        }
    }
    // The front end gets the stack it asks for, as the command and the
    // Python package give it: a test thread's 2 MiB is less than the
    // deepest fixtures need in an optimised build.
    let res = nkic_specialize::on_deep_stack(|| specialize(&mut sources, file, &config, &loader));
    (res, sources)
}

fn plain() -> RenderConfig {
    RenderConfig {
        color: false,
        unicode: false,
    }
}

fn check_ok(path: &Path) -> String {
    let (res, sources) = run(path);
    let rendered = render_all(&res.diagnostics, &sources, plain());
    assert!(!res.has_errors(), "{}:\n{rendered}", path.display());
    assert!(!res.kernels.is_empty(), "{}: no kernel", path.display());
    let mut out = String::new();
    for k in &res.kernels {
        if let Err(errors) = nkic_ir::verify(k) {
            panic!("{}: IR does not verify: {errors:?}", path.display());
        }
        out.push_str(&nkic_ir::print(k));
        out.push('\n');
    }
    if !res.prints.is_empty() {
        out.push_str("--- prints\n");
        for p in &res.prints {
            out.push_str(&format!("[{}] {}: {}\n", p.program, p.location, p.text));
        }
    }
    if !res.diagnostics.is_empty() {
        out.push_str("--- warnings\n");
        out.push_str(&rendered);
    }
    out
}

fn check_err(path: &Path) -> String {
    let (res, sources) = run(path);
    assert!(res.has_errors(), "{}: expected an error", path.display());
    let text = sources.file(nkic_diag::FileId(0)).text().to_owned();
    let expect = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# expect: "))
        .unwrap_or_default()
        .trim()
        .to_owned();
    let first = res
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .map(|d| d.code);
    assert_eq!(
        first,
        Some(expect.as_str()),
        "{}: wrong first error code",
        path.display()
    );
    render_all(&res.diagnostics, &sources, plain())
}

#[test]
fn ok_kernels() {
    insta::glob!("kernels/ok/*.py", |path| {
        insta::assert_snapshot!(check_ok(path));
    });
}

#[test]
fn err_kernels() {
    insta::glob!("kernels/err/*.py", |path| {
        insta::assert_snapshot!(check_err(path));
    });
}
