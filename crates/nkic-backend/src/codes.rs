//! The backend's diagnostic codes (E0900–E0999), one constant per failure
//! of the kernel; the backend's own bugs are panics, not codes.
//!
//! The index with examples lives in `docs/diagnostics.md`.

/// The kernel's SBUF tensors do not fit at some point of the program.
pub const SBUF_OVERFLOW: &str = "E0901";
/// The kernel's PSUM tensors do not fit at some point of the program.
pub const PSUM_OVERFLOW: &str = "E0902";
/// Two manually placed tensors that are alive together share bytes.
pub const ADDRESS_OVERLAP: &str = "E0903";
/// A manual placement lies outside the memory, or breaks its alignment or
/// bank rules.
pub const ADDRESS_OUT_OF_RANGE: &str = "E0904";
/// A single tensor is larger than its memory.
pub const TENSOR_TOO_LARGE: &str = "E0905";
/// A warning: on-chip tensors that did not fit were spilled (SBUF to HBM,
/// PSUM to SBUF); see [`spill`](crate::spill).
pub const SPILLED: &str = "E0906";
/// A kernel with dynamic loops needs more sequencer registers than a queue has.
pub const TOO_MANY_REGISTERS: &str = "E0910";
/// Indirect (gather/scatter) views are not compiled yet.
pub const UNSUPPORTED_VIEW: &str = "E0911";
/// Instances of a grid disagree on their arguments or outputs.
pub const GRID_MISMATCH: &str = "E0912";
/// A warning: an instance of a grid that one core runs in instance order
/// reads bytes of an HBM tensor that another instance writes, which is a
/// race under LNC=2.
pub const INSTANCE_RACE: &str = "E0913";
/// The two cores of an LNC=2 launch do not execute the same
/// `core_barrier`s in the same order.
pub const BARRIER_MISMATCH: &str = "E0914";
/// The two cores of an LNC=2 launch allocate different `nl.shared_hbm`
/// tensors (one allocated under an `if` on `nl.program_id`).
pub const SHARED_MISMATCH: &str = "E0915";
/// A view has no machine access pattern (a field out of range).
pub const UNLOWERABLE_VIEW: &str = "E0920";
/// The op cannot run on the engine the kernel fixed, or on any engine.
pub const NO_LEGAL_ENGINE: &str = "E0921";
/// The specializer built IR that fails `nkic_ir::verify` (a bug in nkic).
pub const INVALID_IR: &str = "E0922";
