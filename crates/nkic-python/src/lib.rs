//! `nkic._native`: the native half of the `nkic` Python package.
//!
//! It exposes the same pipeline functions the command line calls
//! (`nkic_driver::pipeline`, `nkic_driver::simulate::simulate`, the run
//! options, random inputs and warnings of `nkic_driver::simio`, the
//! reports of `nkic_driver`), never a
//! copy of them and never the `nkic` executable. Everything Python-shaped —
//! binding a call's arguments to the kernel's parameters, turning Python
//! objects into compile-time values, NumPy/torch dtypes, the cache, the
//! `nki` namespaces — lives in the pure-Python half (`python/nkic/`).
//!
//! # The interface (private to the package; `python/nkic/_native.pyi`)
//!
//! * `compile(path, kernel, args, consts, grid, target, lnc, search_paths,
//!   schedule, precise_fp, no_spill, host_files) -> Program`: `args` are
//!   `(name, dtype, shape)` of the tensor arguments, `consts` are `(name,
//!   python_expression)` of the compile-time arguments (evaluated by the
//!   specializer in the kernel's module scope), `host_files` are `(path,
//!   dtype_name, shape, little-endian float64 bytes)` of the `.npy` files
//!   those arguments name (`nl.shared_constant(path)`). Diagnostics become
//!   `nkic.CompileError`.
//! * `GRID_MAX`: the largest size of a launch grid's dim (`u32::MAX`).
//! * `Program.run(inputs, seed, poison, step_order, trace, max_sim_ms,
//!   title) -> dict`: `inputs` maps argument names to flat `uint8` views
//!   of C-contiguous arrays, read in place (no copy on the way in); the
//!   outputs come back as flat `uint8` arrays the package views with the
//!   right dtype and shape (no copy on the way out). Faults become
//!   `nkic.SimulationError` (`nkic.OutOfBoundsError`, also an
//!   `IndexError`, for E2001).
//!
//! # Invariants
//!
//! * The GIL is released while nkic compiles or simulates, so other Python
//!   threads run.
//! * No Rust panic crosses into Python: PyO3 turns one into a
//!   `PanicException`, and every user error is an exception carrying
//!   nkic's diagnostics.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use nkic_backend::{BackendConfig, Schedule};
use nkic_diag::{Diagnostic, RenderConfig, SourceMap, render, render_json};
use nkic_driver::compile::{Compiled, launch_bound};
use nkic_driver::report::{ReportFormat, run_report};
use nkic_driver::simio::{
    kernel_undefined_warnings, poison_named, random_rest, sim_config, step_order_named, take_input,
};
use nkic_driver::simulate::{KernelOutputs, kernel_outputs, simulate};
use nkic_isa::{DType, Target, TensorKind};
use nkic_sim::{DumpSpec, Inputs, Poison, StepOrder};
use nkic_specialize::{ArgSpec, ConstValue, HostFile, SpecializeConfig};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Reads imported modules and the sources faults point into, like the
/// command line does.
fn read_file(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The exception `class` of `nkic._errors` carrying `diags` rendered for
/// a terminal without colour, and as JSON records.
fn error(py: Python<'_>, class: &str, diags: &[Diagnostic], sources: &SourceMap) -> PyErr {
    let (rendered, records) = rendered(diags, sources);
    let made = py
        .import("nkic._errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((rendered, records)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(err) => err,
    }
}

/// `diags` as one colourless ASCII report and as JSON lines.
fn rendered(diags: &[Diagnostic], sources: &SourceMap) -> (String, Vec<String>) {
    let config = RenderConfig {
        color: false,
        unicode: false,
    };
    let text: String = diags.iter().map(|d| render(d, sources, config)).collect();
    let records = diags.iter().map(|d| render_json(d, sources)).collect();
    (text, records)
}

/// A compiled kernel, ready to run any number of times.
#[pyclass(frozen, module = "nkic._native")]
struct Program {
    compiled: Compiled,
    /// The files it was compiled from. Each run works on a copy, to which
    /// a fault may add the files its line table names: runs of one
    /// program from several Python threads share nothing that one of
    /// them could hold while the GIL is released.
    sources: SourceMap,
    base_dir: PathBuf,
    outputs: KernelOutputs,
    /// The rendered warnings and their JSON records.
    warnings: (String, Vec<String>),
    /// Compile-time `print` output, in order.
    prints: Vec<String>,
    ir: String,
}

#[pymethods]
impl Program {
    /// The `.nkasm` text of the launch.
    #[getter]
    fn nkasm(&self) -> String {
        nkic_isa::print_launch(&self.compiled.launch)
    }

    /// The specialized tile IR, one section per program instance.
    #[getter]
    fn ir(&self) -> String {
        self.ir.clone()
    }

    /// The target's name (`trn3`, `trn2`, `trn1`).
    #[getter]
    fn target(&self) -> &'static str {
        self.compiled.launch.target().name()
    }

    /// The number of physical cores of the launch (2 for LNC=2).
    #[getter]
    fn cores(&self) -> usize {
        self.compiled.launch.cores.len()
    }

    /// `(rendered text, [json record, ...])` of the compile's warnings.
    #[getter]
    fn warnings(&self) -> (String, Vec<String>) {
        self.warnings.clone()
    }

    /// The files the kernel was compiled from: its own and every module
    /// it imported (the cache checks them before reusing the program).
    #[getter]
    fn files(&self) -> Vec<String> {
        self.sources
            .files()
            .map(|(_, f)| f.name().to_owned())
            .collect()
    }

    /// Compile-time `print` output, one string per call.
    #[getter]
    fn prints(&self) -> Vec<String> {
        self.prints.clone()
    }

    /// The program argument of each returned tensor, in return order.
    #[getter]
    fn returned(&self) -> Vec<String> {
        self.outputs.returned.clone()
    }

    /// `(parameter position, program argument)` of each kernel argument
    /// the kernel writes.
    #[getter]
    fn written(&self) -> Vec<(usize, String)> {
        self.outputs.written.clone()
    }

    /// `(name, kind, dtype, shape)` of each argument of the program.
    #[getter]
    fn arguments(&self) -> Vec<(String, &'static str, &'static str, Vec<u64>)> {
        self.compiled
            .launch
            .main()
            .args()
            .map(|(_, t)| {
                (
                    t.name.clone(),
                    t.kind.name(),
                    t.dtype.name(),
                    t.shape.clone(),
                )
            })
            .collect()
    }

    /// Runs the program. `inputs` maps argument names to flat `uint8`
    /// arrays (the bytes of each input, C order); arguments not given get
    /// the deterministic random values of `nkic run` from `seed`.
    #[pyo3(signature = (inputs, *, seed = 0, poison = "precise", step_order = "round-robin", trace = false, max_sim_ms = 100, title = "kernel"))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyDict>,
        seed: u64,
        poison: &str,
        step_order: &str,
        trace: bool,
        max_sim_ms: u64,
        title: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let launch = &self.compiled.launch;
        let program = launch.main();
        let mut given = Inputs::new();
        let mut random = random_rest(program, seed, |name| {
            matches!(inputs.get_item(name), Ok(Some(_)))
        });
        for (_, tensor) in program.args() {
            if !matches!(tensor.kind, TensorKind::Input | TensorKind::InOut) {
                continue;
            }
            let expected = tensor.numel() * u64::from(tensor.dtype.size());
            match inputs.get_item(&tensor.name)? {
                Some(array) => {
                    let array: PyReadonlyArray1<'py, u8> = array.extract()?;
                    let bytes = array.as_slice().map_err(|_| {
                        PyValueError::new_err(format!(
                            "the bytes of `{}` are not contiguous",
                            tensor.name
                        ))
                    })?;
                    if bytes.len() as u64 != expected {
                        return Err(PyValueError::new_err(format!(
                            "`{}` has {} bytes, the program expects {expected}",
                            tensor.name,
                            bytes.len()
                        )));
                    }
                    given.insert(tensor.name.as_str(), bytes.to_vec());
                }
                None => {
                    if let Some((key, bytes)) =
                        random.as_mut().and_then(|r| take_input(r, &tensor.name))
                    {
                        given.insert_shared(key, bytes);
                    }
                }
            }
        }
        let config = sim_config(
            parse_step_order(step_order)?,
            parse_poison(poison)?,
            trace,
            max_sim_ms,
        );
        // The run's own copy of the sources (a fault may add the files it
        // points into; the copy shares the texts): a lock held while the
        // GIL is released would deadlock with a thread that waits for it
        // holding the GIL.
        let mut sources = self.sources.clone();
        let base_dir = &self.base_dir;
        let compiled = &self.compiled;
        // The simulator's own wall time, so benchmarks can tell the
        // package's per-call overhead from the simulation it wraps.
        let started = std::time::Instant::now();
        let ran = py.detach(|| {
            simulate(
                compiled,
                &given,
                &config,
                &DumpSpec::default(),
                base_dir,
                &mut sources,
                &read_file,
            )
        });
        let simulate_ns = started.elapsed().as_nanos() as u64;
        let result = match ran {
            Ok((result, _)) => result,
            Err(diag) => {
                let class = match diag.code {
                    "E2001" => "OutOfBoundsError",
                    _ => "SimulationError",
                };
                return Err(error(py, class, &[diag], &sources));
            }
        };
        let warnings =
            kernel_undefined_warnings(&result, compiled, base_dir, &mut sources, &read_file);
        let out = PyDict::new(py);
        out.set_item("warnings", rendered(&warnings, &sources))?;
        let outputs = PyDict::new(py);
        for name in self
            .outputs
            .returned
            .iter()
            .chain(self.outputs.written.iter().map(|(_, n)| n))
        {
            if let Some(bytes) = result.output(name) {
                // A mostly unwritten output is made whole once, here.
                let array = match bytes.bytes() {
                    std::borrow::Cow::Borrowed(b) => PyArray1::from_slice(py, b),
                    std::borrow::Cow::Owned(v) => PyArray1::from_vec(py, v),
                };
                outputs.set_item(name, array)?;
            }
        }
        out.set_item("outputs", outputs)?;
        let bound = launch_bound(launch, &result);
        out.set_item("simulated_ns", result.total_ns())?;
        out.set_item("simulate_wall_ns", simulate_ns)?;
        out.set_item("lower_bound_ns", bound.ns)?;
        out.set_item(
            "report",
            run_report(launch, &result, ReportFormat::Json, Some(bound.ns)),
        )?;
        if trace {
            let summary = nkic_driver::profile::summarize(launch, &result, Some(&bound));
            out.set_item("profile", summary.to_json().to_string())?;
            out.set_item("profile_text", summary.to_text())?;
            out.set_item(
                "trace",
                nkic_driver::trace::trace_json(launch, &result, title),
            )?;
            out.set_item(
                "timeline",
                nkic_driver::svg::timeline_svg(launch, &result, title),
            )?;
        }
        Ok(out)
    }
}

fn parse_poison(text: &str) -> PyResult<Poison> {
    poison_named(text).ok_or_else(|| {
        PyValueError::new_err(format!(
            "poison must be 'precise', 'error', 'nan' or 'zero', not {text:?}"
        ))
    })
}

fn parse_step_order(text: &str) -> PyResult<StepOrder> {
    step_order_named(text).ok_or_else(|| {
        PyValueError::new_err(format!(
            "step_order must be 'round-robin', 'reverse' or 'earliest', not {text:?}"
        ))
    })
}

fn parse_target(text: &str) -> PyResult<Target> {
    match text {
        "trn3" | "gen4" => Ok(Target::Trn3),
        "trn2" | "gen3" => Ok(Target::Trn2),
        "trn1" | "gen2" => Ok(Target::Trn1),
        _ => Err(PyValueError::new_err(format!(
            "nkic simulates the targets 'trn3', 'trn2' and 'trn1', not {text:?}"
        ))),
    }
}

/// Specializes and compiles the kernel `kernel` of the file `path` (see
/// the module doc).
#[pyfunction]
#[pyo3(signature = (path, *, kernel, args, consts, grid, target = None, lnc = None, search_paths = Vec::new(), schedule = "optimized", precise_fp = true, no_spill = false, host_files = Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn compile(
    py: Python<'_>,
    path: String,
    kernel: String,
    args: Vec<(String, String, Vec<u64>)>,
    consts: Vec<(String, String)>,
    grid: Vec<u32>,
    target: Option<&str>,
    lnc: Option<u32>,
    search_paths: Vec<String>,
    schedule: &str,
    precise_fp: bool,
    no_spill: bool,
    host_files: Vec<(String, String, Vec<usize>, Vec<u8>)>,
) -> PyResult<Program> {
    let text = std::fs::read_to_string(&path)
        .map_err(|err| PyOSError::new_err(format!("cannot read `{path}`: {err}")))?;
    let mut config = SpecializeConfig {
        kernel: Some(kernel),
        grid,
        lnc,
        search_paths,
        use_directives: false,
        low_precision_as_f32: !precise_fp,
        host_files: host_files
            .into_iter()
            .map(|(path, dtype, shape, bytes)| HostFile {
                path,
                dtype,
                shape,
                values: bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                    .collect(),
            })
            .collect(),
        ..SpecializeConfig::default()
    };
    if let Some(target) = target {
        config.target = parse_target(target)?;
    }
    for (name, dtype, shape) in args {
        let dtype = DType::from_str(&dtype).map_err(|e| PyValueError::new_err(e.to_string()))?;
        config.args.push(ArgSpec { name, dtype, shape });
    }
    for (name, expr) in consts {
        let value = ConstValue::from_str(&expr).map_err(|e| {
            PyValueError::new_err(format!("cannot pass `{name}` to the kernel: {e}"))
        })?;
        config.consts.push((name, value));
    }
    let backend = BackendConfig {
        schedule: match schedule {
            "optimized" => Schedule::Optimized,
            "sequential" => Schedule::Sequential,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "schedule must be 'optimized' or 'sequential', not {schedule:?}"
                )));
            }
        },
        no_spill,
    };
    let base_dir = Path::new(&path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let built = py.detach(move || {
        nkic_specialize::on_deep_stack(move || {
            let mut sources = SourceMap::new();
            let file = sources.add(path, text);
            let outcome = nkic_driver::pipeline(
                &mut sources,
                file,
                &config,
                &backend,
                &read_file,
                nkic_driver::Stop::Compiled,
            );
            match outcome.stage {
                nkic_driver::Stage::Compiled(compiled) => {
                    let ir = nkic_driver::pipeline::ir_text(&compiled.kernels, &sources);
                    let prints = outcome.prints.into_iter().map(|p| p.text).collect();
                    Ok((compiled, sources, outcome.diagnostics, prints, ir))
                }
                _ => Err((outcome.diagnostics, sources)),
            }
        })
    });
    let (compiled, sources, warnings, prints, ir) = match built {
        Ok(built) => built,
        Err((diags, sources)) => return Err(error(py, "CompileError", &diags, &sources)),
    };
    let outputs = match compiled.kernels.first() {
        Some(kernel) => kernel_outputs(kernel, compiled.launch.main()),
        None => KernelOutputs::default(),
    };
    let warnings = rendered(&warnings, &sources);
    Ok(Program {
        compiled,
        sources,
        base_dir,
        outputs,
        warnings,
        prints,
        ir,
    })
}

/// The dtype names nkic knows, as `DType::name` spells them.
#[pyfunction]
fn dtype_names() -> Vec<&'static str> {
    DType::ALL.iter().map(|d| d.name()).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(dtype_names, m)?)?;
    m.add_class::<Program>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // A launch grid's sizes are `u32`s, 1 and up (`compile`'s `grid`, as
    // `nkic --grid` takes them).
    m.add("GRID_MAX", u32::MAX)?;
    Ok(())
}
