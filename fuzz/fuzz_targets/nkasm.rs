//! Fuzzes the `.nkasm` assembler and the program verifier: any text must
//! assemble or be refused with located errors, and an assembled launch must
//! verify or be refused, without a panic.
//!
//! Run with `cargo +nightly fuzz run nkasm` from `fuzz/`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(launch) = nkic_isa::launch::assemble_launch(&text) {
        let _ = nkic_isa::launch::verify_launch(&launch);
    }
});
