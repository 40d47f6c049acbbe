//! What a run is given: `SimConfig` (stepping policy, poison policy,
//! limits) and `Inputs` (the kernel's argument bytes).

use std::sync::Arc;

use nkic_isa::TensorId;

/// How the interpreter picks which queue to step next among those whose
/// next instruction may safely execute. The choice never changes the bytes
/// or the times of a race-free program; it exists so tests can prove that.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StepOrder {
    /// Queues in program order, resuming after the last one stepped.
    #[default]
    RoundRobin,
    /// Always the last steppable queue in program order.
    Reverse,
    /// The steppable queue whose instruction starts earliest (ties in
    /// program order): a plain time-ordered simulation.
    Earliest,
    /// A pseudo-random steppable queue from a seeded generator.
    Seeded(u64),
}

/// What reading a never-written byte does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Poison {
    /// Definedness is tracked like Memcheck does (`memory`): never-written
    /// elements read as the NKI simulator fills new tensors (NaN in float
    /// dtypes, 4 in integer dtypes) and what is computed from them is
    /// undefined too. An undefined value used as an index or a register
    /// faults (`SimErrorKind::UninitialisedRead`); undefined output
    /// elements are reported in `RunResult::undefined` (never-written ones
    /// hold the fill).
    #[default]
    Precise,
    /// A fault (`SimErrorKind::UninitialisedRead`) at the first read of a
    /// never-written byte, and for an output left partly unwritten.
    Error,
    /// The element reads as NaN in float dtypes (the dtype's NaN code) and
    /// as 0 in integer dtypes.
    Nan,
    /// The element reads as zero.
    Zero,
}

/// How compute instructions execute. Both tiers give the same bytes,
/// faults and times (the interpreter is the oracle the native tier must
/// match bit for bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimTier {
    /// Every instruction through the interpreter (`exec`).
    Interp,
    /// Supported compute instructions through loops compiled with
    /// Cranelift (`jit`); the rest, and any instruction whose
    /// preconditions do not hold, through the interpreter. Without the
    /// `jit` feature, or on a host Cranelift cannot compile for, it
    /// interprets.
    Jit,
}

impl Default for SimTier {
    /// `Jit` on x86-64 and aarch64 with the `jit` feature, else `Interp`.
    fn default() -> SimTier {
        if cfg!(all(
            feature = "jit",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )) {
            SimTier::Jit
        } else {
            SimTier::Interp
        }
    }
}

/// The default `SimConfig::max_simulated_ps`: 100 ms of device time, over
/// a hundred times the longest bundled kernel at its bench size, and
/// reached by a loop that never ends within seconds of simulation.
pub const DEFAULT_MAX_SIMULATED_PS: u64 = 100_000_000_000;

/// Options of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SimConfig {
    pub step_order: StepOrder,
    pub poison: Poison,
    /// Executed instructions (including control instructions) before the
    /// run stops with `SimErrorKind::InstructionLimit`.
    pub max_instructions: u64,
    /// Simulated time, in picoseconds, at which an instruction may no
    /// longer start: the run stops with `SimErrorKind::InstructionLimit`
    /// naming it (a loop that never ends moves data for a long time long
    /// before it reaches `max_instructions`).
    pub max_simulated_ps: u64,
    /// Whether `RunResult::trace` records one event per executed instruction.
    pub trace: bool,
    /// Whether the race detector runs: accesses of the same bytes from
    /// different queues, one of them a write, that no semaphore chain
    /// orders fault with `SimErrorKind::Race`, naming both instructions
    /// (`race.rs`). On by default, and the command line never turns it
    /// off; benchmarks of the interpreter alone may.
    pub race_check: bool,
    /// Which execution tier runs compute instructions (never changes a
    /// result).
    pub tier: SimTier,
    /// Whether the native tier lets the interpreter run an instruction
    /// whose loop is still being compiled (on the compiling thread) instead
    /// of waiting for it (never changes a result). The command line and
    /// the Python package do: their runs use each loop a few dozen times,
    /// and a compile takes about a millisecond. Off by default, so that
    /// every instruction that qualifies runs natively (the differential
    /// tests).
    pub jit_background: bool,
    /// Whether large matmuls are summed on rayon's pool while the
    /// interpreter goes on (never changes a result: `deferred` module).
    pub matmul_worker: bool,
    /// Whether a thread faults in the pages the program writes ahead of
    /// the run (never changes a result: `warm` module).
    pub warm_pages: bool,
}

impl SimConfig {
    /// The default options with the queues stepped in `order` (the
    /// results of a race-free program do not depend on it).
    pub fn stepping(order: StepOrder) -> SimConfig {
        SimConfig {
            step_order: order,
            ..SimConfig::default()
        }
    }
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            step_order: StepOrder::RoundRobin,
            poison: Poison::Precise,
            max_instructions: 1_000_000_000,
            max_simulated_ps: DEFAULT_MAX_SIMULATED_PS,
            trace: true,
            race_check: true,
            tier: SimTier::default(),
            jit_background: false,
            matmul_worker: true,
            warm_pages: true,
        }
    }
}

/// How an input names its argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKey {
    Name(String),
    Id(TensorId),
}

impl From<&str> for InputKey {
    fn from(name: &str) -> InputKey {
        InputKey::Name(name.to_owned())
    }
}

impl From<String> for InputKey {
    fn from(name: String) -> InputKey {
        InputKey::Name(name)
    }
}

impl From<TensorId> for InputKey {
    fn from(id: TensorId) -> InputKey {
        InputKey::Id(id)
    }
}

/// Bytes shared with the caller: a vector, or any other read-only buffer
/// (a file mapped into memory). The simulator reads an input's bytes
/// where they lie and copies them only when the kernel writes the input.
#[derive(Clone)]
pub struct Bytes(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl Bytes {
    /// The bytes of `owner`, which they stay in.
    pub fn new(owner: impl AsRef<[u8]> + Send + Sync + 'static) -> Bytes {
        Bytes(Arc::new(owner))
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(bytes: Vec<u8>) -> Bytes {
        Bytes::new(bytes)
    }
}

impl From<Arc<Vec<u8>>> for Bytes {
    fn from(bytes: Arc<Vec<u8>>) -> Bytes {
        Bytes(bytes)
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.len())
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        self[..] == other[..]
    }
}

impl Eq for Bytes {}

/// The kernel's input arguments: raw little-endian bytes of each `input`
/// or `inout` argument in its declared dtype (`numel × dtype.size()`
/// bytes, row-major).
///
/// The bytes are shared, not copied, with the simulated HBM: a run reads
/// an input where it lies, and copies it only when the kernel writes it
/// (an `inout` argument).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    pub entries: Vec<(InputKey, Bytes)>,
}

impl Inputs {
    pub fn new() -> Inputs {
        Inputs::default()
    }

    /// Adds an argument's bytes.
    pub fn insert(&mut self, key: impl Into<InputKey>, bytes: Vec<u8>) {
        self.insert_shared(key, bytes);
    }

    /// Adds an argument's bytes that the caller shares (`Bytes`, or an
    /// `Arc<Vec<u8>>`).
    pub fn insert_shared(&mut self, key: impl Into<InputKey>, bytes: impl Into<Bytes>) {
        self.entries.push((key.into(), bytes.into()));
    }

    /// Adds an argument's bytes, builder style.
    pub fn with(mut self, key: impl Into<InputKey>, bytes: Vec<u8>) -> Inputs {
        self.insert(key, bytes);
        self
    }
}
