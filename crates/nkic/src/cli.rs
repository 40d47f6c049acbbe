//! The command line: clap definitions and the command implementations.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nkic_backend::BackendConfig;
use nkic_diag::{Diagnostic, FileId, SourceMap};
use nkic_driver::pipeline::{Stage, Stop};
use nkic_isa::Target;
use nkic_specialize::{ArgSpec, ConstValue, SpecializeConfig};

use crate::emit::Emit;
use crate::exec::ExecOptions;
use crate::report::{MessageFormat, Reporter};
use crate::run::{RunOptions, ScheduleArg, SimTierArg};
use crate::runio::{InputSpec, ReportFormat, SimFlags};

/// nkic compiles NKI-style tile kernels to a Trainium pseudo-ISA and runs
/// them in a reference interpreter with a cycle model.
#[derive(Parser, Debug)]
#[command(name = "nkic", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check kernel files and report every problem found, compiling them
    /// as `run` does but without running.
    Check(CheckArgs),
    /// Compile a kernel file and print a stage's dump.
    Compile(CompileArgs),
    /// Compile a kernel file and run it in the reference interpreter.
    Run(RunArgs),
    /// Compile and run a kernel file like `run`, and report where the time
    /// goes: a summary, and with `--out DIR` also DIR/trace.json (Perfetto)
    /// and DIR/timeline.svg.
    Profile(ProfileArgs),
    /// Run a `.nkasm` program in the reference interpreter.
    Exec(ExecArgs),
    /// Serve the Language Server Protocol on standard input and output
    /// (diagnostics, hover, inlay hints, definitions; see docs/editors.md).
    Lsp(LspArgs),
}

#[derive(clap::Args, Debug)]
struct LspArgs {
    /// Accepted for editors that pass it; stdio is the only transport.
    #[arg(long)]
    stdio: bool,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The kernel file (`.py`).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    kernel: KernelArgs,
    /// A tensor argument's value: `NAME=PATH.npy`, or `NAME=PATH.npy:DTYPE`
    /// for raw bits of a dtype NumPy lacks. Without any `--input`, inputs
    /// are random (see `--seed`) and shapes come from `--arg` or the
    /// kernel's `# nkic: args` comment.
    #[arg(long = "input", value_name = "NAME=PATH.npy[:DTYPE]")]
    inputs: Vec<InputSpec>,
    /// The seed of random inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the i-th returned tensor as `DIR/out<i>.npy` and each kernel
    /// argument the kernel writes as `DIR/<arg>.npy`.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    sim: SimFlags,
    /// `sequential` runs the strictly sequential program (one instruction at
    /// a time in source order) for comparison.
    #[arg(long, value_enum, default_value_t = ScheduleArg::Optimized)]
    schedule: ScheduleArg,
    /// Write every value tensor NAME takes (each write, per loop iteration)
    /// as `.npy` files under `--out DIR` (default `.`) in `dump/NAME/`;
    /// repeatable.
    #[arg(long = "dump", value_name = "NAME")]
    dump: Vec<String>,
    /// How the simulator executes compute instructions: `jit` as compiled
    /// native loops where it can, `interp` always in the interpreter
    /// (results, times and faults are the same).
    #[arg(long, value_enum, default_value_t = SimTierArg::host_default())]
    sim_tier: SimTierArg,
    /// How diagnostics are printed.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
}

#[derive(clap::Args, Debug)]
struct ProfileArgs {
    #[command(flatten)]
    run: RunArgs,
    /// How the profile summary is printed (default: `--report`'s value).
    #[arg(long, value_enum)]
    format: Option<ReportFormat>,
}

#[derive(clap::Args, Debug)]
struct ExecArgs {
    /// The program (`.nkasm`).
    #[arg(value_name = "PROGRAM")]
    program: PathBuf,
    /// An input argument: `NAME=PATH.npy`, or `NAME=PATH.npy:DTYPE` for raw
    /// bits of a dtype NumPy lacks (bfloat16, fp8, …).
    #[arg(long = "input", value_name = "NAME=PATH.npy[:DTYPE]")]
    inputs: Vec<InputSpec>,
    /// Write each output as `DIR/out0.npy`, `DIR/out1.npy`, … in the
    /// program's output order.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    sim: SimFlags,
    /// How diagnostics are printed.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    /// Kernel files (`.py`) to check.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    kernel: KernelArgs,
    /// How diagnostics are printed.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
}

/// How a kernel is specialized: which function, for which arguments.
///
/// Flags override the kernel's `# nkic:` directive comments.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct KernelArgs {
    /// The kernel function (default: the one `@nki.jit` function).
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// A tensor argument: `NAME=DTYPE[D0,D1,...]`, e.g. `a=float32[256,1024]`.
    #[arg(long = "arg", value_name = "NAME=DTYPE[SHAPE]")]
    args: Vec<ArgSpec>,
    /// A compile-time argument: `NAME=EXPR`, any Python expression evaluated in the kernel's
    /// module: a literal, a dtype, a dotted name (`op=nl.add`, `act=ActFnType.SiLU`,
    /// `pkg.mod.Enum.A`), a list, dict or constructor call (`cfg=Cfg(eps=1e-6)`); see docs/cli.md.
    #[arg(long = "const", value_name = "NAME=VALUE", value_parser = parse_const)]
    consts: Vec<(String, ConstValue)>,
    /// The SPMD launch grid, e.g. `2` or `2,2`.
    #[arg(long, value_name = "N[,M[,K]]", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    grid: Vec<u32>,
    /// Physical cores of the launch (`run`, `profile`, `compile --emit asm`):
    /// a grid of exactly 2 runs on two cores (LNC=2) unless `--lnc 1`;
    /// `--lnc 2` splits an even grid over two cores.
    #[arg(long, value_name = "1|2", value_parser = clap::value_parser!(u32).range(1..=2))]
    lnc: Option<u32>,
    /// The target machine.
    #[arg(long, value_enum)]
    target: Option<TargetArg>,
    /// Extra directories searched for imported modules.
    #[arg(long = "path", value_name = "DIR")]
    search_paths: Vec<PathBuf>,
    /// The most IR ops one program instance may unroll to.
    #[arg(long, value_name = "N", default_value_t = nkic_specialize::config::DEFAULT_MAX_OPS)]
    max_ops: u64,
    /// The most compile-time evaluation steps one program instance may take.
    #[arg(long, value_name = "N", default_value_t = nkic_specialize::config::DEFAULT_MAX_STEPS)]
    max_steps: u64,
    /// The most bytes of strings and lists compile-time code may build per program instance.
    #[arg(long, value_name = "BYTES", default_value_t = nkic_specialize::config::DEFAULT_MAX_VALUE_BYTES)]
    max_value_bytes: u64,
    /// The deepest nesting of compile-time (inlined) calls.
    #[arg(long, value_name = "N", default_value_t = nkic_specialize::config::DEFAULT_MAX_CALL_DEPTH)]
    max_call_depth: u32,
    /// The most program instances a launch grid may have.
    #[arg(long, value_name = "N", default_value_t = nkic_specialize::config::DEFAULT_MAX_INSTANCES)]
    max_instances: u64,
    /// Reject kernels whose SBUF/PSUM tensors do not fit (E0901/E0902)
    /// instead of spilling them to HBM/SBUF (warning E0906).
    #[arg(long)]
    pub(crate) no_spill: bool,
}

/// `--target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TargetArg {
    Trn3,
    Trn2,
    Trn1,
}

fn parse_const(text: &str) -> Result<(String, ConstValue), String> {
    ConstValue::parse_binding(text).map_err(|e| e.to_string())
}

impl KernelArgs {
    fn config(&self) -> SpecializeConfig {
        let mut config = SpecializeConfig {
            kernel: self.kernel.clone(),
            args: self.args.clone(),
            consts: self.consts.clone(),
            grid: self.grid.clone(),
            max_ops: self.max_ops,
            max_steps: self.max_steps,
            max_value_bytes: self.max_value_bytes,
            max_call_depth: self.max_call_depth,
            max_instances: self.max_instances,
            lnc: self.lnc,
            search_paths: self
                .search_paths
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            ..SpecializeConfig::default()
        };
        if let Some(target) = self.target {
            config.target = match target {
                TargetArg::Trn3 => Target::Trn3,
                TargetArg::Trn2 => Target::Trn2,
                TargetArg::Trn1 => Target::Trn1,
            };
        }
        config
    }
}

/// Reads imported modules (and `nkic.toml` manifests) from the file
/// system, by the path the front half builds from the kernel file's name
/// or a search root.
pub(crate) struct FileLoader;

impl nkic_specialize::ModuleLoader for FileLoader {
    fn read(&self, path: &str) -> Option<String> {
        crate::fsio::read_text(Path::new(path))
    }

    fn read_source(&self, path: &str) -> Result<Option<String>, nkic_specialize::NotUtf8> {
        match crate::fsio::read_bounded(Path::new(path), crate::fsio::MAX_FILE_BYTES) {
            Ok(bytes) => nkic_specialize::NotUtf8::decode(bytes).map(Some),
            Err(_) => Ok(None),
        }
    }
}

/// What a command does when a file's kernel arguments are unknown, so
/// that only its syntax could be checked.
#[derive(Clone, Copy)]
enum Unspecialized {
    /// `check` on one file: the `I0001` note says so.
    Explain,
    /// `check` on several files: nothing.
    Quiet,
    /// `run`, `profile`, `compile --emit ir|asm`: error E1019, there is
    /// nothing to do the named thing to.
    Error(&'static str),
}

/// The pipeline on one file, up to `stop`, through the one driver
/// function every command and the Python package share
/// ([`nkic_driver::pipeline`]). Compile-time prints go to standard error,
/// so that standard output keeps dumps and JSON diagnostics clean, then
/// every diagnostic is reported.
fn pipeline(
    file: FileId,
    kernel: &KernelArgs,
    backend: &BackendConfig,
    stop: Stop,
    unspecialized: Unspecialized,
    sources: &mut SourceMap,
    reporter: &mut Reporter,
) -> Stage {
    let outcome =
        nkic_driver::pipeline(sources, file, &kernel.config(), backend, &FileLoader, stop);
    for print in &outcome.prints {
        crate::report::print_stderr(&format!("{}: {}\n", print.location, print.text));
    }
    reporter.emit_all(&outcome.diagnostics, sources);
    if let Some(note) = &outcome.syntax_only {
        match unspecialized {
            Unspecialized::Explain => reporter.emit(note, sources),
            Unspecialized::Quiet => {}
            Unspecialized::Error(what) => {
                reporter.emit(&no_arguments(sources, file, what), sources)
            }
        }
    }
    outcome.stage
}

/// `run`, `profile` and `compile --emit ir|asm` on a file whose kernel
/// arguments are unknown: nothing can be done, which is an error (`check`
/// only explains, with I0001).
fn no_arguments(sources: &SourceMap, file: FileId, what: &str) -> Diagnostic {
    Diagnostic::error(
        "E1019",
        format!(
            "nothing to {what}: the kernel arguments of `{}` are not known",
            sources.file(file).name()
        ),
    )
    .with_help("pass `--arg NAME=DTYPE[SHAPE]` or `--input NAME=PATH.npy`, or write `# nkic: args a=float32[128,512]` directly above the kernel")
}

#[derive(clap::Args, Debug)]
struct CompileArgs {
    /// The kernel file (`.py`).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The stage to stop at and print.
    #[arg(long, value_enum, default_value_t = Emit::Asm)]
    emit: Emit,
    /// How the program is scheduled (`--emit asm`).
    #[arg(long, value_enum, default_value_t = ScheduleArg::Optimized)]
    schedule: ScheduleArg,
    /// Write the dump to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    kernel: KernelArgs,
    /// How diagnostics are printed.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
}

pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Check(args) => Ok(check(&args)),
        Command::Compile(args) => Ok(compile(&args)),
        Command::Run(args) => Ok(run_kernel(&args, None)),
        Command::Profile(args) => Ok(run_kernel(
            &args.run,
            Some(args.format.unwrap_or(args.run.sim.report)),
        )),
        Command::Exec(args) => Ok(exec(&args)),
        Command::Lsp(_) => match nkic_lsp::run_stdio()? {
            // The protocol's exit code: 0 after `shutdown`, 1 without.
            true => Ok(ExitCode::SUCCESS),
            false => Ok(ExitCode::from(1)),
        },
    }
}

/// The exit code for a command whose input had (or had no) errors.
fn exit_code(reporter: &Reporter) -> ExitCode {
    reporter.finish();
    if reporter.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Reads a source file into the map, or reports why it cannot be read.
pub(crate) fn load(path: &Path, sources: &mut SourceMap) -> Result<FileId, Diagnostic> {
    let name = path.display().to_string();
    let bytes = match crate::fsio::read_bounded(path, crate::fsio::MAX_FILE_BYTES - 1) {
        Ok(bytes) => bytes,
        Err(crate::fsio::ReadError::TooLarge(n)) => {
            return Err(Diagnostic::error(
                "E9003",
                format!("`{name}` is too large ({n} bytes; the limit is 4 GiB)"),
            ));
        }
        Err(err) => {
            return Err(
                Diagnostic::error("E9001", format!("cannot read `{name}`: {err}"))
                    .with_help("check the path and the file's permissions"),
            );
        }
    };
    let text = match nkic_specialize::NotUtf8::decode(bytes) {
        Ok(text) => text,
        Err(err) => {
            // The text up to the first invalid byte is shown as it is, so
            // the label points at that byte.
            let (span, at) = (err.span(), err.offset);
            let file = sources.add(name.clone(), err.lossy);
            return Err(
                Diagnostic::error("E9002", format!("`{name}` is not valid UTF-8"))
                    .with_primary(
                        file,
                        span,
                        format!("the first invalid byte, at offset {at}"),
                    )
                    .with_help("kernel files must be saved as UTF-8"),
            );
        }
    };
    Ok(sources.add(name, text))
}

/// Leaves `value`'s memory to the end of the process, which comes next
/// (after a command's last kernel): freeing a large kernel's program, IR
/// or run piece by piece took most of a second (nki-library's
/// `blockwise_mm_bwd` with 128 experts), returning the pages at exit
/// nothing.
pub(crate) fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// `nkic check`: the pipeline through the backend's checks on each file,
/// so that `check` reports every error `run` would before simulating
/// (on-chip capacity, the launch's cores, lowering), without scheduling a
/// program or running it.
fn check(args: &CheckArgs) -> ExitCode {
    let mut reporter = Reporter::new(args.message_format);
    let mut sources = SourceMap::new();
    let backend = BackendConfig {
        no_spill: args.kernel.no_spill,
        ..BackendConfig::default()
    };
    let unspecialized = match args.files.len() {
        1 => Unspecialized::Explain,
        _ => Unspecialized::Quiet,
    };
    for (k, path) in args.files.iter().enumerate() {
        let loaded = load(path, &mut sources);
        if let Some(file) = reporter.ok(loaded, &sources) {
            let stage = pipeline(
                file,
                &args.kernel,
                &backend,
                Stop::Checked,
                unspecialized,
                &mut sources,
                &mut reporter,
            );
            if k + 1 == args.files.len() {
                leave_to_exit(stage);
            }
        }
    }
    exit_code(&reporter)
}

/// `nkic run`, or `nkic profile` with the summary format.
fn run_kernel(args: &RunArgs, profile: Option<ReportFormat>) -> ExitCode {
    // Its Cranelift module is built while the kernel compiles.
    if args.sim_tier == SimTierArg::Jit {
        nkic_sim::start_native_tier();
    }
    let mut reporter = Reporter::new(args.message_format);
    let mut sources = SourceMap::new();
    let loaded = load(&args.file, &mut sources);
    let Some(file) = reporter.ok(loaded, &sources) else {
        return exit_code(&reporter);
    };
    let mut kernel = args.kernel.clone();
    match crate::run::arg_specs_from_inputs(&args.inputs, &kernel.args) {
        Ok(specs) => kernel.args.extend(specs),
        Err(diags) => {
            reporter.emit_all(&diags, &sources);
            return exit_code(&reporter);
        }
    }
    let Stage::Compiled(compiled) = pipeline(
        file,
        &kernel,
        &args.schedule.config(kernel.no_spill),
        Stop::Compiled,
        Unspecialized::Error("run"),
        &mut sources,
        &mut reporter,
    ) else {
        return exit_code(&reporter);
    };
    let opts = RunOptions {
        inputs: &args.inputs,
        seed: args.seed,
        out_dir: args.out.as_deref(),
        sim: args.sim,
        dump: &args.dump,
        profile,
        sim_tier: args.sim_tier,
    };
    match crate::run::run_compiled(&compiled, &opts, file, &mut sources) {
        Ok(warnings) | Err(warnings) => reporter.emit_all(&warnings, &sources),
    }
    leave_to_exit(compiled);
    exit_code(&reporter)
}

fn exec(args: &ExecArgs) -> ExitCode {
    let mut reporter = Reporter::new(args.message_format);
    let mut sources = SourceMap::new();
    let opts = ExecOptions {
        program_path: &args.program,
        inputs: &args.inputs,
        out_dir: args.out.as_deref(),
        sim: args.sim,
    };
    match crate::exec::exec(&opts, &mut sources) {
        Ok(warnings) | Err(warnings) => reporter.emit_all(&warnings, &sources),
    }
    exit_code(&reporter)
}

fn compile(args: &CompileArgs) -> ExitCode {
    let mut reporter = Reporter::new(args.message_format);
    let mut sources = SourceMap::new();
    let loaded = load(&args.file, &mut sources);
    let Some(file) = reporter.ok(loaded, &sources) else {
        return exit_code(&reporter);
    };
    let stop = match args.emit {
        Emit::Tokens => {
            let text = sources.file(file).text();
            let (_, diags) = nkic_syntax::lex(text);
            let diags: Vec<Diagnostic> = diags.into_iter().map(|d| d.in_file(file)).collect();
            reporter.emit_all(&diags, &sources);
            let dump = nkic_syntax::dump_tokens(text);
            return write_dump(args, &dump, &sources, reporter);
        }
        Emit::Ast => Stop::Syntax,
        Emit::Ir => Stop::Specialized,
        Emit::Asm => Stop::Compiled,
    };
    let dump = match pipeline(
        file,
        &args.kernel,
        &args.schedule.config(args.kernel.no_spill),
        stop,
        Unspecialized::Error("compile"),
        &mut sources,
        &mut reporter,
    ) {
        // No `--emit` stops at the checks.
        Stage::Nothing | Stage::Checked(_) => return exit_code(&reporter),
        Stage::Syntax(module) => nkic_syntax::dump_ast(&module),
        Stage::Specialized(result) => nkic_driver::pipeline::ir_text(&result.kernels, &sources),
        Stage::Compiled(compiled) => nkic_isa::print_launch(&compiled.launch),
    };
    write_dump(args, &dump, &sources, reporter)
}

/// Writes `compile`'s dump (`-o`, or standard output) and ends the command.
fn write_dump(
    args: &CompileArgs,
    dump: &str,
    sources: &SourceMap,
    mut reporter: Reporter,
) -> ExitCode {
    if let Err(diag) = write_output(args.output.as_deref(), dump) {
        reporter.emit(&diag, sources);
    }
    exit_code(&reporter)
}

/// Writes a dump to a file, or to standard output when no path is given;
/// a failure is E9005.
fn write_output(path: Option<&Path>, text: &str) -> Result<(), Diagnostic> {
    let failed = |message: String| Diagnostic::error("E9005", message);
    match path {
        Some(path) => crate::fsio::write_atomic(path, text.as_bytes()),
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .or_else(|err| {
                    // A closed pipe (`nkic compile … | head`) is not an error.
                    if err.kind() == std::io::ErrorKind::BrokenPipe {
                        Ok(())
                    } else {
                        Err(failed(format!("cannot write to standard output: {err}")))
                    }
                })
        }
    }
}
