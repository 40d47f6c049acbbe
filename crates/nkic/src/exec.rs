//! `nkic exec`: assemble a `.nkasm` program, verify it, run it in the
//! reference interpreter, write its outputs and report the simulated time.
//!
//! A file with `.core N` sections is a multi-core launch (LNC=2,
//! docs/isa.md §2.3): it is verified as a launch and runs on two cores;
//! faults, reports and statistics name each queue's core (`core1.dma0`).

use std::path::{Path, PathBuf};

use nkic_diag::{Diagnostic, FileId, SourceMap, Span};
use nkic_isa::{DType, Launch, LineId, Program, Queue, TensorKind};
use nkic_sim::{Inputs, Poison, RunResult, SimConfig, SimError, SimErrorKind, StepOrder};
use serde_json::json;

use crate::npy::{self, OutDType};

/// One `--input NAME=PATH.npy[:DTYPE]` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSpec {
    pub name: String,
    pub path: PathBuf,
    pub dtype: Option<DType>,
}

impl std::str::FromStr for InputSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<InputSpec, String> {
        let (name, rest) = text
            .split_once('=')
            .ok_or_else(|| format!("expected NAME=PATH.npy[:DTYPE], found `{text}`"))?;
        if name.is_empty() {
            return Err(format!("missing the argument name before `=` in `{text}`"));
        }
        // A trailing `:DTYPE` names the dtype; a colon that is not followed by
        // a dtype name belongs to the path, unless only the part before it
        // names a file (then the suffix is a misspelt dtype).
        let (path, dtype) = match rest.rsplit_once(':') {
            Some((path, dtype)) if dtype.parse::<DType>().is_ok() => {
                (path, dtype.parse::<DType>().ok())
            }
            Some((path, suffix))
                if !suffix.is_empty()
                    && !suffix.contains(['/', '\\'])
                    && Path::new(path).is_file()
                    && !Path::new(rest).exists() =>
            {
                return Err(format!(
                    "unknown dtype `{suffix}` after the colon in `{text}` (for example `:bfloat16`, `:float8_e4m3`, `:int32`)"
                ));
            }
            _ => (rest, None),
        };
        if path.is_empty() {
            return Err(format!("missing the .npy path after `=` in `{text}`"));
        }
        Ok(InputSpec {
            name: name.to_owned(),
            path: PathBuf::from(path),
            dtype,
        })
    }
}

/// `--out-dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutDTypeArg {
    /// Each output in its own dtype (raw bits for types NumPy lacks).
    Native,
    /// An upcast float32 copy of every float output.
    Float32,
}

/// `--step-order`: how the interpreter interleaves independent queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StepOrderArg {
    RoundRobin,
    Reverse,
    Earliest,
}

/// `--poison`: what reading never-written memory does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PoisonArg {
    /// A runtime error naming the instruction and source line.
    Error,
    /// Float elements read as NaN, integers as 0.
    Nan,
    /// Elements read as zero.
    Zero,
}

/// `--report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// A short summary for people, on standard output.
    Human,
    /// One JSON object on standard output.
    Json,
}

pub struct ExecOptions<'a> {
    pub program_path: &'a Path,
    pub inputs: &'a [InputSpec],
    pub out_dir: Option<&'a Path>,
    pub out_dtype: OutDTypeArg,
    pub report: ReportFormat,
    pub step_order: StepOrderArg,
    pub poison: PoisonArg,
    /// `--max-sim-ms`.
    pub max_sim_ms: u64,
}

/// Runs a `.nkasm` file. Returns the diagnostics that stop it, if any.
pub fn exec(opts: &ExecOptions<'_>, sources: &mut SourceMap) -> Result<(), Vec<Diagnostic>> {
    let file = crate::cli::load(opts.program_path, sources).map_err(|d| vec![d])?;
    let text = sources.file(file).text().to_owned();
    let launch = nkic_isa::assemble_launch(&text).map_err(|errors| {
        errors
            .into_iter()
            .map(|err| {
                Diagnostic::error("E1001", err.message.clone()).with_primary(
                    file,
                    Span::from_range(err.span.clone()),
                    "here",
                )
            })
            .collect::<Vec<_>>()
    })?;
    let locator = InstructionLocator::new(&text);
    if let Err(errors) = nkic_isa::verify_launch(&launch) {
        return Err(errors
            .into_iter()
            .map(|err| {
                let diag = Diagnostic::error("E1002", err.to_string());
                match err
                    .queue
                    .zip(err.index)
                    .and_then(|(q, i)| locator.span(err.core, q, i))
                {
                    Some(span) => diag.with_primary(file, span, "rejected by the program verifier"),
                    None => match (err.index, locator.declaration(err.core, err.queue)) {
                        (None, Some(span)) => {
                            diag.with_primary(file, span, "rejected by the launch verifier")
                        }
                        _ => diag,
                    },
                }
            })
            .collect());
    }
    let base_dir = opts.program_path.parent().unwrap_or(Path::new("."));
    let program = launch.main();
    let inputs = read_inputs(program, opts.inputs)?;
    let config = sim_config(opts.step_order, opts.poison, opts.max_sim_ms);
    let result = nkic_sim::run_launch(&launch, &inputs, &config).map_err(|err| {
        vec![runtime_fault(
            &err,
            &launch,
            Some((file, &locator)),
            base_dir,
            sources,
        )]
    })?;
    if let Some(dir) = opts.out_dir {
        let files: Vec<(String, &str)> = result
            .outputs
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (format!("out{i}.npy"), name.as_str()))
            .collect();
        write_outputs(program, &result, dir, opts.out_dtype, &files).map_err(|d| vec![d])?;
    }
    print_report(&launch, &result, opts.report, None);
    Ok(())
}

/// The interpreter's options from the command line.
pub(crate) fn sim_config(
    step_order: StepOrderArg,
    poison: PoisonArg,
    max_sim_ms: u64,
) -> SimConfig {
    SimConfig {
        step_order: match step_order {
            StepOrderArg::RoundRobin => StepOrder::RoundRobin,
            StepOrderArg::Reverse => StepOrder::Reverse,
            StepOrderArg::Earliest => StepOrder::Earliest,
        },
        poison: match poison {
            PoisonArg::Error => Poison::Error,
            PoisonArg::Nan => Poison::Nan,
            PoisonArg::Zero => Poison::Zero,
        },
        trace: false,
        max_simulated_ps: max_sim_ms.saturating_mul(1_000_000_000),
        ..SimConfig::default()
    }
}

/// Finds the `.nkasm` line of the `index`-th instruction of a queue, so
/// verifier and runtime errors point into the program text.
pub(crate) struct InstructionLocator {
    /// (core section, queue name, spans of its instruction lines in order)
    queues: Vec<(u8, String, Vec<Span>)>,
    /// The `.queue` line of each (core, queue), and each `.core N` line.
    queue_lines: Vec<(u8, String, Span)>,
    core_lines: Vec<(u8, Span)>,
}

impl InstructionLocator {
    pub(crate) fn new(text: &str) -> InstructionLocator {
        let mut queues: Vec<(u8, String, Vec<Span>)> = Vec::new();
        let mut queue_lines = Vec::new();
        let mut core_lines = Vec::new();
        let mut core = 0u8;
        let mut offset = 0usize;
        for line in text.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let code = line.split('#').next().unwrap_or("").trim();
            if code.is_empty() {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            let whole = Span::from_range(start + indent..start + line.trim_end().len());
            if let Some(name) = code.strip_prefix(".queue") {
                queues.push((core, name.trim().to_owned(), Vec::new()));
                queue_lines.push((core, name.trim().to_owned(), whole));
            } else if let Some(n) = code.strip_prefix(".core") {
                core = n.trim().parse().unwrap_or(core);
                core_lines.push((core, whole));
            } else if !code.starts_with('.')
                && let Some((_, _, spans)) = queues.last_mut()
            {
                spans.push(whole);
            }
        }
        InstructionLocator {
            queues,
            queue_lines,
            core_lines,
        }
    }

    /// The `.queue` line of `queue` on `core`, or without a queue the
    /// `.core` line of `core`: where a launch-level verifier error points.
    fn declaration(&self, core: Option<u8>, queue: Option<Queue>) -> Option<Span> {
        let c = core.unwrap_or(0);
        match queue {
            Some(q) => {
                let name = q.to_string();
                self.queue_lines
                    .iter()
                    .find(|(k, n, _)| *k == c && *n == name)
                    .map(|(_, _, s)| *s)
            }
            None => self
                .core_lines
                .iter()
                .find(|(k, _)| core.is_some() && *k == c)
                .map(|(_, s)| *s),
        }
    }

    /// The span of instruction `index` of `queue` on `core` (`None`: the
    /// one core of a program without sections).
    fn span(&self, core: Option<u8>, queue: Queue, index: usize) -> Option<Span> {
        let name = queue.to_string();
        let core = core.unwrap_or(0);
        self.queues
            .iter()
            .find(|(c, q, _)| *c == core && *q == name)
            .and_then(|(_, _, spans)| spans.get(index).copied())
    }
}

/// Reads every `--input` into the program's argument dtypes, and reports
/// unknown, mistyped and missing inputs.
pub(crate) fn read_inputs(
    program: &Program,
    specs: &[InputSpec],
) -> Result<Inputs, Vec<Diagnostic>> {
    read_inputs_or(program, specs, None)
}

/// As [`read_inputs`], but an input argument without `--input` takes its
/// bytes from `rest` (random inputs, for `nkic run`) when given.
pub(crate) fn read_inputs_or(
    program: &Program,
    specs: &[InputSpec],
    mut rest: Option<Inputs>,
) -> Result<Inputs, Vec<Diagnostic>> {
    let mut inputs = Inputs::new();
    let mut errors = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|s| s.name == spec.name) {
            errors.push(duplicate_input(&spec.name));
            continue;
        }
        let Some(id) = program.tensor_by_name(&spec.name) else {
            let names: Vec<&str> = program.args().map(|(_, t)| t.name.as_str()).collect();
            errors.push(
                Diagnostic::error(
                    "E1010",
                    format!("the program has no argument `{}`", spec.name),
                )
                .with_note(format!("its arguments are: {}", names.join(", "))),
            );
            continue;
        };
        let Some(tensor) = program.tensor(id) else {
            continue;
        };
        if !matches!(tensor.kind, TensorKind::Input | TensorKind::InOut) {
            errors.push(Diagnostic::error(
                "E1011",
                format!(
                    "`{}` is an {} of the program, not an input",
                    spec.name,
                    tensor.kind.name()
                ),
            ));
            continue;
        }
        if let Some(dtype) = spec.dtype
            && dtype != tensor.dtype
        {
            errors.push(
                Diagnostic::error(
                    "E1012",
                    format!(
                        "`{}` was given as {dtype} but the program declares it {}",
                        spec.name, tensor.dtype
                    ),
                )
                .with_help(format!(
                    "name the dtype the program declares: `{}=PATH:{}`",
                    spec.name, tensor.dtype
                )),
            );
            continue;
        }
        let bytes = match crate::fsio::read_bounded(&spec.path, crate::fsio::MAX_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(err) => {
                errors.push(Diagnostic::error(
                    "E9001",
                    format!("cannot read `{}`: {err}", spec.path.display()),
                ));
                continue;
            }
        };
        match npy::read(&bytes, tensor.dtype) {
            Ok(array) => {
                let numel: u64 = array.shape.iter().product();
                if numel != tensor.numel()
                    || (array.shape.len() == tensor.shape.len() && array.shape != tensor.shape)
                {
                    errors.push(Diagnostic::error(
                        "E1013",
                        format!(
                            "`{}` has shape {:?} but the program declares {:?}",
                            spec.path.display(),
                            array.shape,
                            tensor.shape
                        ),
                    ));
                    continue;
                }
                inputs.insert(spec.name.as_str(), array.bytes);
            }
            Err(message) => errors.push(Diagnostic::error(
                "E1014",
                format!(
                    "cannot use `{}` as `{}`: {message}",
                    spec.path.display(),
                    spec.name
                ),
            )),
        }
    }
    for (_, tensor) in program.args() {
        let given = specs.iter().any(|s| s.name == tensor.name);
        if matches!(tensor.kind, TensorKind::Input | TensorKind::InOut)
            && !given
            && let Some(rest) = rest.as_mut()
            && let Some(i) = rest
                .entries
                .iter()
                .position(|(k, _)| matches!(k, nkic_sim::InputKey::Name(n) if *n == tensor.name))
        {
            let (key, bytes) = rest.entries.swap_remove(i);
            inputs.insert(key, bytes);
            continue;
        }
        if matches!(tensor.kind, TensorKind::Input | TensorKind::InOut) && !given {
            errors.push(
                Diagnostic::error("E1015", format!("missing input `{}`", tensor.name)).with_help(
                    format!(
                        "pass `--input {}=PATH.npy` ({}{:?})",
                        tensor.name, tensor.dtype, tensor.shape
                    ),
                ),
            );
        }
    }
    if errors.is_empty() {
        Ok(inputs)
    } else {
        Err(errors)
    }
}

/// `--input NAME` given more than once.
pub(crate) fn duplicate_input(name: &str) -> Diagnostic {
    Diagnostic::error("E1018", format!("`--input {name}` is given more than once"))
        .with_help("give each argument one `--input NAME=PATH.npy`")
}

/// A runtime fault as a diagnostic pointing at the kernel source line when
/// that file can be read, and otherwise at the `.nkasm` instruction.
pub(crate) fn runtime_fault(
    err: &SimError,
    launch: &Launch,
    nkasm: Option<(FileId, &InstructionLocator)>,
    base_dir: &Path,
    sources: &mut SourceMap,
) -> Diagnostic {
    let code = match err.kind {
        SimErrorKind::OutOfBounds => "E2001",
        SimErrorKind::UninitialisedRead => "E2002",
        SimErrorKind::Deadlock => "E2003",
        SimErrorKind::BadInput => "E2004",
        SimErrorKind::BadProgram => "E2005",
        SimErrorKind::DivideByZero => "E2006",
        SimErrorKind::InstructionLimit => "E2007",
        SimErrorKind::Race => "E2008",
    };
    let mut diag = Diagnostic::error(code, err.to_string());
    if err.kind == SimErrorKind::UninitialisedRead && err.queue.is_some() {
        diag = diag.with_help(
            "if these elements are never used (lanes a kernel computes but ignores), `--poison nan` runs on and shows where the never-written values flow",
        );
    }
    let program = launch
        .core(usize::from(err.core.unwrap_or(0)))
        .unwrap_or(launch.main());
    // The faulting instruction's line in the `.nkasm` text, when the
    // program came from one.
    let inst = nkasm.and_then(|(file, locator)| {
        let span = err
            .queue
            .zip(err.index)
            .and_then(|(q, i)| locator.span(err.core, q, i))?;
        Some((file, span))
    });
    if let Some(span) = err
        .line
        .and_then(|line| source_span(program, line, base_dir, sources))
    {
        diag = diag.with_primary(
            span.0,
            span.1,
            format!("this {} faulted", err.mnemonic.unwrap_or("instruction")),
        );
        if let Some((file, span)) = inst {
            diag = diag.with_secondary(file, span, "the faulting instruction");
        }
    } else if let Some((file, span)) = inst {
        diag = diag.with_primary(file, span, "the faulting instruction");
    }
    // The other instruction of a data race: its kernel source line, and its
    // `.nkasm` line when the program came from one.
    if let Some(other) = &err.related {
        let what = format!(
            "the other access: {} at {}{}[{}]",
            other.mnemonic,
            other.core.map(|c| format!("core{c}.")).unwrap_or_default(),
            other.queue,
            other.index
        );
        let other_program = launch
            .core(usize::from(other.core.unwrap_or(0)))
            .unwrap_or(launch.main());
        let mut labelled = false;
        if let Some((file, span)) = other
            .line
            .and_then(|line| source_span(other_program, line, base_dir, sources))
        {
            diag = diag.with_secondary(file, span, what.clone());
            labelled = true;
        }
        if let Some((file, locator)) = nkasm
            && let Some(span) = locator.span(other.core, other.queue, other.index)
        {
            let label = if labelled {
                "the other instruction".to_owned()
            } else {
                what
            };
            diag = diag.with_secondary(file, span, label);
        }
    }
    diag
}

/// The kernel source span of a line-table entry, loading its file.
fn source_span(
    program: &Program,
    line: LineId,
    base_dir: &Path,
    sources: &mut SourceMap,
) -> Option<(FileId, Span)> {
    let entry = program.line(line)?;
    let name = program.files.get(entry.file as usize)?;
    let file = match sources.find(name) {
        Some(file) => file,
        None => {
            let path = Path::new(name);
            let path = if path.is_absolute() {
                path.to_path_buf()
            } else {
                base_dir.join(path)
            };
            let text = crate::fsio::read_text(&path)?;
            sources.add(name.clone(), text)
        }
    };
    Some((file, Span::new(entry.span.start, entry.span.end)))
}

/// Writes output `name` of the run to `DIR/<file>` for each `(file, name)`.
pub(crate) fn write_outputs(
    program: &Program,
    result: &RunResult,
    dir: &Path,
    out: OutDTypeArg,
    files: &[(String, &str)],
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
    let out = match out {
        OutDTypeArg::Native => OutDType::Native,
        OutDTypeArg::Float32 => OutDType::Float32,
    };
    for (file, name) in files {
        let (Some(tensor), Some(bytes)) = (
            program
                .tensor_by_name(name)
                .and_then(|id| program.tensor(id)),
            result.output(name),
        ) else {
            continue;
        };
        let data = npy::write(&tensor.shape, tensor.dtype, bytes, out);
        let path = dir.join(file);
        crate::fsio::write_atomic(&path, &data)?;
    }
    Ok(())
}

/// Writes `text` to standard output; a closed pipe (`nkic run … | head`)
/// ends the output quietly instead of panicking.
pub(crate) fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Prints the run summary; `lower_bound_ns` is the compiled program's
/// bound (`nkic run`), absent for hand-written programs.
///
/// A multi-core launch names each queue with its core (`core1.vector`,
/// also as the JSON `engines` keys) and the JSON report gains `cores`: one
/// entry per core with its simulated time (its last completion) and
/// instruction count.
pub(crate) fn print_report(
    launch: &Launch,
    result: &RunResult,
    format: ReportFormat,
    lower_bound_ns: Option<f64>,
) {
    use std::fmt::Write;
    let ns = |ps: u64| ps as f64 / 1000.0;
    let multi = launch.is_multi_core();
    let target = launch.target();
    let name = |core: u8, queue: Queue| crate::profile::queue_name(multi.then_some(core), queue);
    let mut s = String::new();
    match format {
        ReportFormat::Json => {
            let mut engines = serde_json::Map::new();
            for q in &result.per_queue {
                engines.insert(
                    name(q.core, q.queue),
                    json!({ "busy_ns": ns(q.busy_ps), "instructions": q.instructions }),
                );
            }
            let mut report = json!({
                "target": target.name(),
                "simulated_ns": result.total_ns(),
                "engines": engines,
                "instructions": result.instructions,
                "hbm_bytes_read": result.hbm_bytes_read,
                "hbm_bytes_written": result.hbm_bytes_written,
                "flops": result.flops,
                "outputs": result.outputs.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
            });
            if let Some(bound) = lower_bound_ns {
                report["lower_bound_ns"] = json!(bound);
            }
            if multi {
                let cores: Vec<_> = (0..launch.cores.len())
                    .map(|c| {
                        let c = u8::try_from(c).unwrap_or(u8::MAX);
                        let instructions: u64 = result
                            .per_queue
                            .iter()
                            .filter(|q| q.core == c)
                            .map(|q| q.instructions)
                            .sum();
                        json!({
                            "core": c,
                            "simulated_ns": ns(result.core_end_ps(c)),
                            "instructions": instructions,
                        })
                    })
                    .collect();
                report["cores"] = json!(cores);
            }
            let _ = writeln!(s, "{report}");
        }
        ReportFormat::Human => {
            let on = if multi {
                format!(
                    "{} cores of {} (LNC={})",
                    launch.cores.len(),
                    target.name(),
                    launch.cores.len()
                )
            } else {
                target.name().to_owned()
            };
            let _ = writeln!(
                s,
                "simulated time: {:.3} us on {on}",
                result.total_ns() / 1000.0,
            );
            if let Some(bound) = lower_bound_ns {
                let ratio = if bound > 0.0 {
                    result.total_ns() / bound
                } else {
                    0.0
                };
                let _ = writeln!(
                    s,
                    "lower bound: {:.3} us (simulated time is {ratio:.2}x the bound)",
                    bound / 1000.0
                );
            }
            let width = if multi { 12 } else { 8 };
            let _ = writeln!(
                s,
                "{:<width$} {:>12} {:>7} {:>8}",
                "queue", "busy (ns)", "util", "instrs"
            );
            for q in &result.per_queue {
                let util = if result.total_ps == 0 {
                    0.0
                } else {
                    100.0 * q.busy_ps as f64 / result.total_ps as f64
                };
                let _ = writeln!(
                    s,
                    "{:<width$} {:>12.1} {:>6.1}% {:>8}",
                    name(q.core, q.queue),
                    ns(q.busy_ps),
                    util,
                    q.instructions
                );
            }
            let _ = writeln!(
                s,
                "hbm: {} bytes read, {} bytes written; {} flops; {} instructions",
                result.hbm_bytes_read, result.hbm_bytes_written, result.flops, result.instructions
            );
        }
    }
    print_stdout(&s);
}
