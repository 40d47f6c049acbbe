//! Fuzzes the `.npy` reader of the `nkic` binary: any bytes must be read or
//! refused in time linear in their length, without a panic and without
//! allocating more than the file's size suggests.
//!
//! The reader lives in the binary crate, so its module is compiled in here.
//! Run with `cargo +nightly fuzz run npy` from `fuzz/`.

#![no_main]

#[allow(dead_code)]
#[path = "../../crates/nkic/src/npy.rs"]
mod npy;

use libfuzzer_sys::fuzz_target;
use nkic_isa::DType;

fuzz_target!(|data: &[u8]| {
    let _ = npy::peek(data);
    for dtype in [DType::F32, DType::BF16, DType::I8, DType::U32] {
        let _ = npy::read(data, dtype);
    }
});
