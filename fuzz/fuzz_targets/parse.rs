//! Fuzzes the front end: any input must lex, lay out and parse without a
//! panic, with the structural invariants intact, and a clean parse must
//! survive the unparse round trip.
//!
//! Run with `cargo +nightly fuzz run parse` from `fuzz/`.

#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::parse(data));
