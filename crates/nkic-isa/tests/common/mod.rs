//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

/// The `.nkasm` files of `tests/<dir>`, sorted by name.
pub fn nkasm_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "nkasm"))
        .collect();
    files.sort();
    files
}
