//! The Trainium pseudo-ISA: the machine's language.
//!
//! This crate knows nothing of Python. It owns dtypes and numerics, engines,
//! instructions, programs, the `.nkasm` text format, the program verifier and
//! the target figures that both the backend and the simulator read.

pub mod dtype;
pub mod numerics;

pub use dtype::DType;
