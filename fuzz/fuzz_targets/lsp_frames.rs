//! Fuzzes the language server's transport: any byte stream must be split
//! into frames (or refused) without a panic and without allocating what a
//! `Content-Length` claims before the bytes arrive.
//!
//! Run with `cargo +nightly fuzz run lsp_frames` from `fuzz/`.

#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use nkic_lsp::transport::{Frame, decode, read_frame};

fuzz_target!(|data: &[u8]| {
    let mut input = Cursor::new(data);
    while let Ok(Some(frame)) = read_frame(&mut input) {
        if let Frame::Body(body) = frame {
            let _ = decode(&body);
        }
    }
});
