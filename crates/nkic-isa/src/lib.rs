//! The Trainium pseudo-ISA: the machine's language.
//!
//! This crate knows nothing of Python and depends on no other workspace
//! crate: together with `nkic-sim` it is a stand-alone simulator. It owns
//! dtypes and numerics, engines and queues, access patterns, the
//! instruction table, programs, the `.nkasm` text format, the program
//! verifier and the target figures and cost model that both the backend
//! and the simulator read.
//!
//! Code map:
//! * `dtype`, `numerics`: element types and their conversions.
//! * `engine`: `Engine` and `Queue`.
//! * `target`: `Target` and its `Figures` (one source of truth for every
//!   machine number).
//! * `cost`: `Target::cost`, the cost model over those figures.
//! * `enums`: ALU operators, activation functions, accumulator commands and
//!   the other small named enums.
//! * `ap`: access patterns, scalar operands, immediates, registers; the
//!   memory model is documented there.
//! * `inst`: the declarative instruction table (`Op`) and the `Instruction`
//!   header with semaphore waits and signals.
//! * `program`: `Program`, HBM tensors, semaphores, the line table; the
//!   execution model is documented there.
//! * `text`: the `.nkasm` printer and assembler (grammar in its doc).
//! * `launch`: `Launch`, one program per physical core of an LNC=2 launch
//!   (shared HBM arguments, per-core everything else), its `.core`
//!   sections in the text and its verifier.
//! * `verify`: the program verifier (its doc lists every rule).
//! * `field`: the text form of each operand type, shared by printer and
//!   assembler.
//! * `threads`: whether this process may use rayon's thread pool (a child
//!   forked from a process that did may not).
//!
//! The exact meaning of every instruction is in `docs/isa.md`; the
//! interpreter in `nkic-sim` implements exactly that document.

pub mod ap;
pub mod cost;
pub mod dtype;
pub mod engine;
pub mod enums;
pub mod field;
pub mod hash;
pub mod inst;
pub mod intervals;
pub mod launch;
pub mod numerics;
pub mod program;
#[cfg(test)]
mod random;
pub mod splitmix;
pub mod target;
pub mod text;
pub mod threads;
pub mod verify;

pub use ap::{
    AccessPattern, Dim, DynOffset, Fp32, Imm, MAX_DIMS, Memory, Reg, RegOrImm, Scalar, TensorId,
};
pub use cost::{Cost, DmaTransfer, Ports};
pub use dtype::DType;
pub use engine::{Engine, Queue};
pub use enums::{
    ActFunc, AluOp, BranchCond, DgeMode, MatmulPerfMode, OobMode, ReduceCmd, RegAluOp,
};
pub use inst::{Instruction, Label, Layout, Op, Operand, Role, SemWait, insn};
pub use launch::{Launch, assemble_launch, print_launch, verify_launch, verify_launch_rules};
pub use program::{
    HbmTensor, LineEntry, LineId, OperandName, Program, QueueStream, SemId, Semaphore, TensorKind,
};
pub use splitmix::SplitMix64;
pub use target::{Figures, Target};
pub use text::{AsmError, assemble, print};
pub use verify::{Decl, Rule, Verified, VerifyError, check_instruction, verify};
