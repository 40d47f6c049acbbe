//! Fuzzes the whole front half on kernel source: any text, specialized with
//! its `# nkic:` directives under a small evaluation budget, must end with
//! diagnostics (never a panic, a hang or an allocation failure), and every
//! diagnostic must carry a location.
//!
//! Run with `cargo +nightly fuzz run kernel` from `fuzz/`.

#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::kernel(data));
