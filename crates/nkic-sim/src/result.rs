//! What a run yields: `RunResult` with the outputs, the simulated time,
//! per-queue statistics and the instruction trace.

use std::collections::BTreeSet;

use nkic_isa::{DType, LineId, Queue, SemId};

use crate::error::Site;
use crate::output::OutputBytes;

/// The outcome of a successful run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunResult {
    /// The bytes of every `output` and `inout` argument, in parameter order.
    pub outputs: Vec<(String, OutputBytes)>,
    /// The simulated time from the first issue to the last completion, in
    /// picoseconds.
    pub total_ps: u64,
    /// One entry per queue stream of the program, in program order (core
    /// by core in a multi-core launch).
    pub per_queue: Vec<QueueStats>,
    /// One event per executed instruction, ordered by start time, then by
    /// the queue's position in the program, then by execution order within
    /// the queue (empty when `SimConfig::trace` is off). The order does not
    /// depend on the step order.
    pub trace: Vec<TraceEvent>,
    /// Bytes read from and written to HBM by DMA and register instructions.
    pub hbm_bytes_read: u64,
    pub hbm_bytes_written: u64,
    /// Floating-point operations of the Tensor engine (2 per multiply-add).
    pub flops: u64,
    /// Executed instructions, including control instructions.
    pub instructions: u64,
    /// Elements written by data instructions (every destination element of
    /// every executed compute or DMA instruction).
    pub elements: u64,
    /// With `Poison::Precise`: the output elements left undefined (never
    /// written, or computed from undefined data), per output and cause, in
    /// parameter order (never-written first). Empty in the other modes.
    pub undefined: Vec<UndefinedOutput>,
    /// In a launch of two cores with `Poison::Precise`: reads of bytes the
    /// other core stores without ordering whose timing-dependent value
    /// reaches no output, index or register (the `race` module doc), each
    /// as the `SimErrorKind::Race` error it would otherwise be: a warning.
    pub races: Vec<crate::error::SimError>,
}

/// Elements of one output that hold no defined value at the end of a run
/// (`Poison::Precise`): a warning, not a fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndefinedOutput {
    /// The output's name in the program (as in `RunResult::outputs`).
    pub output: String,
    /// Its shape.
    pub shape: Vec<u64>,
    /// How many of its elements (of `shape.iter().product()`) have this
    /// cause.
    pub elements: u64,
    /// The first one in row-major order, as an index into `shape`.
    pub first_index: Vec<u64>,
    /// `None`: never written (the bytes hold the fill, NaN for floats and
    /// 4 for integers). `Some`: written with a value computed from
    /// undefined data; the instruction that first read never-written
    /// memory on the path to the first such element.
    pub origin: Option<Site>,
}

impl RunResult {
    /// The simulated time in nanoseconds.
    pub fn total_ns(&self) -> f64 {
        self.total_ps as f64 / 1000.0
    }

    /// How many times instruction `index` of `queue`'s stream executed
    /// (on core 0 of a multi-core launch).
    pub fn executions(&self, queue: Queue, index: usize) -> u64 {
        self.executions_on(0, queue, index)
    }

    /// How many times instruction `index` of `queue`'s stream of core
    /// `core` executed.
    pub fn executions_on(&self, core: u8, queue: Queue, index: usize) -> u64 {
        self.per_queue
            .iter()
            .find(|q| q.core == core && q.queue == queue)
            .and_then(|q| q.executions.get(index))
            .copied()
            .unwrap_or(0)
    }

    /// The cores that ran (1 for a one-core program).
    pub fn cores(&self) -> usize {
        self.per_queue
            .iter()
            .map(|q| usize::from(q.core) + 1)
            .max()
            .unwrap_or(1)
    }

    /// When core `core`'s last instruction completed, in picoseconds.
    pub fn core_end_ps(&self, core: u8) -> u64 {
        self.per_queue
            .iter()
            .filter(|q| q.core == core)
            .map(|q| q.end_ps)
            .max()
            .unwrap_or(0)
    }

    /// The bytes of output `name`.
    pub fn output(&self, name: &str) -> Option<&OutputBytes> {
        self.outputs.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }
}

/// Statistics of one queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStats {
    /// The core (0 in a one-core run).
    pub core: u8,
    pub queue: Queue,
    /// Executed instructions.
    pub instructions: u64,
    /// Sum of the instructions' initiation intervals, in picoseconds (for a
    /// DMA transfer, until its data finished moving), less the time its
    /// transfers waited for DMA engines other transfers held (`dma_wait_ps`).
    pub busy_ps: u64,
    /// Time the queue's DMA transfers waited for DMA engines held by
    /// earlier transfers (of any queue), in picoseconds: the queue cannot
    /// issue meanwhile, but it moves nothing.
    pub dma_wait_ps: u64,
    /// When the queue's last instruction completed, in picoseconds.
    pub end_ps: u64,
    /// How many times each instruction of the stream executed, by index
    /// (more than once in dynamic loops).
    pub executions: Vec<u64>,
}

/// One executed instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// The core (0 in a one-core run).
    pub core: u8,
    pub queue: Queue,
    /// The instruction's index in its queue's stream.
    pub index: usize,
    /// How many instructions the queue executed before this one (the
    /// dynamic position, which differs from `index` in loops).
    pub seq: u64,
    pub mnemonic: &'static str,
    /// Issue time, in picoseconds.
    pub start_ps: u64,
    /// When the queue may issue its next instruction (start + interval).
    pub free_ps: u64,
    /// When the results are visible and the signals fire (start + latency).
    pub end_ps: u64,
    pub line: Option<LineId>,
    /// When the queue could have issued the instruction had no semaphore
    /// held it back: its free time (with a dependent read: the producer's
    /// completion plus the dependent-issue overhead). `start_ps - ready_ps`
    /// is the time spent waiting on semaphores.
    pub ready_ps: u64,
    /// What decided the start time (for the critical path).
    pub cause: Cause,
    /// The semaphore wait that decided the start, when one did.
    pub waited: Option<Waited>,
    /// Floating-point operations of this instruction (2 per multiply-add).
    pub flops: u64,
    /// HBM bytes read plus written by this instruction.
    pub hbm_bytes: u64,
    /// A DMA transfer's use of the shared DMA engines.
    pub dma: Option<DmaSlot>,
}

/// What decided an instruction's start time. Events are named by queue and
/// `seq` (their dynamic position in the queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// Nothing: the queue's first instruction at time 0.
    Start,
    /// The previous instruction of the same queue (its initiation interval).
    Queue,
    /// A semaphore increment by another instruction.
    Semaphore { queue: Queue, seq: u64 },
    /// The completion of an earlier instruction of the same queue whose
    /// output it reads (dependent issue).
    Dependency { seq: u64 },
    /// A `core_barrier` held back by the paired barrier of another core
    /// (that core's queue and the barrier's `seq` there).
    Barrier { core: u8, queue: Queue, seq: u64 },
    /// A shared RAM port (`nkic_isa::Ports`) held by another queue's
    /// instruction of the same core, free again when that one's interval
    /// ended.
    Port { queue: Queue, seq: u64 },
}

/// A semaphore wait that held an instruction back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Waited {
    pub sem: SemId,
    /// The increment count waited for.
    pub count: u64,
}

/// How a DMA transfer used the DMA engines.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DmaSlot {
    pub first_engine: u32,
    pub engines: u32,
    /// When data started moving on each engine used (engines
    /// `first_engine`, `first_engine + 1`, … modulo the engine count); it
    /// moves for `engine_ps` on each.
    pub engine_begins_ps: Vec<u64>,
    pub engine_ps: u64,
    /// How long it occupied each engine (`DmaTransfer::engine_busy_ps`,
    /// at most `engine_ps`): the engines' utilisation counts this.
    pub engine_busy_ps: u64,
    /// When data started and stopped moving on the engines (the earliest
    /// start and latest end over the engines used).
    pub data_start_ps: u64,
    pub data_end_ps: u64,
    /// When its data could have started moving (after the descriptors)
    /// had no other transfer held its engines; `data_end_ps - engine_ps -
    /// data_ready_ps` is the time it waited for them.
    pub data_ready_ps: u64,
    /// The transfer whose use of an engine delayed this one the most (on
    /// the engine where its data started last), when another did: its
    /// queue and `seq`.
    pub delayed_by: Option<(Queue, u64)>,
}

/// Which tensors `run_dumping` records, by the kernel's name (an HBM
/// tensor's name, or a name from `Program::operand_names`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpSpec {
    names: BTreeSet<String>,
}

impl DumpSpec {
    pub fn new(names: &[String]) -> DumpSpec {
        DumpSpec {
            names: names.iter().cloned().collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// One value a dumped tensor took: what one instruction wrote into it,
/// as that operand's elements in row-major order (partition first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dump {
    /// The tensor's name.
    pub name: String,
    /// The core (0 in a one-core run).
    pub core: u8,
    pub queue: Queue,
    /// The instruction's index in its stream and dynamic position.
    pub index: usize,
    pub seq: u64,
    pub line: Option<LineId>,
    /// The written operand's field.
    pub field: &'static str,
    pub dtype: DType,
    /// The operand's shape: partitions (rows in HBM), then its free dims.
    pub shape: Vec<u64>,
    /// Raw little-endian bytes; bytes never written read as the dtype's
    /// NaN (0 for integers).
    pub bytes: Vec<u8>,
    /// When the values became visible (the instruction's completion), in
    /// picoseconds.
    pub time_ps: u64,
}
