//! The nkic backend: tile IR in, a verified `nkic_isa::Program` out.
//!
//! The backend decides where every on-chip tensor lives, which engine and
//! queue runs every op, and in which order, and proves the order safe with
//! semaphores. It does no IO: sources come in as a [`SourceMap`] (only for
//! the line table and diagnostics) and the result is a value.
//!
//! # Pipeline
//!
//! 1. [`collect`](mod@collect): gathers the ops and storages of every
//!    program instance into one numbering (instances run one after another;
//!    see [`compile_grid`]) and rejects what the backend does not compile
//!    yet (indirect views other than a gather or scatter `dma_copy`) with a
//!    diagnostic. The kernel is checked with `nkic_ir::verify` first.
//! 2. [`alloc`](mod@alloc): SBUF and PSUM addresses from live ranges,
//!    multi-buffering where capacity allows, HBM tensors for the arguments,
//!    outputs and internal HBM storages. When the on-chip storages do not
//!    fit, [`spill`](mod@spill) rewrites copies of the kernels (spill
//!    copies to HBM or SBUF, warning E0906) and collecting and allocating
//!    start again on them.
//! 3. [`lower`](mod@lower): each op becomes an `nkic_isa::Op` over access
//!    patterns, and the engines it may legally run on are found with the
//!    program verifier.
//! 4. [`deps`](mod@deps): the dependency graph (memory after allocation,
//!    engine state, explicit edges).
//! 5. [`schedule`](mod@schedule): list scheduling that replays the
//!    simulator's timing model (`Target::cost`, the DMA engines all queues
//!    share), choosing engines for ops NKI leaves open and spreading DMAs
//!    over the DMA queues; the best of several policies, a forward-backward
//!    pass and a fixed-seed perturbation search; or the strictly
//!    sequential order.
//! 6. [`sync`](mod@sync): semaphore waits and signals, with every wait
//!    implied by earlier waits or queue order removed.
//! 7. [`emit`](mod@emit): the program with its HBM tensors, semaphores,
//!    streams and line table, checked by `nkic_isa::verify`.
//!
//! Kernels with dynamic loops, sequencer registers or dynamic offsets take
//! another path after lowering: [`dynamic`](mod@dynamic) emits them with
//! loops as register and branch instructions on every queue involved.
//! The sequential schedule is a token chain (source order, one step at a
//! time); the optimized one orders the top level (ops and whole loops) and
//! the bodies of straight-line loops by their dependencies only, so
//! independent work and consecutive iterations overlap.
//!
//! [`lower_bound`] gives the run report's lower bound on a program's time.
//!
//! # Public API
//!
//! * [`compile`]`(&Kernel, &SourceMap, &BackendConfig) -> Result<Program, Vec<Diagnostic>>`
//! * [`compile_grid`]`(&[Kernel], &SourceMap, &BackendConfig)` for the
//!   instances of an SPMD grid (serial on one core).
//! * [`compile_launch`]`(&[Kernel], &SourceMap, &BackendConfig, cores)`
//!   for a grid on one or two physical cores (an `nkic_isa::Launch`), with
//!   [`launch_cores`] choosing the cores (a grid of two is LNC=2; see
//!   [`cores`](mod@cores)).
//! * [`BackendConfig`]` { schedule: `[`Schedule::Optimized`]` | `[`Schedule::Sequential`]`, no_spill }`
//!   (`Default` is optimized, spilling on).
//! * [`compile_grid_with_warnings`] and [`compile_launch_with_warnings`]:
//!   the same, with the compile's warnings (E0906 for spills).
//! * [`check_grid`] and [`check_launch`]: their diagnostics without the
//!   program (`nkic check`), skipping the steps that cannot report any.
//! * [`launch_warnings`]`(&[Kernel], &SourceMap, cores) -> Vec<Diagnostic>`:
//!   E0913 warnings for instances that one core runs in order and that
//!   hand data to each other through HBM.
//! * [`lower_bound`]`(&Program) -> `[`LowerBound`] for the run report, and
//!   [`lower_bound_counted`] with a run's per-instruction execution counts
//!   (programs with dynamic loops).
//!
//! The program's arguments are the kernel's tensor arguments in parameter
//! order, then returned tensors that are not arguments (unnamed ones are
//! `out0`, `out1`, … by return index).
//!
//! # Invariants
//!
//! * The backend knows no Python syntax and never reads files.
//! * Every user-caused failure is a [`Diagnostic`] with a code in
//!   E0900–E0999 (listed in [`codes`]). The backend's own bugs are panics
//!   stating the broken invariant: it is handed only IR that passes
//!   `nkic_ir::verify`, and emits only programs and launches that pass
//!   `nkic_isa::verify` and `verify_launch`.
//! * Output is deterministic: no hash-map iteration reaches the program.

pub mod alloc;
pub mod bound;
pub mod codes;
pub mod collect;
pub mod cores;
pub mod deps;
pub mod dynamic;
pub mod emit;
pub mod lower;
pub mod regs;
pub mod schedule;
pub mod spill;
pub mod sync;

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::Kernel;
use nkic_isa::Program;

pub use bound::{LowerBound, lower_bound, lower_bound_counted};
pub use cores::{
    check_capacity, check_launch, compile_launch, compile_launch_with_warnings, launch_cores,
};

/// How the backend orders the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// List scheduling by critical path over the dependency graph; engines
    /// and DMA queues chosen for balance.
    #[default]
    Optimized,
    /// The scheduler oracle: one op at a time in source order, every
    /// instruction waiting for the completion of the previous one.
    Sequential,
}

/// The warnings of a launch that compiles: for the instances each core
/// runs one after another (`cores` as for [`compile_launch`]), E0913 where
/// one instance reads HBM bytes another writes (see
/// [`deps::instance_warnings`]). A grid that does not compile has none.
pub fn launch_warnings(kernels: &[Kernel], sources: &SourceMap, cores: usize) -> Vec<Diagnostic> {
    let n = kernels.len();
    let parts: Vec<&[Kernel]> = if cores <= 1 || n < cores {
        vec![kernels]
    } else {
        (0..cores)
            .map(|c| &kernels[c * n / cores..(c + 1) * n / cores])
            .collect()
    };
    let mut out: Vec<Diagnostic> = Vec::new();
    for part in parts.into_iter().filter(|p| p.len() > 1) {
        // Warnings are about the program that runs: the spilled one when
        // the kernel needs spilling.
        let Ok((part, _)) = spill::fit(part, sources, false) else {
            continue;
        };
        let Ok(unit) = collect::collect(&part, sources) else {
            continue;
        };
        let Ok(layout) = alloc::allocate(&unit, sources) else {
            continue;
        };
        // Only a part that lowers is looked at (the others report errors).
        if lower::check(&unit, &layout, sources).is_err() {
            continue;
        }
        let graph = deps::build(
            &unit,
            &layout,
            Schedule::Optimized,
            deps::Edges::HbmReadWrite,
        );
        for d in deps::instance_warnings(&unit, &layout, &graph) {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// Backend options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BackendConfig {
    pub schedule: Schedule,
    /// Keep E0901/E0902 for on-chip tensors that do not fit instead of
    /// spilling them ([`spill`](mod@spill)).
    pub no_spill: bool,
}

impl BackendConfig {
    /// The default options with schedule `schedule`.
    pub fn scheduled(schedule: Schedule) -> BackendConfig {
        BackendConfig {
            schedule,
            ..BackendConfig::default()
        }
    }
}

/// Compiles one kernel into a program.
///
/// The program's arguments are the kernel's tensor arguments in parameter
/// order (kinds `input`, `output`, `inout` as the IR says), followed by the
/// returned tensors that are not arguments, as `output`s in return order.
/// Internal HBM storages become `.hbm` tensors.
pub fn compile(
    kernel: &Kernel,
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<Program, Vec<Diagnostic>> {
    compile_grid(std::slice::from_ref(kernel), sources, config)
}

/// Compiles the program instances of an SPMD grid into one program.
///
/// The instances run one after another on one NeuronCore: instance `i`'s
/// ops come after instance `i - 1`'s in source order, so their on-chip
/// storages have distinct lifetimes, and the scheduler may overlap
/// neighbouring instances where the data allows; instances that hand data
/// to each other through HBM see it in instance order ([`launch_warnings`]
/// reports them). A `Program` describes one core:
/// [`compile_launch`] puts the instances of an LNC=2 launch (two physical
/// cores sharing HBM) on two cores, one program each. Argument `j` of every
/// instance is the program's argument `j`, and returned tensor `j` of every
/// instance is the same output tensor (each instance writes its part), and
/// an internal `nl.shared_hbm` tensor is one `.hbm` tensor that every
/// instance sees (language.md §3.2), while `nl.private_hbm`/`nl.hbm`
/// tensors are one per instance.
/// Instance 0 defines names, shapes and dtypes; an instance whose
/// arguments differ is a diagnostic. An empty slice is a program with no
/// arguments and no instructions.
pub fn compile_grid(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<Program, Vec<Diagnostic>> {
    compile_grid_with_warnings(kernels, sources, config).map(|(program, _)| program)
}

/// [`compile_grid`], with the compile's warnings: E0906 when on-chip
/// tensors were spilled ([`spill`](mod@spill)).
pub fn compile_grid_with_warnings(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<(Program, Vec<Diagnostic>), Vec<Diagnostic>> {
    allocated(kernels, sources, config, |unit, layout| {
        back_half(unit, layout, sources, config)
    })
}

/// What [`compile_grid_with_warnings`] reports, without the program: the
/// same errors, or the same warnings where it compiles (`nkic check`).
/// It stops after lowering, the last step that reports anything, and the
/// sequencer-register budget of a unit with dynamic loops: scheduling,
/// synchronisation and emission cannot fail otherwise (a failure there
/// is the backend's bug, a panic), and they are most of a large kernel's
/// compile (the depthwise conv1d of nki-library with k = 4093, 563k ops:
/// about 2.1 of its 3.3 s in the backend).
pub fn check_grid(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    checked_grid(kernels, sources, config).map(|(_, warnings)| warnings)
}

/// [`check_grid`], with the HBM tensors the program would have (its
/// `hbm`: the allocation's), which the rules across a launch's cores
/// compare.
pub(crate) fn checked_grid(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<(Vec<nkic_isa::HbmTensor>, Vec<Diagnostic>), Vec<Diagnostic>> {
    allocated(kernels, sources, config, |unit, layout| {
        lower::check(unit, layout, sources)?;
        if unit.dynamic {
            dynamic::check_registers(unit)?;
        }
        Ok(layout.hbm.clone())
    })
}

/// Collects and allocates `kernels` (spilling what does not fit, unless
/// `config.no_spill`) and hands the unit and its layout to `back`, with
/// the spill warnings.
fn allocated<T>(
    kernels: &[Kernel],
    sources: &SourceMap,
    config: &BackendConfig,
    back: impl Fn(&collect::Unit<'_>, &alloc::Layout) -> Result<T, Vec<Diagnostic>>,
) -> Result<(T, Vec<Diagnostic>), Vec<Diagnostic>> {
    let unit = collect::collect(kernels, sources)?;
    match alloc::allocate_detailed(&unit, sources) {
        Ok(layout) => back(&unit, &layout).map(|p| (p, Vec::new())),
        Err(e) if config.no_spill || e.overflows.is_empty() => Err(e.diags),
        Err(e) => {
            let spilled = spill::spill(&unit, e, sources)?;
            let unit = collect::collect(&spilled.kernels, sources)?;
            let layout = alloc::allocate(&unit, sources)?;
            back(&unit, &layout).map(|p| (p, spilled.warnings))
        }
    }
}

/// Ops from which a unit's steps that can run side by side do so on
/// rayon's pool ([`on_pool`]).
pub(crate) const PARALLEL_MIN_OPS: usize = 2_000;

/// Whether a unit (or range) of `ops` ops runs its parallel steps on
/// rayon's pool: `back_half`'s lowering beside its dependency graph,
/// `deps::build_range`'s accesses, `lower::check`'s ops and
/// `alloc::allocate_detailed`'s two memories. From [`PARALLEL_MIN_OPS`]
/// ops (a smaller unit would pay more to start the pool, 0.3–0.6 ms the
/// first time, than it saves), and never where `nkic_isa::threads` says
/// the pool is unusable (a forked child).
pub(crate) fn on_pool(ops: usize) -> bool {
    ops >= PARALLEL_MIN_OPS && nkic_isa::threads::parallel()
}

/// Lowering, scheduling and emission of an allocated unit.
fn back_half(
    unit: &collect::Unit<'_>,
    layout: &alloc::Layout,
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<Program, Vec<Diagnostic>> {
    if unit.dynamic {
        let lowered = lower::lower(unit, layout, sources)?;
        return dynamic::emit(unit, layout, &lowered, sources, config.schedule);
    }
    // Lowering and the dependency graph read the unit and its layout
    // only: a large unit builds them on two threads (the depthwise conv1d
    // of nki-library with k = 4093, 563k ops: 0.43 + 0.82 s in a row,
    // 0.87–0.91 s side by side; `on_pool`).
    let lower = || lower::lower(unit, layout, sources);
    let build = || deps::build(unit, layout, config.schedule, deps::Edges::Reduced);
    let (lowered, graph) = if on_pool(unit.ops.len()) {
        let (lowered, graph) = rayon::join(lower, build);
        (lowered?, graph)
    } else {
        (lower()?, build())
    };
    let sched = schedule::schedule(unit, &lowered, &graph, config.schedule);
    let waits = sync::synchronize(&sched, &graph, config.schedule);
    // Emission does not look at the graph: its memory (every op's placed
    // accesses) goes back to the allocator for the program's instructions.
    drop(graph);
    Ok(emit::emit(unit, layout, lowered, &sched, &waits, sources))
}
