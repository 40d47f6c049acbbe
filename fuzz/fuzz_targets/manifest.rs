//! Fuzzes the `nkic.toml` reader: any manifest text must give an entry, no
//! entry, or located diagnostics, without a panic.
//!
//! Run with `cargo +nightly fuzz run manifest` from `fuzz/`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nkic_diag::SourceMap;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut sources = SourceMap::new();
    if let Err(diags) =
        nkic_driver::manifest::entry_for("k.py", "nkic.toml", &text, &mut sources)
    {
        for d in &diags {
            assert!(d.primary.is_some(), "unlocated: {d:?}");
        }
    }
});
