//! The front-half pipeline: parse the kernel file, pick the kernel, apply
//! its `# nkic:` directives, and specialize it once per program instance.
//!
//! # Kernel entry
//!
//! The kernel is the top-level function named by `SpecializeConfig::kernel`,
//! or else the one function decorated `@nki.jit` (`@jit`, `@nki.jit(...)`,
//! and the legacy `@nki.baremetal`-style decorators count too). Its
//! parameters are bound by name: a tensor argument becomes an HBM tensor
//! of the given shape and dtype (a `shared_hbm` storage, visible to every
//! program instance), a constant becomes its compile-time value, and a
//! parameter with neither keeps its default. Returned tensors (one, or a
//! tuple/list of them) are the kernel's outputs and must live in HBM; a
//! returned tensor not in `shared_hbm` gets a warning (language.md §13.16).
//! A returned argument is an output aliasing it (the caller passed the
//! output in); returning one tensor twice is an error (E0218).
//! Arguments the kernel writes are marked `inout`, the others `input`.
//!
//! # SPMD
//!
//! With a launch grid of 1–3 dims the kernel is specialized once per
//! program instance, in row-major order of `program_id`, and
//! `SpecializeResult::kernels[i]` is instance `i` (`Kernel::program_id`
//! and `Kernel::num_programs` say which). The instances share the HBM
//! arguments and outputs (`shared_hbm`). How they run is the backend's
//! choice: a grid of 2 on trn3 maps to the two physical cores of an
//! LNC=2 logical core; other grids run one instance after another on one
//! core, as legacy NKI did.

use std::rc::Rc;

use nkic_diag::{Diagnostic, FileId, SourceMap, Span};
use nkic_ir::{ArgKind, Buffer, Kernel};
use nkic_syntax::ast::{self, ExprKind, StmtKind};

use crate::api::codes as codes_api;
use crate::args::{Arg, CallArgs};
use crate::config::{ConstValue, ModuleLoader, SpecializeConfig};
use crate::ctx::Ctx;
use crate::directives::{self, Directives};
use crate::facts::Facts;
use crate::value::{Tensor, Value};
use crate::{Print, codes};

/// Everything the front half produces.
#[derive(Debug, Default)]
pub struct SpecializeResult {
    /// The kernel function's name, once found.
    pub kernel_name: Option<String>,
    /// One kernel per program instance (row-major over the grid); empty
    /// when specialization failed.
    pub kernels: Vec<Kernel>,
    /// Compile-time `print` output, in order.
    pub prints: Vec<Print>,
    /// Errors and warnings, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// The hover table (empty unless `record_facts`).
    pub facts: Facts,
    /// The configuration actually used: the caller's, completed from the
    /// kernel's `# nkic:` directives.
    pub config: SpecializeConfig,
}

impl SpecializeResult {
    /// True when an error was reported.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Runs the front half on `file` of `sources`: parse, find the kernel,
/// specialize it for `config` (completed from its directives). Imported
/// modules are read through `loader` and added to `sources`.
pub fn specialize(
    sources: &mut SourceMap,
    file: FileId,
    config: &SpecializeConfig,
    loader: &dyn ModuleLoader,
) -> SpecializeResult {
    let mut result = SpecializeResult {
        config: config.clone(),
        ..SpecializeResult::default()
    };
    let (module, diags) = nkic_syntax::parse(sources.file(file).text());
    let had_syntax_errors = diags.iter().any(Diagnostic::is_error);
    result
        .diagnostics
        .extend(diags.into_iter().map(|d| d.in_file(file)));
    if had_syntax_errors {
        return result;
    }
    let (name, def_start, def_span) = match find_kernel(&module, config.kernel.as_deref(), file) {
        Ok(k) => k,
        Err(d) => {
            result.diagnostics.push(d);
            return result;
        }
    };
    result.kernel_name = Some(name.clone());
    if config.use_directives {
        let (dirs, errs) = directives::scan(sources.file(file), file, def_start);
        if !errs.is_empty() {
            result.diagnostics.extend(errs);
            return result;
        }
        fill_unset(&mut result.config, dirs);
    }
    let config = result.config.clone();
    let n_programs: u64 = config.grid.iter().map(|&g| u64::from(g)).product();
    if config.grid.len() <= 3 && !config.grid.contains(&0) && n_programs > config.max_instances {
        result.diagnostics.push(
            Diagnostic::error(
                codes::GRID,
                format!(
                    "a launch grid of {n_programs} program instances is more than the {} nkic specializes",
                    config.max_instances
                ),
            )
            .with_primary(file, def_span, "this kernel")
            .with_help("every instance is specialized and simulated on its own; raise the limit with --max-instances"),
        );
        return result;
    }
    let n_programs = n_programs as usize;
    if config.grid.len() > 3 || config.grid.contains(&0) {
        result.diagnostics.push(
            Diagnostic::error(
                codes::GRID,
                format!(
                    "a launch grid has 1 to 3 positive dims, found {:?}",
                    config.grid
                ),
            )
            .with_primary(file, def_span, "this kernel"),
        );
        return result;
    }
    // The warnings kept so far, by their full text, so that keeping one of
    // each costs time linear in their number.
    let mut seen_warnings = std::collections::HashSet::new();
    let n = n_programs.max(1);
    let job = Job {
        loader,
        config: &config,
        name: &name,
        file,
        def_span,
    };
    for (index, outcome) in job.run_all(sources, n).into_iter().enumerate() {
        let Instance {
            mut prints,
            warnings,
            facts,
            extra,
            kernel,
            discarded,
        } = outcome;
        result.prints.append(&mut prints);
        // Each program instance repeats the same warnings: keep one.
        for w in warnings {
            if seen_warnings.insert(format!("{w:?}")) {
                result.diagnostics.push(w);
            }
        }
        if let Some(f) = facts {
            result.facts.merge(f);
        }
        match kernel {
            Ok(kernel) => {
                if index == 0
                    && let Some(w) = discarded
                {
                    result.diagnostics.push(w);
                }
                result.kernels.push(kernel);
            }
            Err(e) => {
                result.diagnostics.push(e);
                result.diagnostics.extend(extra);
                result.kernels.clear();
                return result;
            }
        }
    }
    if let Some(e) = unpaired_barriers(&result.kernels) {
        result.diagnostics.push(e);
        result.kernels.clear();
    }
    shared_arg_kinds(&mut result.kernels);
    result
}

/// What specializing one program instance needs besides the sources.
#[derive(Clone, Copy)]
struct Job<'a> {
    loader: &'a dyn ModuleLoader,
    config: &'a SpecializeConfig,
    name: &'a str,
    file: FileId,
    def_span: Span,
}

/// What specializing one program instance produced, for [`specialize`] to
/// merge in instance order.
struct Instance {
    prints: Vec<Print>,
    warnings: Vec<Diagnostic>,
    facts: Option<Facts>,
    extra: Vec<Diagnostic>,
    kernel: Result<Kernel, Diagnostic>,
    /// The discarded-results warning (instance 0 only).
    discarded: Option<Diagnostic>,
}

impl Job<'_> {
    /// Specializes instance `index`, reading and adding files in `sources`.
    fn run(&self, sources: &mut SourceMap, index: usize) -> Instance {
        let program_id = program_id_of(index, &self.config.grid);
        let mut ctx = Ctx::new(
            sources,
            self.loader,
            self.config,
            self.name,
            index,
            program_id,
        );
        let res = run_instance(&mut ctx, self.file, self.name, self.def_span);
        let prints = std::mem::take(&mut ctx.prints);
        let warnings = ctx.take_warnings();
        let facts = ctx.facts.take();
        let extra = std::mem::take(&mut ctx.extra_errors);
        let (kernel, discarded) = match res {
            Ok(()) => {
                let hbm_vars = std::mem::take(&mut ctx.hbm_vars);
                let kernel = finish(ctx);
                let discarded = if index == 0 {
                    discarded_results(&kernel, &hbm_vars)
                } else {
                    None
                };
                (Ok(kernel), discarded)
            }
            Err(e) => (Err(e), None),
        };
        Instance {
            prints,
            warnings,
            facts,
            extra,
            kernel,
            discarded,
        }
    }

    /// Every instance, `0..n`, in order, stopping after the first that
    /// fails (as specializing one after another would; the threads take
    /// no instance after one that failed).
    ///
    /// Instance 0 runs on this thread on `sources`; the others run beside
    /// it on up to the machine's parallelism less one threads, each on a
    /// copy of `sources` as it was before instance 0. The instances run
    /// the same code, so they import the same modules in the same order and
    /// add the same files with the same ids. An instance's outcome is kept
    /// when the files it added agree, id by id, with those of `sources` by
    /// then (its further files are then added to `sources` too); otherwise
    /// it and the instances after it are specialized again, one after
    /// another on `sources` itself. Either way the result is that of
    /// specializing one instance after another. The front end's recursion
    /// is bounded, so the threads get the stack it needs, [`STACK_BYTES`].
    fn run_all(&self, sources: &mut SourceMap, n: usize) -> Vec<Instance> {
        if n <= 1 {
            return vec![self.run(sources, 0)];
        }
        let base = sources.clone();
        let base_files = base.files().count();
        let workers = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .saturating_sub(1)
            .min(n - 1);
        use std::sync::atomic::{AtomicUsize, Ordering};
        let next = AtomicUsize::new(1);
        // The lowest instance that failed so far: no later one is needed.
        let failed = AtomicUsize::new(usize::MAX);
        // Per instance: its outcome, and the files it added.
        let mut done: Vec<Option<(Instance, Vec<Added>)>> = (0..n).map(|_| None).collect();
        let first = std::thread::scope(|scope| {
            let (base, next, failed) = (&base, &next, &failed);
            let handles: Vec<_> = (0..workers)
                .filter_map(|_| {
                    std::thread::Builder::new()
                        .name("nkic-instance".to_owned())
                        .stack_size(STACK_BYTES)
                        .spawn_scoped(scope, move || {
                            let mut mine = Vec::new();
                            // Copied again only after an instance added a file.
                            let mut copy = base.clone();
                            loop {
                                let index = next.fetch_add(1, Ordering::Relaxed);
                                if index >= n || index > failed.load(Ordering::Relaxed) {
                                    break mine;
                                }
                                if copy.files().count() != base_files {
                                    copy = base.clone();
                                }
                                let outcome = self.run(&mut copy, index);
                                if outcome.kernel.is_err() {
                                    failed.fetch_min(index, Ordering::Relaxed);
                                }
                                let added = copy
                                    .files()
                                    .skip(base_files)
                                    .map(|(_, f)| (f.name().to_owned(), f.text().to_owned()))
                                    .collect();
                                mine.push((index, outcome, added));
                            }
                        })
                        .ok()
                })
                .collect();
            let first = self.run(sources, 0);
            if first.kernel.is_err() {
                failed.store(0, Ordering::Relaxed);
            }
            for h in handles {
                let mine = h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                for (index, outcome, added) in mine {
                    done[index] = Some((outcome, added));
                }
            }
            first
        });
        let mut out = vec![first];
        if out[0].kernel.is_err() {
            return out;
        }
        // Once one instance is specialized again, so are all after it.
        let mut again = false;
        for (index, slot) in done.iter_mut().enumerate().skip(1) {
            let outcome = match slot.take() {
                Some((outcome, added)) if !again && agrees(sources, base_files, &added) => {
                    let known = sources.files().count() - base_files;
                    for (name, text) in added.into_iter().skip(known) {
                        sources.add(name, text);
                    }
                    outcome
                }
                // Its files disagree, or no thread ran it: this one and
                // the rest one after another, as without threads.
                _ => {
                    again = true;
                    self.run(sources, index)
                }
            };
            let failed = outcome.kernel.is_err();
            out.push(outcome);
            if failed {
                break;
            }
        }
        out
    }
}

/// A file an instance added to its copy of the sources: name and text.
type Added = (String, String);

/// True when `added`, the files an instance added to a copy of the
/// sources that had `base_files` files, are named and read as the files
/// of `sources` from that id on (as far as `sources` goes).
fn agrees(sources: &SourceMap, base_files: usize, added: &[Added]) -> bool {
    sources
        .files()
        .skip(base_files)
        .zip(added)
        .all(|((_, f), (name, text))| f.name() == name && f.text() == text)
}

/// The stack a thread that specializes a kernel needs: every recursion
/// over a user's program is bounded (expressions by `E0018`, blocks by
/// `E0021`, compile-time evaluation by `E0262`); this holds the deepest
/// they allow, with room to spare, in a debug build. Only the pages used
/// are committed.
pub const STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a thread with a stack of [`STACK_BYTES`], for callers whose
/// own thread's stack may be smaller (a Python thread: 512 KiB on macOS,
/// whatever `threading.stack_size` set; a test thread: 2 MiB), where the
/// deepest recursion the front end allows would overflow it and abort the
/// process. Where no such thread can be started, `f` runs on the caller's.
pub fn on_deep_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let slot = std::sync::Mutex::new(Some(f));
    let take = |slot: &std::sync::Mutex<Option<_>>| {
        slot.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    };
    let spawned = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("nkic".to_owned())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || take(&slot).map(|f| f()))
            .ok()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
    });
    match spawned.flatten() {
        Some(done) => done,
        None => take(&slot).expect("`f` runs once, on the thread or here")(),
    }
}

/// The instances of a grid share their arguments: one that some instance
/// writes is in-out in every instance, also in one whose share of the work
/// is empty (`nl.ds(start, 0)` records no op).
fn shared_arg_kinds(kernels: &mut [Kernel]) {
    let Some(n) = kernels.first().map(|k| k.args.len()) else {
        return;
    };
    for i in 0..n {
        if kernels
            .iter()
            .any(|k| k.args.get(i).is_some_and(|a| a.kind == ArgKind::InOut))
        {
            for k in kernels.iter_mut() {
                if let Some(a) = k.args.get_mut(i) {
                    a.kind = ArgKind::InOut;
                }
            }
        }
    }
}

/// The two instances of an LNC=2 launch must issue the same core barriers
/// and tile exchanges (`sendrecv`, paired like barriers) on the same
/// queues: each waits for its partner on the other core. A compile-time
/// branch that skips one on one instance (`if pid == 0:
/// nisa.core_barrier(...)`) is reported at the first one without a
/// partner (E0525). Those inside dynamic loops are counted once here;
/// differing trip counts are a run-time deadlock.
fn unpaired_barriers(kernels: &[Kernel]) -> Option<Diagnostic> {
    let [k0, k1] = kernels else {
        return None;
    };
    type Paired = (Option<nkic_isa::Engine>, bool, nkic_ir::Handle<nkic_ir::Op>);
    let paired = |k: &Kernel| -> Vec<Paired> {
        k.ops
            .iter()
            .filter_map(|(h, op)| match op.kind {
                nkic_ir::OpKind::CoreBarrier { .. } => Some((op.engine, false, h)),
                nkic_ir::OpKind::SendRecv { .. } => Some((op.engine, true, h)),
                _ => None,
            })
            .collect()
    };
    let (b0, b1) = (paired(k0), paired(k1));
    let differs = b0
        .iter()
        .zip(&b1)
        .position(|(x, y)| (x.0, x.1) != (y.0, y.1));
    let at = differs.or((b0.len() != b1.len()).then(|| b0.len().min(b1.len())))?;
    let (kernel, (_, exchange, op)) = match (b0.get(at), b1.get(at)) {
        (Some(x), _) => (k0, x),
        (None, Some(y)) => (k1, y),
        (None, None) => return None,
    };
    let loc = kernel.spans.ops.get(*op).copied()?;
    let instance = kernel.program_id.first().copied().unwrap_or(0);
    if !b0.iter().chain(&b1).any(|p| p.1) {
        return Some(
            Diagnostic::error(
                codes_api::CORES,
                format!(
                    "the two cores do not reach the same core barriers: instance 0 issues {} and instance 1 issues {}",
                    b0.len(),
                    b1.len()
                ),
            )
            .with_primary(loc.file, loc.span, format!("barrier {} of instance {instance}", at + 1))
            .with_note("every `nisa.core_barrier` waits for its partner on the other core (same engine queue, same order), so a barrier only one core reaches never completes")
            .with_help("call the barrier on both cores (outside `if` tests on `nl.program_id`)"),
        );
    }
    let what = if *exchange { "exchange" } else { "barrier" };
    Some(
        Diagnostic::error(
            codes_api::CORES,
            format!(
                "the two cores do not reach the same core barriers and exchanges: instance 0 issues {} and instance 1 issues {}",
                b0.len(),
                b1.len()
            ),
        )
        .with_primary(loc.file, loc.span, format!("{what} {} of instance {instance}", at + 1))
        .with_note("every `nisa.core_barrier` and `nisa.sendrecv` waits for its partner on the other core (the same kind on the same engine queue, in the same order), so one that only one core reaches never completes")
        .with_help("call it on both cores (outside `if` tests on `nl.program_id`)"),
    )
}

/// The warning for a kernel whose results go nowhere: it returns nothing
/// and writes no argument, yet writes an HBM tensor it allocated (the
/// usual cause is a forgotten `return out`). A kernel that only reads, or
/// writes its arguments in place, is quiet; so is one that returns.
fn discarded_results(
    kernel: &Kernel,
    hbm_vars: &[(nkic_ir::Handle<nkic_ir::Storage>, Rc<str>)],
) -> Option<Diagnostic> {
    if !kernel.outputs.is_empty() || kernel.args.iter().any(|a| a.kind == ArgKind::InOut) {
        return None;
    }
    let args: Vec<_> = kernel.args.iter().map(|a| a.storage).collect();
    let written = kernel.ops.iter().find_map(|(_, op)| {
        op.accesses().into_iter().find_map(|a| {
            let s = a.view.storage;
            (a.role == nkic_ir::Role::Write
                && !a.is_index
                && kernel.storages[s].buffer.is_hbm()
                && !args.contains(&s))
            .then_some(s)
        })
    })?;
    let loc = kernel.spans.storages.get(written).copied()?;
    let var = hbm_vars
        .iter()
        .find(|(s, _)| *s == written)
        .map(|(_, n)| n.to_string());
    let what = match &var {
        Some(n) => format!("`{n}`"),
        None => "this HBM tensor".to_owned(),
    };
    let d = Diagnostic::warning(
        codes::DISCARDED,
        format!(
            "{what} is written but never returned: the kernel returns nothing and writes no argument, so its results are discarded"
        ),
    )
    .with_primary(loc.file, loc.span, "written, then dropped")
    .with_help(match &var {
        Some(n) => format!("add `return {n}` at the end of the kernel"),
        None => "return the tensor from the kernel".to_owned(),
    });
    Some(d)
}

/// The `program_id` of instance `index` in a row-major grid.
fn program_id_of(index: usize, grid: &[u32]) -> Vec<u32> {
    let mut id = vec![0u32; grid.len()];
    let mut rest = index;
    for k in (0..grid.len()).rev() {
        id[k] = (rest % grid[k] as usize) as u32;
        rest /= grid[k] as usize;
    }
    id
}

/// Fills the settings the caller left unset from `dirs` (a kernel's
/// `# nkic:` directives, or an `nkic.toml` entry's): an argument or
/// constant given by the caller wins over one of the same name, a grid
/// applies when the caller gave none, a target when the caller left the
/// default. The one merge of settings: the specializer applies directives
/// with it and `nkic-driver` manifest entries.
pub fn fill_unset(config: &mut SpecializeConfig, dirs: Directives) {
    for a in dirs.args {
        if !config.args.iter().any(|x| x.name == a.name)
            && !config.consts.iter().any(|x| x.0 == a.name)
        {
            config.args.push(a);
        }
    }
    for c in dirs.consts {
        if !config.consts.iter().any(|x| x.0 == c.0) && !config.args.iter().any(|x| x.name == c.0) {
            config.consts.push(c);
        }
    }
    if config.grid.is_empty() {
        config.grid = dirs.grid;
    }
    // The caller's target has no "unset" state; a directive applies when
    // the caller left the default.
    if let Some(t) = dirs.target
        && config.target == SpecializeConfig::default().target
    {
        config.target = t;
    }
}

/// True for decorators that mark a kernel: `@nki.jit`, `@jit`,
/// `@nki.jit(...)` and the legacy entry decorators.
fn is_kernel_decorator(e: &ast::Expr) -> bool {
    let e = match &e.kind {
        ExprKind::Call { func, .. } => func,
        _ => e,
    };
    let name = match &e.kind {
        ExprKind::Name(n) => n.as_str(),
        ExprKind::Attribute { attr, .. } => attr.name.as_str(),
        _ => return false,
    };
    matches!(
        name,
        "jit" | "baremetal" | "benchmark" | "profile" | "simulate_kernel"
    )
}

/// Finds the kernel: `(name, start of its first decorator or def, name span)`.
fn find_kernel(
    module: &ast::Module,
    wanted: Option<&str>,
    file: FileId,
) -> Result<(String, u32, Span), Diagnostic> {
    let mut candidates = Vec::new();
    let mut all = Vec::new();
    for s in &module.body {
        let StmtKind::FunctionDef(f) = &s.kind else {
            continue;
        };
        let start = f
            .decorators
            .iter()
            .map(|d| d.span.start)
            .min()
            .unwrap_or(s.span.start)
            .min(s.span.start);
        let item = (f.name.name.to_string(), start, f.name.span);
        if f.decorators.iter().any(is_kernel_decorator) {
            candidates.push(item.clone());
        }
        all.push(item);
    }
    if let Some(w) = wanted {
        // A kernel imported from another module (`from k import f`) may be
        // named too; it is looked up after the file has run.
        for s in &module.body {
            if let StmtKind::ImportFrom { names, .. } = &s.kind
                && let Some(a) = names
                    .iter()
                    .find(|a| a.asname.as_ref().unwrap_or(&a.name).name == *w)
            {
                all.push((w.to_owned(), s.span.start, a.span));
            }
        }
        return all.into_iter().find(|(n, _, _)| n == w).ok_or_else(|| {
            let names: Vec<&str> = all_names(module);
            let mut d = Diagnostic::error(
                codes::NO_KERNEL,
                format!("there is no top-level function `{w}`"),
            )
            .with_primary(file, Span::empty(0), "in this file");
            if let Some(c) = crate::args::closest(w, &names) {
                d = d.with_help(format!("did you mean `{c}`?"));
            }
            d
        });
    }
    match candidates.len() {
        1 => Ok(candidates.remove(0)),
        0 => Err(
            Diagnostic::error(codes::NO_KERNEL, "no kernel function found")
                .with_primary(file, Span::empty(0), "in this file")
                .with_help("decorate the kernel with `@nki.jit`, or name it with --kernel"),
        ),
        _ => {
            let mut d = Diagnostic::error(
                codes::NO_KERNEL,
                format!(
                    "{} functions are decorated `@nki.jit`; which one is the kernel?",
                    candidates.len()
                ),
            )
            .with_primary(file, candidates[0].2, "this one");
            for c in &candidates[1..] {
                d = d.with_secondary(file, c.2, "and this one");
            }
            Err(d.with_help("name the kernel with --kernel"))
        }
    }
}

fn all_names(module: &ast::Module) -> Vec<&str> {
    module
        .body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::FunctionDef(f) => Some(f.name.name.as_str()),
            _ => None,
        })
        .collect()
}

/// Loads the kernel file, binds the arguments and runs the kernel.
fn run_instance(
    ctx: &mut Ctx<'_>,
    file: FileId,
    name: &str,
    def_span: Span,
) -> Result<(), Diagnostic> {
    let file_name = ctx.sources.file(file).name().to_owned();
    ctx.builder.add_file(file, &file_name);
    let id = ctx.add_module("__main__", file)?;
    ctx.module_paths.insert(file_name, id);
    ctx.file = file;
    ctx.module = id;
    ctx.scope = ctx.modules[0].globals.clone();
    ctx.run_module(id)?;
    let kernel = match ctx.modules[0].globals.get_local(name) {
        Some(Value::Function(f)) => f,
        Some(other) => {
            return Err(ctx.error(
                codes::NO_KERNEL,
                format!(
                    "`{name}` is {}, not a function",
                    crate::format::a_type(&other)
                ),
                def_span,
                "the kernel",
            ));
        }
        None => {
            let reason = ctx.modules[0].poisoned.get(name).cloned();
            let mut d = ctx.error(
                codes::NO_KERNEL,
                format!("the kernel `{name}` could not be defined"),
                def_span,
                "here",
            );
            if let Some(r) = reason {
                d = d.with_note(r);
            }
            return Err(d);
        }
    };
    let crate::value::FunctionBody::Def(def) = &kernel.body else {
        return Err(ctx.error(
            codes::NO_KERNEL,
            "the kernel must be a `def` function",
            def_span,
            "here",
        ));
    };
    let def = def.clone();
    let config = ctx.config;
    let params = &def.params;
    let known: Vec<&str> = params
        .posonly
        .iter()
        .chain(&params.args)
        .chain(&params.kwonly)
        .map(|p| p.name.name.as_str())
        .collect();
    for a in &config.args {
        if !known.contains(&a.name.as_str()) {
            return Err(unknown_param(ctx, &a.name, &known, def_span));
        }
    }
    // Each parameter gets one value, as `--input` allows each name once.
    let names = config
        .args
        .iter()
        .map(|a| a.name.as_str())
        .chain(config.consts.iter().map(|(n, _)| n.as_str()));
    let mut seen = std::collections::HashSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(ctx.error(
                codes::KERNEL_ARGS,
                format!("the kernel argument `{name}` is given more than once"),
                def_span,
                "this kernel",
            ));
        }
    }
    for (n, _) in &config.consts {
        if !known.contains(&n.as_str()) {
            return Err(unknown_param(ctx, n, &known, def_span));
        }
    }
    let mut args = CallArgs::default();
    for (i, p) in params
        .posonly
        .iter()
        .chain(&params.args)
        .chain(&params.kwonly)
        .enumerate()
    {
        let pname = p.name.name.as_str();
        let value = if let Some(a) = config.args.iter().find(|a| a.name == pname) {
            if !config.target.supports_dtype(a.dtype) {
                return Err(ctx.error(
                    codes::KERNEL_ARGS,
                    format!("dtype {} is not available on {}", a.dtype, config.target),
                    p.span,
                    "this argument",
                ));
            }
            crate::api::check::tensor_bytes(ctx, &a.shape, a.dtype, p.span, "this argument")?;
            let loc = ctx.loc(p.span);
            let storage = ctx.builder.add_arg(
                pname,
                Buffer::SharedHbm,
                a.dtype,
                &a.shape,
                ArgKind::Input,
                loc,
            );
            let view = ctx.builder.full_view(storage);
            Some(Value::tensor(Tensor {
                view,
                shape: a.shape.clone(),
                buffer: Buffer::SharedHbm,
            }))
        } else if let Some((_, c)) = config.consts.iter().find(|c| c.0 == pname) {
            Some(const_value(ctx, pname, c)?)
        } else {
            let has_default = if i < params.posonly.len() + params.args.len() {
                kernel.defaults.get(i).is_some_and(Option::is_some)
            } else {
                kernel
                    .kw_defaults
                    .get(i - params.posonly.len() - params.args.len())
                    .is_some_and(Option::is_some)
            };
            if !has_default {
                return Err(ctx
                    .error(
                        codes::KERNEL_ARGS,
                        format!("kernel argument `{pname}` is not given"),
                        p.span,
                        "no shape, dtype or value for this parameter",
                    )
                    .with_help(format!(
                        "give a tensor as `--arg {pname}=float32[128,512]` or a constant as `--const {pname}=4`, or write `# nkic: args {pname}=float32[128,512]` above the kernel"
                    )));
            }
            None
        };
        if let Some(v) = value {
            if i < params.posonly.len() {
                args.positional.push(Arg::new(v, p.span));
            } else {
                args.keywords.push((Rc::from(pname), Arg::new(v, p.span)));
            }
        }
    }
    let ret = ctx.call_function(&kernel, args, def_span, false)?;
    let ret_span = ctx.return_span.unwrap_or(def_span);
    let outputs: Vec<Value> = match ret {
        Value::None => Vec::new(),
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        v => vec![v],
    };
    for o in outputs {
        let o = on_chip_output(ctx, o, ret_span)?;
        let Value::Tensor(t) = &o else {
            return Err(ctx.error(
                codes::BAD_RETURN,
                crate::format::found("a kernel returns tensors", &o),
                ret_span,
                "returned here",
            ));
        };
        // An argument returned as-is (`nl.store(out_arg, ...); return
        // out_arg`, the library's `must_alias_input` outputs) is an output
        // aliasing that argument: it is `inout` when written, and the CLI
        // writes it under both names.
        if ctx.builder.kernel().outputs.contains(&t.storage()) {
            let name = ctx.builder.kernel().storages[t.storage()].name.clone();
            return Err(ctx
                .error(
                    codes::BAD_RETURN,
                    format!("the kernel returns the same tensor `{name}` twice"),
                    ret_span,
                    "returned here",
                )
                .with_help("return each output once"));
        }
        if ctx.builder.kernel().storages[t.storage()].data.is_some() {
            return Err(ctx
                .error(
                    codes::BAD_RETURN,
                    "a kernel cannot return a shared constant",
                    ret_span,
                    "returned here",
                )
                .with_note("the constant's bytes are part of the program, not an output")
                .with_help(
                    "allocate an output with `buffer=nl.shared_hbm` and copy the constant into it with `nisa.dma_copy`",
                ));
        }
        if t.buffer.is_on_chip() {
            return Err(ctx
                .error(
                    codes::BAD_RETURN,
                    format!(
                        "a kernel output must be in HBM, found a {} tensor",
                        t.buffer
                    ),
                    ret_span,
                    "returned here",
                )
                .with_help(
                    "allocate the output with `buffer=nl.shared_hbm` and copy the result into it",
                ));
        }
        if t.buffer != Buffer::SharedHbm {
            let message = format!("kernel output in `{}`, not `shared_hbm`", t.buffer);
            if ctx.program_ndim() > 0 {
                return Err(ctx
                    .error(codes::OUTPUT_BUFFER, message, ret_span, "returned here")
                    .with_note("every program instance writes the outputs, so they must be shared")
                    .with_help("allocate the output with `buffer=nl.shared_hbm`"));
            }
            let d = Diagnostic::warning(codes::OUTPUT_BUFFER, message)
                .with_primary(ctx.file, ret_span, "returned here")
                .with_note("NKI requires outputs in `nl.shared_hbm`; nkic accepts this without a launch grid");
            ctx.warnings.push(d);
            ctx.builder.share_storage(t.storage());
        }
        // A returned reshaped view (`return out.reshape(shape)`) is the
        // output with the view's shape: the caller gets an array of that
        // shape, as NKI hands back the returned tensor.
        let st = &ctx.builder.kernel().storages[t.storage()];
        if t.shape != st.shape && whole_row_major(&t.view, st) {
            ctx.builder.reshape_output(t.storage(), &t.shape);
        }
        ctx.builder.add_output(t.storage());
    }
    Ok(())
}

/// True when `view` reads every element of `st` once, in row-major order
/// (a reshape of the whole tensor).
fn whole_row_major(view: &nkic_ir::View, st: &nkic_ir::Storage) -> bool {
    if view.offset != 0
        || view.dyn_offset.is_some()
        || view.indirect.is_some()
        || view.dtype != st.dtype
    {
        return false;
    }
    let mut expected = 1i64;
    for d in view.dims.iter().rev() {
        if d.count == 1 {
            continue;
        }
        if d.stride != expected {
            return false;
        }
        expected = expected.saturating_mul(i64::try_from(d.count).unwrap_or(i64::MAX));
    }
    u64::try_from(expected).is_ok_and(|n| n == st.numel())
}

/// A returned SBUF tile (the kernel stored its result elsewhere but
/// returns the tile, as some NKI examples do, which the NKI simulator
/// accepts and hands back the tile's contents): without a launch grid
/// nkic copies it into a fresh `shared_hbm` output at the end of the
/// kernel and warns (E0229). Everything else is returned unchanged, so
/// the checks of the caller report it.
fn on_chip_output(ctx: &mut Ctx<'_>, o: Value, ret_span: Span) -> Result<Value, Diagnostic> {
    let Value::Tensor(t) = &o else {
        return Ok(o);
    };
    if t.buffer != Buffer::Sbuf || ctx.program_ndim() > 0 {
        return Ok(o);
    }
    let out = crate::api::tensor::alloc(
        ctx,
        &t.shape,
        t.dtype(),
        Buffer::SharedHbm,
        "",
        ret_span,
        ret_span,
    )?;
    let out = Rc::new(out);
    crate::api::memory::assign(ctx, &out, &o, ret_span)?;
    let d = Diagnostic::warning(
        codes::OUTPUT_BUFFER,
        format!(
            "kernel output in `sbuf`: nkic copies the {} tile into a new `shared_hbm` output",
            crate::api::check::shape_text(&t.shape)
        ),
    )
    .with_primary(ctx.file, ret_span, "returned here")
    .with_note("NKI kernels return HBM tensors; the NKI simulator hands back an SBUF tile's contents, and so does nkic")
    .with_help("allocate the output with `buffer=nl.shared_hbm` and `nl.store` the tile into it");
    ctx.warnings.push(d);
    Ok(Value::Tensor(out))
}

fn unknown_param(ctx: &Ctx<'_>, name: &str, known: &[&str], span: Span) -> Diagnostic {
    let mut d = ctx
        .error(
            codes::KERNEL_ARGS,
            format!("the kernel has no parameter `{name}`"),
            span,
            "this kernel",
        )
        .with_note(format!("its parameters are: {}", known.join(", ")));
    if let Some(c) = crate::args::closest(name, known) {
        d = d.with_help(format!("did you mean `{c}`?"));
    }
    d
}

/// A constant argument as a value; dotted names and other expressions
/// are evaluated in the kernel's module ([`const_expr`]).
pub(crate) fn const_value(
    ctx: &mut Ctx<'_>,
    pname: &str,
    c: &ConstValue,
) -> Result<Value, Diagnostic> {
    Ok(match c {
        ConstValue::None => Value::None,
        ConstValue::Bool(b) => Value::Bool(*b),
        ConstValue::Int(i) => Value::Int(*i),
        ConstValue::Float(f) => Value::Float(*f),
        ConstValue::Str(s) => Value::str(s),
        ConstValue::DType(d) => Value::DType(ctx.config.held_dtype(*d)),
        ConstValue::Name(_) | ConstValue::Expr(_) => const_expr(ctx, pname, &c.to_string())?,
        ConstValue::Tuple(items) => Value::tuple(
            items
                .iter()
                .map(|i| const_value(ctx, pname, i))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// The names a compile-time argument's expression may use without the
/// kernel's module defining them, as if it had imported them.
const CONST_IMPORTS: [(&str, &str); 6] = [
    ("nki", "nki"),
    ("nl", "nki.language"),
    ("nisa", "nki.isa"),
    ("np", "numpy"),
    ("numpy", "numpy"),
    ("math", "math"),
];

/// Evaluates the text of a compile-time argument (a dotted name or any
/// other expression) in the kernel module's scope. The text becomes a
/// source file `<const NAME>`, so errors point into it. Names the module
/// does not define fall back to `nki`, `nl`, `nisa`, `np` as if imported
/// ([`CONST_IMPORTS`]); a dotted name whose first part is still unknown is
/// imported as an absolute module path (`pkg.mod.Cls.A` imports the
/// longest prefix that is a module, `pkg.mod`), from the kernel's
/// directory and the search paths. The fallbacks are bound in a scope of
/// their own: the kernel's module does not see them.
fn const_expr(ctx: &mut Ctx<'_>, pname: &str, text: &str) -> Result<Value, Diagnostic> {
    let fname = format!("<const {pname}>");
    let file = match ctx.sources.find(&fname) {
        Some(f) if ctx.sources.file(f).text() == text => f,
        _ => ctx.sources.add(fname, text),
    };
    let (expr, diags) = nkic_syntax::parse_expression(text);
    if let Some(d) = diags.into_iter().find(Diagnostic::is_error) {
        let span = d.primary.as_ref().map_or(Span::empty(0), |l| l.span);
        return Err(Diagnostic::error(
            codes::CONST_ARG,
            format!(
                "the compile-time argument `{pname}` is not a Python expression: {}",
                d.message
            ),
        )
        .with_primary(file, span, "here"));
    }
    // The expression runs as a small module of its own whose globals see
    // the kernel module's (its lambdas are looked up by offset in it).
    let main = &ctx.modules[0];
    let globals = crate::value::Scope::new(Some(main.globals.clone()));
    let mut lambdas = std::collections::HashMap::new();
    crate::modules::collect_expr(&expr, &mut lambdas);
    let id = crate::value::ModuleId(ctx.modules.len() as u32);
    let state = crate::modules::ModuleState {
        name: Rc::from(pname),
        file,
        ast: Rc::new(ast::Module {
            body: Vec::new(),
            span: Span::default(),
            host_code: Vec::new(),
        }),
        globals: globals.clone(),
        defs: Default::default(),
        lambdas,
        poisoned: main.poisoned.clone(),
    };
    ctx.modules.push(state);
    let saved_scope = std::mem::replace(&mut ctx.scope, globals);
    let saved_file = std::mem::replace(&mut ctx.file, file);
    let saved_module = std::mem::replace(&mut ctx.module, id);
    let before = ctx.builder.kernel().ops.len() + ctx.builder.kernel().storages.len();
    let res = import_const_names(ctx, &expr).and_then(|()| ctx.eval(&expr));
    let after = ctx.builder.kernel().ops.len() + ctx.builder.kernel().storages.len();
    let res = match res {
        Ok(_) if after != before => Err(ctx
            .error(
                codes::CONST_ARG,
                format!(
                    "the compile-time argument `{pname}` creates tensors or run-time operations"
                ),
                expr.span,
                "here",
            )
            .with_help("pass tensors with --arg; a compile-time argument is a plain value")),
        r => r,
    };
    ctx.scope = saved_scope;
    ctx.file = saved_file;
    ctx.module = saved_module;
    res.map_err(|e| {
        e.with_note(format!(
            "while evaluating the compile-time argument `{pname}={text}` in the kernel's module"
        ))
    })
}

/// Binds the names `e` uses that the kernel's module does not define:
/// the [`CONST_IMPORTS`], and the first part of a dotted name that names
/// a module path (see [`const_expr`]).
fn import_const_names(ctx: &mut Ctx<'_>, e: &ast::Expr) -> Result<(), Diagnostic> {
    for (parts, span) in dotted_chains(e) {
        let root = parts[0].as_str();
        // A root an earlier chain imported (in this expression's own
        // scope) still imports this chain's module: `a.b.X(a.c.Y)`.
        let imported_here = ctx.scope.get_local(root).is_some();
        if !imported_here && ctx.lookup_name(root, span).is_ok() {
            continue;
        }
        if let Some((_, path)) = CONST_IMPORTS.iter().find(|(n, _)| *n == root) {
            if let Some(v) = ctx.resolve_module(path, 0, span)? {
                ctx.scope.set(root, v);
            }
            continue;
        }
        let mut found = false;
        for k in (1..parts.len()).rev() {
            let path = parts[..k].join(".");
            if ctx.resolve_module(&path, 0, span)?.is_some() {
                found = true;
                let alias = ast::Alias {
                    name: ast::Ident {
                        name: ast::Name::new(&path),
                        span,
                    },
                    asname: None,
                    span,
                };
                ctx.exec_import(&[alias])?;
                break;
            }
        }
        if !found && !imported_here && parts.len() > 1 {
            return Err(ctx
                .error(
                    codes::IMPORT_ERROR,
                    format!(
                        "`{root}` is not defined in the kernel's module, and there is no module `{root}` to import"
                    ),
                    span,
                    "not found",
                )
                .with_help("a dotted name is looked up in the kernel's module, else imported as an absolute module path from the kernel's directory and the --path directories"));
        }
    }
    Ok(())
}

/// Every name and maximal dotted name (`a.b.c`) `e` reads, with its span.
fn dotted_chains(e: &ast::Expr) -> Vec<(Vec<String>, Span)> {
    let mut out = Vec::new();
    crate::modules::walk_expr(e, &mut |x| match crate::config::dotted(x) {
        Some(parts) => {
            out.push((parts, x.span));
            false
        }
        None => true,
    });
    out
}

/// Finishes the kernel: marks written arguments `inout`.
fn finish(mut ctx: Ctx<'_>) -> Kernel {
    // Ops and tensors may come from imported modules: name every file.
    let files: Vec<(nkic_diag::FileId, String)> = ctx
        .modules
        .iter()
        .map(|m| (m.file, ctx.sources.file(m.file).name().to_owned()))
        .collect();
    for (id, name) in files {
        ctx.builder.add_file(id, &name);
    }
    let mut kernel = ctx.builder.finish();
    // Value-form results take the name of the variable they were first
    // assigned to.
    for (storage, name) in std::mem::take(&mut ctx.renames) {
        if let Some(s) = kernel.storages.try_get_mut(storage) {
            s.name = name;
        }
    }
    // An argument some op writes is an output too.
    let args: Vec<_> = kernel.args.iter().map(|a| a.storage).collect();
    let mut written = vec![false; args.len()];
    for (_, op) in kernel.ops.iter() {
        for a in op.accesses() {
            if a.role == nkic_ir::Role::Write
                && !a.is_index
                && let Some(i) = args.iter().position(|&s| s == a.view.storage)
            {
                written[i] = true;
            }
        }
    }
    for (arg, w) in kernel.args.iter_mut().zip(written) {
        if w {
            arg.kind = ArgKind::InOut;
        }
    }
    kernel
}
