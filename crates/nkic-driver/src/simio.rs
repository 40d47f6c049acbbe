//! What a caller of the simulator does around a run, the same for the
//! command line (`nkic run`, `nkic exec`) and the Python package: the
//! interpreter's options from their names, the random values of the input
//! arguments a caller does not give, and the warnings about undefined
//! output values in the kernel's words.
//!
//! * [`sim_config`]: a `SimConfig` from the run options both callers take.
//! * [`step_order_named`], [`poison_named`]: the options by the names the
//!   command line and the package spell them with.
//! * [`random_rest`], [`take_input`]: random values for the arguments not
//!   given, drawn as [`random_inputs`] draws them for all.
//! * [`kernel_undefined_warnings`]: [`undefined_warnings`] of a compiled
//!   kernel's run, naming outputs as the kernel does.
//!
//! No IO: reading `.npy` files and writing outputs stay with the command
//! line, which alone takes files (the package takes arrays).

use std::path::Path;

use nkic_diag::{Diagnostic, SourceMap};
use nkic_isa::{Program, TensorKind};
use nkic_sim::{Bytes, InputKey, Inputs, Poison, RunResult, SimConfig, StepOrder};
use nkic_specialize::ModuleLoader;

use crate::compile::Compiled;
use crate::simulate::{describe_output, random_inputs, undefined_warnings};

/// The interpreter's options: `max_sim_ms` is the simulated-time budget in
/// milliseconds (`--max-sim-ms`), `trace` records the timeline a profile
/// needs.
pub fn sim_config(
    step_order: StepOrder,
    poison: Poison,
    trace: bool,
    max_sim_ms: u64,
) -> SimConfig {
    SimConfig {
        step_order,
        poison,
        trace,
        max_simulated_ps: max_sim_ms.saturating_mul(1_000_000_000),
        jit_background: true,
        ..SimConfig::default()
    }
}

/// The step order named `round-robin`, `reverse` or `earliest`.
pub fn step_order_named(name: &str) -> Option<StepOrder> {
    match name {
        "round-robin" => Some(StepOrder::RoundRobin),
        "reverse" => Some(StepOrder::Reverse),
        "earliest" => Some(StepOrder::Earliest),
        _ => None,
    }
}

/// The poison mode named `precise`, `error`, `nan` or `zero`.
pub fn poison_named(name: &str) -> Option<Poison> {
    match name {
        "precise" => Some(Poison::Precise),
        "error" => Some(Poison::Error),
        "nan" => Some(Poison::Nan),
        "zero" => Some(Poison::Zero),
        _ => None,
    }
}

/// The random values of the input arguments a caller does not give
/// (`given` says which it gives): [`random_inputs`] of every argument, so
/// an argument gets the values it gets when none is given, and `None`
/// when every input and inout argument is given (nothing is drawn).
pub fn random_rest(program: &Program, seed: u64, given: impl Fn(&str) -> bool) -> Option<Inputs> {
    let all_given = program
        .args()
        .all(|(_, t)| !matches!(t.kind, TensorKind::Input | TensorKind::InOut) || given(&t.name));
    (!all_given).then(|| random_inputs(program, seed))
}

/// Removes the bytes of argument `name` from `inputs` (from
/// [`random_rest`]), with their key.
pub fn take_input(inputs: &mut Inputs, name: &str) -> Option<(InputKey, Bytes)> {
    let i = inputs
        .entries
        .iter()
        .position(|(k, _)| matches!(k, InputKey::Name(n) if *n == name))?;
    Some(inputs.entries.swap_remove(i))
}

/// The E2009 warnings of a completed run of `compiled`
/// ([`undefined_warnings`]), each output named as the kernel names it and
/// labelled at its allocation ([`describe_output`]).
pub fn kernel_undefined_warnings(
    result: &RunResult,
    compiled: &Compiled,
    base_dir: &Path,
    sources: &mut SourceMap,
    loader: &dyn ModuleLoader,
) -> Vec<Diagnostic> {
    undefined_warnings(
        result,
        &compiled.launch,
        base_dir,
        sources,
        loader,
        |tensor, sources| match describe_output(tensor, compiled, sources) {
            Some((what, loc)) => (what, loc.map(|l| (l.file, l.span))),
            None => (format!("`{tensor}`"), None),
        },
    )
}
