//! The kernel: arenas of storages, ops, registers and loops, the body as a
//! tree of items, the arguments and outputs, and the source-location side
//! tables.
//!
//! See the crate documentation for what each piece means at run time.

use std::fmt;
use std::sync::Arc;

use nkic_diag::{FileId, SourceMap, Span};
use nkic_isa::{DType, Target};

use crate::arena::{Arena, Entity, Handle, SecondaryMap};
use crate::op::{Op, RegOrImm};

/// A source location: a file of the kernel's file table and a byte span in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SrcLoc {
    pub file: FileId,
    pub span: Span,
}

impl SrcLoc {
    pub fn new(file: FileId, span: Span) -> SrcLoc {
        SrcLoc { file, span }
    }
}

/// The memory a storage lives in (language.md §6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Buffer {
    /// `nl.shared_hbm`: device HBM visible to all program instances; kernel
    /// outputs live here.
    SharedHbm,
    /// `nl.private_hbm` (alias `nl.hbm`): device HBM private to one instance.
    PrivateHbm,
    /// `nl.sbuf`: 128 partitions of on-chip state buffer.
    Sbuf,
    /// `nl.psum`: 128 partitions of on-chip partial-sum buffer (8 banks of 2 KiB).
    Psum,
}

impl Buffer {
    /// Every buffer, in declaration order.
    pub const ALL: [Buffer; 4] = [
        Buffer::SharedHbm,
        Buffer::PrivateHbm,
        Buffer::Sbuf,
        Buffer::Psum,
    ];

    /// The NKI spelling (`nl.<name>`), used by the printer.
    pub fn name(self) -> &'static str {
        match self {
            Buffer::SharedHbm => "shared_hbm",
            Buffer::PrivateHbm => "private_hbm",
            Buffer::Sbuf => "sbuf",
            Buffer::Psum => "psum",
        }
    }

    pub fn from_name(text: &str) -> Option<Buffer> {
        Buffer::ALL.into_iter().find(|b| b.name() == text)
    }

    pub fn is_hbm(self) -> bool {
        matches!(self, Buffer::SharedHbm | Buffer::PrivateHbm)
    }

    /// True for SBUF and PSUM, whose first dim is the partition dim.
    pub fn is_on_chip(self) -> bool {
        !self.is_hbm()
    }
}

impl fmt::Display for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A requested on-chip placement (`nl.ndarray(..., address=(p, f))`): the
/// start partition and the byte offset within every partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Address {
    pub partition: u32,
    pub byte: u64,
}

/// An allocation: one tensor's memory.
///
/// A storage is created once per execution of the allocating statement
/// during specialization, so a tensor allocated inside the body of a static
/// loop is a distinct storage per iteration. Inside a dynamic loop body the
/// statement is specialized once, so the storage is allocated once and
/// reused by every run-time iteration (`scope` names that loop).
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// The user's `name=` or a generated name; may be empty. Not unique.
    pub name: String,
    pub buffer: Buffer,
    pub dtype: DType,
    /// The allocation's shape; for SBUF/PSUM `shape[0]` is the partition count.
    pub shape: Vec<u64>,
    /// A manual placement, if the kernel asked for one.
    pub address: Option<Address>,
    /// The static loop iteration that allocated it.
    pub loop_ctx: LoopCtx,
    /// The innermost dynamic loop whose body allocated it.
    pub scope: Option<Handle<DynLoop>>,
    /// The bytes an HBM storage holds on entry (a constant:
    /// `nl.shared_constant`), row-major little-endian elements of `dtype`,
    /// exactly `bytes()` of them; `None`: uninitialised. Never on chip, on
    /// an argument or on a returned tensor (the verifier's rules).
    pub data: Option<Arc<[u8]>>,
}

impl Entity for Storage {
    const PREFIX: &'static str = "t";
}

impl Storage {
    /// Number of elements (saturating, so malformed shapes cannot overflow).
    pub fn numel(&self) -> u64 {
        saturating_product(self.shape.iter().copied())
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.numel().saturating_mul(u64::from(self.dtype.size()))
    }

    /// Partitions used: `shape[0]` on chip, 1 for HBM (which is linear).
    pub fn partitions(&self) -> u64 {
        if self.buffer.is_on_chip() {
            self.shape.first().copied().unwrap_or(1)
        } else {
            1
        }
    }

    /// Elements per partition on chip (the product of the free dims); all
    /// elements for HBM.
    pub fn elems_per_partition(&self) -> u64 {
        if self.buffer.is_on_chip() {
            saturating_product(self.shape.iter().skip(1).copied())
        } else {
            self.numel()
        }
    }

    /// Bytes per partition on chip; the whole size for HBM.
    pub fn bytes_per_partition(&self) -> u64 {
        self.elems_per_partition()
            .saturating_mul(u64::from(self.dtype.size()))
    }

    /// Row-major element strides of the storage's own shape.
    pub fn row_major_strides(&self) -> Vec<u64> {
        let mut strides = vec![1u64; self.shape.len()];
        for k in (0..self.shape.len().saturating_sub(1)).rev() {
            strides[k] = strides[k + 1].saturating_mul(self.shape[k + 1]);
        }
        strides
    }
}

/// The product of `values`, saturating at `u64::MAX`.
pub(crate) fn saturating_product(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(1u64, u64::saturating_mul)
}

/// How a kernel uses an argument tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArgKind {
    /// Only read.
    Input,
    /// Only written (an output buffer passed in).
    Output,
    /// Read and written in place.
    InOut,
}

impl ArgKind {
    pub const ALL: [ArgKind; 3] = [ArgKind::Input, ArgKind::Output, ArgKind::InOut];

    pub fn name(self) -> &'static str {
        match self {
            ArgKind::Input => "input",
            ArgKind::Output => "output",
            ArgKind::InOut => "inout",
        }
    }

    pub fn from_name(text: &str) -> Option<ArgKind> {
        ArgKind::ALL.into_iter().find(|k| k.name() == text)
    }
}

/// One tensor argument of the kernel, in parameter order. Its name, dtype
/// and shape are those of its storage (an HBM storage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelArg {
    pub storage: Handle<Storage>,
    pub kind: ArgKind,
}

/// The kind of a statically unrolled loop (language.md §5.2).
///
/// All of them are unrolled by the specializer; the kind tells the backend
/// what the author promised about the iterations (see the crate doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StaticLoopKind {
    /// Python `range`.
    Range,
    /// `nl.affine_range`: no loop-carried dependency other than associative
    /// accumulation.
    AffineRange,
    /// `nl.sequential_range`: iterations depend on each other.
    SequentialRange,
    /// `nl.static_range`.
    StaticRange,
    /// A `for` over a compile-time container, or an unrolled compile-time
    /// `while`.
    Iter,
}

impl StaticLoopKind {
    pub const ALL: [StaticLoopKind; 5] = [
        StaticLoopKind::Range,
        StaticLoopKind::AffineRange,
        StaticLoopKind::SequentialRange,
        StaticLoopKind::StaticRange,
        StaticLoopKind::Iter,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StaticLoopKind::Range => "range",
            StaticLoopKind::AffineRange => "affine_range",
            StaticLoopKind::SequentialRange => "sequential_range",
            StaticLoopKind::StaticRange => "static_range",
            StaticLoopKind::Iter => "iter",
        }
    }

    pub fn from_name(text: &str) -> Option<StaticLoopKind> {
        StaticLoopKind::ALL.into_iter().find(|k| k.name() == text)
    }
}

/// One execution of a static (unrolled) loop statement.
///
/// Executing the same `for` statement again (for example an inner loop
/// under each iteration of an outer one) creates another `StaticLoop`.
#[derive(Clone, Debug, PartialEq)]
pub struct StaticLoop {
    pub kind: StaticLoopKind,
    /// The number of iterations the specializer ran.
    pub trips: u32,
    /// The loop context the loop statement itself ran in.
    pub parent: LoopCtx,
}

impl Entity for StaticLoop {
    const PREFIX: &'static str = "L";
}

/// One iteration of a static loop: the loop and the 0-based iteration number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoopIter {
    pub lp: Handle<StaticLoop>,
    pub index: u32,
}

/// Where in the static loop nest an op or storage was created: the
/// innermost enclosing static loop iteration, or `None` outside any static
/// loop. The full stack is recovered through `StaticLoop::parent`
/// ([`Kernel::loop_stack`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoopCtx(pub Option<LoopIter>);

impl LoopCtx {
    /// Outside every static loop.
    pub const TOP: LoopCtx = LoopCtx(None);
}

/// A virtual 32-bit sequencer register (language.md §5.3, isa.md §5.6).
///
/// A register is defined exactly once: by a `reg_alloc` op, or as the
/// induction variable of a counted dynamic loop (then it is read-only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Register {
    /// A debug name (the Python variable), may be empty.
    pub name: String,
}

impl Entity for Register {
    const PREFIX: &'static str = "r";
}

/// The handle of a register.
pub type RegHandle = Handle<Register>;

/// What a dynamic loop iterates over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DynLoopKind {
    /// `for i in nl.dynamic_range(start, stop, step)`; the induction
    /// register runs over `[start, stop)` by `step > 0`.
    Range {
        start: RegOrImm,
        stop: RegOrImm,
        step: u32,
    },
    /// `nl.fori_loop(lower, upper, body, step)`: as `Range`; tensors
    /// allocated in the body may not be used after the loop.
    Fori {
        start: RegOrImm,
        stop: RegOrImm,
        step: u32,
    },
    /// `while cond:` and `nl.while_loop`: test `cond != 0` before every
    /// iteration; the body updates `cond`.
    While { cond: RegHandle },
}

impl DynLoopKind {
    /// The spelling in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            DynLoopKind::Range { .. } => "dynamic_range",
            DynLoopKind::Fori { .. } => "fori_loop",
            DynLoopKind::While { .. } => "while",
        }
    }
}

/// A dynamic (hardware) loop: a region whose body runs a run-time number of
/// times.
#[derive(Clone, Debug, PartialEq)]
pub struct DynLoop {
    pub kind: DynLoopKind,
    /// The induction register of `Range`/`Fori`; `None` for `While`.
    pub induction: Option<RegHandle>,
    /// The static loop iteration the loop statement was specialized in.
    pub loop_ctx: LoopCtx,
    pub body: Block,
}

impl Entity for DynLoop {
    const PREFIX: &'static str = "dyn";
}

/// One element of a block: an op or a nested dynamic loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    Op(Handle<Op>),
    Loop(Handle<DynLoop>),
}

/// A sequence of items executed in order.
pub type Block = Vec<Item>;

/// A `no_reorder` scheduling group: ops that share one keep their program
/// order relative to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NoReorderGroup(pub u32);

impl fmt::Display for NoReorderGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "g{}", self.0)
    }
}

/// One call site of the inlined call chain an op came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CallFrame {
    /// The call expression.
    pub loc: SrcLoc,
    /// The frame of the caller's own call site; `None` for calls made from
    /// the kernel function.
    pub parent: Option<Handle<CallFrame>>,
}

impl Entity for CallFrame {
    const PREFIX: &'static str = "call";
}

/// Source locations and diagnostic notes, kept beside the IR.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spans {
    pub ops: SecondaryMap<Op, SrcLoc>,
    pub storages: SecondaryMap<Storage, SrcLoc>,
    pub dyn_loops: SecondaryMap<DynLoop, SrcLoc>,
    pub static_loops: SecondaryMap<StaticLoop, SrcLoc>,
    /// The innermost call frame of an op created inside an inlined helper.
    pub call_chains: SecondaryMap<Op, Handle<CallFrame>>,
    pub call_frames: Arena<CallFrame>,
}

/// A source file referenced by the kernel's locations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFileName {
    pub id: FileId,
    pub name: String,
}

/// A specialized kernel: everything the backend needs to compile it.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The kernel function's name.
    pub name: String,
    pub target: Target,
    /// This instance's `nl.program_id` per grid axis.
    pub program_id: Vec<u32>,
    /// `nl.num_programs` per grid axis (empty without a grid).
    pub num_programs: Vec<u32>,
    /// The files locations refer to, by `FileId`.
    pub files: Vec<SourceFileName>,
    pub storages: Arena<Storage>,
    pub ops: Arena<Op>,
    pub registers: Arena<Register>,
    pub static_loops: Arena<StaticLoop>,
    pub dyn_loops: Arena<DynLoop>,
    /// Tensor arguments in parameter order.
    pub args: Vec<KernelArg>,
    /// Returned tensors in return order.
    pub outputs: Vec<Handle<Storage>>,
    /// The top-level block.
    pub body: Block,
    pub spans: Spans,
}

impl Kernel {
    /// An empty kernel.
    pub fn new(name: &str, target: Target) -> Kernel {
        Kernel {
            name: name.to_owned(),
            target,
            program_id: Vec::new(),
            num_programs: Vec::new(),
            files: Vec::new(),
            storages: Arena::new(),
            ops: Arena::new(),
            registers: Arena::new(),
            static_loops: Arena::new(),
            dyn_loops: Arena::new(),
            args: Vec::new(),
            outputs: Vec::new(),
            body: Vec::new(),
            spans: Spans::default(),
        }
    }

    /// The display name of file `id`.
    ///
    /// (The text form of the whole kernel is its `Display`, the same as
    /// [`print`](crate::print()).)
    pub fn file_name(&self, id: FileId) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.name.as_str())
    }

    /// The static loop iterations enclosing `ctx`, outermost first. Stops
    /// (without panicking) at a dangling handle or a cycle, which the
    /// verifier reports.
    pub fn loop_stack(&self, ctx: LoopCtx) -> Vec<LoopIter> {
        let mut stack = Vec::new();
        let mut cur = ctx.0;
        while let Some(it) = cur {
            if stack.len() > self.static_loops.len() {
                break;
            }
            stack.push(it);
            cur = self.static_loops.try_get(it.lp).and_then(|l| l.parent.0);
        }
        stack.reverse();
        stack
    }

    /// True when `inner` is `outer` or lies inside one of `outer`'s
    /// iterations (the static loop stack of `outer` is a prefix of
    /// `inner`'s).
    pub fn ctx_within(&self, inner: LoopCtx, outer: LoopCtx) -> bool {
        let Some(target) = outer.0 else {
            return true;
        };
        self.loop_stack(inner).contains(&target)
    }

    /// The call sites an op was inlined through, innermost first.
    pub fn call_chain(&self, op: Handle<Op>) -> Vec<SrcLoc> {
        let mut chain = Vec::new();
        let mut cur = self.spans.call_chains.get(op).copied();
        while let Some(h) = cur {
            let Some(frame) = self.spans.call_frames.try_get(h) else {
                break;
            };
            if chain.len() > self.spans.call_frames.len() {
                break;
            }
            chain.push(frame.loc);
            cur = frame.parent;
        }
        chain
    }

    /// Names a location for a message: `file:line:col` when `sources` has
    /// the file, otherwise `file:start..end` in bytes.
    pub fn describe_loc(&self, loc: SrcLoc, sources: Option<&SourceMap>) -> String {
        if let Some(file) = sources.and_then(|s| s.get(loc.file)) {
            let lc = file.line_col(loc.span.start);
            return format!("{}:{}:{}", file.name(), lc.line, lc.col);
        }
        let name = self.file_name(loc.file).unwrap_or("<unknown file>");
        format!("{name}:{}..{}", loc.span.start, loc.span.end)
    }

    /// Diagnostic notes placing an op in the kernel: the static loop
    /// iterations it was created in (outermost first), then the inlined
    /// calls it came through (innermost first). For example
    /// `in iteration 3 of the affine_range loop at kernel.py:12:5` and
    /// `inlined from the call at kernel.py:30:9`.
    pub fn op_notes(&self, op: Handle<Op>, sources: Option<&SourceMap>) -> Vec<String> {
        let Some(o) = self.ops.try_get(op) else {
            return Vec::new();
        };
        let mut notes = self.loop_notes(o.loop_ctx, sources);
        for call in self.call_chain(op) {
            notes.push(format!(
                "inlined from the call at {}",
                self.describe_loc(call, sources)
            ));
        }
        notes
    }

    /// Notes naming the static loop iterations of `ctx`, outermost first.
    pub fn loop_notes(&self, ctx: LoopCtx, sources: Option<&SourceMap>) -> Vec<String> {
        self.loop_stack(ctx)
            .into_iter()
            .map(|it| {
                let kind = self
                    .static_loops
                    .try_get(it.lp)
                    .map_or("static", |l| l.kind.name());
                match self.spans.static_loops.get(it.lp) {
                    Some(&loc) => format!(
                        "in iteration {} of the {kind} loop at {}",
                        it.index,
                        self.describe_loc(loc, sources)
                    ),
                    None => format!("in iteration {} of a {kind} loop", it.index),
                }
            })
            .collect()
    }

    /// Visits every item in program order, depth first; `f` receives the
    /// item and the stack of dynamic loops enclosing it (outermost first).
    pub fn walk(&self, f: &mut dyn FnMut(Item, &[Handle<DynLoop>])) {
        fn go(
            k: &Kernel,
            block: &[Item],
            stack: &mut Vec<Handle<DynLoop>>,
            f: &mut dyn FnMut(Item, &[Handle<DynLoop>]),
        ) {
            for &item in block {
                f(item, stack);
                if let Item::Loop(l) = item {
                    // Guard against a loop containing itself, which only
                    // malformed IR can have; the verifier reports it.
                    if stack.contains(&l) {
                        continue;
                    }
                    if let Some(lp) = k.dyn_loops.try_get(l) {
                        stack.push(l);
                        go(k, &lp.body, stack, f);
                        stack.pop();
                    }
                }
            }
        }
        go(self, &self.body, &mut Vec::new(), f);
    }

    /// All ops in program order (the order of a depth-first walk of the body).
    pub fn ops_in_order(&self) -> Vec<Handle<Op>> {
        let mut out = Vec::new();
        self.walk(&mut |item, _| {
            if let Item::Op(op) = item {
                out.push(op);
            }
        });
        out
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::print::print(self))
    }
}
