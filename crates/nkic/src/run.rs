//! `nkic run`: compile a kernel file end to end and execute it in the
//! reference interpreter, through the pipeline functions of `nkic-driver`
//! (`compile`, `simulate`), which the Python package calls too; this file
//! adds what is the command line's own: `--input` files, output files,
//! the report on standard output.

use std::path::{Path, PathBuf};

use nkic_backend::{BackendConfig, Schedule};
use nkic_diag::{Diagnostic, FileId, SourceMap};
use nkic_driver::compile::{Compiled, launch_bound};
use nkic_driver::simio;
use nkic_driver::simulate::output_files;
use nkic_isa::Launch;
use nkic_specialize::ArgSpec;

use crate::runio::{self, InputSpec, ReportFormat, SimFlags};

/// `--schedule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScheduleArg {
    /// List scheduling over the dependency graph, engines balanced.
    Optimized,
    /// One instruction at a time in source order, for comparison.
    Sequential,
}

impl ScheduleArg {
    /// The backend options of this schedule; `no_spill` is `--no-spill`.
    pub fn config(self, no_spill: bool) -> BackendConfig {
        BackendConfig {
            schedule: match self {
                ScheduleArg::Optimized => Schedule::Optimized,
                ScheduleArg::Sequential => Schedule::Sequential,
            },
            no_spill,
        }
    }
}

/// The argument specs `--input` files imply: each file's shape, and its
/// dtype (the one after the colon, or NumPy's own). Inputs whose argument
/// `declared` already names (`--arg`) imply nothing: the declaration
/// gives the dtype, so a raw-bits file (`<V2` from `ml_dtypes`) needs no
/// colon.
pub fn arg_specs_from_inputs(
    inputs: &[InputSpec],
    declared: &[ArgSpec],
) -> Result<Vec<ArgSpec>, Vec<Diagnostic>> {
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if inputs[..i].iter().any(|s| s.name == input.name) {
            errors.push(runio::duplicate_input(&input.name));
            continue;
        }
        if declared.iter().any(|a| a.name == input.name) {
            continue;
        }
        // Only the header is needed: a large file is mapped, not read.
        let bytes = match crate::mapped::map_bounded(&input.path, crate::fsio::MAX_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(err) => {
                errors.push(Diagnostic::error(
                    "E9001",
                    format!("cannot read `{}`: {err}", input.path.display()),
                ));
                continue;
            }
        };
        match crate::npy::peek(bytes.as_ref()) {
            Ok((shape, numpy_dtype)) => match input.dtype.or(numpy_dtype) {
                Some(dtype) => specs.push(ArgSpec {
                    name: input.name.clone(),
                    dtype,
                    shape,
                }),
                None => errors.push(
                    Diagnostic::error(
                        "E1016",
                        format!("cannot tell the dtype of `{}`", input.path.display()),
                    )
                    .with_help(format!(
                        "name it after a colon, e.g. `--input {}={}:bfloat16`",
                        input.name,
                        input.path.display()
                    )),
                ),
            },
            Err(message) => errors.push(Diagnostic::error(
                "E1014",
                format!(
                    "cannot use `{}` as `{}`: {message}",
                    input.path.display(),
                    input.name
                ),
            )),
        }
    }
    if errors.is_empty() {
        Ok(specs)
    } else {
        Err(errors)
    }
}

/// `--sim-tier`: how the simulator executes compute instructions (never
/// changes a result).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SimTierArg {
    /// Every instruction in the interpreter.
    Interp,
    /// Supported compute instructions as compiled native loops.
    Jit,
}

impl SimTierArg {
    /// The simulator's default for this host (`jit` on x86-64 and aarch64).
    pub fn host_default() -> SimTierArg {
        match nkic_sim::SimTier::default() {
            nkic_sim::SimTier::Interp => SimTierArg::Interp,
            nkic_sim::SimTier::Jit => SimTierArg::Jit,
        }
    }
}

pub struct RunOptions<'a> {
    pub inputs: &'a [InputSpec],
    pub seed: u64,
    pub out_dir: Option<&'a Path>,
    pub sim: SimFlags,
    /// Tensors whose every value is written out (`--dump`).
    pub dump: &'a [String],
    /// `nkic profile`: the summary's format.
    pub profile: Option<ReportFormat>,
    /// `--sim-tier`.
    pub sim_tier: SimTierArg,
}

/// Executes a compiled kernel and reports. Returns the warnings of a run
/// that completes (undefined outputs, E2009).
pub fn run_compiled(
    compiled: &Compiled,
    opts: &RunOptions<'_>,
    file: FileId,
    sources: &mut SourceMap,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let launch = &compiled.launch;
    let program = launch.main();
    // Arguments without `--input` are random, as with no `--input`;
    // when every one is given, nothing is drawn.
    let rest = simio::random_rest(program, opts.seed, |name| {
        opts.inputs.iter().any(|s| s.name == name)
    });
    let inputs = if opts.inputs.is_empty() {
        rest.unwrap_or_default()
    } else {
        runio::read_inputs_or(program, opts.inputs, rest)?
    };
    let mut config = opts.sim.config(opts.profile.is_some());
    config.tier = match opts.sim_tier {
        SimTierArg::Interp => nkic_sim::SimTier::Interp,
        SimTierArg::Jit => nkic_sim::SimTier::Jit,
    };
    let base_dir: PathBuf = sources
        .get(file)
        .and_then(|f| Path::new(f.name()).parent().map(Path::to_path_buf))
        .unwrap_or_default();
    crate::dump::check_names(launch, opts.dump)?;
    let dump = nkic_sim::DumpSpec::new(opts.dump);
    let (result, dumps) = nkic_driver::simulate::simulate(
        compiled,
        &inputs,
        &config,
        &dump,
        &base_dir,
        sources,
        &crate::cli::FileLoader,
    )
    .map_err(|d| vec![d])?;
    if let (Some(dir), Some(kernel)) = (opts.out_dir, compiled.kernels.first()) {
        let files = output_files(kernel, program);
        let files: Vec<(String, &str)> =
            files.iter().map(|(f, n)| (f.clone(), n.as_str())).collect();
        runio::write_outputs(program, &result, dir, opts.sim.out_dtype, &files)
            .map_err(|d| vec![d])?;
    }
    if !opts.dump.is_empty() {
        let dir = opts.out_dir.unwrap_or(Path::new("."));
        crate::dump::write_dumps(launch, opts.dump, &dumps, dir, opts.sim.out_dtype)?;
    }
    // With dynamic loops the static bound counts a loop body once; the
    // run's execution counts give the bound of this run.
    let bound = launch_bound(launch, &result);
    match opts.profile {
        None => runio::print_report(launch, &result, opts.sim.report, Some(bound.ns)),
        Some(format) => {
            let title = sources.get(file).map_or("kernel", |f| f.name()).to_owned();
            if let Some(dir) = opts.out_dir {
                write_profile(launch, &result, dir, &title).map_err(|d| vec![d])?;
            }
            let summary = nkic_driver::profile::summarize(launch, &result, Some(&bound));
            let text = match format {
                ReportFormat::Human => summary.to_text(),
                ReportFormat::Json => format!("{}\n", summary.to_json()),
            };
            runio::print_stdout(&text);
        }
    }
    let warnings = simio::kernel_undefined_warnings(
        &result,
        compiled,
        &base_dir,
        sources,
        &crate::cli::FileLoader,
    );
    // The command ends after this.
    crate::cli::leave_to_exit(result);
    Ok(warnings)
}

/// Writes `DIR/trace.json` and `DIR/timeline.svg` of a traced run.
pub fn write_profile(
    launch: &Launch,
    result: &nkic_sim::RunResult,
    dir: &Path,
    title: &str,
) -> Result<(), Diagnostic> {
    crate::fsio::create_output_dir(dir)?;
    for (name, text) in [
        (
            "trace.json",
            nkic_driver::trace::trace_json(launch, result, title),
        ),
        (
            "timeline.svg",
            nkic_driver::svg::timeline_svg(launch, result, title),
        ),
    ] {
        let path = dir.join(name);
        crate::fsio::write_atomic(&path, text.as_bytes())?;
    }
    Ok(())
}
