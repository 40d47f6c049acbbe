//! Emission: the `nkic_isa::Program` with its HBM tensors, semaphores,
//! streams and line table.
//!
//! * HBM tensors come from the allocation ([`Layout::hbm`]), arguments
//!   first.
//! * One semaphore `<queue>_done` per queue that signals, in queue order.
//! * Streams in queue order (`tensor`, `vector`, `scalar`, `gpsimd`,
//!   `sync`, `dma0`, …), each in scheduled order.
//! * `Program::operand_names`: for every on-chip operand whose tensor has
//!   a name in the kernel, that name (HBM operands are named by their
//!   tensor), sorted by queue, index and field.
//! * The line table has one entry per distinct source location of an op
//!   (file name, 1-based line and column from the [`SourceMap`], the byte
//!   span), in order of first use; ops whose file is not in the source map
//!   get no entry.
//!
//! The finished program is checked with `nkic_isa::verify`; a failure is a
//! backend bug, and panics stating the rule the backend broke.

use std::collections::BTreeMap;
use std::sync::Arc;

use nkic_diag::SourceMap;
use nkic_ir::{DynLoop, Handle, SrcLoc};
use nkic_isa::{Instruction, LineId, Program, Queue, SemId, SemWait};

use crate::alloc::Layout;
use crate::collect::Unit;
use crate::lower::Lowered;
use crate::schedule::Scheduled;
use crate::sync::Waits;

/// Builds and verifies the program; see the module doc.
pub fn emit(
    unit: &Unit<'_>,
    layout: &Layout,
    mut lowered: Lowered,
    sched: &Scheduled,
    waits: &Waits,
    sources: &SourceMap,
) -> Program {
    let mut program = Program::new(unit.target);
    program.hbm.clone_from(&layout.hbm);
    // Semaphores and, per op, its signal count within its queue.
    let mut sems: BTreeMap<Queue, SemId> = BTreeMap::new();
    let mut signal_count = vec![0u32; lowered.ops.len()];
    for (&q, stream) in &sched.streams {
        let mut count = 0u32;
        for &i in stream {
            if waits.signals[i] {
                count += 1;
                sems.entry(q).or_insert(SemId(0));
            }
            signal_count[i] = count;
        }
    }
    for (q, id) in sems.iter_mut() {
        *id = program.add_semaphore(&format!("{q}_done"));
    }
    let line_of = line_table(unit, &mut program, sources);
    let mut names = OperandNames::new(unit);
    for (&q, stream) in &sched.streams {
        let mut insts = Vec::with_capacity(stream.len());
        for &i in stream {
            // Each op is in one stream once: its machine op moves into
            // the program (a clone copied every access pattern's dims),
            // and the instruction is written once, into its stream
            // (building it by value with `Instruction::wait`, `signal` and
            // `at` moved all its bytes at every step: a third of the
            // 563k-instruction conv1d's emission was `memcpy`).
            let index = u32::try_from(insts.len()).unwrap_or(u32::MAX);
            let op = &mut lowered.ops[i].op;
            names.add(unit, op, i, (q, index), &mut program.operand_names);
            let waits_of = waits.waits[i]
                .iter()
                .filter_map(|&p| {
                    sems.get(&sched.queue[p]).map(|&sem| SemWait {
                        sem,
                        value: signal_count[p],
                        reg: None,
                    })
                })
                .collect();
            let signals = match sems.get(&q) {
                Some(&sem) if waits.signals[i] => vec![sem],
                _ => Vec::new(),
            };
            insts.push(Instruction {
                op: std::mem::replace(op, nkic_isa::Op::Nop(nkic_isa::insn::Nop {})),
                waits: waits_of,
                signals,
                line: line_of[i],
            });
        }
        *program.stream_mut(q) = insts;
    }
    sort_names(&mut program);
    verified(program)
}

/// The `operand_names` entries of a program being emitted: the kernel's
/// name of the tensor behind each on-chip operand, made once per storage
/// and shared by all its operands (a large kernel has a million of them).
pub struct OperandNames {
    /// Per global storage of the unit, its name once an operand used it.
    shared: Vec<Option<Arc<str>>>,
}

impl OperandNames {
    pub fn new(unit: &Unit<'_>) -> OperandNames {
        OperandNames {
            shared: vec![None; unit.storages.len()],
        }
    }

    /// Appends to `out` the entries of `op` (op `i` of the unit) at
    /// `index` of `queue`. The IR mirrors the machine's fields, so
    /// operands match IR accesses by field; the index operand of a gather
    /// or scatter is the IR's index view.
    pub fn add(
        &mut self,
        unit: &Unit<'_>,
        op: &nkic_isa::Op,
        i: usize,
        (queue, index): (Queue, u32),
        out: &mut Vec<nkic_isa::OperandName>,
    ) {
        let operands = op.operands();
        if !operands.iter().any(|o| o.ap.mem.is_on_chip()) {
            return;
        }
        let info = &unit.ops[i];
        let kernel = &unit.kernels[info.inst];
        let accesses = info.op.accesses();
        for operand in operands {
            if !operand.ap.mem.is_on_chip() {
                continue;
            }
            let is_index = operand.field == "index";
            let access = accesses
                .iter()
                .find(|a| a.is_index == is_index && (is_index || a.field == operand.field));
            let Some(access) = access else { continue };
            let storage = access.view.storage;
            let name = &kernel.storages[storage].name;
            if name.is_empty() {
                continue;
            }
            let name = self.shared[unit.sid(info.inst, storage)]
                .get_or_insert_with(|| Arc::from(name.as_str()));
            out.push(nkic_isa::OperandName {
                queue,
                index,
                field: operand.field,
                name: Arc::clone(name),
            });
        }
    }
}

/// Sorts `operand_names` by queue, index and field, as `Program` wants.
pub fn sort_names(program: &mut Program) {
    program
        .operand_names
        .sort_by(|a, b| (a.queue, a.index, a.field).cmp(&(b.queue, b.index, b.field)));
    program
        .operand_names
        .dedup_by(|a, b| a.queue == b.queue && a.index == b.index && a.field == b.field);
}

/// Adds one line-table entry per distinct source location of an op (in
/// source order) and returns each op's entry.
pub fn line_table(
    unit: &Unit<'_>,
    program: &mut Program,
    sources: &SourceMap,
) -> Vec<Option<LineId>> {
    let mut lines: BTreeMap<(usize, SrcLoc), LineId> = BTreeMap::new();
    let mut line_of = vec![None; unit.ops.len()];
    for (i, info) in unit.ops.iter().enumerate() {
        let Some(loc) = info.loc else { continue };
        let key = (info.inst, loc);
        if let Some(&id) = lines.get(&key) {
            line_of[i] = Some(id);
            continue;
        }
        let Some(id) = add_line(program, sources, loc) else {
            continue;
        };
        lines.insert(key, id);
        line_of[i] = Some(id);
    }
    line_of
}

/// A new line-table entry for `loc`; `None` when its file is unknown.
fn add_line(program: &mut Program, sources: &SourceMap, loc: SrcLoc) -> Option<LineId> {
    let file = sources.get(loc.file)?;
    let lc = file.line_col(loc.span.start);
    Some(program.add_line(file.name(), lc.line, lc.col, loc.span.start..loc.span.end))
}

/// Adds one line-table entry per dynamic loop of each instance of the
/// unit (at its header: `for i in nl.dynamic_range(n)`, `while r`), for
/// the instructions that run the loop itself: the induction register's
/// initialisation and step, the jump to the condition and the branch
/// back. A fault in them (E2007 in a loop that never ends) then names
/// the loop, not a neighbouring statement.
pub fn loop_line_table(
    unit: &Unit<'_>,
    program: &mut Program,
    sources: &SourceMap,
) -> BTreeMap<(usize, Handle<DynLoop>), LineId> {
    let mut lines = BTreeMap::new();
    for (inst, k) in unit.kernels.iter().enumerate() {
        for (l, &loc) in k.spans.dyn_loops.iter() {
            if let Some(id) = add_line(program, sources, loc) {
                lines.insert((inst, l), id);
            }
        }
    }
    lines
}

/// `program`, after checking that it passes `nkic_isa::verify`.
///
/// # Panics
///
/// When it does not: the backend emits only programs the ISA verifier
/// accepts, so a failure is a backend bug, never a fault of the kernel.
pub fn verified(program: Program) -> Program {
    if let Err(errors) = nkic_isa::verify(&program) {
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        panic!(
            "invariant broken: the backend emits only programs the ISA verifier accepts, but this one fails it: {}",
            errors.join("; ")
        );
    }
    program
}
