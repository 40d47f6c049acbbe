//! Fuzzes the `nkic.toml` reader: any manifest text must give an entry, no
//! entry, or located diagnostics, without a panic.
//!
//! Run with `cargo +nightly fuzz run manifest` from `fuzz/`.

#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::manifest(data));
