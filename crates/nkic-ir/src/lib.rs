//! The tile IR: what a specialized NKI kernel does at run time.
//!
//! The specializer (`nkic-specialize`) runs the kernel's compile-time
//! language and records every run-time operation into a [`Kernel`] through
//! a [`KernelBuilder`]; the backend (`nkic-backend`) allocates memory,
//! chooses engines, builds the dependency graph, schedules and emits an
//! `nkic_isa::Program`. This crate knows no Python syntax and makes no
//! scheduling decisions.
//!
//! # Representation
//!
//! A [`Kernel`] owns arenas of [`Storage`]s, [`Op`]s, [`Register`]s,
//! [`DynLoop`]s and [`StaticLoop`]s, addressed by typed 4-byte [`Handle`]s
//! that print with fixed prefixes (`t3`, `op7`, `r2`, `dyn1`, `L0`). Source
//! locations and inlined call chains live beside the IR in [`Spans`]
//! (secondary maps keyed by handle), never in the nodes. The kernel's body
//! is a [`Block`]: a list of [`Item`]s, each an op or a dynamic loop whose
//! own body is again a block.
//!
//! # Semantics
//!
//! **Evaluation order.** The meaning of a kernel is its items executed one
//! after another in program order (a depth-first walk of the body, a
//! dynamic loop's body once per run-time iteration). The backend may run
//! ops in any order and on any engines that keeps every dependency:
//! * *memory*: an op that reads or writes bytes another op writes, or
//!   writes bytes another op reads, stays on the same side of it
//!   ([`Op::read_set`], [`Op::write_set`], [`overlap`]);
//! * *registers*: likewise for [`Op::reg_reads`] and [`Op::reg_writes`],
//!   with a dynamic loop's bounds or condition read before its body;
//! * *engine state*: ops sharing an engine's accumulator registers or
//!   random generators, and the core barriers and exchanges (which pair
//!   with the other core's by program order), keep their order
//!   ([`OpKind::engine_state`]);
//! * *explicit edges*: `depends_on` and `no_reorder` groups (language.md
//!   §3.4).
//!
//! **Memory spaces.** A [`Storage`] is one allocation in a [`Buffer`]:
//! `shared_hbm` (visible to every program instance; where outputs live),
//! `private_hbm`, `sbuf` or `psum`. HBM storages are linear byte arrays;
//! SBUF/PSUM storages are `shape[0]` partitions of `bytes_per_partition`
//! bytes each, placed at the same byte offset in every partition. Distinct
//! storages never overlap; where the backend places them, and when their
//! lifetimes end, is its decision (live ranges per storage). Storages start
//! uninitialised, except arguments of kind `input`/`inout`, which hold the
//! caller's data. Ops access storages only through [`View`]s (see
//! [`view`] for the addressing rule).
//!
//! **Regions.** A [`DynLoop`] is a hardware loop: its body is specialized
//! once and runs a run-time number of times (`dynamic_range`/`fori_loop`
//! with a read-only induction register, or `while` on a condition
//! register). Storages allocated in a body (`Storage::scope`) are allocated
//! once and stay live for the whole loop. Values cross iterations only
//! through memory and registers. An explicit edge (`depends_on`) names a
//! producer at the consumer's loop level or an enclosing one, never one
//! inside a loop the consumer is not in.
//!
//! **Registers.** A [`Register`] is a virtual 32-bit sequencer register.
//! It is defined once (by `reg_alloc`, or as a loop's induction variable),
//! used in the block that defines it and nested blocks, and mapped to
//! physical registers of whichever sequencers need it by the backend.
//!
//! **Static loops.** Static loops (`range`, `affine_range`,
//! `sequential_range`, `static_range`, loops over containers) are fully
//! unrolled; each op and storage records the iteration it came from as a
//! [`LoopCtx`] (its innermost [`LoopIter`]; the enclosing ones follow
//! through [`StaticLoop::parent`]). A `LoopCtx` never adds or removes a
//! dependency: the rules above are complete. It tells the backend which
//! ops form one iteration, so it can pipeline independent iterations
//! (software pipelining, double-buffering the per-iteration storages, which
//! are distinct by construction) and attribute costs to source loops. For
//! an `affine_range` loop the author also promised, in legacy NKI, that
//! matmul accumulations into one PSUM location from different iterations
//! commute; the backend may reorder those accumulate-matmuls among
//! themselves.
//!
//! # Text form
//!
//! [`print()`] writes the stable `--emit ir` text and [`read()`] parses it
//! back; print → read → print is the identity. The format is documented in
//! the [`print`](mod@crate::print) module.
//!
//! # Analyses
//!
//! [`program_order`] numbers items for scheduling and [`live_ranges`]
//! gives each storage the span it needs memory for (the rules are in the
//! [`analysis`] module doc).
//!
//! [`View::to_access_pattern`] maps a view to an `nkic_isa` access
//! pattern once its storage is placed ([`lower`] module doc).
//!
//! # Verification
//!
//! [`verify()`] checks the structural invariants listed in its module doc.
//! Once a kernel verifies, indexing its arenas with any handle stored in it
//! cannot panic.

pub mod analysis;
pub mod arena;
pub mod builder;
pub mod field;
pub mod kernel;
mod lex;
pub mod lower;
pub mod op;
pub mod print;
pub mod read;
pub mod verify;
pub mod view;

pub use analysis::{LiveRange, ProgramOrder, live_ranges, program_order};
pub use arena::{Arena, Entity, Handle, SecondaryMap};
pub use builder::KernelBuilder;
pub use kernel::{
    Address, ArgKind, Block, Buffer, CallFrame, DynLoop, DynLoopKind, Item, Kernel, KernelArg,
    LoopCtx, LoopIter, NoReorderGroup, RegHandle, Register, SourceFileName, Spans, SrcLoc,
    StaticLoop, StaticLoopKind, Storage,
};
pub use lower::{LowerError, Placement};
pub use op::{Access, EngineState, IrForm, Lowering, Op, OpKind, RegOrImm, Role, Scalar};
pub use print::{PrintOptions, print, print_with};
pub use read::{ReadError, read};
pub use verify::{Location, VerifyError, verify};
pub use view::{
    DynOffset, EXACT_RUN_LIMIT, Footprint, Indirection, MAX_VIEW_DIMS, Overlap, View, ViewDim,
    overlap,
};
