//! Helpers shared by the integration tests that drive the `nkic` binary:
//! the workspace root the binary runs from, fresh temporary directories,
//! and one run of the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root; tests name kernel files relative to it.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the nkic crate lives at <root>/crates/nkic")
        .to_path_buf()
}

/// A fresh, empty directory `nkic-<suite>-<pid>-<name>` in the system's
/// temporary directory.
pub fn temp_dir(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nkic-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs the `nkic` binary from the workspace root with colours off.
pub fn run_nkic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nkic"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the nkic binary runs")
}
