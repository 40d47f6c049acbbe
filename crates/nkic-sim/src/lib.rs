//! The reference interpreter of the nkic pseudo-ISA, with a discrete-event
//! cycle model.
//!
//! `run` executes a `Program` on the kernel's input bytes and returns the
//! output bytes, the simulated time, per-queue statistics and a trace. The
//! interpreter is the definition of the ISA's meaning: faster paths must
//! agree with it bit for bit.
//!
//! Code map:
//! * `config`: `SimConfig` (`StepOrder`, `Poison`, limits) and `Inputs`.
//! * `result`: `RunResult`, `QueueStats`, `TraceEvent`.
//! * `error`: `SimError` and `SimErrorKind`, runtime faults with the
//!   faulting instruction and its source location.
//! * `memory`: HBM/SBUF/PSUM bytes with per-byte written bits and the
//!   definedness shadow, and the resolution of access patterns into
//!   contiguous runs.
//! * `machine`: queues, registers, semaphores, the clock and the stepping
//!   policy (timing rules in its doc).
//! * `exec`: the semantics of every instruction (general rules in its doc).
//! * `alu`: ALU operators and activation functions.
//! * `matmul`: the TensorE inner loop.
//! * `jit` (feature `jit`): the native tier (`SimTier::Jit`), compute and copy
//!   instructions as Cranelift-compiled loops that must match the
//!   interpreter bit for bit; only their data path, never a time or a
//!   fault.
//! * `calibration`: microbenchmarks that hold the cycle model to the
//!   published figures (`docs/cycle-model.md`).
//! * `race`: the race detector (vector clocks over semaphores), on in every
//!   run unless `SimConfig::race_check` is off.
//!
//! # Model summary
//!
//! * Memory: SBUF is 128 partitions of the target's physical bytes (accesses
//!   must stay below the usable size), PSUM 128 partitions × 16 KiB, HBM
//!   one byte array per tensor, zero pages until written, and an input's
//!   the caller's own `Bytes` (a vector, a mapped file) until the kernel
//!   writes it. Input arguments start initialised. By
//!   default (`Poison::Precise`) a definedness shadow follows undefined
//!   data through every instruction: never-written elements read as NaN
//!   (integers 4), an undefined index or register faults, and undefined
//!   output elements are listed in `RunResult::undefined`; `Poison::Error`
//!   faults at the first read of a never-written byte instead.
//! * Each queue runs in order with its own 64 registers (all 0 at the
//!   start); queues synchronise only through semaphores. Times come from
//!   `Target::cost` (nkic-isa), the one cost model shared with the backend;
//!   DMA transfers of all queues also share the core's 16 DMA engines
//!   (`Target::dma_transfer`, `machine`), which caps the aggregate DMA and
//!   HBM bandwidth. `docs/cycle-model.md` holds the model to the published
//!   figures (`calibration`).
//! * Every run checks for data races (`race`), unless
//!   `SimConfig::race_check` is turned off.
//! * Numerics: Vector/Scalar/GpSimd compute in f32 and round on write;
//!   TensorE multiplies in f32 (exact for bf16/fp8 products) and adds the
//!   products in f32 over the contraction in ascending order, starting from
//!   0 or, with `accumulate`, from the PSUM value, rounding once on write
//!   (to bf16 when PSUM holds bf16). docs/isa.md is the definition; the
//!   module docs of `exec` and `alu` list the choices it leaves open.
//! * Performance: access patterns are resolved once per instruction into
//!   contiguous runs, rows are converted with the slice codecs of
//!   `numerics`, and the matmul inner loop is register-blocked on packed
//!   operands and spread over threads (`matmul`; see `benches/sim.rs` and
//!   `examples/matmul_nkasm.rs`).
//! * Cores: `run_launch` runs a multi-core launch (LNC=2): per-core
//!   engines, queues, SBUF, PSUM and DMA engines, shared HBM arguments,
//!   `core_barrier` and `sendrecv` between the cores (`machine`); the race
//!   detector covers accesses of different cores.
//! * Verification: `run` and `run_launch` take the `nkic_isa::Verified`
//!   token of `nkic_isa::verify`/`verify_launch`, so the interpreter never
//!   sees a program the verifier rejects and does not check its rules
//!   again.
//! * Faults: out-of-bounds accesses (through register offsets and
//!   indices), uninitialised reads, deadlocks, the few programs the
//!   verifier accepts but the interpreter cannot run (packed x4 operands of
//!   arithmetic) and runaway loops stop the run with a
//!   `SimError` naming the instruction and its source line; an
//!   out-of-bounds fault also carries NumPy-level facts
//!   (`SimError::oob`, `OutOfBounds`).

mod alu;
pub mod calibration;
mod config;
#[cfg(target_arch = "x86_64")]
mod cpu;
mod decoded;
mod deferred;
mod error;
mod exec;
mod exp;
mod footprint;
mod idle;
#[cfg(feature = "jit")]
mod jit;
mod machine;
mod matmul;
mod memory;
mod output;
mod pages;
mod race;
mod result;
mod rng;
mod transpose;
mod warm;

#[cfg(test)]
mod tests;

pub use config::{
    Bytes, DEFAULT_MAX_SIMULATED_PS, InputKey, Inputs, Poison, SimConfig, SimTier, StepOrder,
};
pub use error::{OutOfBounds, SimError, SimErrorKind, Site};
pub use output::OutputBytes;
pub use result::{
    Cause, DmaSlot, Dump, DumpSpec, QueueStats, RunResult, TraceEvent, UndefinedOutput, Waited,
};

use nkic_isa::{Launch, Program, Verified};

/// Whether the simulator can hold `program`'s HBM tensors (at most 64 GiB
/// in all): the fault a run of it would stop with at once otherwise, so
/// callers can check before building inputs that large.
pub fn check_sizes(program: &Program) -> Result<(), SimError> {
    machine::check_sizes(program)
}

/// How many instructions this thread has run in the native tier
/// (`SimTier::Jit`) since it started, counting the runs it called (which
/// execute on a worker of the thread pool): lets tests and benchmarks see
/// that the tier was taken. Always 0 without the `jit` feature.
pub fn native_instructions() -> u64 {
    #[cfg(feature = "jit")]
    return jit::native_instructions();
    #[cfg(not(feature = "jit"))]
    0
}

/// Starts the native tier's compiling thread, which builds its Cranelift
/// module (milliseconds) while the caller goes on, so that a run started
/// later does not wait for it; a run in the native tier starts it
/// otherwise. Does nothing without the `jit` feature.
pub fn start_native_tier() {
    #[cfg(feature = "jit")]
    jit::start();
}

/// Adds `n` instructions that a run called from this thread ran natively
/// on a pool worker to this thread's [`native_instructions`].
fn credit_native_instructions(n: u64) {
    #[cfg(feature = "jit")]
    jit::credit_native_instructions(n);
    #[cfg(not(feature = "jit"))]
    let _ = n;
}

/// Runs `program` on `inputs`.
///
/// The program must have passed `nkic_isa::verify`, whose token this takes:
/// the interpreter relies on the verifier's rules (operand shapes and
/// dtypes, memories, registers, labels, ...) and checks at run time only
/// what the verifier cannot know (dynamic offsets and indices, undefined
/// data, races, deadlocks, runaway loops).
///
/// `inputs` holds the raw little-endian bytes of every `input` and `inout`
/// argument. The result's `outputs` hold the bytes of every `output` and
/// `inout` argument in parameter order.
///
/// ```
/// let program = nkic_isa::assemble(
///     ".target trn3
/// .arg a f32[128,512] input
/// .arg out f32[128,512] output
/// .sem loaded
/// .sem done
/// .queue dma0
///   dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512] signal(loaded)
///   dma_copy dst=hbm.out[0:128*512]:f32[1,512] src=sbuf[0:128]+2048:f32[1,512] wait(done>=1)
/// .queue scalar
///   activation dst=sbuf[0:128]+2048:f32[1,512] src=sbuf[0:128]:f32[1,512] func=exp scale=1.0 wait(loaded>=1) signal(done)
/// ",
/// )
/// .expect("the program assembles");
/// let a: Vec<u8> = (0..128 * 512).flat_map(|_| 0.0f32.to_le_bytes()).collect();
/// let inputs = nkic_sim::Inputs::new().with("a", a);
/// let verified = nkic_isa::verify(&program).expect("the program verifies");
/// let res = nkic_sim::run(verified, &inputs, &nkic_sim::SimConfig::default())
///     .expect("the program runs");
/// // exp(0) = 1 everywhere.
/// assert!(res.outputs[0].1.bytes().chunks(4).all(|c| c == 1.0f32.to_le_bytes()));
/// assert!(res.total_ns() > 0.0);
/// ```
pub fn run(
    program: Verified<'_, Program>,
    inputs: &Inputs,
    config: &SimConfig,
) -> Result<RunResult, SimError> {
    run_dumping(program, inputs, config, &DumpSpec::default()).map(|(r, _)| r)
}

/// Runs every core of `launch` together (LNC=2: one program per physical
/// core, sharing the kernel's HBM arguments; `nkic_isa::launch`). Each
/// core has its own engines, queues, SBUF, PSUM and DMA engines; the
/// result's time is the slowest core's, its statistics and trace carry
/// each queue's core. A one-core launch runs exactly like `run`. The
/// launch must have passed `nkic_isa::verify_launch` (see `run`).
pub fn run_launch(
    launch: Verified<'_, Launch>,
    inputs: &Inputs,
    config: &SimConfig,
) -> Result<RunResult, SimError> {
    run_launch_dumping(launch, inputs, config, &DumpSpec::default()).map(|(r, _)| r)
}

/// `run_launch` with the tensor dumps of `run_dumping`.
pub fn run_launch_dumping(
    launch: Verified<'_, Launch>,
    inputs: &Inputs,
    config: &SimConfig,
    dump: &DumpSpec,
) -> Result<(RunResult, Vec<Dump>), SimError> {
    machine::simulate(&launch.get().cores, inputs, config, dump)
}

/// Runs `program` like `run` and also records every value the tensors
/// named in `dump` take: one `Dump` per write of an operand that belongs
/// to a named tensor, in execution order of each queue (ordered by
/// completion time, then queue, then position in the queue).
pub fn run_dumping(
    program: Verified<'_, Program>,
    inputs: &Inputs,
    config: &SimConfig,
    dump: &DumpSpec,
) -> Result<(RunResult, Vec<Dump>), SimError> {
    machine::simulate(std::slice::from_ref(program.get()), inputs, config, dump)
}
