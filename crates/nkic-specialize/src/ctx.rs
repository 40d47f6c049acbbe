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

use std::rc::Rc;

use nkic_diag::{Diagnostic, FileId, SourceMap, Span};
use nkic_ir::{Buffer, Handle, KernelBuilder, Op, SrcLoc, StaticLoop, Storage};
use nkic_isa::{DType, Target};

use crate::args::CallArgs;
use crate::config::{ModuleLoader, SpecializeConfig};
use crate::facts::Facts;
use crate::modules::ModuleState;
use crate::value::{ModuleId, Scope, Value};
use crate::{Print, codes};

/// One iteration of a static loop being unrolled, for notes.
#[derive(Clone, Debug)]
pub(crate) struct LoopFrame {
    /// `i=3` or `iteration 3` for loops over containers with complex targets.
    pub(crate) what: String,
    pub(crate) loc: SrcLoc,
    pub(crate) ir: Handle<StaticLoop>,
}

/// One inlined call being evaluated.
#[derive(Clone, Debug)]
pub(crate) struct CallFrame {
    pub(crate) name: Rc<str>,
    pub(crate) loc: SrcLoc,
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
    /// Open dynamic loops.
    pub(crate) dyn_depth: u32,
    /// Open `no_reorder` blocks.
    pub(crate) no_reorder_depth: u32,
    pub(crate) program_id: Vec<u32>,
    pub(crate) num_programs: Vec<u32>,
    /// The index of this program instance in the grid (row-major).
    pub(crate) program_index: usize,
    pub(crate) prints: Vec<Print>,
    pub(crate) warnings: Vec<Diagnostic>,
    pub(crate) facts: Option<Facts>,
    next_name: u32,
}

impl<'a> Ctx<'a> {
    // ---------------------------------------------------------------- API layer interface

    /// The kernel being recorded.
    pub fn builder(&mut self) -> &mut KernelBuilder {
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

    /// Records `op` at `span`, enforcing the op budget.
    pub fn push_op(&mut self, op: Op, span: Span) -> Result<Handle<Op>, Diagnostic> {
        self.check_budget(span)?;
        let loc = self.loc(span);
        Ok(self.builder.push_op(op, loc))
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
        self.builder.alloc_storage(name, buffer, dtype, shape, loc)
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

    /// Records a warning; its notes are completed from the current loop
    /// and call stacks.
    pub fn warn(&mut self, mut diag: Diagnostic) {
        for note in self.context_notes() {
            diag = diag.with_note(note);
        }
        self.warnings.push(diag);
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
            dyn_depth: 0,
            no_reorder_depth: 0,
            program_id,
            num_programs: config.grid.clone(),
            program_index,
            prints: Vec::new(),
            warnings: Vec::new(),
            facts: config.record_facts.then(Facts::default),
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

    /// Notes naming the loop iterations and calls enclosing the current
    /// point, innermost first.
    pub(crate) fn context_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for lp in self.loops.iter().rev() {
            notes.push(format!(
                "in iteration {} of the loop at {}",
                lp.what,
                self.describe_loc(lp.loc)
            ));
        }
        for call in self.calls.iter().rev() {
            notes.push(format!(
                "in `{}`, called at {}",
                call.name,
                self.describe_loc(call.loc)
            ));
        }
        notes
    }
}
