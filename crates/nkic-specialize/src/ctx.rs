//! `Ctx`: the evaluator's state, and the interface the API layer uses.
//!
//! One `Ctx` specializes one program instance of a kernel. It owns the
//! [`KernelBuilder`] the run-time ops go into, the loaded modules, the
//! current scope and file, the static-loop and call stacks (for diagnostic
//! notes and the IR's loop contexts), the compile-time prints and warnings,
//! and the optional hover table.
//!
//! The methods in the first `impl` block are the API layer's interface:
//! recording ops and storages with the op budget enforced, building
//! diagnostics at the current file, calling back into user functions, and
//! querying the target and the SPMD position.

use std::collections::HashMap;
use std::rc::Rc;

use nkic_diag::{Diagnostic, FileId, SourceMap, Span};
use nkic_ir::{Buffer, Handle, KernelBuilder, Op, SrcLoc, StaticLoop, StaticLoopKind, Storage};
use nkic_isa::{DType, Target};

use crate::args::CallArgs;
use crate::config::{ModuleLoader, SpecializeConfig};
use crate::facts::Facts;
use crate::modules::ModuleState;
use crate::value::{Class, ClassKind, Function, ModuleId, Scope, Value};
use crate::{Print, codes};

/// A static loop being unrolled: its current iteration, for notes, and
/// its IR loop once an op or storage has been recorded inside it.
#[derive(Clone, Debug)]
pub(crate) struct LoopFrame {
    /// The loop variable and its value in this iteration, when the target
    /// is a plain name.
    pub(crate) var: Option<(Rc<str>, Value)>,
    pub(crate) loc: SrcLoc,
    pub(crate) kind: StaticLoopKind,
    /// The planned trip count (`u32::MAX` when unknown, for `while`).
    pub(crate) trips: u32,
    pub(crate) index: u32,
    pub(crate) ir: Option<Handle<StaticLoop>>,
    /// True when the builder is inside this iteration.
    pub(crate) entered: bool,
}

impl LoopFrame {
    /// `i=3`, or `3` when the target is not a plain name.
    pub(crate) fn what(&self) -> String {
        match &self.var {
            Some((name, v)) => format!("{name}={}", crate::format::short_repr(v)),
            None => self.index.to_string(),
        }
    }
}

/// One inlined call being evaluated.
#[derive(Clone, Debug)]
pub(crate) struct CallFrame {
    pub(crate) name: Rc<str>,
    pub(crate) loc: SrcLoc,
    /// The function and its first argument, for `super()`.
    pub(crate) func: Option<Rc<Function>>,
    pub(crate) first_arg: Option<Value>,
}

/// The compiler-provided base classes.
#[derive(Clone, Debug)]
pub(crate) struct Bases {
    pub(crate) object: Rc<Class>,
    pub(crate) nki_object: Rc<Class>,
    pub(crate) enum_: Rc<Class>,
    pub(crate) int_enum: Rc<Class>,
    /// The class of `nl.mgrid[...]` results.
    pub(crate) mgrid: Rc<Class>,
}

/// What makes two warnings the same for [`Ctx::warn`]: code, message and
/// the place of the primary label (not the loop and call notes).
#[derive(PartialEq, Eq, Hash)]
struct WarningKey {
    code: &'static str,
    message: String,
    primary: Option<(FileId, Span)>,
}

/// The evaluator's state; see the module doc.
pub struct Ctx<'a> {
    pub(crate) sources: &'a mut SourceMap,
    pub(crate) loader: &'a dyn ModuleLoader,
    pub(crate) config: &'a SpecializeConfig,
    pub(crate) builder: KernelBuilder,
    /// The file whose code is running.
    pub(crate) file: FileId,
    /// The module whose code is running (its globals).
    pub(crate) module: ModuleId,
    pub(crate) modules: Vec<ModuleState>,
    /// The innermost scope: a function's locals, or the module globals.
    pub(crate) scope: Rc<Scope>,
    pub(crate) loops: Vec<LoopFrame>,
    pub(crate) calls: Vec<CallFrame>,
    /// Nesting of kernel-function bodies being run (they have no call frame).
    pub(crate) kernel_depth: u32,
    /// Loops open in the running function body (`break` needs one).
    pub(crate) fn_loops: u32,
    /// Nesting of `order` (container comparisons).
    pub(crate) order_depth: u32,
    /// Static loop iterations run so far.
    pub(crate) iterations: u64,
    /// Open dynamic loops.
    pub(crate) dyn_depth: u32,
    /// The open dynamic loop bodies run by statements, for names rebound
    /// in them (`eval::carried`).
    pub(crate) dyn_frames: Vec<crate::eval::DynFrame>,
    /// Result tiles of value-form calls, still known by their generated
    /// name (`exp_2`): the first variable they are assigned to renames
    /// them (see `renames`).
    pub(crate) auto_named: std::collections::BTreeSet<Handle<Storage>>,
    /// The span of the call that is the whole right-hand side of the
    /// running `x += call(...)` statement: an `nl.matmul` with exactly
    /// this span accumulates into `x` instead of a fresh PSUM tile.
    pub(crate) accumulate_call: Option<nkic_diag::Span>,
    /// Generated names replaced by a variable's name when the kernel is
    /// finished (`e = nl.exp(t)` names the tile `e`).
    pub(crate) renames: Vec<(Handle<Storage>, String)>,
    /// Open `no_reorder` blocks.
    pub(crate) no_reorder_depth: u32,
    pub(crate) program_id: Vec<u32>,
    pub(crate) num_programs: Vec<u32>,
    /// The index of this program instance in the grid (row-major).
    pub(crate) program_index: usize,
    /// The names declared `nonlocal` in the running function.
    pub(crate) nonlocals: Vec<Rc<str>>,
    /// True while a class body runs (its `def`s close over the enclosing
    /// scope, not the class scope).
    pub(crate) in_class_body: bool,
    pub(crate) bases: Bases,
    /// Interned names: keywords, parameters, variables and attributes.
    pub(crate) names: crate::value::Names,
    /// Loaded user modules by resolved path.
    pub(crate) module_paths: HashMap<String, ModuleId>,
    pub(crate) prints: Vec<Print>,
    pub(crate) warnings: Vec<Diagnostic>,
    /// The warnings recorded so far by code, message and primary label:
    /// their index in `warnings` and how many more times they were raised.
    warned: HashMap<WarningKey, (usize, usize)>,
    /// Errors besides the one being returned (further parse errors of an
    /// imported module).
    pub(crate) extra_errors: Vec<Diagnostic>,
    /// Where the kernel function returned.
    pub(crate) return_span: Option<Span>,
    /// HBM tensors the kernel allocated, with the variable each was first
    /// assigned to (for the discarded-results warning).
    pub(crate) hbm_vars: Vec<(nkic_ir::Handle<nkic_ir::Storage>, Rc<str>)>,
    pub(crate) facts: Option<Facts>,
    /// The function whose decorators are being evaluated.
    pub(crate) defining: Option<Rc<str>>,
    /// What compile-time evaluation has used of its budget.
    pub(crate) budget: crate::budget::Budget,
    /// The virtual files of host NumPy (`api/host.rs`): an array saved by
    /// `np.save`, by path.
    pub(crate) host_files: std::collections::BTreeMap<String, Value>,
    /// `tempfile.NamedTemporaryFile`s made so far (their names count).
    pub(crate) host_temp_files: u32,
    next_name: u32,
}

impl<'a> Ctx<'a> {
    // ---------------------------------------------------------------- API layer interface

    /// The kernel being recorded.
    pub fn builder(&mut self) -> &mut KernelBuilder {
        self.materialize_loops();
        &mut self.builder
    }

    /// The kernel being recorded, read-only.
    pub fn builder_ref(&self) -> &KernelBuilder {
        &self.builder
    }

    /// The storage `h` of the kernel being recorded.
    pub fn storage(&self, h: Handle<Storage>) -> &Storage {
        self.builder.storage(h)
    }

    pub fn target(&self) -> Target {
        self.config.target
    }

    /// The file of the code being evaluated.
    pub fn file(&self) -> FileId {
        self.file
    }

    /// `span` in the current file.
    pub fn loc(&self, span: Span) -> SrcLoc {
        SrcLoc::new(self.file, span)
    }

    /// All source files (for `file:line` texts).
    pub fn sources(&self) -> &SourceMap {
        self.sources
    }

    /// `file:line:col` of `span` in the current file.
    pub fn describe(&self, span: Span) -> String {
        self.describe_loc(self.loc(span))
    }

    /// `file:line:col` of a location.
    pub fn describe_loc(&self, loc: SrcLoc) -> String {
        match self.sources.get(loc.file) {
            Some(f) => {
                let lc = f.line_col(loc.span.start);
                format!("{}:{}:{}", f.name(), lc.line, lc.col)
            }
            None => format!("{}:{}", loc.file, loc.span.start),
        }
    }

    /// Records `op` at `span`, enforcing the op budget. An op that reads or
    /// writes an empty view (`x[a:a]`, `nl.ds(a, 0)`) does nothing in NKI,
    /// so it is not recorded (`None`).
    pub fn push_op(&mut self, op: Op, span: Span) -> Result<Option<Handle<Op>>, Diagnostic> {
        if op
            .accesses()
            .iter()
            .any(|a| a.view.dims.iter().any(|d| d.count == 0))
        {
            return Ok(None);
        }
        self.check_budget(span)?;
        let loc = self.loc(span);
        Ok(Some(self.builder().push_op(op, loc)))
    }

    /// Allocates a storage at `span` in the current loop iteration and
    /// dynamic scope.
    pub fn alloc_storage(
        &mut self,
        name: &str,
        buffer: Buffer,
        dtype: DType,
        shape: &[u64],
        span: Span,
    ) -> Handle<Storage> {
        let loc = self.loc(span);
        self.builder()
            .alloc_storage(name, buffer, dtype, shape, loc)
    }

    /// A fresh name for a compiler-made temporary: `{prefix}{n}`.
    pub fn fresh_name(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }

    /// An error at `span` in the current file. Notes naming the enclosing
    /// loop iterations and inlined calls are added as the error leaves them.
    pub fn error(
        &self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::error(code, message).with_primary(self.file, span, label)
    }

    /// A type error at `span` that `v` is not what was `wanted`:
    /// "{wanted}, found {a type}" ([`crate::format::found`]).
    pub fn type_error(
        &self,
        wanted: impl std::fmt::Display,
        v: &Value,
        span: Span,
        label: &str,
    ) -> Diagnostic {
        self.error(
            codes::TYPE_ERROR,
            crate::format::found(wanted, v),
            span,
            label,
        )
    }

    /// Records a warning; its notes are completed from the current loop
    /// and call stacks. A warning raised again at the same place with the
    /// same message (in another loop iteration or call) is counted, not
    /// repeated: [`Ctx::take_warnings`] says how many times it repeated.
    pub fn warn(&mut self, mut diag: Diagnostic) {
        let key = WarningKey {
            code: diag.code,
            message: diag.message.clone(),
            primary: diag.primary.as_ref().map(|l| (l.file, l.span)),
        };
        if let Some((_, repeats)) = self.warned.get_mut(&key) {
            *repeats += 1;
            return;
        }
        for note in self.context_notes() {
            diag = diag.with_note(note);
        }
        self.warned.insert(key, (self.warnings.len(), 0));
        self.warnings.push(diag);
    }

    /// The warnings recorded, in the order first raised, each with a note
    /// saying how many more times it was raised.
    pub(crate) fn take_warnings(&mut self) -> Vec<Diagnostic> {
        let mut warnings = std::mem::take(&mut self.warnings);
        for (_, (index, repeats)) in self.warned.drain() {
            if repeats > 0 {
                let times = if repeats == 1 { "time" } else { "times" };
                warnings[index].notes.push(format!(
                    "raised {repeats} more {times} at this place (in other loop iterations or calls); shown once"
                ));
            }
        }
        warnings
    }

    /// Calls a compile-time callable (a user function, lambda, bound
    /// method, builtin or API function) with `args`, as a call expression
    /// at `span` would. `nl.fori_loop` and `sorted(key=...)` use this.
    pub fn call_value(
        &mut self,
        func: &Value,
        args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        self.call(func, args, span)
    }

    /// `nl.program_id(axis)`: this instance's index along `axis`.
    pub fn program_id(&self, axis: usize) -> Option<u32> {
        if self.num_programs.is_empty() && axis == 0 {
            return Some(0);
        }
        self.program_id.get(axis).copied()
    }

    /// `nl.num_programs(axis)`.
    pub fn num_programs(&self, axis: usize) -> Option<u32> {
        if self.num_programs.is_empty() && axis == 0 {
            return Some(1);
        }
        self.num_programs.get(axis).copied()
    }

    /// `nl.program_ndim()`.
    pub fn program_ndim(&self) -> usize {
        self.num_programs.len()
    }

    /// The launch grid's shape (empty without a grid).
    pub fn grid(&self) -> &[u32] {
        &self.num_programs
    }

    /// This instance's core when the launch's two instances run on two
    /// cores (`nkic_isa::launch::launch_cores`, the backend's rule):
    /// the sum of its program ids, as one axis has 2 instances.
    pub fn two_core_rank(&self) -> Option<u32> {
        let grid = self.grid();
        let instances: u32 = grid.iter().product();
        let cores = nkic_isa::launch::launch_cores(
            self.target(),
            grid,
            instances as usize,
            self.config.lnc,
        );
        (!grid.is_empty() && instances == 2 && cores == Ok(2)).then(|| self.program_id.iter().sum())
    }

    /// True inside a dynamic loop body.
    pub fn in_dynamic_loop(&self) -> bool {
        self.dyn_depth > 0
    }

    /// True inside `with nl.no_reorder():`.
    pub fn in_no_reorder(&self) -> bool {
        self.no_reorder_depth > 0
    }

    // ---------------------------------------------------------------- internals

    pub(crate) fn new(
        sources: &'a mut SourceMap,
        loader: &'a dyn ModuleLoader,
        config: &'a SpecializeConfig,
        kernel_name: &str,
        program_index: usize,
        program_id: Vec<u32>,
    ) -> Ctx<'a> {
        let mut builder = KernelBuilder::new(kernel_name, config.target);
        builder.set_program_id(&program_id, &config.grid);
        Ctx {
            sources,
            loader,
            config,
            builder,
            file: FileId::default(),
            module: ModuleId(0),
            modules: Vec::new(),
            scope: Scope::new(None),
            loops: Vec::new(),
            calls: Vec::new(),
            kernel_depth: 0,
            iterations: 0,
            fn_loops: 0,
            order_depth: 0,
            dyn_depth: 0,
            dyn_frames: Vec::new(),
            auto_named: Default::default(),
            accumulate_call: None,
            renames: Vec::new(),
            no_reorder_depth: 0,
            program_id,
            num_programs: config.grid.clone(),
            program_index,
            nonlocals: Vec::new(),
            in_class_body: false,
            bases: Bases::new(),
            module_paths: HashMap::new(),
            names: Default::default(),
            prints: Vec::new(),
            warnings: Vec::new(),
            warned: HashMap::new(),
            extra_errors: Vec::new(),
            return_span: None,
            hbm_vars: Vec::new(),
            facts: config.record_facts.then(Facts::default),
            defining: None,
            // The caller's host files count against the value budget from
            // the start, as arrays the kernel built would.
            budget: crate::budget::Budget {
                bytes: config
                    .host_files
                    .iter()
                    .map(|f| {
                        (f.values.len() as u64).saturating_mul(crate::api::host::ELEMENT_BYTES)
                    })
                    .fold(0, u64::saturating_add),
                ..Default::default()
            },
            host_files: crate::api::host::preloaded(&config.host_files),
            host_temp_files: 0,
            next_name: 0,
        }
    }

    /// Fails when the op budget is used up; names the innermost loop.
    pub(crate) fn check_budget(&self, span: Span) -> Result<(), Diagnostic> {
        let n = self.builder.kernel().ops.len() as u64;
        if n < self.config.max_ops {
            return Ok(());
        }
        let mut d = Diagnostic::error(
            codes::OP_BUDGET,
            format!(
                "the kernel unrolls to more than {} operations",
                self.config.max_ops
            ),
        );
        match self.loops.last() {
            Some(lp) => {
                d = d
                    .with_primary(lp.loc.file, lp.loc.span, "this loop unrolls too far")
                    .with_secondary(self.file, span, "the budget ran out here");
            }
            None => d = d.with_primary(self.file, span, "the budget ran out here"),
        }
        Err(d
            .with_help("use `nl.dynamic_range` for long loops, or raise the budget with --max-ops"))
    }

    pub(crate) fn loop_note(&self, lp: &LoopFrame) -> String {
        format!(
            "in iteration {} of the loop at {}",
            lp.what(),
            self.describe_loc(lp.loc)
        )
    }

    pub(crate) fn call_note(&self, call: &CallFrame) -> String {
        let kernel = if call.func.as_ref().is_some_and(|f| f.jit) {
            " (a kernel called from a kernel: inlined as a function call)"
        } else {
            ""
        };
        format!(
            "in `{}`{kernel}, called at {}",
            call.name,
            self.describe_loc(call.loc)
        )
    }

    /// Creates the IR static loops and enters the iterations of every
    /// open loop frame, outermost first, so that what is recorded next
    /// carries the right loop context.
    pub(crate) fn materialize_loops(&mut self) {
        for i in 0..self.loops.len() {
            if self.loops[i].entered {
                continue;
            }
            let frame = &mut self.loops[i];
            let lp = match frame.ir {
                Some(lp) => lp,
                None => {
                    let lp = self
                        .builder
                        .begin_static_loop(frame.kind, frame.trips, frame.loc);
                    frame.ir = Some(lp);
                    lp
                }
            };
            self.builder.enter_iteration(lp, frame.index);
            frame.entered = true;
        }
    }

    /// Counts one unrolled loop iteration (or comprehension element) and
    /// fails when the kernel has run more than `max_iterations` of them,
    /// so a long loop that records no ops still ends.
    pub(crate) fn count_iteration(&mut self, span: Span) -> Result<(), Diagnostic> {
        self.iterations += 1;
        if self.iterations <= self.config.max_iterations {
            return self.check_budget(span);
        }
        let mut d = Diagnostic::error(
            codes::LOOP_LIMIT,
            format!(
                "the kernel runs more than {} loop iterations at compile time",
                self.config.max_iterations
            ),
        );
        d = match self.loops.last() {
            Some(lp) => d.with_primary(lp.loc.file, lp.loc.span, "this loop is still running"),
            None => d.with_primary(self.file, span, "still running here"),
        };
        Err(d.with_help("use `nl.dynamic_range` for long loops"))
    }

    /// Notes naming the loop iterations and calls enclosing the current
    /// point, innermost first.
    pub(crate) fn context_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for lp in self.loops.iter().rev() {
            notes.push(self.loop_note(lp));
        }
        for call in self.calls.iter().rev() {
            notes.push(self.call_note(call));
        }
        notes
    }
}

impl Bases {
    fn new() -> Bases {
        let class = |name: &str, kind: ClassKind, bases: Vec<Rc<Class>>| {
            Rc::new(Class {
                name: Rc::from(name),
                bases,
                kind,
                attrs: Default::default(),
                fields: Default::default(),
                members: Default::default(),
                builtin: true,
                dataclass: false,
            })
        };
        let object = class("object", ClassKind::Plain, Vec::new());
        let nki_object = class("NKIObject", ClassKind::Plain, vec![object.clone()]);
        let enum_ = class("Enum", ClassKind::Enum, vec![object.clone()]);
        let int_enum = class("IntEnum", ClassKind::IntEnum, vec![object.clone()]);
        let mgrid = class("mgrid", ClassKind::Plain, vec![object.clone()]);
        Bases {
            mgrid,
            object,
            nki_object,
            enum_,
            int_enum,
        }
    }
}
