//! Fuzzes the language server's transport: any byte stream must be split
//! into frames (or refused) without a panic and without allocating what a
//! `Content-Length` claims before the bytes arrive.
//!
//! Run with `cargo +nightly fuzz run lsp_frames` from `fuzz/`.

#![no_main]

#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::lsp_frames(data));
