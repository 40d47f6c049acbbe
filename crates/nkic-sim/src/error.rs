//! Runtime faults: `SimError`, what went wrong and where.
//!
//! A fault inside an instruction carries the queue, the instruction's index
//! in its stream, its mnemonic and its line-table entry, already resolved to
//! `file:line:col`, so the CLI can print it with the source line. Faults
//! that belong to no instruction (a deadlock, bad inputs, an output never
//! written) carry none of these.

use std::fmt;

use nkic_isa::{LineId, Program, Queue};

/// The class of a runtime fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SimErrorKind {
    /// An access outside SBUF/PSUM partitions or bytes, or outside an HBM
    /// tensor; also a gather index out of range.
    OutOfBounds,
    /// A read of a byte that was never written (with `Poison::Error`), or a
    /// kernel output left partly unwritten (with `Poison::Error`); with
    /// `Poison::Precise`, an undefined value used as an index, a register
    /// or a seed.
    UninitialisedRead,
    /// No queue can make progress but some have instructions left.
    Deadlock,
    /// The inputs do not match the program's arguments.
    BadInput,
    /// An instruction the verifier would reject (operand shapes or dtypes
    /// that do not fit together, a missing label, a bad register number).
    BadProgram,
    /// Two accesses of the same bytes from different queues, at least one
    /// a write, that no chain of semaphores orders (`SimConfig::race_check`).
    /// The error's instruction is the later access; `SimError::related` is
    /// the earlier one.
    Race,
    /// `reg_alu` `div`/`rem` by zero.
    DivideByZero,
    /// The run executed more instructions than `SimConfig::max_instructions`
    /// (a loop that never ends).
    InstructionLimit,
}

impl SimErrorKind {
    /// A short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            SimErrorKind::OutOfBounds => "out-of-bounds",
            SimErrorKind::UninitialisedRead => "uninitialised-read",
            SimErrorKind::Deadlock => "deadlock",
            SimErrorKind::BadInput => "bad-input",
            SimErrorKind::BadProgram => "bad-program",
            SimErrorKind::Race => "data-race",
            SimErrorKind::DivideByZero => "divide-by-zero",
            SimErrorKind::InstructionLimit => "instruction-limit",
        }
    }
}

impl fmt::Display for SimErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A runtime fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError {
    pub kind: SimErrorKind,
    /// Lowercase, no trailing period, without the location.
    pub message: String,
    /// The core of a multi-core launch whose instruction faulted (`None`
    /// in a one-core run).
    pub core: Option<u8>,
    /// The faulting instruction's queue and index in its stream.
    pub queue: Option<Queue>,
    pub index: Option<usize>,
    pub mnemonic: Option<&'static str>,
    /// The instruction's line-table entry.
    pub line: Option<LineId>,
    /// `file:line:col` of `line`, resolved through the program.
    pub source: Option<Box<str>>,
    /// The other instruction of a fault that involves two (a data race).
    pub related: Option<Box<Site>>,
    /// The kernel argument a fault is about when no instruction is (an
    /// output left partly unwritten): its name in the program.
    pub tensor: Option<Box<str>>,
    /// The NumPy-level facts of an `OutOfBounds` fault (tensor, shape,
    /// axis, index, flat offset), when the fault is about one element.
    pub oob: Option<Box<OutOfBounds>>,
}

/// The first element an out-of-bounds access reaches outside its tensor,
/// in NumPy's terms: `message()` reads `index 258 is out of bounds for
/// axis 0 with size 256`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfBounds {
    /// The tensor: an HBM tensor's name in the program, the kernel's name
    /// of an on-chip operand when the program knows it, else `sbuf` or
    /// `psum`.
    pub tensor: String,
    /// Its shape in elements: an HBM tensor's declared shape; for SBUF and
    /// PSUM `[partitions, elements of the dtype per partition]`.
    pub shape: Vec<u64>,
    /// The axis whose index leaves `shape` (0 for HBM tensors: the flat
    /// offset unravelled row-major; on chip 0 for a partition, 1 for a
    /// position within the partition).
    pub axis: usize,
    /// The index on `axis` (negative below the start).
    pub index: i64,
    /// The element's offset from the tensor's start, in elements,
    /// row-major over `shape`.
    pub flat_offset: i64,
    /// The operand's field (`src`, `dst`, ...).
    pub field: &'static str,
    /// The row (partition) of the access that holds the element.
    pub row: u64,
    /// An indirect DMA: the index tile (the kernel's name of the `index`
    /// operand when known, else `index`), and the value of its row `row`.
    pub index_tile: Option<(String, i64)>,
}

impl OutOfBounds {
    /// `index 258 is out of bounds for axis 0 with size 256`.
    pub fn message(&self) -> String {
        format!(
            "index {} is out of bounds for axis {} with size {}",
            self.index,
            self.axis,
            self.shape.get(self.axis).copied().unwrap_or(0)
        )
    }
}

/// An instruction of a program, located: its queue, index in the stream,
/// mnemonic and line-table entry resolved to `file:line:col`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The core in a multi-core launch (`None` in a one-core run).
    pub core: Option<u8>,
    pub queue: Queue,
    pub index: usize,
    pub mnemonic: &'static str,
    pub line: Option<LineId>,
    pub source: Option<String>,
}

impl Site {
    /// Instruction `index` of `queue`'s stream in `program`.
    pub fn of(program: &Program, queue: Queue, index: usize) -> Site {
        let inst = program.stream(queue).and_then(|s| s.get(index));
        let line = inst.and_then(|i| i.line);
        Site {
            core: None,
            queue,
            index,
            mnemonic: inst.map_or("?", |i| i.op.mnemonic()),
            line,
            source: line.and_then(|l| resolve(program, l)),
        }
    }
}

impl fmt::Display for Site {
    /// For example `memset at vector[0] (kernel.py:4:5)`, or `memset at
    /// core1.vector[0] (kernel.py:4:5)` in a multi-core launch.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at ", self.mnemonic)?;
        if let Some(core) = self.core {
            write!(f, "core{core}.")?;
        }
        write!(f, "{}[{}]", self.queue, self.index)?;
        if let Some(src) = &self.source {
            write!(f, " ({src})")?;
        }
        Ok(())
    }
}

/// `file:line:col` of a line-table entry.
fn resolve(program: &Program, line: LineId) -> Option<String> {
    let entry = program.line(line)?;
    let file = program.files.get(entry.file as usize)?;
    Some(format!("{file}:{}:{}", entry.line, entry.col))
}

impl SimError {
    /// A fault that belongs to no instruction.
    pub fn new(kind: SimErrorKind, message: impl Into<String>) -> SimError {
        SimError {
            kind,
            message: message.into(),
            core: None,
            queue: None,
            index: None,
            mnemonic: None,
            line: None,
            source: None,
            related: None,
            tensor: None,
            oob: None,
        }
    }

    /// A fault about HBM tensor `tensor` that belongs to no instruction
    /// (its size, its input): located at the tensor's declaration.
    pub fn about(kind: SimErrorKind, message: impl Into<String>, tensor: &str) -> SimError {
        SimError {
            tensor: Some(tensor.into()),
            ..SimError::new(kind, message)
        }
    }

    /// A fault of instruction `index` of `queue`'s stream.
    pub(crate) fn at(
        kind: SimErrorKind,
        message: String,
        program: &Program,
        queue: Queue,
        index: usize,
    ) -> SimError {
        let inst = program.stream(queue).and_then(|s| s.get(index));
        let line = inst.and_then(|i| i.line);
        SimError {
            kind,
            message,
            core: None,
            queue: Some(queue),
            index: Some(index),
            mnemonic: inst.map(|i| i.op.mnemonic()),
            line,
            source: line
                .and_then(|l| resolve(program, l))
                .map(String::into_boxed_str),
            related: None,
            tensor: None,
            oob: None,
        }
    }
}

impl fmt::Display for SimError {
    /// For example `out-of-bounds read of sbuf partitions 120..136 (limit
    /// 128) by tensor_copy at vector[3] (kernel.py:14:5)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let (Some(q), Some(i)) = (self.queue, self.index) {
            let core = self.core.map(|c| format!("core{c}.")).unwrap_or_default();
            match self.mnemonic {
                Some(m) => write!(f, " by {m} at {core}{q}[{i}]")?,
                None => write!(f, " at {core}{q}[{i}]")?,
            }
        }
        if let Some(src) = &self.source {
            write!(f, " ({src})")?;
        }
        Ok(())
    }
}

impl std::error::Error for SimError {}

/// A fault inside an instruction before its location is attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub kind: SimErrorKind,
    pub message: String,
    /// An undefined value used where it matters (an index, a register):
    /// the instruction that first read undefined memory on its path.
    pub origin: Option<crate::memory::Origin>,
    pub oob: Option<Box<OutOfBounds>>,
}

impl Fault {
    pub(crate) fn new(kind: SimErrorKind, message: impl Into<String>) -> Fault {
        Fault {
            kind,
            message: message.into(),
            origin: None,
            oob: None,
        }
    }

    pub(crate) fn bad(message: impl Into<String>) -> Fault {
        Fault::new(SimErrorKind::BadProgram, message)
    }
}

pub(crate) type FResult<T> = Result<T, Fault>;
