//! What a run yields: `RunResult` with the outputs, the simulated time,
//! per-queue statistics and the instruction trace.

use nkic_isa::{LineId, Queue};

/// The outcome of a successful run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunResult {
    /// The bytes of every `output` and `inout` argument, in parameter order.
    pub outputs: Vec<(String, Vec<u8>)>,
    /// The simulated time from the first issue to the last completion, in
    /// picoseconds.
    pub total_ps: u64,
    /// One entry per queue stream of the program, in program order.
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
}

impl RunResult {
    /// The simulated time in nanoseconds.
    pub fn total_ns(&self) -> f64 {
        self.total_ps as f64 / 1000.0
    }

    /// The bytes of output `name`.
    pub fn output(&self, name: &str) -> Option<&[u8]> {
        self.outputs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }
}

/// Statistics of one queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStats {
    pub queue: Queue,
    /// Executed instructions.
    pub instructions: u64,
    /// Sum of the instructions' initiation intervals, in picoseconds.
    pub busy_ps: u64,
    /// When the queue's last instruction completed, in picoseconds.
    pub end_ps: u64,
}

/// One executed instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
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
}
