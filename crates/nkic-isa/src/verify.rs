//! The program verifier: rejects programs the machine cannot run.
//!
//! `verify` reports every problem it finds as a `VerifyError`, each naming
//! the `Rule` it breaks (`verify/rule.rs` lists them with their stable
//! names), the queue, the instruction index and mnemonic, and the field.
//! Its `Display` is the message users see. It checks:
//!
//! * **Declarations**: HBM tensor and semaphore names are unique
//!   identifiers, tensor dtypes exist on the target, only internal and
//!   shared tensors have data and it is exactly the tensor's bytes,
//!   line-table entries name existing files, each queue has at most one
//!   stream and DMA queues are below the target's `dma_queues`.
//! * **Engines and targets**: the queue's engine may execute the
//!   instruction (`Op::engines`), the target has it (`Op::since`), and every
//!   operand dtype exists on the target.
//! * **Access patterns**: at most 4 dims, no zero counts; on chip the
//!   partition range lies in 0..128 with no partition stride, and for
//!   compute engines starts per isa.md §2.1 (n > 64 → 0; 33–64 → 0 or 64;
//!   ≤ 32 → a multiple of 32), except MX scale operands (quadrant rule) and
//!   control instructions; the static byte range lies inside the usable
//!   SBUF bytes per partition, inside the 16 KiB of PSUM (4-byte aligned),
//!   or inside the HBM tensor (partition start 0); Vector/Scalar/GpSimd
//!   free sizes stay within 64Ki elements (SBUF) / 4Ki (PSUM). Dynamic
//!   offsets are checked at run time by the simulator.
//! * **Memories per engine**: TensorE reads SBUF and writes PSUM, GpSimd
//!   never touches PSUM, compute engines never touch HBM, DMA neither
//!   reads nor writes PSUM, two-input Vector instructions do not read two
//!   PSUM operands, registers load and store SBUF or HBM.
//! * **Operand shapes and dtypes per instruction**, as documented for each
//!   instruction in `docs/isa.md` (equal P and F, `(P,1)` vectors, matmul
//!   limits, ALU operator classes, MX layouts, …).
//! * **Control flow**: register numbers below `sequencer_registers`,
//!   labels defined once per stream, branch targets defined in the same
//!   stream.
//! * **Semaphores**: every waited or signalled semaphore is declared; a
//!   wait on a semaphore nobody signals is rejected, and in streams
//!   without branches a static wait that can never be satisfied (fewer
//!   signals in other queues plus earlier in its own queue than the value
//!   waited for) is a deadlock and rejected.

use crate::insn;
use std::collections::BTreeMap;
use std::fmt;

use crate::ap::{AccessPattern, Imm, MAX_DIMS, Memory, Reg, RegOrImm, Scalar};
use crate::dtype::DType;
use crate::engine::{Engine, Queue};
use crate::enums::{AluOp, DgeMode, MatmulPerfMode, ReduceCmd};
use crate::inst::{Instruction, Label, Layout, Op, Role};
use crate::program::{LineId, Program, SemId};
use crate::target::{Figures, Target};
use crate::text::is_identifier;

mod rule;

pub use rule::Rule;

/// One verifier finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The core of a multi-core launch the problem is in (`None` for a
    /// single program; see `verify_launch`).
    pub core: Option<u8>,
    /// The queue and instruction index, when the problem is in a stream.
    pub queue: Option<Queue>,
    pub index: Option<usize>,
    /// The instruction's mnemonic, when there is one.
    pub mnemonic: Option<&'static str>,
    /// The instruction's line-table entry, for source-level reporting.
    pub line: Option<LineId>,
    /// The declaration the problem is in, when it is in none of the
    /// streams' instructions.
    pub decl: Option<Decl>,
    /// The rule the program breaks.
    pub rule: Rule,
    /// The instruction field the problem is in (`dst`, `op0`, …), when
    /// it is in one.
    pub field: Option<&'static str>,
    /// What is wrong, in words (`Display` adds where).
    pub message: String,
}

/// A program's declaration, by its position among the declarations of its
/// kind (the order of the `.nkasm` directives): where a verifier error
/// outside the instruction streams is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decl {
    /// The i-th HBM tensor (`.arg` and `.hbm` lines together).
    Tensor(usize),
    /// The i-th semaphore (`.sem`).
    Semaphore(usize),
    /// The i-th line-table entry (`.line`).
    Line(usize),
    /// The i-th stream (`.queue`).
    Stream(usize),
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(core) = self.core {
            write!(f, "core {core}: ")?;
        }
        match (self.queue, self.index, self.mnemonic) {
            (Some(q), Some(i), Some(m)) => write!(f, "{q}[{i}] `{m}`: {}", self.message),
            (Some(q), _, _) => write!(f, "queue {q}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Proof that the verifier accepted a program (`verify`) or a launch
/// (`verify_launch`), as naga's `ModuleInfo` is for a shader module.
///
/// Only this crate's verifiers make one: its one field is private. It
/// borrows what was verified, so it names that very value and no other,
/// and the value cannot change while the token lives. Consumers that
/// rely on the verifier's rules (`nkic_sim::run` and `run_launch`) take a
/// token instead of a bare reference, so they never see an unverified
/// program and need not check those rules again.
///
/// Code outside the crate cannot make one without verifying:
///
/// ```compile_fail
/// let program = nkic_isa::Program::new(nkic_isa::Target::Trn3);
/// let forged = nkic_isa::Verified { item: &program };
/// ```
#[derive(Debug)]
pub struct Verified<'a, T> {
    item: &'a T,
}

impl<'a, T> Verified<'a, T> {
    /// Tokens are made by this crate's verifiers only.
    pub(crate) fn new(item: &'a T) -> Verified<'a, T> {
        Verified { item }
    }

    /// The verified program or launch.
    pub fn get(&self) -> &'a T {
        self.item
    }
}

impl<T> Clone for Verified<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Verified<'_, T> {}

impl<T> std::ops::Deref for Verified<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.item
    }
}

/// Verifies a program; see the module doc for the rules. On success the
/// token proves `program` verified.
pub fn verify(program: &Program) -> Result<Verified<'_, Program>, Vec<VerifyError>> {
    let mut v = Verifier {
        program,
        target: program.target,
        f: program.target.figures(),
        errors: Vec::new(),
        at: None,
        current_indexed: false,
    };
    v.declarations();
    for stream in &program.queues {
        v.stream(stream.queue, &stream.insts);
    }
    v.semaphores();
    if v.errors.is_empty() {
        Ok(Verified::new(program))
    } else {
        Err(v.errors)
    }
}

/// Checks one instruction as the first of `queue`'s stream in `program`:
/// the rules of `verify` that concern a single instruction (its engine,
/// target, operands and per-instruction rules) against the program's
/// declarations, without cloning the program into a probe. The backend
/// asks it which engines may run an op, so the verifier stays the one
/// source of those rules.
pub fn check_instruction<'p>(
    program: &'p Program,
    queue: Queue,
    inst: &'p Instruction,
) -> Result<(), Vec<VerifyError>> {
    let mut v = Verifier {
        program,
        target: program.target,
        f: program.target.figures(),
        errors: Vec::new(),
        at: Some((queue, 0, inst)),
        current_indexed: false,
    };
    v.instruction(queue, inst, &BTreeMap::new());
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

struct Verifier<'p> {
    program: &'p Program,
    target: Target,
    f: &'static Figures,
    errors: Vec<VerifyError>,
    /// The instruction being checked.
    at: Option<(Queue, usize, &'p Instruction)>,
    /// True while checking the indexed side of a gather or scatter.
    current_indexed: bool,
}

impl<'p> Verifier<'p> {
    fn err(&mut self, rule: Rule, field: Option<&'static str>, message: String) {
        let (queue, index, mnemonic, line) = match self.at {
            Some((q, i, inst)) => (Some(q), Some(i), Some(inst.op.mnemonic()), inst.line),
            None => (None, None, None, None),
        };
        self.errors.push(VerifyError {
            core: None,
            queue,
            index,
            mnemonic,
            line,
            decl: None,
            rule,
            field,
            message,
        });
    }

    /// An error in declaration `decl`.
    fn decl_err(&mut self, rule: Rule, decl: Decl, message: String) {
        self.err(rule, None, message);
        if let Some(e) = self.errors.last_mut() {
            e.decl = Some(decl);
        }
    }

    fn declarations(&mut self) {
        let p = self.program;
        let mut seen = BTreeMap::new();
        for (i, t) in p.hbm.iter().enumerate() {
            if !is_identifier(&t.name) {
                self.decl_err(
                    Rule::TensorName,
                    Decl::Tensor(i),
                    format!("HBM tensor name `{}` is not an identifier", t.name),
                );
            }
            if seen.insert(t.name.as_str(), ()).is_some() {
                self.decl_err(
                    Rule::TensorDeclaredTwice,
                    Decl::Tensor(i),
                    format!("HBM tensor `{}` is declared twice", t.name),
                );
            }
            if !self.target.supports_dtype(t.dtype) {
                self.decl_err(
                    Rule::TensorDtype,
                    Decl::Tensor(i),
                    format!(
                        "HBM tensor `{}` has dtype {} which {} does not have",
                        t.name, t.dtype, self.target
                    ),
                );
            }
            let Some(data) = &t.data else {
                continue;
            };
            if t.kind.is_arg() {
                self.decl_err(
                    Rule::TensorDataArgument,
                    Decl::Tensor(i),
                    format!(
                        "HBM tensor `{}` is an {} argument but has data; only `.hbm` tensors hold constant bytes on entry",
                        t.name,
                        t.kind.name()
                    ),
                );
            }
            if data.len() as u64 != t.bytes() {
                self.decl_err(
                    Rule::TensorDataSize,
                    Decl::Tensor(i),
                    format!(
                        "HBM tensor `{}` is {}{:?} ({} bytes) but its data has {} bytes",
                        t.name,
                        t.dtype,
                        t.shape,
                        t.bytes(),
                        data.len()
                    ),
                );
            }
        }
        let mut seen = BTreeMap::new();
        for (i, s) in p.semaphores.iter().enumerate() {
            if !is_identifier(&s.name) {
                self.decl_err(
                    Rule::SemaphoreName,
                    Decl::Semaphore(i),
                    format!("semaphore name `{}` is not an identifier", s.name),
                );
            }
            if seen.insert(s.name.as_str(), ()).is_some() {
                self.decl_err(
                    Rule::SemaphoreDeclaredTwice,
                    Decl::Semaphore(i),
                    format!("semaphore `{}` is declared twice", s.name),
                );
            }
        }
        for (i, entry) in p.line_table.iter().enumerate() {
            if entry.file as usize >= p.files.len() {
                self.decl_err(
                    Rule::LineFile,
                    Decl::Line(i),
                    format!(
                        "line entry l{i} names file f{} but the program has {} files",
                        entry.file,
                        p.files.len()
                    ),
                );
            }
        }
        let mut queues = BTreeMap::new();
        for (i, s) in p.queues.iter().enumerate() {
            if queues.insert(s.queue, ()).is_some() {
                self.decl_err(
                    Rule::QueueTwoStreams,
                    Decl::Stream(i),
                    format!("queue {} has two streams", s.queue),
                );
            }
            if let Queue::Dma(n) = s.queue
                && u32::from(n) >= self.f.dma_queues
            {
                self.decl_err(
                    Rule::QueueExists,
                    Decl::Stream(i),
                    format!(
                        "queue {} does not exist: {} has dma0..dma{}",
                        s.queue,
                        self.target,
                        self.f.dma_queues - 1
                    ),
                );
            }
        }
    }

    fn stream(&mut self, queue: Queue, insts: &'p [Instruction]) {
        let mut labels = BTreeMap::new();
        for (i, inst) in insts.iter().enumerate() {
            if let Op::Label(insn::Label { label }) = inst.op
                && labels.insert(label, i).is_some()
            {
                self.at = Some((queue, i, inst));
                self.err(
                    Rule::LabelDefinedTwice,
                    None,
                    format!("label {label} is defined twice in queue {queue}"),
                );
            }
        }
        for (i, inst) in insts.iter().enumerate() {
            self.at = Some((queue, i, inst));
            self.instruction(queue, inst, &labels);
        }
        self.at = None;
    }

    fn instruction(
        &mut self,
        queue: Queue,
        inst: &'p Instruction,
        labels: &BTreeMap<Label, usize>,
    ) {
        let op = &inst.op;
        let engine = queue.engine();
        if !op.engines().contains(&engine) {
            let allowed: Vec<&str> = op.engines().iter().map(|e| e.name()).collect();
            self.err(
                Rule::QueueEngine,
                None,
                format!(
                    "cannot run on the {engine} queue; it runs on: {}",
                    allowed.join(", ")
                ),
            );
            return;
        }
        if self.target < op.since() {
            self.err(
                Rule::SinceTarget,
                None,
                format!(
                    "needs {} or newer; the program targets {}",
                    op.since(),
                    self.target
                ),
            );
        }
        if let Some(line) = inst.line
            && line.0 as usize >= self.program.line_table.len()
        {
            self.err(
                Rule::LineEntry,
                None,
                format!("line entry l{} does not exist", line.0),
            );
        }
        for w in &inst.waits {
            self.sem_exists(w.sem);
            if let Some(r) = w.reg {
                self.reg(r);
            }
        }
        for s in &inst.signals {
            self.sem_exists(*s);
        }
        // Operands: placement and bounds.
        let control = op.is_control();
        for o in op.operands() {
            let mx_scale = matches!(o.layout, Layout::MxScaleOf(_));
            // The indexed side of a gather or scatter: its rows come from
            // `index` at run time, so only one row's extent is checked here.
            self.current_indexed = matches!(o.layout, Layout::IndexedBy(_));
            self.access_pattern(engine, o.field, o.role, o.ap, control, mx_scale);
            self.current_indexed = false;
        }
        self.registers(op);
        self.op_rules(engine, op, labels);
    }

    /// The MX scale layout of every operand of `op` the table marks
    /// `[mx_scale_of: data]`, against its data operand.
    fn mx_scales(&mut self, op: &Op) {
        let operands = op.operands();
        for o in &operands {
            if let Layout::MxScaleOf(data) = o.layout
                && let Some(d) = operands.iter().find(|d| d.field == data)
            {
                self.mx_scale(o.field, o.ap, d.ap);
            }
        }
    }

    fn sem_exists(&mut self, sem: SemId) {
        if sem.0 as usize >= self.program.semaphores.len() {
            self.err(
                Rule::SemaphoreDeclared,
                None,
                format!("semaphore #{} is not declared", sem.0),
            );
        }
    }

    fn reg(&mut self, r: Reg) {
        if u32::from(r.0) >= self.f.sequencer_registers {
            self.err(
                Rule::Register,
                None,
                format!(
                    "register {r} does not exist: sequencers have r0..r{}",
                    self.f.sequencer_registers - 1
                ),
            );
        }
    }

    fn registers(&mut self, op: &Op) {
        for o in op.operands() {
            if let Some(d) = o.ap.dyn_offset {
                self.reg(d.reg);
            }
        }
        let mut regs = Vec::new();
        match op {
            Op::RegSet(insn::RegSet { dst, .. }) | Op::RegLoad(insn::RegLoad { dst, .. }) => {
                regs.push(*dst)
            }
            Op::RegMove(insn::RegMove { dst, src }) => regs.extend([*dst, *src]),
            Op::RegAlu(insn::RegAlu { dst, a, b, .. }) => {
                regs.extend([*dst, *a]);
                if let RegOrImm::Reg(b) = b {
                    regs.push(*b);
                }
            }
            Op::RegStore(insn::RegStore { src, .. }) => regs.push(*src),
            Op::Branch(insn::Branch { a, b, .. }) => {
                regs.push(*a);
                if let RegOrImm::Reg(b) = b {
                    regs.push(*b);
                }
            }
            _ => {}
        }
        for r in regs {
            self.reg(r);
        }
    }

    /// Placement and bounds of one access pattern.
    /// `control`: a register load or store, which any sequencer may do on
    /// SBUF or HBM; `mx_scale`: an MX scale operand (quadrant rule instead
    /// of the start rule).
    fn access_pattern(
        &mut self,
        engine: Engine,
        field: &'static str,
        role: Role,
        ap: &AccessPattern,
        control: bool,
        mx_scale: bool,
    ) {
        let exempt_alignment = control || mx_scale;
        if !self.target.supports_dtype(ap.dtype) {
            self.err(
                Rule::DtypeOnTarget,
                Some(field),
                format!(
                    "`{field}` has dtype {} which {} does not have",
                    ap.dtype, self.target
                ),
            );
        }
        if ap.dims.len() > MAX_DIMS {
            self.err(
                Rule::MaxDims,
                Some(field),
                format!(
                    "`{field}` has {} free dims; at most {MAX_DIMS} are allowed",
                    ap.dims.len()
                ),
            );
        }
        if ap.partition_count == 0 {
            self.err(
                Rule::NoPartitions,
                Some(field),
                format!("`{field}` covers no partitions"),
            );
        }
        if let Some(k) = ap.dims.iter().position(|d| d.count == 0) {
            self.err(
                Rule::ZeroCount,
                Some(field),
                format!("`{field}` dim {k} has count 0"),
            );
        }
        if ap.dims.iter().any(|d| d.count > crate::ap::MAX_DIM_COUNT) {
            self.err(
                Rule::CountLimit,
                Some(field),
                format!(
                    "`{field}` has a dim count above {}",
                    crate::ap::MAX_DIM_COUNT
                ),
            );
        }
        // Memory legality per engine.
        match (engine, ap.mem) {
            (Engine::Dma, Memory::Psum) => self.err(
                Rule::DmaPsum,
                Some(field),
                format!("`{field}` is in PSUM; DMA can neither read nor write PSUM"),
            ),
            (Engine::GpSimd, Memory::Psum) => self.err(
                Rule::GpSimdPsum,
                Some(field),
                format!("`{field}` is in PSUM; GpSimd cannot access PSUM"),
            ),
            _ if control => {}
            (Engine::Tensor | Engine::Vector | Engine::Scalar | Engine::GpSimd, Memory::Hbm(_)) => {
                self.err(Rule::ComputeHbm, Some(field), format!("`{field}` is in HBM; the {engine} engine only accesses SBUF and PSUM (use a DMA)"));
            }
            (Engine::Tensor, Memory::Psum) if role == Role::Read => {
                self.err(
                    Rule::TensorReadsSbuf,
                    Some(field),
                    format!("`{field}` is in PSUM; TensorE reads its inputs from SBUF"),
                );
            }
            (Engine::Tensor, Memory::Sbuf) if role == Role::Write => {
                self.err(
                    Rule::TensorWritesPsum,
                    Some(field),
                    format!("`{field}` is in SBUF; TensorE writes its results to PSUM"),
                );
            }
            _ => {}
        }
        let partitions = self.f.sbuf_partitions;
        match ap.mem {
            Memory::Sbuf | Memory::Psum => {
                if ap.partition_stride != 0 {
                    self.err(
                        Rule::PartitionStride,
                        Some(field),
                        format!("`{field}` has a partition stride; only HBM patterns have one"),
                    );
                }
                let end = u64::from(ap.partition_start) + u64::from(ap.partition_count);
                if end > u64::from(partitions) {
                    self.err(Rule::PartitionRange, Some(field), format!(
                        "`{field}` covers partitions {}..{end}, beyond the {partitions} partitions",
                        ap.partition_start
                    ));
                } else if !exempt_alignment
                    && engine != Engine::Dma
                    && !start_allowed(ap.partition_start, ap.partition_count)
                {
                    self.err(
                        Rule::PartitionStart,
                        Some(field),
                        format!(
                            "`{field}` starts at partition {} with {} partitions; {}",
                            ap.partition_start,
                            ap.partition_count,
                            start_rule(ap.partition_count)
                        ),
                    );
                }
                let (limit, what) = if ap.mem == Memory::Sbuf {
                    (
                        self.f.sbuf_usable_bytes_per_partition,
                        "usable SBUF bytes per partition",
                    )
                } else {
                    (self.f.psum_bytes_per_partition, "PSUM bytes per partition")
                };
                if let Some((lo, hi)) = ap.byte_range()
                    && (lo < 0 || hi > i64::from(limit))
                {
                    self.err(Rule::OnChipBytes, Some(field), format!("`{field}` touches bytes {lo}..{hi} of each partition, outside the {limit} {what}"));
                }
                if ap.mem == Memory::Psum
                    && !ap.offset.is_multiple_of(u64::from(self.f.psum_min_align))
                {
                    self.err(
                        Rule::PsumAlignment,
                        Some(field),
                        format!(
                            "`{field}` PSUM offset {} is not {}-byte aligned",
                            ap.offset, self.f.psum_min_align
                        ),
                    );
                }
                if matches!(engine, Engine::Vector | Engine::Scalar | Engine::GpSimd) {
                    // The PSUM limit is a whole partition of fp32 (isa.md
                    // §1): it counts the distinct elements, so a stride-0
                    // broadcast of a few PSUM values may be iterated longer.
                    let (max, size) = if ap.mem == Memory::Sbuf {
                        (self.f.max_free_elems_sbuf, ap.free_size())
                    } else {
                        (self.f.max_free_elems_psum, ap.distinct_free_size())
                    };
                    if size > u64::from(max) {
                        self.err(
                            Rule::FreeSizeLimit,
                            Some(field),
                            format!(
                                "`{field}` has {size} elements per partition; the limit is {max}"
                            ),
                        );
                    }
                }
            }
            Memory::Hbm(id) => {
                let Some(t) = self.program.tensor(id) else {
                    self.err(
                        Rule::TensorExists,
                        Some(field),
                        format!("`{field}` names HBM tensor #{} which does not exist", id.0),
                    );
                    return;
                };
                if ap.partition_start != 0 {
                    self.err(
                        Rule::HbmPartitionStart,
                        Some(field),
                        format!("`{field}` on HBM must start at partition 0 (use the byte offset)"),
                    );
                }
                let range = if self.current_indexed {
                    let base = i64::try_from(ap.offset).unwrap_or(i64::MAX);
                    ap.free_byte_extent()
                        .map(|(lo, hi)| (base.saturating_add(lo), base.saturating_add(hi)))
                } else {
                    ap.byte_range()
                };
                if let Some((lo, hi)) = range
                    && (lo < 0 || hi > i64::try_from(t.bytes()).unwrap_or(i64::MAX))
                {
                    self.err(
                        Rule::HbmBytes,
                        Some(field),
                        format!(
                            "`{field}` touches bytes {lo}..{hi} of `{}`, which has {} bytes",
                            t.name,
                            t.bytes()
                        ),
                    );
                }
            }
        }
    }

    // ------------------------------------------------------------ per-instruction rules

    fn op_rules(&mut self, engine: Engine, op: &Op, labels: &BTreeMap<Label, usize>) {
        match op {
            Op::DmaCopy(insn::DmaCopy {
                dst,
                src,
                accumulate,
                dge,
                priority,
                ..
            }) => {
                self.dma_elements(dst, src, *dge == DgeMode::Hwdge);
                if *accumulate && (dst.dtype.is_packed_x4() || !dst.dtype.is_float()) {
                    self.err(
                        Rule::AccumulateFloat,
                        Some("accumulate"),
                        "`accumulate` needs a float `dst`".into(),
                    );
                }
                self.dge(*dge);
                if let Some(p) = priority {
                    if self.target < Target::Trn3 {
                        self.err(
                            Rule::TargetFeature,
                            Some("priority"),
                            "`priority` needs trn3".into(),
                        );
                    }
                    if *p > 3 {
                        self.err(
                            Rule::AttributeValue,
                            Some("priority"),
                            format!("`priority` is 0..=3, found {p}"),
                        );
                    }
                }
            }
            Op::DmaGather(insn::DmaGather {
                dst,
                src,
                index,
                accumulate,
                ..
            }) => {
                if !matches!(src.mem, Memory::Hbm(_)) {
                    self.err(
                        Rule::OperandMemory,
                        Some("src"),
                        "`src` of a gather must be an HBM pattern (its rows are chosen by `index`)"
                            .into(),
                    );
                }
                self.row_index(index, src.partition_count);
                self.dma_elements(dst, src, false);
                if *accumulate && (dst.dtype.is_packed_x4() || !dst.dtype.is_float()) {
                    self.err(
                        Rule::AccumulateFloat,
                        Some("accumulate"),
                        "`accumulate` needs a float `dst`".into(),
                    );
                }
            }
            Op::DmaScatter(insn::DmaScatter {
                dst,
                src,
                index,
                accumulate,
                ..
            }) => {
                if !matches!(dst.mem, Memory::Hbm(_)) {
                    self.err(Rule::OperandMemory, Some("dst"), "`dst` of a scatter must be an HBM pattern (its rows are chosen by `index`)".into());
                }
                self.row_index(index, dst.partition_count);
                self.dma_elements(dst, src, false);
                if *accumulate && (dst.dtype.is_packed_x4() || !dst.dtype.is_float()) {
                    self.err(
                        Rule::AccumulateFloat,
                        Some("accumulate"),
                        "`accumulate` needs a float `dst`".into(),
                    );
                }
            }
            Op::Rng(insn::Rng { dst }) => {
                if !dst.dtype.is_int() {
                    self.err(
                        Rule::OperandDtype,
                        Some("dst"),
                        format!("`dst` must be an integer dtype, found {}", dst.dtype),
                    );
                }
            }
            Op::Rand2(insn::Rand2 { dst, min, max }) => {
                if matches!(dst.dtype, DType::Bool | DType::F8E8M0) || dst.dtype.is_packed_x4() {
                    self.err(
                        Rule::OperandDtype,
                        Some("dst"),
                        format!("`dst` may not be {}", dst.dtype),
                    );
                }
                self.scalar("min", min, dst);
                self.scalar("max", max, dst);
                if let (Scalar::Imm(lo), Scalar::Imm(hi)) = (min, max)
                    && lo.get().partial_cmp(&hi.get()) != Some(std::cmp::Ordering::Less)
                {
                    self.err(
                        Rule::RandRange,
                        Some("min"),
                        format!("`min` {lo:?} must be below `max` {hi:?}"),
                    );
                }
            }
            Op::Dropout(insn::Dropout { dst, src, prob }) => {
                self.same_pf("dst", dst, "src", src);
                self.same_dtype("dst", dst, "src", src);
                self.scalar("prob", prob, src);
            }
            Op::SetRngSeed(insn::SetRngSeed { src }) => {
                if src.num_elements() != 1 || src.dtype.size() != 4 || src.dtype.is_packed_x4() {
                    self.err(
                        Rule::RngSeed,
                        Some("src"),
                        format!(
                            "`src` must be one 32-bit element, found {} elements of {}",
                            src.num_elements(),
                            src.dtype
                        ),
                    );
                }
            }
            Op::DmaTranspose(insn::DmaTranspose { dst, src, dge }) => {
                self.dge(*dge);
                if dst.mem != Memory::Sbuf {
                    self.err(
                        Rule::OperandMemory,
                        Some("dst"),
                        "`dst` of a DMA transpose must be in SBUF".into(),
                    );
                }
                self.same_dtype("dst", dst, "src", src);
                if !matches!(src.dtype.size(), 2 | 4) || src.dtype.is_packed_x4() {
                    self.err(
                        Rule::OperandDtype,
                        Some("src"),
                        format!(
                            "DMA transpose moves 2- or 4-byte elements, not {}",
                            src.dtype
                        ),
                    );
                }
                let s = src.shape();
                let perm: &[usize] = match s.len() {
                    2 => &[1, 0],
                    3 => &[2, 1, 0],
                    4 => &[3, 1, 2, 0],
                    n => {
                        self.err(
                            Rule::DmaTransposeRank,
                            Some("src"),
                            format!("`src` has rank {n}; DMA transpose takes rank 2, 3 or 4"),
                        );
                        return;
                    }
                };
                let want: Vec<u64> = perm.iter().map(|&i| s[i]).collect();
                if dst.shape() != want {
                    self.err(Rule::TransposeShape, Some("dst"), format!(
                        "`dst` must have the transposed shape {want:?} of `src` {s:?}, found {:?}",
                        dst.shape()
                    ));
                }
            }
            Op::TensorCopy(insn::TensorCopy { dst, src }) => {
                self.same_pf("dst", dst, "src", src);
            }
            Op::SendRecv(insn::SendRecv { dst, src, .. }) => {
                self.same_pf("dst", dst, "src", src);
                if dst.dtype != src.dtype {
                    self.err(Rule::SameDtype, Some("dst"), format!(
                        "`dst` is {} but `src` is {}: `sendrecv` moves bits, both sides have one dtype",
                        dst.dtype, src.dtype
                    ));
                }
                for (field, ap) in [("dst", dst), ("src", src)] {
                    if ap.mem != Memory::Sbuf {
                        self.err(
                            Rule::OperandMemory,
                            Some(field),
                            format!("`{field}` of `sendrecv` is an SBUF tile"),
                        );
                    }
                }
            }
            Op::Memset(insn::Memset { dst, value }) => match value {
                Imm::Int(v) => {
                    if dst.dtype.is_float() && !dst.dtype.is_packed_x4() {
                        self.err(
                            Rule::MemsetValue,
                            Some("value"),
                            format!(
                                "`value` {v} is an integer but `dst` is {}; write a float",
                                dst.dtype
                            ),
                        );
                    } else if dst.dtype.is_packed_x4() && *v != 0 {
                        self.err(
                            Rule::MemsetValue,
                            Some("value"),
                            "packed x4 dtypes can only be set to 0".into(),
                        );
                    }
                }
                Imm::Float(x) => {
                    if !dst.dtype.is_float() || dst.dtype.is_packed_x4() {
                        self.err(
                            Rule::MemsetValue,
                            Some("value"),
                            format!(
                                "`value` {x:?} is a float but `dst` is {}; write an integer",
                                dst.dtype
                            ),
                        );
                    }
                }
            },
            Op::Iota(insn::Iota { dst, pattern, .. }) => {
                self.pattern("pattern", pattern, dst);
                if dst.mem != Memory::Sbuf {
                    self.err(
                        Rule::OperandMemory,
                        Some("dst"),
                        "`dst` of iota must be in SBUF".into(),
                    );
                }
            }
            Op::NcMatmul(insn::NcMatmul {
                dst,
                stationary,
                moving,
                accumulate: _,
                transpose,
                perf_mode,
                tile_position,
                tile_size,
                ..
            }) => self.matmul(
                dst,
                stationary,
                moving,
                *transpose,
                *perf_mode,
                *tile_position,
                *tile_size,
            ),
            Op::NcMatmulMx(i) => self.matmul_mx(op, i),
            Op::NcTranspose(insn::NcTranspose { dst, src }) => {
                self.same_dtype("dst", dst, "src", src);
                if dst.free_size() != u64::from(src.partition_count)
                    || u64::from(dst.partition_count) != src.free_size()
                {
                    self.err(
                        Rule::TransposeShape,
                        Some("dst"),
                        format!(
                            "`dst` must be [{}, {}] (src transposed), found [{}, {}]",
                            src.free_size(),
                            src.partition_count,
                            dst.partition_count,
                            dst.free_size()
                        ),
                    );
                }
                let limit = if engine == Engine::Tensor { 128 } else { 32 };
                if src.partition_count > limit || src.free_size() > u64::from(limit) {
                    self.err(
                        Rule::TransposeSize,
                        Some("src"),
                        format!("the {engine} engine transposes at most {limit}×{limit}"),
                    );
                }
            }
            Op::Activation(insn::Activation {
                dst,
                src,
                scale,
                bias,
                reduce_op,
                reduce_cmd,
                reduce_res,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.scalar("scale", scale, src);
                self.opt_scalar("bias", bias.as_ref(), src);
                if let Some(Scalar::Vector(b)) = bias
                    && b.dtype == DType::TF32
                {
                    self.err(
                        Rule::OperandDtype,
                        Some("bias"),
                        "`bias` may not be tfloat32".into(),
                    );
                }
                if *reduce_cmd == ReduceCmd::LoadReduce {
                    self.err(
                        Rule::ReduceCmd,
                        Some("reduce_cmd"),
                        "`activation` has no initial value for `load_reduce`; use `reset_reduce`"
                            .into(),
                    );
                }
                if reduce_cmd.contributes() && *reduce_op != Some(AluOp::Add) {
                    self.err(
                        Rule::OperatorAllowed,
                        Some("reduce_op"),
                        "`activation` reduces with `reduce_op=add` only".into(),
                    );
                }
                self.reduce_res(reduce_res.as_ref(), src);
            }
            Op::ActivationReduce(insn::ActivationReduce {
                dst,
                src,
                scale,
                bias,
                reduce_op,
                reduce_res,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.scalar("scale", scale, src);
                self.opt_scalar("bias", bias.as_ref(), src);
                if !matches!(reduce_op, AluOp::Add | AluOp::Maximum | AluOp::Minimum) {
                    self.err(
                        Rule::OperatorAllowed,
                        Some("reduce_op"),
                        format!("`reduce_op` must be add, maximum or minimum, found {reduce_op}"),
                    );
                }
                self.reduce_res(Some(reduce_res), src);
            }
            Op::Activate2(act) => {
                let &insn::Activate2 {
                    op0,
                    reverse0,
                    op1,
                    reverse1,
                    reduce_op,
                    reduce_cmd,
                    ..
                } = act;
                let src = &act.src;
                self.same_pf("dst", &act.dst, "src", src);
                let allowed = matches!(
                    (op0, op1),
                    (
                        AluOp::Multiply,
                        AluOp::Add | AluOp::Subtract | AluOp::Bypass
                    ) | (AluOp::Add | AluOp::Subtract | AluOp::Bypass, AluOp::Bypass)
                );
                if !allowed {
                    self.err(Rule::OperatorPair, Some("op0"), format!(
                        "`(op0, op1)` = ({op0}, {op1}) is not one of (multiply, add|subtract|bypass), (add|subtract|bypass, bypass)"
                    ));
                }
                for (name, reverse_name, op, imm, reverse) in [
                    ("imm0", "reverse0", op0, &act.imm0, reverse0),
                    ("imm1", "reverse1", op1, &act.imm1, reverse1),
                ] {
                    match (op == AluOp::Bypass, imm) {
                        (false, None) => self.err(
                            Rule::OperandNeeded,
                            Some(name),
                            format!("`{name}` is needed by {op}"),
                        ),
                        (true, Some(_)) => self.err(
                            Rule::OperandUnused,
                            Some(name),
                            format!("`{name}` is given but its operator is bypass"),
                        ),
                        (_, Some(s)) => self.scalar(name, s, src),
                        _ => {}
                    }
                    if reverse && op == AluOp::Bypass {
                        self.err(
                            Rule::ReverseBypass,
                            Some(reverse_name),
                            format!("`reverse{}` needs an operator", &name[3..]),
                        );
                    }
                }
                self.opt_scalar("relu_param", act.relu_param.as_ref(), src);
                if reduce_cmd.contributes() || reduce_op.is_some() {
                    match reduce_op {
                        Some(AluOp::Add | AluOp::Maximum | AluOp::Minimum | AluOp::AbsMax | AluOp::AbsMin) => {}
                        Some(other) => self.err(Rule::OperatorAllowed, Some("reduce_op"), format!("`reduce_op` must be add, maximum, minimum, abs_max or abs_min, found {other}")),
                        None => self.err(Rule::ReduceOpNeeded, Some("reduce_op"), format!("`reduce_cmd={reduce_cmd}` needs `reduce_op`")),
                    }
                }
                if reduce_cmd == ReduceCmd::LoadReduce {
                    self.err(
                        Rule::ReduceCmd,
                        Some("reduce_cmd"),
                        "`activate2` has no initial value for `load_reduce`".into(),
                    );
                }
                self.reduce_res(act.reduce_res.as_ref(), src);
            }
            Op::TensorTensor(insn::TensorTensor {
                dst,
                src0,
                src1,
                op,
            }) => {
                self.same_pf("dst", dst, "src0", src0);
                self.same_pf("dst", dst, "src1", src1);
                self.not_both_psum("src0", src0, "src1", src1);
                self.binary_op("op", *op);
                if op.is_bitvec() {
                    self.int_operands(&[dst, src0, src1]);
                }
                if *op == AluOp::Power && engine != Engine::GpSimd {
                    self.err(
                        Rule::OperatorEngine,
                        Some("op"),
                        "`power` runs on GpSimd".into(),
                    );
                }
                if engine == Engine::GpSimd && dst.mem != Memory::Sbuf {
                    self.err(
                        Rule::OperandMemory,
                        Some("dst"),
                        "GpSimd writes SBUF only".into(),
                    );
                }
            }
            Op::TensorScalar(insn::TensorScalar {
                dst,
                src,
                op0,
                operand0,
                op1,
                operand1,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.op_operand("op0", *op0, "operand0", operand0.as_ref(), src);
                match (op1, operand1) {
                    (Some(op), operand) => {
                        self.op_operand("op1", *op, "operand1", operand.as_ref(), src)
                    }
                    (None, Some(_)) => self.err(
                        Rule::OperandUnused,
                        Some("operand1"),
                        "`operand1` is given without `op1`".into(),
                    ),
                    (None, None) => {}
                }
                let bitvec0 = op0.is_bitvec();
                if let Some(op1) = op1
                    && op1.is_bitvec() != bitvec0
                {
                    self.err(
                        Rule::OperatorKindsMixed,
                        Some("op1"),
                        "`op0` and `op1` must both be bitwise or both arithmetic".into(),
                    );
                }
                if bitvec0 {
                    self.int_operands(&[dst, src]);
                    if engine != Engine::Vector {
                        self.err(
                            Rule::OperatorEngine,
                            Some("op0"),
                            "bitwise `tensor_scalar` runs on Vector only".into(),
                        );
                    }
                }
                if engine == Engine::Scalar && self.target < Target::Trn3 {
                    let ok = matches!(
                        (op0, op1),
                        (AluOp::Multiply, Some(AluOp::Add) | None) | (AluOp::Add, None)
                    );
                    if !ok {
                        self.err(Rule::OperatorEngine, Some("op0"), "ScalarE `tensor_scalar` on trn2 supports only (multiply, add), (multiply) and (add)".into());
                    }
                }
                if engine == Engine::GpSimd && (*op0 != AluOp::Rsqrt || op1.is_some()) {
                    self.err(
                        Rule::OperatorEngine,
                        Some("op0"),
                        "GpSimd `tensor_scalar` supports only `op0=rsqrt`".into(),
                    );
                }
            }
            Op::ScalarTensorTensor(insn::ScalarTensorTensor {
                dst,
                src,
                op0,
                operand0,
                op1,
                src1,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.same_pf("dst", dst, "src1", src1);
                self.not_both_psum("src", src, "src1", src1);
                self.scalar("operand0", operand0, src);
                for (name, op) in [("op0", op0), ("op1", op1)] {
                    self.binary_op(name, *op);
                    self.arithmetic_op(name, *op);
                }
            }
            Op::TensorScalarReduce(insn::TensorScalarReduce {
                dst,
                src,
                op0,
                operand0,
                reduce_op,
                reduce_cmd,
                reduce_init,
                reduce_res,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.op_operand("op0", *op0, "operand0", operand0.as_ref(), src);
                self.arithmetic_op("op0", *op0);
                if !matches!(
                    reduce_op,
                    AluOp::Add | AluOp::Multiply | AluOp::Maximum | AluOp::Minimum
                ) {
                    self.err(Rule::OperatorAllowed, Some("reduce_op"), format!(
                        "`reduce_op` must be add, multiply, maximum or minimum, found {reduce_op}"
                    ));
                }
                self.reduce_init(*reduce_cmd, "reduce_init", reduce_init.as_ref(), src);
                self.reduce_res(reduce_res.as_ref(), src);
            }
            Op::TensorScalarCumulative(insn::TensorScalarCumulative {
                dst,
                src,
                op0,
                imm0,
                op1,
                imm1,
                reduce_cmd,
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.binary_op("op0", *op0);
                self.scalar("imm0", imm0, src);
                if !matches!(
                    op1,
                    AluOp::Add
                        | AluOp::Subtract
                        | AluOp::Multiply
                        | AluOp::Maximum
                        | AluOp::Minimum
                ) {
                    self.err(
                        Rule::OperatorAllowed,
                        Some("op1"),
                        format!(
                            "`op1` must be add, subtract, multiply, maximum or minimum, found {op1}"
                        ),
                    );
                }
                if !matches!(
                    reduce_cmd,
                    ReduceCmd::ResetReduce | ReduceCmd::Reduce | ReduceCmd::LoadReduce
                ) {
                    self.err(Rule::ReduceCmd, Some("reduce_cmd"), format!("`reduce_cmd` must be reset_reduce, reduce or load_reduce, found {reduce_cmd}"));
                }
                self.reduce_init(*reduce_cmd, "imm1", imm1.as_ref(), src);
                for (name, ap) in [("dst", dst), ("src", src)] {
                    if matches!(ap.dtype, DType::I32 | DType::U32) || ap.dtype.is_packed_x4() {
                        self.err(
                            Rule::OperandDtype,
                            Some(name),
                            format!("`{name}` may not be {}", ap.dtype),
                        );
                    }
                }
            }
            Op::TensorReduce(insn::TensorReduce {
                dst,
                src,
                op,
                last_dims,
                negate,
            }) => {
                self.same_p("dst", dst, "src", src);
                if !op.is_reduction() {
                    self.err(
                        Rule::OperatorAllowed,
                        Some("op"),
                        format!("`{op}` is not a reduction operator"),
                    );
                }
                if *negate && op.is_bitvec() {
                    self.err(
                        Rule::ArithmeticOperator,
                        Some("negate"),
                        "`negate` needs an arithmetic operator".into(),
                    );
                }
                let n = src.dims.len();
                if *last_dims == 0 || usize::from(*last_dims) > n {
                    self.err(Rule::LastDims, Some("last_dims"), format!(
                        "`last_dims` must be in 1..={n} (the free dims of `src`), found {last_dims}"
                    ));
                } else {
                    let kept = src.dims[..n - usize::from(*last_dims)]
                        .iter()
                        .fold(1u64, |acc, d| acc.saturating_mul(u64::from(d.count)));
                    if dst.free_size() != kept {
                        self.err(Rule::FreeSize, Some("dst"), format!("`dst` must have {kept} elements per partition (the kept dims), found {}", dst.free_size()));
                    }
                }
            }
            Op::TensorPartitionReduce(insn::TensorPartitionReduce { dst, src, op }) => {
                if !matches!(
                    op,
                    AluOp::Add
                        | AluOp::Average
                        | AluOp::Maximum
                        | AluOp::BitwiseOr
                        | AluOp::BitwiseAnd
                ) {
                    self.err(Rule::OperatorAllowed, Some("op"), format!(
                        "`op` must be add, average, maximum, bitwise_or or bitwise_and, found {op}"
                    ));
                }
                if dst.partition_count != 1 {
                    self.err(
                        Rule::PartitionCount,
                        Some("dst"),
                        format!("`dst` must have 1 partition, found {}", dst.partition_count),
                    );
                }
                self.same_f("dst", dst, "src", src);
                if op.is_bitvec() {
                    self.int_operands(&[dst, src]);
                }
            }
            Op::TensorTensorScan(insn::TensorTensorScan {
                dst,
                src0,
                src1,
                initial,
                op0,
                op1,
                ..
            }) => {
                self.same_pf("dst", dst, "src0", src0);
                self.same_pf("dst", dst, "src1", src1);
                self.not_both_psum("src0", src0, "src1", src1);
                self.scalar("initial", initial, src0);
                for (name, op) in [("op0", op0), ("op1", op1)] {
                    self.binary_op(name, *op);
                    self.arithmetic_op(name, *op);
                }
            }
            Op::TensorCopyPredicated(insn::TensorCopyPredicated {
                dst,
                src,
                predicate,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.same_pf("dst", dst, "predicate", predicate);
                self.same_dtype("dst", dst, "src", src);
                self.not_both_psum("src", src, "predicate", predicate);
                if !matches!(
                    predicate.dtype,
                    DType::U8 | DType::U16 | DType::U32 | DType::Bool
                ) {
                    self.err(
                        Rule::OperandDtype,
                        Some("predicate"),
                        format!(
                            "`predicate` must be uint8, uint16, uint32 or bool, found {}",
                            predicate.dtype
                        ),
                    );
                }
            }
            Op::Reciprocal(insn::Reciprocal { dst, src }) => self.same_pf("dst", dst, "src", src),
            Op::Exponential(insn::Exponential {
                dst,
                src,
                max_value,
                reduce_cmd,
                reduce_init,
                reduce_res,
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.scalar("max_value", max_value, src);
                if matches!(dst.dtype, DType::U32 | DType::Bool)
                    || dst.dtype.is_packed_x4()
                    || dst.dtype == DType::F8E8M0
                {
                    self.err(
                        Rule::OperandDtype,
                        Some("dst"),
                        format!("`dst` may not be {}", dst.dtype),
                    );
                }
                if src.dtype == DType::TF32
                    || src.dtype.is_packed_x4()
                    || matches!(src.dtype, DType::Bool | DType::F8E8M0)
                {
                    self.err(
                        Rule::OperandDtype,
                        Some("src"),
                        format!("`src` may not be {}", src.dtype),
                    );
                }
                if *reduce_cmd == ReduceCmd::Reset {
                    self.err(
                        Rule::ReduceCmd,
                        Some("reduce_cmd"),
                        "`exponential` takes idle, reduce, reset_reduce or load_reduce".into(),
                    );
                }
                self.reduce_init(*reduce_cmd, "reduce_init", reduce_init.as_ref(), src);
                self.reduce_res(reduce_res.as_ref(), src);
            }
            Op::RangeSelect(insn::RangeSelect {
                dst,
                src,
                cmp0,
                bound0,
                cmp1,
                bound1,
                on_false,
                reduce_cmd,
                reduce_res,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                for (name, cmp) in [("cmp0", cmp0), ("cmp1", cmp1)] {
                    if !matches!(
                        cmp,
                        AluOp::Equal
                            | AluOp::Less
                            | AluOp::LessEqual
                            | AluOp::Greater
                            | AluOp::GreaterEqual
                    ) {
                        self.err(Rule::OperatorAllowed, Some(name), format!("`{name}` must be equal, less, less_equal, greater or greater_equal, found {cmp}"));
                    }
                }
                self.scalar("bound0", bound0, src);
                self.scalar("bound1", bound1, src);
                if on_false.get() != f32::MIN {
                    self.err(
                        Rule::AttributeValue,
                        Some("on_false"),
                        format!(
                            "`on_false` must be the fp32 minimum -3.4028235e38, found {on_false:?}"
                        ),
                    );
                }
                if !src.dtype.is_float() {
                    self.err(
                        Rule::OperandDtype,
                        Some("src"),
                        format!("`src` must be a float dtype, found {}", src.dtype),
                    );
                }
                if *reduce_cmd == ReduceCmd::LoadReduce {
                    self.err(
                        Rule::ReduceCmd,
                        Some("reduce_cmd"),
                        "`range_select` has no initial value for `load_reduce`".into(),
                    );
                }
                self.reduce_res(reduce_res.as_ref(), src);
            }
            Op::SelectReduce(insn::SelectReduce {
                dst,
                predicate,
                on_true,
                on_false,
                reduce_cmd,
                reduce_res,
                ..
            }) => {
                self.same_pf("dst", dst, "on_true", on_true);
                self.same_pf("dst", dst, "predicate", predicate);
                self.not_both_psum("on_true", on_true, "predicate", predicate);
                self.scalar("on_false", on_false, on_true);
                if !matches!(
                    predicate.dtype,
                    DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::Bool
                ) {
                    self.err(
                        Rule::OperandDtype,
                        Some("predicate"),
                        format!(
                            "`predicate` must be int8, uint8, int16, uint16 or bool, found {}",
                            predicate.dtype
                        ),
                    );
                }
                if matches!(on_true.dtype, DType::TF32 | DType::I32 | DType::U32) {
                    self.err(
                        Rule::OperandDtype,
                        Some("on_true"),
                        format!("`on_true` may not be {}", on_true.dtype),
                    );
                }
                if *reduce_cmd == ReduceCmd::LoadReduce {
                    self.err(
                        Rule::ReduceCmd,
                        Some("reduce_cmd"),
                        "`select_reduce` has no initial value for `load_reduce`".into(),
                    );
                }
                self.reduce_res(reduce_res.as_ref(), on_true);
            }
            Op::Max8(insn::Max8 { dst, src }) => {
                self.same_p("dst", dst, "src", src);
                self.free_is("dst", dst, 8);
                self.free_between("src", src, 8, 16_384);
            }
            Op::FindIndex8(insn::FindIndex8 { dst, src, vals }) => {
                self.same_p("dst", dst, "src", src);
                self.same_p("vals", vals, "src", src);
                self.free_is("dst", dst, 8);
                self.free_is("vals", vals, 8);
                self.free_between("src", src, 8, 16_384);
                if !matches!(dst.dtype, DType::U32 | DType::U16) {
                    self.err(
                        Rule::OperandDtype,
                        Some("dst"),
                        format!("`dst` must be uint32 or uint16, found {}", dst.dtype),
                    );
                }
            }
            Op::MatchReplace8(insn::MatchReplace8 {
                dst,
                src,
                vals,
                dst_idx,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.same_p("vals", vals, "src", src);
                self.free_is("vals", vals, 8);
                self.free_between("src", src, 8, 16_384);
                if let Some(idx) = dst_idx {
                    self.same_p("dst_idx", idx, "src", src);
                    self.free_is("dst_idx", idx, 8);
                    if !matches!(idx.dtype, DType::U32 | DType::U16) {
                        self.err(
                            Rule::OperandDtype,
                            Some("dst_idx"),
                            format!("`dst_idx` must be uint32 or uint16, found {}", idx.dtype),
                        );
                    }
                }
            }
            Op::BnStats(insn::BnStats { dst, src }) => {
                self.same_p("dst", dst, "src", src);
                self.free_is("dst", dst, 6);
                self.free_between("src", src, 1, u64::from(self.f.bn_stats_fmax));
            }
            Op::BnAggr(insn::BnAggr { dst, src }) => {
                self.same_p("dst", dst, "src", src);
                self.free_is("dst", dst, 2);
                if src.free_size() % 3 != 0 {
                    self.err(Rule::FreeSize, Some("src"), format!("`src` must hold (count, mean, M2) triples; its free size {} is not a multiple of 3", src.free_size()));
                }
            }
            Op::QuantizeMx(insn::QuantizeMx { dst, src, .. }) => {
                if !matches!(src.dtype, DType::F16 | DType::BF16) {
                    self.err(
                        Rule::OperandDtype,
                        Some("src"),
                        format!("`src` must be float16 or bfloat16, found {}", src.dtype),
                    );
                }
                if !matches!(dst.dtype, DType::F8E5M2x4 | DType::F8E4M3FNx4) {
                    self.err(
                        Rule::OperandDtype,
                        Some("dst"),
                        format!(
                            "`dst` must be float8_e5m2_x4 or float8_e4m3fn_x4, found {}",
                            dst.dtype
                        ),
                    );
                }
                self.mx_partitions("src", src);
                self.same_p("dst", dst, "src", src);
                if src.free_size() % 4 != 0 || dst.free_size().saturating_mul(4) != src.free_size()
                {
                    self.err(Rule::FreeSize, Some("src"), format!(
                        "`src` free size must be a multiple of 4 and `dst` a quarter of it; found {} and {}",
                        src.free_size(),
                        dst.free_size()
                    ));
                }
                self.mx_scales(op);
            }
            Op::StreamShuffle(insn::StreamShuffle { dst, src, mask }) => {
                self.same_f("dst", dst, "src", src);
                self.same_dtype("dst", dst, "src", src);
                if mask.len() != 32 {
                    self.err(
                        Rule::AttributeValue,
                        Some("mask"),
                        format!("`mask` must have 32 entries, found {}", mask.len()),
                    );
                }
                if let Some(bad) = mask.iter().find(|&&m| m >= 32 && m != 255) {
                    self.err(
                        Rule::AttributeValue,
                        Some("mask"),
                        format!("`mask` entries are 0..32 or 255 (keep), found {bad}"),
                    );
                }
            }
            Op::AffineSelect(insn::AffineSelect {
                dst,
                src,
                pattern,
                cmp,
                ..
            }) => {
                self.same_pf("dst", dst, "src", src);
                self.pattern("pattern", pattern, dst);
                if !cmp.is_comparison() {
                    self.err(
                        Rule::OperatorAllowed,
                        Some("cmp"),
                        format!("`cmp` must be a comparison, found {cmp}"),
                    );
                }
            }
            Op::LocalGather(insn::LocalGather {
                dst,
                src,
                index,
                elem_per_idx,
                valid_indices,
            }) => {
                self.same_dtype("dst", dst, "src", src);
                self.same_p("index", index, "src", src);
                self.same_p("dst", dst, "src", src);
                if src.partition_count % 16 != 0 {
                    self.err(
                        Rule::PartitionCount,
                        Some("src"),
                        format!(
                            "`src` must cover a multiple of 16 partitions, found {}",
                            src.partition_count
                        ),
                    );
                }
                if index.dtype != DType::U16 {
                    self.err(
                        Rule::OperandDtype,
                        Some("index"),
                        format!("`index` must be uint16, found {}", index.dtype),
                    );
                }
                if !matches!(elem_per_idx, 1 | 2 | 4 | 8 | 16 | 32) {
                    self.err(
                        Rule::AttributeValue,
                        Some("elem_per_idx"),
                        format!(
                            "`elem_per_idx` must be 1, 2, 4, 8, 16 or 32, found {elem_per_idx}"
                        ),
                    );
                }
                let available = index.free_size().saturating_mul(16);
                let valid = valid_indices.map_or(available, u64::from);
                if valid > available || valid > 4096 {
                    self.err(
                        Rule::AttributeValue,
                        Some("valid_indices"),
                        format!(
                            "`valid_indices` {valid} exceeds the {} indices per core (max 4096)",
                            available.min(4096)
                        ),
                    );
                }
                if dst.free_size() != valid.saturating_mul(u64::from(*elem_per_idx)) {
                    self.err(Rule::FreeSize, Some("dst"), format!(
                        "`dst` must have valid_indices × elem_per_idx = {} elements per partition, found {}",
                        valid.saturating_mul(u64::from(*elem_per_idx)),
                        dst.free_size()
                    ));
                }
            }
            Op::NGather(insn::NGather { dst, src, indices }) => {
                self.same_p("dst", dst, "src", src);
                self.same_pf("dst", dst, "indices", indices);
                self.same_dtype("dst", dst, "src", src);
                if indices.dtype != DType::U32 {
                    self.err(
                        Rule::OperandDtype,
                        Some("indices"),
                        format!("`indices` must be uint32, found {}", indices.dtype),
                    );
                }
            }
            Op::SequenceBounds(insn::SequenceBounds { dst, src }) => {
                if src.partition_count != 1 || dst.partition_count != 1 {
                    self.err(
                        Rule::PartitionCount,
                        Some("src"),
                        "`sequence_bounds` works on one partition".into(),
                    );
                }
                self.same_dtype("dst", dst, "src", src);
                if !matches!(src.dtype, DType::F32 | DType::I32) {
                    self.err(
                        Rule::OperandDtype,
                        Some("src"),
                        format!("`src` must be float32 or int32, found {}", src.dtype),
                    );
                }
                if dst.free_size() != src.free_size().saturating_mul(2) {
                    self.err(
                        Rule::FreeSize,
                        Some("dst"),
                        format!(
                            "`dst` must have 2 × {} elements, found {}",
                            src.free_size(),
                            dst.free_size()
                        ),
                    );
                }
            }
            Op::NonzeroWithCount(insn::NonzeroWithCount { dst, src, .. }) => {
                self.same_p("dst", dst, "src", src);
                if dst.free_size() != src.free_size().saturating_add(1) {
                    self.err(
                        Rule::FreeSize,
                        Some("dst"),
                        format!(
                            "`dst` must have {} elements per partition (F + 1), found {}",
                            src.free_size().saturating_add(1),
                            dst.free_size()
                        ),
                    );
                }
                if dst.dtype != DType::I32 {
                    self.err(
                        Rule::OperandDtype,
                        Some("dst"),
                        format!("`dst` must be int32, found {}", dst.dtype),
                    );
                }
                if !matches!(src.dtype, DType::F32 | DType::I32) {
                    self.err(
                        Rule::OperandDtype,
                        Some("src"),
                        format!("`src` must be float32 or int32, found {}", src.dtype),
                    );
                }
            }
            Op::RegLoad(insn::RegLoad { src: ap, .. })
            | Op::RegStore(insn::RegStore { dst: ap, .. }) => {
                let reg_field = if matches!(op, Op::RegLoad(_)) {
                    "src"
                } else {
                    "dst"
                };
                if ap.num_elements() != 1 {
                    self.err(
                        Rule::RegisterOperand,
                        Some(reg_field),
                        format!(
                            "a register moves exactly one element, the pattern has {}",
                            ap.num_elements()
                        ),
                    );
                }
                if ap.dtype.size() > 4 || ap.dtype.is_packed_x4() {
                    self.err(
                        Rule::RegisterOperand,
                        Some(reg_field),
                        format!("registers hold 32-bit values, not {}", ap.dtype),
                    );
                }
                if ap.mem == Memory::Psum {
                    self.err(
                        Rule::OperandMemory,
                        Some(reg_field),
                        "registers load and store SBUF or HBM, not PSUM".into(),
                    );
                }
            }
            Op::Branch(insn::Branch { target, .. }) | Op::Jump(insn::Jump { target }) => {
                if !labels.contains_key(target) {
                    self.err(
                        Rule::BranchTarget,
                        Some("target"),
                        format!("label {target} is not defined in this queue"),
                    );
                }
            }
            Op::RegSet(_)
            | Op::RegMove(_)
            | Op::RegAlu(_)
            | Op::Label(_)
            | Op::Nop(insn::Nop {}) => {}
            Op::CoreBarrier(insn::CoreBarrier { data }) => {
                if data
                    .as_ref()
                    .is_some_and(|d| !matches!(d.mem, Memory::Hbm(_)))
                {
                    self.err(Rule::OperandMemory, Some("data"), 
                        "`data` of `core_barrier` names the shared HBM tensor the cores synchronise on, not an on-chip tile"
                            .into(),
                    );
                }
            }
        }
    }

    /// Equal element counts and castable dtypes of a DMA's two sides.
    fn dma_elements(&mut self, dst: &AccessPattern, src: &AccessPattern, hwdge: bool) {
        if dst.num_elements() != src.num_elements() {
            self.err(
                Rule::DmaElements,
                Some("dst"),
                format!(
                    "`dst` has {} elements but `src` has {}",
                    dst.num_elements(),
                    src.num_elements()
                ),
            );
        }
        if dst.dtype != src.dtype {
            if dst.dtype.is_packed_x4() || src.dtype.is_packed_x4() {
                self.err(
                    Rule::DmaCast,
                    Some("dst"),
                    "DMA cannot cast packed x4 dtypes; `dst` and `src` dtypes must be equal".into(),
                );
            }
            if hwdge {
                self.err(
                    Rule::DmaCast,
                    Some("dst"),
                    format!(
                        "hardware DGE copies raw bytes: `dst` is {} but `src` is {}",
                        dst.dtype, src.dtype
                    ),
                );
            }
        }
    }

    /// The row index of a gather or scatter: an SBUF `(rows, 1)` int32/uint32 vector.
    fn row_index(&mut self, index: &AccessPattern, rows: u32) {
        if index.mem != Memory::Sbuf {
            self.err(
                Rule::OperandMemory,
                Some("index"),
                "`index` must be in SBUF".into(),
            );
        }
        if index.partition_count != rows || index.free_size() != 1 {
            self.err(Rule::IndexShape, Some("index"), format!(
                "`index` must be [{rows}, 1] (one row number per transferred row), found [{}, {}]",
                index.partition_count,
                index.free_size()
            ));
        }
        if !matches!(index.dtype, DType::I32 | DType::U32) {
            self.err(
                Rule::OperandDtype,
                Some("index"),
                format!("`index` must be int32 or uint32, found {}", index.dtype),
            );
        }
    }

    fn dge(&mut self, dge: DgeMode) {
        if dge == DgeMode::Hwdge && !self.f.hwdge {
            self.err(
                Rule::TargetFeature,
                Some("dge"),
                format!("{} has no hardware DGE", self.target),
            )
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &mut self,
        dst: &AccessPattern,
        stationary: &AccessPattern,
        moving: &AccessPattern,
        transpose: bool,
        perf_mode: MatmulPerfMode,
        tile_position: Option<[u32; 2]>,
        tile_size: Option<[u32; 2]>,
    ) {
        let f = self.f;
        self.same_p("stationary", stationary, "moving", moving);
        if stationary.partition_start != moving.partition_start {
            self.err(
                Rule::SameStart,
                Some("stationary"),
                "`stationary` and `moving` must start on the same partition (the same PE rows)"
                    .into(),
            );
        }
        let double = perf_mode == MatmulPerfMode::DoubleRow;
        let (m, n) = if double {
            if !f.double_row {
                self.err(
                    Rule::TargetFeature,
                    Some("perf_mode"),
                    format!("{} has no double-row mode", self.target),
                );
            }
            for (name, ap) in [("stationary", stationary), ("moving", moving)] {
                if ap.dims.len() != 2 || ap.dims[0].count != 2 {
                    self.err(Rule::DoubleRowLayout, Some(name), format!("double-row `{name}` must be [P, 2, n] (two free dims, the first of count 2)"));
                }
                if !ap.dtype.is_fp8() {
                    self.err(
                        Rule::OperandDtype,
                        Some(name),
                        format!("double-row `{name}` must be fp8, found {}", ap.dtype),
                    );
                }
            }
            if stationary.dtype.is_fp8()
                && moving.dtype.is_fp8()
                && mixes_e4m3(stationary.dtype, moving.dtype)
            {
                self.err(
                    Rule::InputDtypeMix,
                    Some("stationary"),
                    "float8_e4m3 and float8_e4m3fn cannot be mixed".into(),
                );
            }
            if transpose || tile_position.is_some() {
                self.err(
                    Rule::DoubleRowExclusive,
                    Some("perf_mode"),
                    "double-row mode cannot be combined with transpose mode or PE tiling".into(),
                );
            }
            (stationary.free_size() / 2, moving.free_size() / 2)
        } else {
            (stationary.free_size(), moving.free_size())
        };
        if m > u64::from(f.matmul_stationary_fmax) {
            self.err(
                Rule::MatmulSize,
                Some("stationary"),
                format!(
                    "`stationary` has {m} columns; the PE array has {}",
                    f.matmul_stationary_fmax
                ),
            );
        }
        self.matmul_result(dst, m, n);
        let psum_bytes = n.saturating_mul(dst.elem_bytes());
        if psum_bytes > u64::from(f.psum_total_bytes()) {
            self.err(
                Rule::PsumBanks,
                Some("dst"),
                format!("`dst` needs {psum_bytes} PSUM bytes per partition"),
            );
        }
        if transpose {
            if self.target < Target::Trn2 {
                self.err(
                    Rule::TargetFeature,
                    Some("transpose"),
                    "transpose mode needs trn2".into(),
                );
            }
            if dst.dtype != stationary.dtype && dst.dtype != DType::F32 {
                self.err(
                    Rule::OperandDtype,
                    Some("dst"),
                    format!(
                        "a transpose-mode `dst` keeps the data dtype {} or is float32, found {}",
                        stationary.dtype, dst.dtype
                    ),
                );
            }
        } else {
            let target = self.target;
            let legal = |d: DType| {
                matches!(
                    d,
                    DType::F8E4M3
                        | DType::F8E5M2
                        | DType::BF16
                        | DType::F16
                        | DType::TF32
                        | DType::F32
                ) || (d == DType::F8E4M3FN && target >= Target::Trn3)
            };
            for (name, ap) in [("stationary", stationary), ("moving", moving)] {
                if !legal(ap.dtype) {
                    self.err(
                        Rule::OperandDtype,
                        Some(name),
                        format!("`{name}` dtype {} is not a TensorE input type", ap.dtype),
                    );
                }
            }
            let wide = |d: DType| matches!(d, DType::F32 | DType::TF32);
            if wide(stationary.dtype) != wide(moving.dtype) {
                self.err(
                    Rule::InputDtypeMix,
                    Some("stationary"),
                    "fp32/tf32 inputs cannot be mixed with narrower ones".into(),
                );
            }
            if mixes_e4m3(stationary.dtype, moving.dtype) {
                self.err(
                    Rule::InputDtypeMix,
                    Some("stationary"),
                    "float8_e4m3 and float8_e4m3fn cannot be mixed".into(),
                );
            }
            self.psum_result_dtype(dst);
        }
        self.psum_banks(dst);
        self.pe_tiles(dst, stationary, m, tile_position, tile_size, true);
    }

    /// The moving-size limit for `dst`'s dtype, and `dst` being
    /// stationary columns × moving columns (`[m, n]`).
    fn matmul_result(&mut self, dst: &AccessPattern, m: u64, n: u64) {
        let fmax = if dst.dtype == DType::BF16 {
            self.f.matmul_moving_fmax_bf16
        } else {
            self.f.matmul_moving_fmax_fp32
        };
        if n > u64::from(fmax) {
            self.err(
                Rule::MatmulSize,
                Some("moving"),
                format!(
                    "`moving` has {n} columns; the limit with a {} `dst` is {fmax}",
                    dst.dtype
                ),
            );
        }
        if u64::from(dst.partition_count) != m || dst.free_size() != n {
            self.err(Rule::MatmulDstShape, Some("dst"), format!(
                "`dst` must be [{m}, {n}] (stationary columns × moving columns), found [{}, {}]",
                dst.partition_count,
                dst.free_size()
            ));
        }
    }

    /// A matmul result stays within `matmul_psum_banks` banks, starting
    /// at a bank boundary's bank (v3: inside one 2 KiB bank).
    fn psum_banks(&mut self, dst: &AccessPattern) {
        let bank = i64::from(self.f.psum_bank_bytes);
        if let Some((lo, hi)) = dst.byte_range()
            && dst.mem == Memory::Psum
            && lo >= 0
            && hi > lo
        {
            let first = lo / bank;
            let last = (hi - 1) / bank;
            let banks = self.f.matmul_psum_banks;
            if last - first + 1 > i64::from(banks) {
                self.err(Rule::PsumBanks, Some("dst"), format!(
                    "`dst` spans PSUM banks {first}..={last}; a matmul result on {} may use {banks} bank{}",
                    self.target,
                    if banks == 1 { "" } else { "s" }
                ));
            }
        }
    }

    fn psum_result_dtype(&mut self, dst: &AccessPattern) {
        let ok = dst.dtype == DType::F32 || (dst.dtype == DType::BF16 && self.f.psum_bf16);
        if !ok {
            let allowed = if self.f.psum_bf16 {
                "float32 or bfloat16"
            } else {
                "float32"
            };
            self.err(
                Rule::OperandDtype,
                Some("dst"),
                format!(
                    "matmul results are {allowed} on {}, `dst` is {}",
                    self.target, dst.dtype
                ),
            );
        }
    }

    fn pe_tiles(
        &mut self,
        dst: &AccessPattern,
        stationary: &AccessPattern,
        m: u64,
        tile_position: Option<[u32; 2]>,
        tile_size: Option<[u32; 2]>,
        columns: bool,
    ) {
        let (pos, size) = match (tile_position, tile_size) {
            (None, None) => return,
            (Some(p), Some(s)) => (p, s),
            _ => {
                self.err(
                    Rule::PeTile,
                    Some("tile_position"),
                    "`tile_position` and `tile_size` must be given together".into(),
                );
                return;
            }
        };
        let min = self.f.pe_tile_min;
        for (what, start, size) in [("row", pos[0], size[0]), ("column", pos[1], size[1])] {
            if ![min, 64, 128].contains(&size) {
                self.err(
                    Rule::PeTile,
                    Some("tile_size"),
                    format!("PE tile {what} size must be {min}, 64 or 128, found {size}"),
                );
            } else if start % size != 0 || start >= 128 {
                self.err(Rule::PeTile, Some("tile_position"), format!(
                    "PE tile {what} start {start} must be a multiple of the size {size} below 128"
                ));
            }
        }
        if !columns && (pos[1] != 0 || size[1] != 128) {
            self.err(
                Rule::PeTile,
                Some("tile_position"),
                "MX matmul tiles rows only: the column start must be 0 and the column size 128"
                    .into(),
            );
        }
        if stationary.partition_count > size[0] || m > u64::from(size[1]) {
            self.err(
                Rule::PeTile,
                Some("stationary"),
                format!(
                    "the stationary tile [{}, {m}] does not fit the PE tile {}×{}",
                    stationary.partition_count, size[0], size[1]
                ),
            );
        }
        if stationary.partition_start != pos[0] {
            self.err(
                Rule::PeTile,
                Some("stationary"),
                format!(
                    "inputs must start on partition {} (the PE tile's first row)",
                    pos[0]
                ),
            );
        }
        if columns && dst.partition_start != pos[1] {
            self.err(
                Rule::PeTile,
                Some("dst"),
                format!(
                    "`dst` must start on partition {} (the PE tile's first column)",
                    pos[1]
                ),
            );
        }
    }

    /// `nc_matmul_mx`'s rules (`op` is `i`'s instruction).
    fn matmul_mx(&mut self, op: &Op, i: &insn::NcMatmulMx) {
        let insn::NcMatmulMx {
            dst,
            stationary,
            moving,
            tile_position,
            tile_size,
            ..
        } = i;
        let (tile_position, tile_size) = (*tile_position, *tile_size);
        for (name, ap) in [("stationary", stationary), ("moving", moving)] {
            if !ap.dtype.is_packed_x4() {
                self.err(
                    Rule::OperandDtype,
                    Some(name),
                    format!("`{name}` must be a packed x4 MX dtype, found {}", ap.dtype),
                );
            }
            self.mx_partitions(name, ap);
        }
        self.same_p("stationary", stationary, "moving", moving);
        if stationary.partition_start != moving.partition_start {
            self.err(
                Rule::SameStart,
                Some("stationary"),
                "`stationary` and `moving` must start on the same partition".into(),
            );
        }
        let m = stationary.free_size();
        let n = moving.free_size();
        if !m.is_multiple_of(2) || m > u64::from(self.f.matmul_stationary_fmax) {
            self.err(
                Rule::MatmulSize,
                Some("stationary"),
                format!(
                    "`stationary` free size must be even and at most {}, found {m}",
                    self.f.matmul_stationary_fmax
                ),
            );
        }
        self.matmul_result(dst, m, n);
        self.psum_result_dtype(dst);
        self.psum_banks(dst);
        self.mx_scales(op);
        self.pe_tiles(dst, stationary, m, tile_position, tile_size, false);
    }

    /// MX data: P a multiple of 32 up to 128.
    fn mx_partitions(&mut self, name: &'static str, ap: &AccessPattern) {
        if !ap.partition_count.is_multiple_of(32) || ap.partition_count > 128 {
            self.err(
                Rule::PartitionCount,
                Some(name),
                format!(
                    "`{name}` must cover 32, 64, 96 or 128 partitions, found {}",
                    ap.partition_count
                ),
            );
        }
    }

    /// The MX scale layout: start at quadrant offset 0/4/8/12 in the data's
    /// first quadrant, cover 32·(P/32 − 1) + 4 partitions, same free size.
    fn mx_scale(&mut self, name: &'static str, scale: &AccessPattern, data: &AccessPattern) {
        if !matches!(scale.dtype, DType::F8E8M0 | DType::U8) {
            self.err(
                Rule::OperandDtype,
                Some(name),
                format!(
                    "`{name}` must be float8_e8m0fnu or uint8, found {}",
                    scale.dtype
                ),
            );
        }
        let off = scale.partition_start % 32;
        if !matches!(off, 0 | 4 | 8 | 12) || scale.partition_start / 32 != data.partition_start / 32
        {
            self.err(Rule::MxScaleLayout, Some(name), format!(
                "`{name}` must start at offset 0, 4, 8 or 12 of the data's first quadrant (partition {}), found partition {}",
                data.partition_start / 32 * 32,
                scale.partition_start
            ));
        }
        let quadrants = (data.partition_count / 32).max(1);
        let want = 32u64 * u64::from(quadrants - 1) + 4;
        if u64::from(scale.partition_count) != want {
            self.err(Rule::MxScaleLayout, Some(name), format!(
                "`{name}` must cover {want} partitions (4 per quadrant of the {}-partition data), found {}",
                data.partition_count, scale.partition_count
            ));
        }
        if scale.free_size() != data.free_size() {
            self.err(
                Rule::MxScaleLayout,
                Some(name),
                format!(
                    "`{name}` must have the data's free size {}, found {}",
                    data.free_size(),
                    scale.free_size()
                ),
            );
        }
    }

    // ------------------------------------------------------------ small checks

    fn same_p(&mut self, a: &'static str, x: &AccessPattern, b: &str, y: &AccessPattern) {
        if x.partition_count != y.partition_count {
            self.err(
                Rule::SamePartitions,
                Some(a),
                format!(
                    "`{a}` covers {} partitions but `{b}` covers {}",
                    x.partition_count, y.partition_count
                ),
            );
        }
    }

    fn same_f(&mut self, a: &'static str, x: &AccessPattern, b: &str, y: &AccessPattern) {
        if x.free_size() != y.free_size() {
            self.err(
                Rule::SameFreeSize,
                Some(a),
                format!(
                    "`{a}` has {} elements per partition but `{b}` has {}",
                    x.free_size(),
                    y.free_size()
                ),
            );
        }
    }

    fn same_pf(&mut self, a: &'static str, x: &AccessPattern, b: &str, y: &AccessPattern) {
        self.same_p(a, x, b, y);
        self.same_f(a, x, b, y);
    }

    fn same_dtype(&mut self, a: &'static str, x: &AccessPattern, b: &str, y: &AccessPattern) {
        if x.dtype != y.dtype {
            self.err(
                Rule::SameDtype,
                Some(a),
                format!(
                    "`{a}` is {} but `{b}` is {}; they must match",
                    x.dtype, y.dtype
                ),
            );
        }
    }

    fn free_is(&mut self, name: &'static str, ap: &AccessPattern, n: u64) {
        if ap.free_size() != n {
            self.err(
                Rule::FreeSize,
                Some(name),
                format!(
                    "`{name}` must have {n} elements per partition, found {}",
                    ap.free_size()
                ),
            );
        }
    }

    fn free_between(&mut self, name: &'static str, ap: &AccessPattern, lo: u64, hi: u64) {
        let f = ap.free_size();
        if f < lo || f > hi {
            self.err(
                Rule::FreeSize,
                Some(name),
                format!("`{name}` must have {lo}..={hi} elements per partition, found {f}"),
            );
        }
    }

    fn not_both_psum(&mut self, a: &'static str, x: &AccessPattern, b: &str, y: &AccessPattern) {
        if x.mem == Memory::Psum && y.mem == Memory::Psum {
            self.err(
                Rule::BothPsum,
                Some(a),
                format!("`{a}` and `{b}` are both in PSUM; at most one input may be"),
            );
        }
    }

    /// A `(P,1)` vector operand matches `like`'s partitions.
    fn scalar(&mut self, name: &'static str, s: &Scalar, like: &AccessPattern) {
        self.scalar_named(name, name, s, like);
    }

    /// `scalar` for field `field`, called `name` in the messages.
    fn scalar_named(&mut self, field: &'static str, name: &str, s: &Scalar, like: &AccessPattern) {
        if let Scalar::Vector(ap) = s {
            if ap.partition_count != like.partition_count {
                self.err(
                    Rule::VectorOperand,
                    Some(field),
                    format!(
                        "`{name}` covers {} partitions but the data covers {}",
                        ap.partition_count, like.partition_count
                    ),
                );
            }
            if ap.free_size() != 1 {
                self.err(
                    Rule::VectorOperand,
                    Some(field),
                    format!(
                        "`{name}` must be a (P,1) vector, found {} elements per partition",
                        ap.free_size()
                    ),
                );
            }
        }
    }

    fn opt_scalar(&mut self, name: &'static str, s: Option<&Scalar>, like: &AccessPattern) {
        if let Some(s) = s {
            self.scalar(name, s, like);
        }
    }

    fn reduce_res(&mut self, res: Option<&AccessPattern>, like: &AccessPattern) {
        if let Some(r) = res {
            if r.partition_count != like.partition_count || r.free_size() != 1 {
                self.err(
                    Rule::ReduceRes,
                    Some("reduce_res"),
                    format!(
                        "`reduce_res` must be [{}, 1], found [{}, {}]",
                        like.partition_count,
                        r.partition_count,
                        r.free_size()
                    ),
                );
            }
            if !r.dtype.is_float() {
                self.err(
                    Rule::OperandDtype,
                    Some("reduce_res"),
                    format!("`reduce_res` must be a float dtype, found {}", r.dtype),
                );
            }
        }
    }

    /// An initial value (field `field`) is given exactly with `load_reduce`.
    fn reduce_init(
        &mut self,
        cmd: ReduceCmd,
        field: &'static str,
        init: Option<&Scalar>,
        like: &AccessPattern,
    ) {
        match (cmd == ReduceCmd::LoadReduce, init) {
            (true, None) => self.err(
                Rule::ReduceInit,
                Some(field),
                "`reduce_cmd=load_reduce` needs an initial value".into(),
            ),
            (false, Some(_)) => self.err(
                Rule::ReduceInit,
                Some(field),
                format!("an initial value is only used with `load_reduce`, not `{cmd}`"),
            ),
            (_, Some(s)) => self.scalar_named(field, "initial value", s, like),
            _ => {}
        }
    }

    /// A binary ALU operator (not unary, bypass or average).
    fn binary_op(&mut self, name: &'static str, op: AluOp) {
        if op.is_unary() || op == AluOp::Average {
            self.err(
                Rule::BinaryOperator,
                Some(name),
                format!("`{name}` must be a binary operator, found {op}"),
            );
        }
    }

    /// `op`, field `name`, is not a bitvector operator.
    fn arithmetic_op(&mut self, name: &'static str, op: AluOp) {
        if op.is_bitvec() {
            self.err(
                Rule::ArithmeticOperator,
                Some(name),
                format!("`{name}` must be arithmetic, found {op}"),
            );
        }
    }

    /// An operator with its optional operand.
    fn op_operand(
        &mut self,
        op_name: &'static str,
        op: AluOp,
        operand_name: &'static str,
        operand: Option<&Scalar>,
        like: &AccessPattern,
    ) {
        if op == AluOp::Average {
            self.err(
                Rule::OperatorAllowed,
                Some(op_name),
                format!("`{op_name}` may not be average"),
            );
        }
        match (op.is_unary(), operand) {
            (false, None) => self.err(
                Rule::OperandNeeded,
                Some(operand_name),
                format!("`{op_name}={op}` needs `{operand_name}`"),
            ),
            (_, Some(s)) => self.scalar(operand_name, s, like),
            _ => {}
        }
    }

    fn int_operands(&mut self, aps: &[&AccessPattern]) {
        if let Some(ap) = aps.iter().find(|ap| !ap.dtype.is_int()) {
            self.err(
                Rule::IntegerOperands,
                None,
                format!(
                    "bitwise operators need integer operands, found {}",
                    ap.dtype
                ),
            );
        }
    }

    fn pattern(&mut self, name: &'static str, pattern: &[crate::ap::Dim], dst: &AccessPattern) {
        if pattern.len() > MAX_DIMS {
            self.err(
                Rule::PatternSize,
                Some(name),
                format!("`{name}` has {} dims; at most {MAX_DIMS}", pattern.len()),
            );
        }
        let n = pattern
            .iter()
            .fold(1u64, |acc, d| acc.saturating_mul(u64::from(d.count)));
        if n != dst.free_size() {
            self.err(
                Rule::PatternSize,
                Some(name),
                format!(
                    "`{name}` produces {n} elements per partition but `dst` has {}",
                    dst.free_size()
                ),
            );
        }
    }

    // ------------------------------------------------------------ semaphores

    fn semaphores(&mut self) {
        let p = self.program;
        let n = p.semaphores.len();
        // Signals per semaphore per stream, and whether the stream loops.
        let loops: Vec<bool> = p
            .queues
            .iter()
            .map(|s| {
                s.insts
                    .iter()
                    .any(|i| matches!(i.op, Op::Branch(_) | Op::Jump(_)))
            })
            .collect();
        let mut total = vec![0u64; n];
        let mut unbounded = vec![false; n];
        for (si, s) in p.queues.iter().enumerate() {
            for inst in &s.insts {
                for sem in &inst.signals {
                    if let Some(t) = total.get_mut(sem.0 as usize) {
                        *t += 1;
                        unbounded[sem.0 as usize] |= loops[si];
                    }
                }
            }
        }
        for (si, s) in p.queues.iter().enumerate() {
            // Signals of each semaphore by earlier instructions of this stream.
            let mut before = vec![0u64; n];
            let mut own_total = vec![0u64; n];
            for inst in &s.insts {
                for sem in &inst.signals {
                    if let Some(c) = own_total.get_mut(sem.0 as usize) {
                        *c += 1;
                    }
                }
            }
            for (i, inst) in s.insts.iter().enumerate() {
                self.at = Some((s.queue, i, inst));
                for w in &inst.waits {
                    let k = w.sem.0 as usize;
                    if k >= n {
                        continue;
                    }
                    let name = &p.semaphores[k].name;
                    if total[k] == 0 && (w.value > 0 || w.reg.is_some()) {
                        self.err(
                            Rule::WaitUnsignalled,
                            None,
                            format!("waits for `{name}` but no instruction signals `{name}`"),
                        );
                        continue;
                    }
                    if w.reg.is_some() || unbounded[k] || loops[si] {
                        continue;
                    }
                    let available = total[k] - own_total[k] + before[k];
                    if u64::from(w.value) > available {
                        self.err(Rule::Deadlock, None, format!(
                            "waits for `{name}` >= {} but at most {available} signals of `{name}` can happen before it: this queue would wait forever",
                            w.value
                        ));
                    }
                }
                for sem in &inst.signals {
                    if let Some(c) = before.get_mut(sem.0 as usize) {
                        *c += 1;
                    }
                }
            }
        }
        self.at = None;
    }
}

/// Whether a compute-engine operand may start at `start` with `count`
/// partitions (isa.md §2.1).
fn start_allowed(start: u32, count: u32) -> bool {
    match count {
        65.. => start == 0,
        33..=64 => start == 0 || start == 64,
        _ => start.is_multiple_of(32),
    }
}

fn start_rule(count: u32) -> &'static str {
    match count {
        65.. => "more than 64 partitions must start at partition 0",
        33..=64 => "33 to 64 partitions must start at partition 0 or 64",
        _ => "up to 32 partitions must start at partition 0, 32, 64 or 96",
    }
}

fn mixes_e4m3(a: DType, b: DType) -> bool {
    matches!(
        (a, b),
        (DType::F8E4M3, DType::F8E4M3FN) | (DType::F8E4M3FN, DType::F8E4M3)
    )
}

#[cfg(test)]
mod tests;
