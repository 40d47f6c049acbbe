//! Paths shared by the benches.

use std::path::{Path, PathBuf};

/// The repository root (the benches live at `<root>/crates/nkic`).
pub fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}
