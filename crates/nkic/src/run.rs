//! `nkic run`: compile a kernel file end to end and execute it in the
//! reference interpreter; `nkic compile --emit asm` shares the compile half.
//!
//! A grid of exactly two instances on trn2/trn3 is an LNC=2 launch and
//! runs on two cores (`nkic_backend::cores`); `--lnc 1|2` overrides.

use std::path::{Path, PathBuf};

use nkic_backend::{BackendConfig, Schedule};
use nkic_diag::{Diagnostic, FileId, SourceMap};
use nkic_ir::{ArgKind, Kernel};
use nkic_isa::{DType, Launch, Program, TensorKind, numerics};
use nkic_sim::Inputs;
use nkic_specialize::ArgSpec;

use crate::exec::{self, InputSpec, OutDTypeArg, PoisonArg, ReportFormat, StepOrderArg};

/// `--schedule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScheduleArg {
    /// List scheduling over the dependency graph, engines balanced.
    Optimized,
    /// One instruction at a time in source order, for comparison.
    Sequential,
}

impl ScheduleArg {
    pub fn config(self) -> BackendConfig {
        BackendConfig {
            schedule: match self {
                ScheduleArg::Optimized => Schedule::Optimized,
                ScheduleArg::Sequential => Schedule::Sequential,
            },
        }
    }
}

/// A compiled kernel: the launch (one program per core) and the
/// specialized kernels it came from.
pub struct Compiled {
    pub launch: Launch,
    pub kernels: Vec<Kernel>,
    /// The backend's warnings (`nkic_backend::launch_warnings`).
    pub warnings: Vec<Diagnostic>,
}

/// The number of cores the specialized instances `kernels` of grid `grid`
/// launch on (`lnc` is `--lnc`), or E1020 when `--lnc` asks for a launch
/// they cannot make. `check` uses it too, so it agrees with `run`.
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
/// instances on the cores `nkic_backend::launch_cores` chooses (`lnc` is
/// `--lnc`).
pub fn compile_kernels(
    kernels: Vec<Kernel>,
    grid: &[u32],
    lnc: Option<u32>,
    sources: &SourceMap,
    schedule: ScheduleArg,
) -> Result<Compiled, Vec<Diagnostic>> {
    let cores = launch_cores(&kernels, grid, lnc).map_err(|d| vec![d])?;
    let launch = nkic_backend::compile_launch(&kernels, sources, &schedule.config(), cores)?;
    let warnings = nkic_backend::launch_warnings(&kernels, sources, cores);
    Ok(Compiled {
        launch,
        kernels,
        warnings,
    })
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

/// The argument specs `--input` files imply: each file's shape, and its
/// dtype (the one after the colon, or NumPy's own).
pub fn arg_specs_from_inputs(inputs: &[InputSpec]) -> Result<Vec<ArgSpec>, Vec<Diagnostic>> {
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if inputs[..i].iter().any(|s| s.name == input.name) {
            errors.push(exec::duplicate_input(&input.name));
            continue;
        }
        let bytes = match crate::fsio::read_bounded(&input.path, crate::fsio::MAX_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(err) => {
                errors.push(Diagnostic::error(
                    "E9001",
                    format!("cannot read `{}`: {err}", input.path.display()),
                ));
                continue;
            }
        };
        match crate::npy::peek(&bytes) {
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

/// Random inputs for every input and inout argument, from a fixed seed:
/// floats uniform in [-1, 1), signed integers in [-8, 8), unsigned ones in
/// [0, 16), booleans 0 or 1. Packed MX arguments get random codes.
pub fn random_inputs(program: &Program, seed: u64) -> Inputs {
    let mut inputs = Inputs::new();
    let mut rng = SplitMix64(seed);
    for (_, tensor) in program.args() {
        if !matches!(tensor.kind, TensorKind::Input | TensorKind::InOut) {
            continue;
        }
        let n = tensor.numel() as usize;
        let mut bytes = Vec::with_capacity(n * tensor.dtype.size() as usize);
        let dtype = tensor.dtype;
        if dtype.is_packed_x4() || dtype == DType::F8E8M0 {
            for _ in 0..n * dtype.size() as usize {
                bytes.push(rng.next() as u8);
            }
        } else if dtype.is_float() {
            let values: Vec<f32> = (0..n).map(|_| rng.unit() * 2.0 - 1.0).collect();
            numerics::encode(dtype, &values, &mut bytes);
        } else {
            for _ in 0..n {
                let r = rng.next();
                let v: i64 = match dtype {
                    DType::Bool => (r & 1) as i64,
                    d if d.is_signed_int() => (r % 16) as i64 - 8,
                    _ => (r % 16) as i64,
                };
                bytes.extend_from_slice(&v.to_le_bytes()[..dtype.size() as usize]);
            }
        }
        inputs.insert(tensor.name.as_str(), bytes);
    }
    inputs
}

/// The deterministic generator of random inputs (SplitMix64).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 random bits, exact in f32.
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Which output file each program output goes to: `out<i>.npy` for the
/// i-th returned tensor, `<arg>.npy` for each kernel argument the kernel
/// writes.
pub fn output_files(kernel: &Kernel, program: &Program) -> Vec<(String, String)> {
    let args: Vec<&str> = program.args().map(|(_, t)| t.name.as_str()).collect();
    let n_args = kernel.args.len();
    let mut files = Vec::new();
    let mut extra = n_args;
    for (i, ret) in kernel.outputs.iter().enumerate() {
        let name = match kernel.args.iter().position(|a| a.storage == *ret) {
            Some(j) => args.get(j).copied(),
            None => {
                extra += 1;
                args.get(extra - 1).copied()
            }
        };
        if let Some(name) = name {
            files.push((format!("out{i}.npy"), name.to_owned()));
        }
    }
    for (j, arg) in kernel.args.iter().enumerate() {
        if matches!(arg.kind, ArgKind::Output | ArgKind::InOut)
            && let Some(name) = args.get(j)
        {
            files.push((format!("{name}.npy"), (*name).to_owned()));
        }
    }
    files
}

pub struct RunOptions<'a> {
    pub inputs: &'a [InputSpec],
    pub seed: u64,
    pub out_dir: Option<&'a Path>,
    pub out_dtype: OutDTypeArg,
    pub report: ReportFormat,
    pub step_order: StepOrderArg,
    pub poison: PoisonArg,
    /// Tensors whose every value is written out (`--dump`).
    pub dump: &'a [String],
    /// `nkic profile`: the summary's format.
    pub profile: Option<ReportFormat>,
    /// `--max-sim-ms`.
    pub max_sim_ms: u64,
}

/// Executes a compiled kernel and reports.
pub fn run_compiled(
    compiled: &Compiled,
    opts: &RunOptions<'_>,
    file: FileId,
    sources: &mut SourceMap,
) -> Result<(), Vec<Diagnostic>> {
    let launch = &compiled.launch;
    let program = launch.main();
    let inputs = if opts.inputs.is_empty() {
        random_inputs(program, opts.seed)
    } else {
        // Arguments without `--input` are random, as with no `--input`.
        exec::read_inputs_or(
            program,
            opts.inputs,
            Some(random_inputs(program, opts.seed)),
        )?
    };
    let mut config = exec::sim_config(opts.step_order, opts.poison, opts.max_sim_ms);
    config.trace = opts.profile.is_some();
    let base_dir: PathBuf = sources
        .get(file)
        .and_then(|f| Path::new(f.name()).parent().map(Path::to_path_buf))
        .unwrap_or_default();
    crate::dump::check_names(launch, opts.dump)?;
    let dump = nkic_sim::DumpSpec::new(opts.dump);
    let (result, dumps) =
        nkic_sim::run_launch_dumping(launch, &inputs, &config, &dump).map_err(|err| {
            let diag = exec::runtime_fault(&err, launch, None, &base_dir, sources);
            vec![unwritten_output(diag, &err, compiled, sources)]
        })?;
    if let (Some(dir), Some(kernel)) = (opts.out_dir, compiled.kernels.first()) {
        let files = output_files(kernel, program);
        let files: Vec<(String, &str)> =
            files.iter().map(|(f, n)| (f.clone(), n.as_str())).collect();
        exec::write_outputs(program, &result, dir, opts.out_dtype, &files).map_err(|d| vec![d])?;
    }
    if !opts.dump.is_empty() {
        let dir = opts.out_dir.unwrap_or(Path::new("."));
        crate::dump::write_dumps(launch, opts.dump, &dumps, dir, opts.out_dtype)?;
    }
    // With dynamic loops the static bound counts a loop body once; the
    // run's execution counts give the bound of this run.
    let bound = launch_bound(launch, &result);
    match opts.profile {
        None => exec::print_report(launch, &result, opts.report, Some(bound.ns)),
        Some(format) => {
            let title = sources.get(file).map_or("kernel", |f| f.name()).to_owned();
            if let Some(dir) = opts.out_dir {
                write_profile(launch, &result, dir, &title).map_err(|d| vec![d])?;
            }
            let summary = crate::profile::summarize(launch, &result, Some(&bound));
            let text = match format {
                ReportFormat::Human => summary.to_text(),
                ReportFormat::Json => format!("{}\n", summary.to_json()),
            };
            exec::print_stdout(&text);
        }
    }
    Ok(())
}

/// An output left partly unwritten (E2002 without an instruction): names
/// the kernel's variable (the one the allocation is assigned to, when the
/// source says `name = nl.ndarray(...)`; else the storage's name), labels
/// the allocation, and says what to check. Other faults pass unchanged.
fn unwritten_output(
    diag: Diagnostic,
    err: &nkic_sim::SimError,
    compiled: &Compiled,
    sources: &SourceMap,
) -> Diagnostic {
    let (Some(tensor), Some(kernel)) = (err.tensor.as_deref(), compiled.kernels.first()) else {
        return diag;
    };
    if err.kind != nkic_sim::SimErrorKind::UninitialisedRead {
        return diag;
    }
    let program = compiled.launch.main();
    let args: Vec<&str> = program.args().map(|(_, t)| t.name.as_str()).collect();
    // The kernel storage behind the program's argument `tensor`: a
    // returned tensor (by return index) or a written argument.
    let mut storage = None;
    let mut returned = None;
    let mut extra = kernel.args.len();
    for (i, ret) in kernel.outputs.iter().enumerate() {
        let name = match kernel.args.iter().position(|a| a.storage == *ret) {
            Some(j) => args.get(j).copied(),
            None => {
                extra += 1;
                args.get(extra - 1).copied()
            }
        };
        if name == Some(tensor) {
            storage = Some(*ret);
            returned = Some(i);
            break;
        }
    }
    if storage.is_none() {
        storage = args
            .iter()
            .position(|n| *n == tensor)
            .and_then(|j| kernel.args.get(j))
            .map(|a| a.storage);
    }
    let Some(storage) = storage else {
        return diag;
    };
    let loc = kernel.spans.storages.get(storage).copied();
    // `out = nl.ndarray(...)`: the variable before the allocation.
    let variable = loc.and_then(|loc| {
        let text = sources.get(loc.file)?.text();
        let start = usize::try_from(loc.span.start).ok()?;
        let line_start = text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
        let before = text.get(line_start..start)?.trim();
        let name = before.strip_suffix('=')?.trim();
        (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .then(|| name.to_owned())
    });
    let variable =
        variable.or_else(|| Some(kernel.storages[storage].name.clone()).filter(|n| !n.is_empty()));
    let what = match (&variable, returned) {
        (Some(v), Some(i)) if v != tensor => format!("`{v}` (returned tensor {i}, `{tensor}`)"),
        (Some(v), _) => format!("`{v}`"),
        (None, Some(i)) => format!("returned tensor {i} (`{tensor}`)"),
        (None, None) => format!("`{tensor}`"),
    };
    let message =
        diag.message
            .replacen(&format!("output `{tensor}`"), &format!("output {what}"), 1);
    let mut out = Diagnostic::error("E2002", message);
    if let Some(loc) = loc {
        out = out.with_primary(loc.file, loc.span, "allocated here");
    }
    out.with_help(
        "the kernel must store every element of a returned or output tensor: check the stores into it (a missing store, or a loop that covers only part of it)",
    )
}

/// Writes `DIR/trace.json` and `DIR/timeline.svg` of a traced run.
pub fn write_profile(
    launch: &Launch,
    result: &nkic_sim::RunResult,
    dir: &Path,
    title: &str,
) -> Result<(), Diagnostic> {
    std::fs::create_dir_all(dir).map_err(|err| {
        Diagnostic::error(
            "E9004",
            format!(
                "cannot create the output directory `{}`: {err}",
                dir.display()
            ),
        )
    })?;
    for (name, text) in [
        (
            "trace.json",
            crate::trace::trace_json(launch, result, title),
        ),
        (
            "timeline.svg",
            crate::svg::timeline_svg(launch, result, title),
        ),
    ] {
        let path = dir.join(name);
        crate::fsio::write_atomic(&path, text.as_bytes())?;
    }
    Ok(())
}
