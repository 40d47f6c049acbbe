//! A whole program: the target, HBM tensors (kernel arguments and
//! internal buffers), semaphores, one instruction stream per queue, and the
//! line table that maps instructions back to kernel source.
//!
//! # Execution model
//!
//! Every queue runs its stream in order, starting at its first instruction
//! with all registers 0. An instruction starts when the previous
//! instruction of its queue has issued and every wait holds; it increments
//! its signals when it completes. Queues order against each other only
//! through semaphores, which start at 0 and only grow. Memory is shared by
//! all queues. The program ends when every queue has run past its last
//! instruction; a queue blocked forever on a wait is a deadlock fault.
//!
//! Input tensors hold the kernel's arguments on entry and internal tensors
//! with `data` hold those bytes; output and other internal tensors start
//! uninitialised, as do SBUF and PSUM.

use crate::insn;
use std::ops::Range;
use std::sync::Arc;

use crate::ap::TensorId;
use crate::dtype::DType;
use crate::engine::Queue;
use crate::inst::Instruction;
use crate::target::Target;

/// Index of a semaphore in `Program::semaphores`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SemId(pub u32);

/// Index of an entry in `Program::line_table`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineId(pub u32);

/// How a kernel uses an HBM tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorKind {
    /// A kernel argument that is read.
    Input,
    /// A kernel argument that is written (a result).
    Output,
    /// A kernel argument that is read and written.
    InOut,
    /// A buffer private to the program (spills, scratch).
    Internal,
    /// A buffer that is not an argument but that every core of a launch
    /// shares (an internal `nl.shared_hbm` tensor): the cores' tensors of
    /// this kind with the same name are one tensor. In a one-core program
    /// it is an internal buffer.
    Shared,
}

impl TensorKind {
    /// The `.nkasm` spelling of an argument kind (`Internal` prints as a
    /// `.hbm` directive instead, `Shared` as `.hbm NAME TYPE shared`).
    pub fn name(self) -> &'static str {
        match self {
            TensorKind::Input => "input",
            TensorKind::Output => "output",
            TensorKind::InOut => "inout",
            TensorKind::Internal => "internal",
            TensorKind::Shared => "shared",
        }
    }

    pub fn from_name(text: &str) -> Option<TensorKind> {
        [
            TensorKind::Input,
            TensorKind::Output,
            TensorKind::InOut,
            TensorKind::Internal,
            TensorKind::Shared,
        ]
        .into_iter()
        .find(|k| k.name() == text)
    }

    /// True for the kinds that are kernel arguments.
    pub fn is_arg(self) -> bool {
        matches!(
            self,
            TensorKind::Input | TensorKind::Output | TensorKind::InOut
        )
    }
}

/// A tensor in HBM: row-major, `numel × dtype.size()` bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HbmTensor {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub kind: TensorKind,
    /// The tensor's bytes on entry (a constant: `nl.shared_constant`),
    /// row-major little-endian elements of `dtype`; `None`: uninitialised
    /// (or the caller's, for inputs). Only internal and shared tensors
    /// have data, `bytes()` of it (the verifier's rules).
    pub data: Option<Arc<[u8]>>,
}

impl HbmTensor {
    /// The number of elements (saturating).
    pub fn numel(&self) -> u64 {
        self.shape
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d))
    }

    /// The size in bytes.
    pub fn bytes(&self) -> u64 {
        self.numel().saturating_mul(u64::from(self.dtype.size()))
    }
}

/// A counting semaphore, starting at 0.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Semaphore {
    pub name: String,
}

/// A source location: a file of `Program::files`, 1-based line and column,
/// and the byte range of the construct in that file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LineEntry {
    pub file: u32,
    pub line: u32,
    pub col: u32,
    pub span: Range<u32>,
}

/// The kernel's name for an on-chip operand of one instruction (the
/// tensor variable it belongs to), for fault messages and `nkic run
/// --dump`. HBM operands need none: their tensor has a name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperandName {
    pub queue: Queue,
    /// The instruction's index in the queue's stream.
    pub index: u32,
    /// The operand's field (`dst`, `src`, …), as the instruction table
    /// spells it.
    pub field: &'static str,
    /// The kernel's name of the tensor (shared by the many operands of
    /// one tensor).
    pub name: Arc<str>,
}

/// One queue's instruction stream.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueStream {
    pub queue: Queue,
    pub insts: Vec<Instruction>,
}

impl QueueStream {
    /// The index of each label's definition (the first one, if a label is
    /// defined twice, which the verifier rejects). A branch to `label`
    /// continues at that index.
    pub fn label_positions(&self) -> std::collections::BTreeMap<crate::inst::Label, usize> {
        let mut out = std::collections::BTreeMap::new();
        for (i, inst) in self.insts.iter().enumerate() {
            if let crate::inst::Op::Label(insn::Label { label }) = inst.op {
                out.entry(label).or_insert(i);
            }
        }
        out
    }
}

/// A complete program for one NeuronCore.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub target: Target,
    /// Source file names referenced by the line table.
    pub files: Vec<String>,
    pub line_table: Vec<LineEntry>,
    /// HBM tensors; the argument kinds, in this order, are the kernel's
    /// parameters.
    pub hbm: Vec<HbmTensor>,
    pub semaphores: Vec<Semaphore>,
    /// At most one stream per queue, printed in this order.
    pub queues: Vec<QueueStream>,
    /// Kernel names of on-chip operands, sorted by queue, index and field
    /// (a compiler fills it; hand-written programs leave it empty; the
    /// `.nkasm` text does not carry it).
    pub operand_names: Vec<OperandName>,
}

impl Program {
    /// An empty program for `target`.
    pub fn new(target: Target) -> Program {
        Program {
            target,
            files: Vec::new(),
            line_table: Vec::new(),
            hbm: Vec::new(),
            semaphores: Vec::new(),
            queues: Vec::new(),
            operand_names: Vec::new(),
        }
    }

    /// The kernel's name of what operand `field` of instruction `index` of
    /// `queue` accesses: the HBM tensor's name for an HBM operand, else the
    /// entry of `operand_names`.
    pub fn operand_name(&self, queue: Queue, index: usize, field: &str) -> Option<&str> {
        let inst = self.stream(queue)?.get(index)?;
        let operand = inst.op.operands().into_iter().find(|o| o.field == field)?;
        if let crate::ap::Memory::Hbm(id) = operand.ap.mem {
            return self.tensor(id).map(|t| t.name.as_str());
        }
        let index = u32::try_from(index).ok()?;
        // Sorted by queue, index and field: the instruction's few entries
        // start where a binary search puts them.
        let names = &self.operand_names;
        let first = names.partition_point(|n| (n.queue, n.index) < (queue, index));
        names[first..]
            .iter()
            .take_while(|n| n.queue == queue && n.index == index)
            .find(|n| n.field == field)
            .map(|n| &*n.name)
    }

    /// The kernel's arguments in parameter order.
    pub fn args(&self) -> impl Iterator<Item = (TensorId, &HbmTensor)> {
        self.tensors().filter(|(_, t)| t.kind.is_arg())
    }

    /// All HBM tensors with their ids.
    pub fn tensors(&self) -> impl Iterator<Item = (TensorId, &HbmTensor)> {
        (0u32..).zip(self.hbm.iter()).map(|(i, t)| (TensorId(i), t))
    }

    /// The tensor `id`, if it exists.
    pub fn tensor(&self, id: TensorId) -> Option<&HbmTensor> {
        self.hbm.get(id.0 as usize)
    }

    /// The tensor named `name`.
    pub fn tensor_by_name(&self, name: &str) -> Option<TensorId> {
        self.tensors()
            .find(|(_, t)| t.name == name)
            .map(|(id, _)| id)
    }

    /// Adds an HBM tensor and returns its id.
    pub fn add_tensor(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[u64],
        kind: TensorKind,
    ) -> TensorId {
        let id = TensorId(u32::try_from(self.hbm.len()).unwrap_or(u32::MAX));
        self.hbm.push(HbmTensor {
            name: name.to_owned(),
            dtype,
            shape: shape.to_vec(),
            kind,
            data: None,
        });
        id
    }

    /// Adds an HBM tensor that holds `data` on entry (see
    /// `HbmTensor::data`) and returns its id.
    pub fn add_constant(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[u64],
        kind: TensorKind,
        data: Arc<[u8]>,
    ) -> TensorId {
        let id = self.add_tensor(name, dtype, shape, kind);
        self.hbm[id.0 as usize].data = Some(data);
        id
    }

    /// Adds a semaphore and returns its id.
    pub fn add_semaphore(&mut self, name: &str) -> SemId {
        let id = SemId(u32::try_from(self.semaphores.len()).unwrap_or(u32::MAX));
        self.semaphores.push(Semaphore {
            name: name.to_owned(),
        });
        id
    }

    /// Adds a line-table entry (and its file if new) and returns its id.
    pub fn add_line(&mut self, file: &str, line: u32, col: u32, span: Range<u32>) -> LineId {
        let file = match self.files.iter().position(|f| f == file) {
            Some(i) => i,
            None => {
                self.files.push(file.to_owned());
                self.files.len() - 1
            }
        };
        let entry = LineEntry {
            file: u32::try_from(file).unwrap_or(u32::MAX),
            line,
            col,
            span,
        };
        let id = LineId(u32::try_from(self.line_table.len()).unwrap_or(u32::MAX));
        self.line_table.push(entry);
        id
    }

    /// The stream of `queue`, creating an empty one at the end if needed.
    pub fn stream_mut(&mut self, queue: Queue) -> &mut Vec<Instruction> {
        let index = match self.queues.iter().position(|s| s.queue == queue) {
            Some(i) => i,
            None => {
                self.queues.push(QueueStream {
                    queue,
                    insts: Vec::new(),
                });
                self.queues.len() - 1
            }
        };
        &mut self.queues[index].insts
    }

    /// The stream of `queue`, if the program has one.
    pub fn stream(&self, queue: Queue) -> Option<&[Instruction]> {
        self.queues
            .iter()
            .find(|s| s.queue == queue)
            .map(|s| s.insts.as_slice())
    }

    /// The semaphore `id`'s name.
    pub fn sem_name(&self, id: SemId) -> Option<&str> {
        self.semaphores.get(id.0 as usize).map(|s| s.name.as_str())
    }

    /// The line-table entry `id`.
    pub fn line(&self, id: LineId) -> Option<&LineEntry> {
        self.line_table.get(id.0 as usize)
    }

    /// The file name, line and column of entry `id`, for messages.
    pub fn location(&self, id: LineId) -> Option<(&str, u32, u32)> {
        let entry = self.line(id)?;
        let file = self.files.get(entry.file as usize)?;
        Some((file.as_str(), entry.line, entry.col))
    }
}

impl std::fmt::Display for Program {
    /// Prints the program in canonical `.nkasm` form (`text::print`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::text::print(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ap::{AccessPattern, Dim};
    use crate::inst::Op;

    #[test]
    fn building_a_program() {
        let mut p = Program::new(Target::Trn3);
        let a = p.add_tensor("a", DType::F32, &[128, 512], TensorKind::Input);
        let tmp = p.add_tensor("tmp", DType::F32, &[4], TensorKind::Internal);
        let out = p.add_tensor("out", DType::F32, &[128, 512], TensorKind::Output);
        let loaded = p.add_semaphore("loaded");
        let l0 = p.add_line("k.py", 3, 5, 40..60);
        let l1 = p.add_line("k.py", 4, 5, 61..80);
        assert_eq!(p.files, vec!["k.py".to_owned()]);
        assert_eq!(l1, LineId(1));
        let tile = AccessPattern::sbuf(0, 128, 0, &[Dim::new(1, 512)], DType::F32);
        p.stream_mut(Queue::Dma(0)).push(
            Instruction::new(Op::DmaCopy(insn::DmaCopy {
                dst: tile.clone(),
                src: AccessPattern::hbm(a, 128, 512, 0, &[Dim::new(1, 512)], DType::F32),
                accumulate: false,
                dge: crate::enums::DgeMode::None,
                oob: crate::enums::OobMode::Error,
                priority: None,
            }))
            .signal(loaded)
            .at(l0),
        );
        assert_eq!(p.queues.len(), 1);
        let args: Vec<_> = p.args().map(|(id, t)| (id, t.name.as_str())).collect();
        assert_eq!(args, vec![(a, "a"), (out, "out")]);
        assert_eq!(p.tensor_by_name("tmp"), Some(tmp));
        assert_eq!(p.tensor(out).map(HbmTensor::bytes), Some(128 * 512 * 4));
        let inst = &p.stream(Queue::Dma(0)).unwrap_or_default()[0];
        let ops = inst.op.operands();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].field, "dst");
        assert_eq!(ops[0].ap, &tile);
        assert_eq!(inst.op.mnemonic(), "dma_copy");
        assert!(p.to_string().starts_with(".target trn3\n.file \"k.py\"\n"));
        assert_eq!(p.location(l1), Some(("k.py", 4, 5)));
        assert_eq!(p.location(LineId(9)), None);
        let mut looped = QueueStream {
            queue: Queue::Sync,
            insts: Vec::new(),
        };
        looped.insts.push(Instruction::new(Op::Nop(insn::Nop {})));
        looped.insts.push(Instruction::new(Op::Label(insn::Label {
            label: crate::inst::Label(4),
        })));
        assert_eq!(
            looped.label_positions().get(&crate::inst::Label(4)),
            Some(&1)
        );
    }

    /// `operand_name` finds an on-chip operand's entry among the sorted
    /// `operand_names` of many instructions, and an HBM operand's tensor.
    #[test]
    fn operand_names_are_found_by_queue_index_and_field() {
        let mut p = Program::new(Target::Trn3);
        let a = p.add_tensor("a", DType::F32, &[128, 4], TensorKind::Input);
        let tile = |at: u64| AccessPattern::sbuf(0, 128, at, &[Dim::new(1, 4)], DType::F32);
        for q in [Queue::Dma(0), Queue::Dma(1)] {
            for k in 0..50u32 {
                p.stream_mut(q)
                    .push(Instruction::new(Op::DmaCopy(insn::DmaCopy {
                        dst: tile(16 * u64::from(k)),
                        src: AccessPattern::hbm(a, 128, 4, 0, &[Dim::new(1, 4)], DType::F32),
                        accumulate: false,
                        dge: crate::enums::DgeMode::None,
                        oob: crate::enums::OobMode::Error,
                        priority: None,
                    })));
                // Every third instruction's tile has no name.
                if k % 3 != 0 {
                    p.operand_names.push(OperandName {
                        queue: q,
                        index: k,
                        field: "dst",
                        name: format!("t{q}_{k}").into(),
                    });
                }
            }
        }
        assert!(p.operand_names.is_sorted());
        let q = Queue::Dma(1);
        assert_eq!(p.operand_name(q, 7, "dst"), Some("tdma1_7"));
        assert_eq!(p.operand_name(Queue::Dma(0), 49, "dst"), Some("tdma0_49"));
        assert_eq!(p.operand_name(q, 9, "dst"), None);
        assert_eq!(p.operand_name(q, 7, "src"), Some("a"));
        assert_eq!(p.operand_name(q, 50, "dst"), None);
        assert_eq!(p.operand_name(Queue::Vector, 1, "dst"), None);
    }
}
