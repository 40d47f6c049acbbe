//! Fuzzes the `.npy` reader of the `nkic` binary: any bytes must be read or
//! refused in time linear in their length, without a panic and without
//! allocating more than the file's size suggests.
//!
//! The reader lives in the binary crate, so its module is compiled in here.
//! Run with `cargo +nightly fuzz run npy` from `fuzz/`.

#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::npy(data));
