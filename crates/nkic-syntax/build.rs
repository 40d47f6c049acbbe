//! Generates the LR(1) parser from `grammar/nki.lalrpop` into `OUT_DIR`.
//!
//! The grammar lives outside the crate (one source of truth at the
//! repository root). The generated `nki.rs` is never committed.

use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let grammar_dir = manifest_dir.join("../../grammar");
    println!("cargo:rerun-if-changed={}", grammar_dir.display());
    println!("cargo:rerun-if-changed=build.rs");
    if let Err(err) = lalrpop::Configuration::new()
        .set_in_dir(&grammar_dir)
        .emit_rerun_directives(true)
        .process()
    {
        eprintln!(
            "failed to generate the parser from {}: {err}",
            grammar_dir.display()
        );
        std::process::exit(1);
    }
}
