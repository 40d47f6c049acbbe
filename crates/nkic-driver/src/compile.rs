//! The back half's first step: a specialization result through the
//! backend to a [`Launch`] (one program per physical core).
//!
//! A grid of exactly two instances on trn2/trn3 is an LNC=2 launch and
//! runs on two cores (`nkic_backend::cores`); the caller's `lnc`
//! (`--lnc`, `nkic.simulate(lnc=...)`) overrides.

use nkic_backend::BackendConfig;
use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::Kernel;
use nkic_isa::Launch;

/// A compiled kernel: the launch (one program per core) and the
/// specialized kernels it came from.
#[derive(Debug)]
pub struct Compiled {
    pub launch: Launch,
    pub kernels: Vec<Kernel>,
    /// The backend's warnings: spills (E0906) and
    /// `nkic_backend::launch_warnings`.
    pub warnings: Vec<Diagnostic>,
}

/// The number of cores the specialized instances `kernels` of grid `grid`
/// launch on (`lnc` is the caller's override), or E1020 when `lnc` asks
/// for a launch they cannot make. `nkic check` uses it too, so it agrees
/// with `run`.
pub fn launch_cores(
    kernels: &[Kernel],
    grid: &[u32],
    lnc: Option<u32>,
) -> Result<usize, Diagnostic> {
    let target = kernels.first().map_or(nkic_isa::Target::Trn3, |k| k.target);
    nkic_backend::launch_cores(target, grid, kernels.len(), lnc).map_err(|message| {
        Diagnostic::error("E1020", format!("cannot launch on the cores asked for: {message}"))
            .with_help("LNC=2 runs a grid of two (or an even number of) instances on two cores; `--lnc 1` runs every instance on one core")
    })
}

/// Runs the backend on a specialization result: the grid `grid`'s
/// instances on the cores [`launch_cores`] chooses.
pub fn compile_kernels(
    kernels: Vec<Kernel>,
    grid: &[u32],
    lnc: Option<u32>,
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<Compiled, Vec<Diagnostic>> {
    let cores = launch_cores(&kernels, grid, lnc).map_err(|d| vec![d])?;
    let (launch, mut warnings) =
        nkic_backend::compile_launch_with_warnings(&kernels, sources, config, cores)?;
    warnings.extend(nkic_backend::launch_warnings(&kernels, sources, cores));
    Ok(Compiled {
        launch,
        kernels,
        warnings,
    })
}

/// The diagnostics [`compile_kernels`] gives, without compiling what
/// cannot report any (`nkic check`; `nkic_backend::check_launch`): its
/// errors, or its warnings.
pub fn check_kernels(
    kernels: &[Kernel],
    grid: &[u32],
    lnc: Option<u32>,
    sources: &SourceMap,
    config: &BackendConfig,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let cores = launch_cores(kernels, grid, lnc).map_err(|d| vec![d])?;
    let mut warnings = nkic_backend::check_launch(kernels, sources, config, cores)?;
    warnings.extend(nkic_backend::launch_warnings(kernels, sources, cores));
    Ok(warnings)
}

/// The launch's lower bound: the largest of its cores' bounds (the cores
/// run in parallel). With dynamic loops each core's bound counts the
/// run's executions of its instructions.
pub fn launch_bound(launch: &Launch, result: &nkic_sim::RunResult) -> nkic_backend::LowerBound {
    let mut best: Option<nkic_backend::LowerBound> = None;
    for (c, program) in launch.cores.iter().enumerate() {
        let core = u8::try_from(c).unwrap_or(u8::MAX);
        let mut bound = nkic_backend::lower_bound(program);
        if bound.loops_counted_once {
            bound = nkic_backend::lower_bound_counted(program, &|q, i| {
                result.executions_on(core, q, i)
            });
        }
        if best.as_ref().is_none_or(|b| bound.ns > b.ns) {
            best = Some(bound);
        }
    }
    best.unwrap_or_else(|| nkic_backend::lower_bound(launch.main()))
}
