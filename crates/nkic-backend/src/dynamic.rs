//! Emission of kernels with dynamic control: dynamic loops (`dynamic_range`,
//! `fori_loop`, `while`), sequencer registers and dynamic offsets.
//!
//! Under [`Schedule::Sequential`] such kernels are emitted as a *token
//! chain*: the ops run one step at a time in source order, each step
//! waiting for the completion of the step before it in execution order.
//! This is the sequential schedule extended to run-time loops; it is
//! correct for any trip count.
//!
//! Under [`Schedule::Optimized`] the top level is a dependency graph: each
//! top-level op, and each top-level dynamic loop as a whole, waits only
//! for the earlier top-level ops and loops it depends on (the memory,
//! engine-state and explicit edges of [`deps`], an op of a loop standing
//! for its loop; the reduced graph, whose left-out edges are implied by a
//! chain of kept ones through a top-level covering write), so independent
//! work before, between and after dynamic loops overlaps with them.
//! Top-level DMAs take turns on the DMA queues after `dma0` (which the loop
//! bodies use), so a transfer that does not depend on a loop is not queued
//! behind the loop's transfers. A loop
//! whose body is straight-line ops (no nested loop, no register load or
//! store) is *relaxed* (see `Relaxed`): each step waits only for the steps
//! of the same and the previous iterations it depends on, so consecutive
//! iterations overlap; other loop bodies stay token chains.
//!
//! # Queues and registers
//!
//! Every op runs on the queue of its first legal engine (DMAs on `dma0`,
//! top-level DMAs of the optimized schedule on `dma1`… `dma`[`TOP_DMA_QUEUES`]).
//! Every queue that runs an op (the *participating* queues) also runs all
//! register ops and the control of every dynamic loop, so each queue has
//! the values it needs in its own registers (isa.md §2.2): a virtual
//! register has the same physical register on every queue (`rN` for
//! `rN` while they all fit, else shared by live range, [`crate::regs`]),
//! and `R` below counts physical registers; `reg_load` runs on every
//! participating queue (each copy is part of the chain), `reg_store` on the
//! first one. Loop `g` (numbered in source order over the grid) owns the
//! physical register `r(R + g)`, `R` the largest virtual register count,
//! which counts the signals its body has sent so far. A relaxed loop
//! instead takes one register per queue with steps in its body, after the
//! `R + loops` chain registers; a loop whose counters would not fit stays
//! a chain.
//!
//! # Semaphores
//!
//! The top level has the semaphore `chain_done`, dynamic loop `g` has
//! `loop<g>_done`; every step signals the semaphore of its innermost
//! region once per instruction. A step inside loop `g` that follows `j`
//! signalling instructions of the current iteration waits for
//! `loop<g>_done >= r(R + g) + j`; the first step of an iteration waits for
//! `loop<g>_done >= r(R + g) + 0` (the previous iterations are complete),
//! for the step before the loop, and for every loop nested in the body, so
//! that a body ending in a nested loop is covered too. After a loop the
//! next step waits for the same set. Counts at the top level are
//! compile-time numbers.
//!
//! In the optimized top-level graph, `chain_done` is replaced by one
//! semaphore per queue, `top_<queue>`, signalled by every top-level
//! instruction of that queue. A queue's instructions complete in the order
//! they start (see [`sync`](crate::sync)), so `top_<queue> >= k` says that
//! its first `k` top-level instructions have completed; a top-level op
//! waits, per other queue, for the count of the latest instruction it
//! depends on there (none for its own queue, which is in order), and for
//! the completion set of each loop it depends on (`loop<h>_done >=
//! r(R + h)` for the loop and every loop nested in it; a queue passes a
//! loop's control code before its next instruction, so its counters hold
//! the final counts by then). A loop's first steps wait for the loop's
//! dependencies in the same way instead of the step before it.
//!
//! Loop control on every participating queue:
//!
//! ```text
//!   reg_set iv=start          (or reg_move from a register)
//!   jump Lcond
//! Lbody:
//!   … body …
//!   reg_alu r(R+g) = r(R+g) + <signals per iteration>
//!   reg_alu iv = iv + step
//! Lcond:
//!   branch lt iv stop Lbody    (while: branch ne cond 0 Lbody)
//! ```

use nkic_isa::insn;
use std::collections::BTreeMap;

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::{DynLoopKind, Handle, Item, Kernel, Op, OpKind, RegOrImm};
use nkic_isa::{
    BranchCond, Instruction, Label, LineId, Program, Queue, Reg, RegAluOp, SemId, SemWait,
};

use crate::Schedule;
use crate::alloc::Layout;
use crate::codes;
use crate::collect::{Unit, diag_at};
use crate::deps;
use crate::emit::{OperandNames, line_table, sort_names, verified};
use crate::lower::{Lowered, probe_queue};

/// How many DMA queues after `dma0` the top-level DMAs of the optimized
/// schedule take turns on.
pub const TOP_DMA_QUEUES: u8 = 4;

/// What a top-level node's dependents wait for once it is emitted.
#[derive(Clone, Debug, Default)]
struct NodeDone {
    /// Per queue, the count of its top-level signals up to the node's last
    /// instruction there.
    counts: BTreeMap<Queue, u32>,
    /// A loop's completion waits.
    waits: Vec<SemWait>,
}

/// The optimized top level: the dependency graph between top-level nodes.
struct TopLevel {
    /// The earlier nodes each node depends on, sorted.
    preds: Vec<Vec<usize>>,
    /// Per emitted node, what its dependents wait for.
    done: Vec<NodeDone>,
    /// The node being emitted.
    current: usize,
    /// The semaphore of each queue and its signals so far.
    sems: BTreeMap<Queue, SemId>,
    counts: BTreeMap<Queue, u32>,
}

/// A region of the chain: the top level or one dynamic loop's body.
#[derive(Clone, Copy, Debug)]
struct Region {
    /// The semaphore its steps signal (`None`: the top level of the
    /// optimized graph, whose steps signal their queue's semaphore).
    sem: Option<SemId>,
    /// The register holding the region's signals before this iteration.
    reg: Option<Reg>,
    /// Signals so far in this iteration (the top level: in total).
    count: u32,
    /// The body of a loop whose iterations may overlap ([`Relaxed`]).
    relaxed: bool,
}

/// A dynamic loop of the optimized schedule whose body is straight-line
/// ops: instead of a chain, each step waits only for the steps it depends
/// on, so consecutive iterations overlap where their data allows.
///
/// Every queue `q` with steps in the body has a semaphore `loop<g>_<q>`,
/// signalled by those steps, and a counter register holding its signals
/// before the current iteration (every queue keeps every counter, adding
/// the queue's steps per iteration at the end of each iteration). Queues
/// complete in order, so a step waits, per other queue `qa`, for
/// `loop<g>_<qa> >= counter(qa) + n` where `n` is the position of the
/// latest step of `qa` it depends on earlier in the iteration, or for
/// `>= counter(qa) + 0` (every earlier iteration of `qa` complete) when it
/// only depends on a later step of `qa` (of the previous iteration: the
/// same bytes are used in every iteration, or the whole storage at a
/// run-time offset). A dependency on an earlier step of the same
/// iteration implies the same step of every earlier iteration. Steps of
/// one queue need no waits among themselves. The first step of each queue
/// also waits for what the loop depends on before it; after the loop,
/// dependents wait for `loop<g>_<q> >= counter(q)` on every queue.
struct Relaxed {
    /// Per queue with steps: its semaphore, counter and steps per iteration.
    queues: BTreeMap<Queue, (SemId, Reg, u32)>,
    /// The queue of each body op with a step and its 1-based position
    /// among that queue's steps.
    pos: BTreeMap<usize, (Queue, u32)>,
    /// What the loop waits for before its first iteration.
    before: Vec<SemWait>,
    /// The dependencies between the body's ops, numbered from `first`:
    /// all of them, as a step also waits for the later steps of the
    /// previous iteration that it overwrites (an edge through a covering
    /// write would not cover those).
    graph: deps::Graph,
    first: usize,
    /// The queues whose first step is emitted.
    started: Vec<Queue>,
}

/// The emitter's state.
struct Emitter<'a, 'k> {
    unit: &'a Unit<'k>,
    layout: &'a Layout,
    /// The completion waits of each loop emitted so far (empty for a loop
    /// that signals nothing).
    loop_done: Vec<Vec<SemWait>>,
    lowered: &'a Lowered,
    program: Program,
    /// Participating queues, in order.
    queues: Vec<Queue>,
    streams: BTreeMap<Queue, Vec<Instruction>>,
    /// Global op index of each (instance, op handle).
    index_of: BTreeMap<(usize, Handle<Op>), usize>,
    lines: Vec<Option<LineId>>,
    /// The line of each dynamic loop's header, by instance and loop
    /// (`emit::loop_line_table`).
    loop_lines: BTreeMap<(usize, Handle<nkic_ir::DynLoop>), LineId>,
    /// The line of the loop whose control instructions are being emitted.
    control_line: Option<LineId>,
    /// First register of the loop counters.
    counter_base: u32,
    next_loop: u32,
    next_label: u32,
    /// The waits the next step must carry.
    prev: Vec<SemWait>,
    /// The op whose instructions the next step emits, for
    /// `Program::operand_names`.
    naming: Option<usize>,
    /// The names shared by those entries.
    names: OperandNames,
    /// The queue of each op.
    queue_of: Vec<Queue>,
    /// The optimized top level (`None`: the token chain throughout).
    top: Option<TopLevel>,
    /// The number of dynamic loops, each with a chain counter register.
    loops_total: u32,
    /// Registers taken by the counters of relaxed loops so far.
    next_extra: u32,
    /// The sequencer registers of a queue.
    register_limit: u32,
    /// The relaxed loop being emitted.
    relaxed: Option<Relaxed>,
}

/// The queue an op runs on (its first legal engine).
fn queue_of(lowered: &Lowered, i: usize) -> Queue {
    lowered.ops[i]
        .engines
        .first()
        .map_or(Queue::Sync, |&e| probe_queue(e))
}

/// The top-level node of every op: top-level items are numbered in source
/// order over the grid, and every op of a dynamic loop (nested ones
/// included) belongs to its top-level loop's node. Returns the node of
/// each op, whether the op is itself a top-level item, and the number of
/// nodes.
fn top_nodes(
    unit: &Unit<'_>,
    index_of: &BTreeMap<(usize, Handle<Op>), usize>,
) -> (Vec<usize>, Vec<bool>, usize) {
    fn walk(
        inst: usize,
        k: &Kernel,
        block: &[Item],
        node: usize,
        index_of: &BTreeMap<(usize, Handle<Op>), usize>,
        node_of: &mut [usize],
    ) {
        for &item in block {
            match item {
                Item::Op(h) => {
                    if let Some(&i) = index_of.get(&(inst, h)) {
                        node_of[i] = node;
                    }
                }
                Item::Loop(l) => walk(inst, k, &k.dyn_loops[l].body, node, index_of, node_of),
            }
        }
    }
    let mut node_of = vec![0; unit.ops.len()];
    let mut top_level = vec![false; unit.ops.len()];
    let mut nodes = 0;
    for (inst, k) in unit.kernels.iter().enumerate() {
        for &item in &k.body {
            if let Item::Op(h) = item
                && let Some(&i) = index_of.get(&(inst, h))
            {
                top_level[i] = true;
            }
            walk(inst, k, &[item], nodes, index_of, &mut node_of);
            nodes += 1;
        }
    }
    (node_of, top_level, nodes)
}

/// The sequencer registers `unit` needs on a queue: the most physical
/// registers of an instance, the number of dynamic loops (a counter
/// each) and the queue's limit; or E0910 when they do not fit, the one
/// diagnostic of [`emit`] (which `nkic check` asks without emitting).
pub(crate) fn check_registers(unit: &Unit<'_>) -> Result<(usize, usize, usize), Vec<Diagnostic>> {
    let max_regs = unit.regs.iter().map(|r| r.1).max().unwrap_or(0);
    let loops: usize = unit.kernels.iter().map(|k| k.dyn_loops.len()).sum();
    let limit = unit.target.figures().sequencer_registers as usize;
    if max_regs + loops > limit {
        // The first dynamic loop, in source order over the grid, whose
        // counter does not fit.
        let loc = unit
            .kernels
            .iter()
            .flat_map(|k| {
                k.dyn_loops
                    .iter()
                    .map(|(l, _)| k.spans.dyn_loops.get(l).copied())
            })
            .nth(limit.saturating_sub(max_regs))
            .flatten();
        return Err(vec![
            diag_at(
                codes::TOO_MANY_REGISTERS,
                format!(
                    "the kernel needs {} sequencer registers ({max_regs} register{} and one counter per dynamic loop, {loops} loop{}), more than the {limit} a queue has",
                    max_regs + loops,
                    if max_regs == 1 { "" } else { "s" },
                    if loops == 1 { "" } else { "s" },
                ),
                loc,
                "the first dynamic loop whose counter does not fit",
            )
            .with_help("use fewer dynamic loops or registers"),
        ]);
    }
    Ok((max_regs, loops, limit))
}

/// Emits the whole unit; see the module doc.
pub fn emit(
    unit: &Unit<'_>,
    layout: &Layout,
    lowered: &Lowered,
    sources: &SourceMap,
    schedule: Schedule,
) -> Result<Program, Vec<Diagnostic>> {
    let (max_regs, loops, limit) = check_registers(unit)?;
    let mut program = Program::new(unit.target);
    program.hbm.clone_from(&layout.hbm);
    let lines = line_table(unit, &mut program, sources);
    let loop_lines = crate::emit::loop_line_table(unit, &mut program, sources);
    let index_of: BTreeMap<(usize, Handle<Op>), usize> = unit
        .ops
        .iter()
        .enumerate()
        .map(|(i, info)| ((info.inst, info.handle), i))
        .collect();
    let mut queue_of: Vec<Queue> = (0..unit.ops.len()).map(|i| queue_of(lowered, i)).collect();
    let top = (schedule == Schedule::Optimized).then(|| {
        let (node_of, top_level, nodes) = top_nodes(unit, &index_of);
        // The reduced graph: a dependency it leaves out is implied by a
        // chain of others through a covering write of a top-level op (one
        // that runs exactly once), so the waits of that chain order the
        // two ops as well.
        let edges = deps::Edges::ReducedBy(&top_level);
        let graph = deps::build(unit, layout, Schedule::Optimized, edges);
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); nodes];
        for (j, ps) in graph.preds.iter().enumerate() {
            for &i in ps {
                if node_of[i] != node_of[j] {
                    preds[node_of[j]].push(node_of[i]);
                }
            }
        }
        for p in &mut preds {
            p.sort_unstable();
            p.dedup();
        }
        // Top-level DMAs take turns on the queues after dma0.
        let mut turn = 0u8;
        for (q, &top) in queue_of.iter_mut().zip(&top_level) {
            if *q == Queue::Dma(0) && top {
                *q = Queue::Dma(1 + turn % TOP_DMA_QUEUES);
                turn = turn.wrapping_add(1);
            }
        }
        TopLevel {
            preds,
            done: vec![NodeDone::default(); nodes],
            current: 0,
            sems: BTreeMap::new(),
            counts: BTreeMap::new(),
        }
    });
    let mut queues: Vec<Queue> = unit
        .ops
        .iter()
        .enumerate()
        .filter(|(_, info)| !info.op.kind.is_register_op())
        .map(|(i, _)| queue_of[i])
        .collect();
    queues.sort_unstable();
    queues.dedup();
    if queues.is_empty() {
        queues.push(Queue::Sync);
    }
    let chain = top.is_none().then(|| program.add_semaphore("chain_done"));
    // Each stream's room reserved up front, from an estimate that errs
    // high: an op on its queue, a register op and a few control
    // instructions per loop on every queue. Growing a stream of a million
    // instructions by doubling copied it into fresh pages at each step
    // (jemalloc moves a large block to grow it), three quarters of the
    // page faults of a `blockwise_mm_bwd` check; room never written costs
    // no memory.
    let everywhere = unit
        .ops
        .iter()
        .filter(|info| info.op.kind.is_register_op())
        .count()
        + 8 * loops
        + 16;
    let mut room: BTreeMap<Queue, usize> = queues.iter().map(|&q| (q, everywhere)).collect();
    for (info, &q) in unit.ops.iter().zip(&queue_of) {
        if !info.op.kind.is_register_op() {
            *room.entry(q).or_default() += 1;
        }
    }
    let mut em = Emitter {
        unit,
        layout,
        loop_done: Vec::new(),
        lowered,
        program,
        streams: room
            .into_iter()
            .map(|(q, n)| (q, Vec::with_capacity(n)))
            .collect(),
        queues,
        index_of,
        lines,
        loop_lines,
        control_line: None,
        counter_base: u32::try_from(max_regs).unwrap_or(u32::MAX),
        next_loop: 0,
        next_label: 0,
        prev: Vec::new(),
        naming: None,
        names: OperandNames::new(unit),
        queue_of,
        top,
        loops_total: u32::try_from(loops).unwrap_or(u32::MAX),
        next_extra: 0,
        register_limit: u32::try_from(limit).unwrap_or(u32::MAX),
        relaxed: None,
    };
    let mut region = Region {
        sem: chain,
        reg: None,
        count: 0,
        relaxed: false,
    };
    let mut node = 0;
    for (inst, k) in unit.kernels.iter().enumerate() {
        for &item in &k.body {
            em.top_item(inst, k, item, node, &mut region);
            node += 1;
        }
    }
    let Emitter {
        mut program,
        streams,
        ..
    } = em;
    for (q, insts) in streams {
        *program.stream_mut(q) = insts;
    }
    sort_names(&mut program);
    Ok(verified(program))
}

impl Emitter<'_, '_> {
    fn reg(&self, inst: usize, r: nkic_ir::RegHandle) -> Reg {
        self.unit.reg(inst, r)
    }

    fn label(&mut self) -> Label {
        self.next_label += 1;
        Label(self.next_label - 1)
    }

    /// Pushes `op` on every participating queue.
    /// Pushes `op` on every queue, at `line`.
    fn everywhere_at(&mut self, op: nkic_isa::Op, line: Option<LineId>) {
        for q in self.queues.clone() {
            let mut inst = Instruction::new(op.clone());
            inst.line = line;
            self.push(q, inst);
        }
    }

    /// Pushes a loop-control instruction (`op`, not a label) on every
    /// queue, at the loop's header (`control_line`).
    fn everywhere(&mut self, op: nkic_isa::Op) {
        let line = match op {
            nkic_isa::Op::Label(_) => None,
            _ => self.control_line,
        };
        self.everywhere_at(op, line);
    }

    fn push(&mut self, q: Queue, inst: Instruction) {
        self.streams.entry(q).or_default().push(inst);
    }

    /// Pushes `op` on queue `q` after `waits`, signalling `sem`, at `line`:
    /// the instruction is written once, into its stream (building it by
    /// value with `Instruction::signal` and `at` moved all its bytes at
    /// every step).
    fn push_signalling(
        &mut self,
        q: Queue,
        op: nkic_isa::Op,
        waits: Vec<SemWait>,
        sem: SemId,
        line: Option<LineId>,
    ) {
        self.push(
            q,
            Instruction {
                op,
                waits,
                signals: vec![sem],
                line,
            },
        );
    }

    /// Records the operand names of `op`, about to be pushed on queue `q`,
    /// while an instance's op is being emitted.
    fn name_operands(&mut self, q: Queue, op: &nkic_isa::Op) {
        if let Some(i) = self.naming {
            let index = self.streams.get(&q).map_or(0, Vec::len);
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.names.add(
                self.unit,
                op,
                i,
                (q, index),
                &mut self.program.operand_names,
            );
        }
    }

    /// Emits one chain step: `insts` on their queues, each waiting for the
    /// previous step and signalling the region.
    fn step(
        &mut self,
        insts: Vec<(Queue, nkic_isa::Op)>,
        line: Option<LineId>,
        region: &mut Region,
    ) {
        if region.relaxed {
            self.relaxed_step(insts, line);
            return;
        }
        let Some(sem) = region.sem else {
            self.top_step(insts, line);
            return;
        };
        let n = u32::try_from(insts.len()).unwrap_or(u32::MAX);
        for (q, op) in insts {
            self.name_operands(q, &op);
            let waits = self.prev.clone();
            self.push_signalling(q, op, waits, sem, line);
        }
        region.count += n;
        self.prev = vec![SemWait {
            sem,
            value: region.count,
            reg: region.reg,
        }];
    }

    /// Emits the instructions of one op of a relaxed loop body; see
    /// [`Relaxed`].
    fn relaxed_step(&mut self, insts: Vec<(Queue, nkic_isa::Op)>, line: Option<LineId>) {
        for (q, op) in insts {
            let (Some(i), Some(r)) = (self.naming, &mut self.relaxed) else {
                return;
            };
            let mut need: BTreeMap<Queue, u32> = BTreeMap::new();
            for &p in &r.graph.preds[i - r.first] {
                if let Some(&(qa, n)) = r.pos.get(&(p + r.first))
                    && qa != q
                {
                    let e = need.entry(qa).or_insert(0);
                    *e = (*e).max(n);
                }
            }
            for &s in &r.graph.succs[i - r.first] {
                if let Some(&(qa, _)) = r.pos.get(&(s + r.first))
                    && qa != q
                {
                    need.entry(qa).or_insert(0);
                }
            }
            let mut waits = Vec::new();
            if !r.started.contains(&q) {
                r.started.push(q);
                waits.clone_from(&r.before);
            }
            for (qa, value) in need {
                if let Some(&(sem, reg, _)) = r.queues.get(&qa) {
                    waits.push(SemWait {
                        sem,
                        value,
                        reg: Some(reg),
                    });
                }
            }
            let Some(&(sem, _, _)) = r.queues.get(&q) else {
                continue;
            };
            self.name_operands(q, &op);
            self.push_signalling(q, op, waits, sem, line);
        }
    }

    /// The relaxed form of loop `g` (body `body` of instance `inst`) when
    /// the optimized schedule is on, the body is straight-line ops with at
    /// least one step and no register load or store, and the counters fit
    /// in the registers; `None` keeps the chain.
    fn relaxed_plan(&mut self, inst: usize, g: u32, body: &[Item]) -> Option<Relaxed> {
        self.top.as_ref()?;
        let mut pos: BTreeMap<usize, (Queue, u32)> = BTreeMap::new();
        let mut steps: BTreeMap<Queue, u32> = BTreeMap::new();
        let (mut lo, mut hi) = (usize::MAX, 0);
        for item in body {
            let Item::Op(h) = item else { return None };
            let &i = self.index_of.get(&(inst, *h))?;
            (lo, hi) = (lo.min(i), hi.max(i + 1));
            let kind = &self.unit.ops[i].op.kind;
            if matches!(kind, OpKind::RegLoad { .. } | OpKind::RegStore { .. }) {
                return None;
            }
            if kind.is_register_op() {
                continue;
            }
            let q = self.queue_of[i];
            let n = steps.entry(q).or_insert(0);
            *n += 1;
            pos.insert(i, (q, *n));
        }
        let need = u32::try_from(steps.len()).ok()?;
        let base = self.counter_base + self.loops_total + self.next_extra;
        if steps.is_empty() || base + need > self.register_limit {
            return None;
        }
        self.next_extra += need;
        let mut queues = BTreeMap::new();
        for (k, (q, n)) in steps.into_iter().enumerate() {
            let sem = self.program.add_semaphore(&format!("loop{g}_{q}"));
            let reg = Reg(u8::try_from(base as usize + k).ok()?);
            queues.insert(q, (sem, reg, n));
        }
        Some(Relaxed {
            queues,
            pos,
            before: self.prev.clone(),
            started: Vec::new(),
            graph: deps::build_range(
                self.unit,
                self.layout,
                Schedule::Optimized,
                deps::Edges::All,
                lo..hi,
            ),
            first: lo,
        })
    }

    /// The waits of a top-level instruction of the current node on queue
    /// `q` (`None`: a loop, whose steps run on several queues): the latest
    /// count per other queue and the completion waits of every loop the
    /// node depends on.
    fn top_waits(&self, q: Option<Queue>) -> Vec<SemWait> {
        let Some(t) = &self.top else {
            return Vec::new();
        };
        let mut counts: BTreeMap<Queue, u32> = BTreeMap::new();
        let mut waits: Vec<SemWait> = Vec::new();
        for &p in &t.preds[t.current] {
            let done = &t.done[p];
            for (&qa, &n) in &done.counts {
                if Some(qa) != q {
                    let e = counts.entry(qa).or_insert(0);
                    *e = (*e).max(n);
                }
            }
            for w in &done.waits {
                if !waits.contains(w) {
                    waits.push(*w);
                }
            }
        }
        let mut out: Vec<SemWait> = counts
            .into_iter()
            .filter_map(|(qa, value)| {
                t.sems.get(&qa).map(|&sem| SemWait {
                    sem,
                    value,
                    reg: None,
                })
            })
            .collect();
        out.extend(waits);
        out
    }

    /// Emits the instructions of a top-level op in the optimized graph:
    /// each waits for the node's dependencies and signals its queue's
    /// semaphore.
    fn top_step(&mut self, insts: Vec<(Queue, nkic_isa::Op)>, line: Option<LineId>) {
        for (q, op) in insts {
            self.name_operands(q, &op);
            let waits = self.top_waits(Some(q));
            let Some(t) = &mut self.top else { return };
            let program = &mut self.program;
            let sem = *t
                .sems
                .entry(q)
                .or_insert_with(|| program.add_semaphore(&format!("top_{q}")));
            let count = t.counts.entry(q).or_insert(0);
            *count += 1;
            let value = *count;
            t.done[t.current].counts.insert(q, value);
            self.push_signalling(q, op, waits, sem, line);
        }
    }

    /// Emits one top-level item, node `node`: in the chain, or in the
    /// optimized graph (a loop's first steps wait for the loop's
    /// dependencies, and the loop's completion waits are recorded for its
    /// dependents).
    fn top_item(&mut self, inst: usize, k: &Kernel, item: Item, node: usize, region: &mut Region) {
        if let Some(t) = &mut self.top {
            t.current = node;
        }
        match item {
            Item::Op(h) => self.op(inst, k, h, region),
            Item::Loop(l) => {
                if self.top.is_some() {
                    self.prev = self.top_waits(None);
                }
                let before = self.prev.clone();
                self.dyn_loop(inst, k, l);
                if let Some(t) = &mut self.top {
                    t.done[node].waits = self
                        .prev
                        .iter()
                        .filter(|w| !before.contains(w))
                        .copied()
                        .collect();
                }
            }
        }
    }

    fn block(&mut self, inst: usize, k: &Kernel, block: &[Item], region: &mut Region) {
        for &item in block {
            match item {
                Item::Op(h) => self.op(inst, k, h, region),
                Item::Loop(l) => self.dyn_loop(inst, k, l),
            }
        }
    }

    fn op(&mut self, inst: usize, k: &Kernel, h: Handle<Op>, region: &mut Region) {
        let Some(&i) = self.index_of.get(&(inst, h)) else {
            return;
        };
        let line = self.lines[i];
        self.naming = Some(i);
        let unit = self.unit;
        let reg_or_imm = |dst: Reg, v: &RegOrImm| match v {
            RegOrImm::Reg(r) => nkic_isa::Op::RegMove(insn::RegMove {
                dst,
                src: unit.reg(inst, *r),
            }),
            RegOrImm::Imm(value) => nkic_isa::Op::RegSet(insn::RegSet { dst, value: *value }),
        };
        match &k.ops[h].kind {
            OpKind::RegAlloc { dst, init } => {
                if let Some(value) = init {
                    let op = nkic_isa::Op::RegSet(insn::RegSet {
                        dst: self.reg(inst, *dst),
                        value: *value,
                    });
                    self.everywhere_at(op, line);
                }
            }
            OpKind::RegMove { dst, src } => {
                self.everywhere_at(reg_or_imm(self.reg(inst, *dst), src), line);
            }
            OpKind::RegAlu { dst, op, a, b } => {
                let op = nkic_isa::Op::RegAlu(insn::RegAlu {
                    dst: self.reg(inst, *dst),
                    op: *op,
                    a: self.reg(inst, *a),
                    b: match b {
                        RegOrImm::Reg(r) => nkic_isa::RegOrImm::Reg(self.reg(inst, *r)),
                        RegOrImm::Imm(v) => nkic_isa::RegOrImm::Imm(*v),
                    },
                });
                self.everywhere_at(op, line);
            }
            OpKind::RegLoad { dst, src } => {
                let Some(ap) = self.ap(inst, src) else { return };
                let insts = self
                    .queues
                    .iter()
                    .map(|&q| {
                        (
                            q,
                            nkic_isa::Op::RegLoad(insn::RegLoad {
                                dst: self.reg(inst, *dst),
                                src: ap.clone(),
                            }),
                        )
                    })
                    .collect();
                self.step(insts, line, region);
            }
            OpKind::RegStore { dst, src } => {
                let Some(ap) = self.ap(inst, dst) else { return };
                let q = self.queues[0];
                self.step(
                    vec![(
                        q,
                        nkic_isa::Op::RegStore(insn::RegStore {
                            dst: ap,
                            src: self.reg(inst, *src),
                        }),
                    )],
                    line,
                    region,
                );
            }
            _ => {
                let q = self.queue_of[i];
                let op = self.lowered.ops[i].op.clone();
                self.step(vec![(q, op)], line, region);
            }
        }
    }

    /// The access pattern of a register op's memory operand.
    fn ap(&self, inst: usize, view: &nkic_ir::View) -> Option<nkic_isa::AccessPattern> {
        let id = self.unit.sid(inst, view.storage);
        let st = &self.unit.kernels[inst].storages[view.storage];
        let placement = self.lowered_placement(id)?;
        let reg = view.dyn_offset.map(|d| self.reg(inst, d.reg));
        view.to_access_pattern(st, placement, reg).ok()
    }

    fn lowered_placement(&self, id: usize) -> Option<nkic_ir::Placement> {
        self.layout.placements.get(id).copied().flatten()
    }

    /// Emits dynamic loop `l`, its control instructions at its header's
    /// line.
    fn dyn_loop(&mut self, inst: usize, k: &Kernel, l: Handle<nkic_ir::DynLoop>) {
        let line = self.loop_lines.get(&(inst, l)).copied();
        let outer = std::mem::replace(&mut self.control_line, line);
        self.emit_dyn_loop(inst, k, l);
        self.control_line = outer;
    }

    fn emit_dyn_loop(&mut self, inst: usize, k: &Kernel, l: Handle<nkic_ir::DynLoop>) {
        let lp = &k.dyn_loops[l];
        let g = self.next_loop;
        self.next_loop += 1;
        self.loop_done.push(Vec::new());
        let (body_label, cond_label) = (self.label(), self.label());
        // Initialise the induction register.
        if let (DynLoopKind::Range { start, .. } | DynLoopKind::Fori { start, .. }, Some(iv)) =
            (&lp.kind, lp.induction)
        {
            let op = match start {
                RegOrImm::Reg(r) => nkic_isa::Op::RegMove(insn::RegMove {
                    dst: self.reg(inst, iv),
                    src: self.reg(inst, *r),
                }),
                RegOrImm::Imm(v) => nkic_isa::Op::RegSet(insn::RegSet {
                    dst: self.reg(inst, iv),
                    value: *v,
                }),
            };
            self.everywhere(op);
        }
        self.everywhere(nkic_isa::Op::Jump(insn::Jump { target: cond_label }));
        self.everywhere(nkic_isa::Op::Label(insn::Label { label: body_label }));
        if let Some(plan) = self.relaxed_plan(inst, g, &lp.body) {
            let before = plan.before.clone();
            let queues = plan.queues.clone();
            self.relaxed = Some(plan);
            let mut region = Region {
                sem: None,
                reg: None,
                count: 0,
                relaxed: true,
            };
            self.block(inst, k, &lp.body, &mut region);
            self.relaxed = None;
            for &(_, reg, n) in queues.values() {
                self.everywhere(nkic_isa::Op::RegAlu(insn::RegAlu {
                    dst: reg,
                    op: RegAluOp::Add,
                    a: reg,
                    b: nkic_isa::RegOrImm::Imm(i32::try_from(n).unwrap_or(i32::MAX)),
                }));
            }
            self.loop_control(inst, lp, body_label, cond_label);
            let done: Vec<SemWait> = queues
                .values()
                .map(|&(sem, reg, _)| SemWait {
                    sem,
                    value: 0,
                    reg: Some(reg),
                })
                .collect();
            let mut waits = before;
            for w in &done {
                if !waits.contains(w) {
                    waits.push(*w);
                }
            }
            self.loop_done[g as usize] = done;
            self.prev = waits;
            return;
        }
        let counter = Reg(u8::try_from(self.counter_base + g).unwrap_or(u8::MAX));
        let sem = self.program.add_semaphore(&format!("loop{g}_done"));
        // Every semaphore the first step of an iteration must see complete.
        let before = self.prev.clone();
        let first_loop = g;
        let mut region = Region {
            sem: Some(sem),
            reg: Some(counter),
            count: 0,
            relaxed: false,
        };
        let entry = |em: &Self, last_loop: u32| {
            let mut waits = before.clone();
            for h in first_loop..last_loop {
                for w in &em.loop_done[h as usize] {
                    if !waits.contains(w) {
                        waits.push(*w);
                    }
                }
            }
            waits
        };
        // The first steps of an iteration carry a placeholder wait, replaced
        // once the body (and so the loops nested in it, numbered g+1.. in
        // source order, and their signal counts) is known. Nested loops
        // copy the placeholder into their own entry waits, so it reaches
        // every first step.
        let placeholder = SemWait {
            sem: SemId(u32::MAX - g),
            value: 0,
            reg: None,
        };
        let body_start: BTreeMap<Queue, usize> =
            self.streams.iter().map(|(&q, s)| (q, s.len())).collect();
        self.prev = vec![placeholder];
        self.block(inst, k, &lp.body, &mut region);
        // A loop whose body never signals has nothing to wait for (and its
        // semaphore is never signalled).
        if region.count > 0 {
            self.loop_done[g as usize] = vec![SemWait {
                sem,
                value: 0,
                reg: Some(counter),
            }];
        }
        let last_loop = self.next_loop;
        let waits = entry(self, last_loop);
        for (q, stream) in self.streams.iter_mut() {
            let from = body_start.get(q).copied().unwrap_or(0);
            for inst in &mut stream[from..] {
                if let Some(pos) = inst.waits.iter().position(|w| *w == placeholder) {
                    inst.waits.remove(pos);
                    for w in &waits {
                        if !inst.waits.contains(w) {
                            inst.waits.push(*w);
                        }
                    }
                }
            }
        }
        let per_iteration = i32::try_from(region.count).unwrap_or(i32::MAX);
        if per_iteration > 0 {
            self.everywhere(nkic_isa::Op::RegAlu(insn::RegAlu {
                dst: counter,
                op: RegAluOp::Add,
                a: counter,
                b: nkic_isa::RegOrImm::Imm(per_iteration),
            }));
        }
        self.loop_control(inst, lp, body_label, cond_label);
        self.prev = waits;
    }

    /// The end of a loop's iteration on every queue: the induction step,
    /// the condition label and the branch back to the body.
    fn loop_control(
        &mut self,
        inst: usize,
        lp: &nkic_ir::DynLoop,
        body_label: Label,
        cond_label: Label,
    ) {
        match (&lp.kind, lp.induction) {
            (
                DynLoopKind::Range { stop, step, .. } | DynLoopKind::Fori { stop, step, .. },
                Some(iv),
            ) => {
                let iv = self.reg(inst, iv);
                self.everywhere(nkic_isa::Op::RegAlu(insn::RegAlu {
                    dst: iv,
                    op: RegAluOp::Add,
                    a: iv,
                    b: nkic_isa::RegOrImm::Imm(i32::try_from(*step).unwrap_or(i32::MAX)),
                }));
                self.everywhere(nkic_isa::Op::Label(insn::Label { label: cond_label }));
                self.everywhere(nkic_isa::Op::Branch(insn::Branch {
                    cond: BranchCond::Lt,
                    a: iv,
                    b: match stop {
                        RegOrImm::Reg(r) => nkic_isa::RegOrImm::Reg(self.reg(inst, *r)),
                        RegOrImm::Imm(v) => nkic_isa::RegOrImm::Imm(*v),
                    },
                    target: body_label,
                }));
            }
            (DynLoopKind::While { cond }, _) => {
                self.everywhere(nkic_isa::Op::Label(insn::Label { label: cond_label }));
                self.everywhere(nkic_isa::Op::Branch(insn::Branch {
                    cond: BranchCond::Ne,
                    a: self.reg(inst, *cond),
                    b: nkic_isa::RegOrImm::Imm(0),
                    target: body_label,
                }));
            }
            _ => {
                self.everywhere(nkic_isa::Op::Label(insn::Label { label: cond_label }));
            }
        }
    }
}
