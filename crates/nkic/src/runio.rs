//! What `nkic run` and `nkic exec` share around a simulation: the types
//! of the input, output and report flags, reading `--input` `.npy` files
//! into a program's arguments, writing its outputs, and printing its
//! report.

use std::path::{Path, PathBuf};

use nkic_diag::Diagnostic;
use nkic_driver::simio;
use nkic_isa::{DType, Launch, Program, TensorKind};
use nkic_sim::{Inputs, Poison, RunResult, StepOrder};

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
            Some(_) if rest.ends_with(':') && !Path::new(rest).exists() => {
                return Err(format!(
                    "missing the dtype after the colon in `{text}` (for example `:bfloat16`), or drop the colon"
                ));
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

/// The flags of `run` and `exec` that say how a program is simulated and
/// how its results are written.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct SimFlags {
    /// How outputs are written.
    #[arg(long, value_enum, default_value_t = OutDTypeArg::Native)]
    pub out_dtype: OutDTypeArg,
    /// How the run is reported on standard output.
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub report: ReportFormat,
    /// How independent queues are interleaved (results never depend on it
    /// for a race-free program).
    #[arg(long, value_enum, default_value_t = StepOrderArg::RoundRobin)]
    pub step_order: StepOrderArg,
    /// What reading never-written memory does (`precise`: tracked; an
    /// undefined output element is warning E2009, an undefined index or
    /// register error E2002).
    #[arg(long, value_enum, default_value_t = PoisonArg::Precise)]
    pub poison: PoisonArg,
    /// Stop with error E2007 when the simulated time passes this many
    /// milliseconds (a loop that never ends); at least 1.
    #[arg(long, value_name = "MS", default_value_t = nkic_sim::DEFAULT_MAX_SIMULATED_PS / 1_000_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sim_ms: u64,
}

impl SimFlags {
    /// The simulator's configuration these flags ask for; `profile` keeps
    /// what a profile needs.
    pub fn config(&self, profile: bool) -> nkic_sim::SimConfig {
        nkic_driver::simio::sim_config(
            self.step_order.into(),
            self.poison.into(),
            profile,
            self.max_sim_ms,
        )
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

impl From<OutDTypeArg> for OutDType {
    fn from(arg: OutDTypeArg) -> OutDType {
        match arg {
            OutDTypeArg::Native => OutDType::Native,
            OutDTypeArg::Float32 => OutDType::Float32,
        }
    }
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
    /// Definedness is tracked through every instruction: never-written
    /// elements read as NaN (integers 4), as in the NKI simulator; an
    /// output element left undefined is a warning (E2009), an undefined
    /// index or register an error (E2002).
    Precise,
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

impl From<ReportFormat> for nkic_driver::report::ReportFormat {
    fn from(format: ReportFormat) -> Self {
        match format {
            ReportFormat::Human => nkic_driver::report::ReportFormat::Human,
            ReportFormat::Json => nkic_driver::report::ReportFormat::Json,
        }
    }
}

impl From<StepOrderArg> for StepOrder {
    fn from(arg: StepOrderArg) -> StepOrder {
        match arg {
            StepOrderArg::RoundRobin => StepOrder::RoundRobin,
            StepOrderArg::Reverse => StepOrder::Reverse,
            StepOrderArg::Earliest => StepOrder::Earliest,
        }
    }
}

impl From<PoisonArg> for Poison {
    fn from(arg: PoisonArg) -> Poison {
        match arg {
            PoisonArg::Precise => Poison::Precise,
            PoisonArg::Error => Poison::Error,
            PoisonArg::Nan => Poison::Nan,
            PoisonArg::Zero => Poison::Zero,
        }
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
        match crate::mapped::load(&spec.path, tensor.dtype) {
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
                inputs.insert_shared(spec.name.as_str(), array.bytes);
            }
            Err(crate::mapped::LoadError::Read(err)) => errors.push(Diagnostic::error(
                "E9001",
                format!("cannot read `{}`: {err}", spec.path.display()),
            )),
            Err(crate::mapped::LoadError::Format(message)) => errors.push(Diagnostic::error(
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
            && let Some((key, bytes)) = rest
                .as_mut()
                .and_then(|r| simio::take_input(r, &tensor.name))
        {
            inputs.insert_shared(key, bytes);
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

/// Writes output `name` of the run to `DIR/<file>` for each `(file, name)`.
pub(crate) fn write_outputs(
    program: &Program,
    result: &RunResult,
    dir: &Path,
    out: OutDTypeArg,
    files: &[(String, &str)],
) -> Result<(), Diagnostic> {
    crate::fsio::create_output_dir(dir)?;
    let out = OutDType::from(out);
    for (file, name) in files {
        let (Some(tensor), Some(bytes)) = (
            program
                .tensor_by_name(name)
                .and_then(|id| program.tensor(id)),
            result.output(name),
        ) else {
            continue;
        };
        crate::fsio::write_atomic_with(&dir.join(file), |f| {
            npy::write_file(f, &tensor.shape, tensor.dtype, bytes, out)
        })?;
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

/// Prints the run summary (`nkic_driver::report::run_report`);
/// `lower_bound_ns` is the compiled program's bound (`nkic run`), absent
/// for hand-written programs.
pub(crate) fn print_report(
    launch: &Launch,
    result: &RunResult,
    format: ReportFormat,
    lower_bound_ns: Option<f64>,
) {
    print_stdout(&nkic_driver::report::run_report(
        launch,
        result,
        format.into(),
        lower_bound_ns,
    ));
}
