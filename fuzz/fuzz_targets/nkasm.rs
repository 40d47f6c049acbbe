//! Fuzzes the `.nkasm` assembler and the program verifier: any text must
//! assemble or be refused with located errors, and an assembled launch must
//! verify or be refused, without a panic.
//!
//! Run with `cargo +nightly fuzz run nkasm` from `fuzz/`.

#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::nkasm(data));
