//! The back half's second step: running a compiled launch in the
//! reference interpreter, and turning what it reports into diagnostics.
//!
//! * [`random_inputs`]: the deterministic random inputs of `nkic run`
//!   without `--input` (and of the Python package for arguments it is not
//!   given).
//! * [`output_files`]: which program argument each kernel output is.
//! * [`simulate`]: one run, with its fault as a diagnostic.
//! * [`runtime_fault`]: a `SimError` as a diagnostic at the kernel source
//!   line (or the `.nkasm` instruction, with an [`InstructionLocator`]).
//!
//! No IO: kernel sources named by a program's line table are read through
//! the caller's [`ModuleLoader`].

use std::path::Path;

use nkic_diag::{Diagnostic, FileId, Severity, SourceMap, Span};
use nkic_ir::{ArgKind, Kernel};
use nkic_isa::{DType, Launch, LineId, Program, Queue, SplitMix64, TensorKind, numerics};
use nkic_sim::{DumpSpec, Inputs, RunResult, SimConfig, SimError, SimErrorKind};
use nkic_specialize::ModuleLoader;
use rayon::prelude::*;
use serde_json::json;

use crate::compile::Compiled;

/// Runs `compiled` on `inputs`; a fault is a diagnostic at the kernel
/// source line (files read through `loader`, relative to `base_dir`).
pub fn simulate(
    compiled: &Compiled,
    inputs: &Inputs,
    config: &SimConfig,
    dump: &DumpSpec,
    base_dir: &Path,
    sources: &mut SourceMap,
    loader: &dyn ModuleLoader,
) -> Result<(RunResult, Vec<nkic_sim::Dump>), Diagnostic> {
    let launch = &compiled.launch;
    // The backend emits only verified launches (it panics otherwise);
    // this token is what the interpreter asks for.
    let verified = nkic_isa::verify_launch(launch).unwrap_or_else(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        panic!(
            "invariant broken: the backend compiles only launches the ISA verifier accepts, but this one fails it: {}",
            lines.join("; ")
        )
    });
    nkic_sim::run_launch_dumping(verified, inputs, config, dump).map_err(|err| {
        let diag = runtime_fault(&err, launch, None, base_dir, sources, loader);
        unwritten_output(diag, &err, compiled, sources)
    })
}

/// Calls `fill(c, chunk)` for chunk `c` of `bytes` (`size` bytes each, the
/// last one shorter), on the pool's threads where this process may use
/// them (`nkic_isa::threads`).
fn fill_chunks(bytes: &mut [u8], size: usize, fill: impl Fn(usize, &mut [u8]) + Sync) {
    if nkic_isa::threads::parallel() {
        bytes
            .par_chunks_mut(size)
            .enumerate()
            .for_each(|(c, out)| fill(c, out));
    } else {
        bytes
            .chunks_mut(size)
            .enumerate()
            .for_each(|(c, out)| fill(c, out));
    }
}

/// Random inputs for every input and inout argument, from a fixed seed:
/// floats uniform in [-1, 1) (each lane of a packed MX element too),
/// signed integers in [-8, 8), unsigned ones in [0, 16), booleans 0 or 1;
/// MX scales (`float8_e8m0`) get random codes. A
/// program whose tensors the simulator cannot hold gets none: its run
/// stops with that fault (E2005) before reading inputs.
pub fn random_inputs(program: &Program, seed: u64) -> Inputs {
    let mut inputs = Inputs::new();
    if nkic_sim::check_sizes(program).is_err() {
        return inputs;
    }
    let mut rng = SplitMix64(seed);
    for (_, tensor) in program.args() {
        if !matches!(tensor.kind, TensorKind::Input | TensorKind::InOut) {
            continue;
        }
        let n = tensor.numel() as usize;
        let dtype = tensor.dtype;
        let bytes: Vec<u8> = if dtype.is_float() && dtype != DType::F8E8M0 {
            // In chunks, so a large tensor never exists as f32 values too,
            // drawn on the pool's threads: chunk `c` starts `c` chunks of
            // draws into the sequence, so the bytes are those of one
            // sequential pass. A packed element's lanes are values of
            // their own. The buffer is zeroed by the allocator (fresh pages
            // for a large tensor), so the threads' writes are the only pass.
            let lanes = numerics::lanes(dtype);
            let values = n * lanes;
            let chunk_bytes = RANDOM_CHUNK / lanes * dtype.size() as usize;
            let first = rng.clone();
            let mut bytes = vec![0; n * dtype.size() as usize];
            fill_chunks(&mut bytes, chunk_bytes, |c, out| {
                let start = c * RANDOM_CHUNK;
                let mut g = first.skipped(start as u64);
                let drawn: Vec<f32> = (start..values.min(start + RANDOM_CHUNK))
                    .map(|_| unit(&mut g) * 2.0 - 1.0)
                    .collect();
                let mut encoded = Vec::with_capacity(out.len());
                numerics::encode(dtype, &drawn, &mut encoded);
                out.copy_from_slice(&encoded);
            });
            rng = first.skipped(values as u64);
            bytes
        } else {
            // One draw per element, in chunks on the pool's threads as
            // above (an MX kernel's 450 MB of packed integer weights took
            // 1.4 s drawn one byte at a time on one thread).
            let size = dtype.size() as usize;
            let first = rng.clone();
            let mut bytes = vec![0; n * size];
            fill_chunks(&mut bytes, RANDOM_CHUNK * size, |c, out| {
                let mut g = first.skipped((c * RANDOM_CHUNK) as u64);
                for element in out.chunks_exact_mut(size) {
                    let bits = random_bits(dtype, g.next_u64());
                    element.copy_from_slice(&bits.to_le_bytes()[..size]);
                }
            });
            rng = first.skipped(n as u64);
            bytes
        };
        inputs.insert(tensor.name.as_str(), bytes);
    }
    inputs
}

/// The float values `random_inputs` draws and encodes at a time (a
/// multiple of every dtype's lane count).
const RANDOM_CHUNK: usize = 1 << 16;

/// The little-endian bits of a random element of a dtype that is not
/// drawn as float values, from the draw `r`: a byte of E8M0 scales, a
/// bool, or a small integer (−8..8 signed, 0..16 unsigned).
fn random_bits(dtype: DType, r: u64) -> i64 {
    match dtype {
        DType::F8E8M0 => i64::from(r as u8),
        DType::Bool => (r & 1) as i64,
        d if d.is_signed_int() => (r % 16) as i64 - 8,
        _ => (r % 16) as i64,
    }
}

/// Uniform in [0, 1) with 24 random bits of `rng`, exact in f32.
fn unit(rng: &mut SplitMix64) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32
}

/// Which program argument each output of a kernel is: the returned
/// tensors in return order, then the kernel arguments the kernel writes
/// (by parameter position).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelOutputs {
    /// The program argument of each returned tensor.
    pub returned: Vec<String>,
    /// `(parameter position, program argument)` of each argument written.
    pub written: Vec<(usize, String)>,
}

/// The outputs of `kernel` compiled to `program` ([`KernelOutputs`]).
pub fn kernel_outputs(kernel: &Kernel, program: &Program) -> KernelOutputs {
    let args: Vec<&str> = program.args().map(|(_, t)| t.name.as_str()).collect();
    let n_args = kernel.args.len();
    let mut out = KernelOutputs::default();
    let mut extra = n_args;
    for ret in &kernel.outputs {
        let name = match kernel.args.iter().position(|a| a.storage == *ret) {
            Some(j) => args.get(j).copied(),
            None => {
                extra += 1;
                args.get(extra - 1).copied()
            }
        };
        if let Some(name) = name {
            out.returned.push(name.to_owned());
        }
    }
    for (j, arg) in kernel.args.iter().enumerate() {
        if matches!(arg.kind, ArgKind::Output | ArgKind::InOut)
            && let Some(name) = args.get(j)
        {
            out.written.push((j, (*name).to_owned()));
        }
    }
    out
}

/// Which output file each program output goes to: `out<i>.npy` for the
/// i-th returned tensor, `<arg>.npy` for each kernel argument the kernel
/// writes.
pub fn output_files(kernel: &Kernel, program: &Program) -> Vec<(String, String)> {
    let outputs = kernel_outputs(kernel, program);
    let returned = outputs
        .returned
        .into_iter()
        .enumerate()
        .map(|(i, name)| (format!("out{i}.npy"), name));
    let written = outputs
        .written
        .into_iter()
        .map(|(_, name)| (format!("{name}.npy"), name));
    returned.chain(written).collect()
}

/// A runtime fault as a diagnostic pointing at the kernel source line when
/// that file can be read, and otherwise at the `.nkasm` instruction.
pub fn runtime_fault(
    err: &SimError,
    launch: &Launch,
    nkasm: Option<(FileId, &InstructionLocator)>,
    base_dir: &Path,
    sources: &mut SourceMap,
    loader: &dyn ModuleLoader,
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
        diag = diag.with_help(if err.message.starts_with("an index or a register read through") {
            "an undefined value decides which memory is accessed or where the program goes: the behaviour is undefined; check the stores that should write it"
        } else {
            "if these elements are never used (lanes a kernel computes but ignores), the default `--poison precise` runs on: it reports only outputs computed from them and indices or registers read from them"
        });
    }
    if let Some(oob) = &err.oob {
        diag = diag.with_facts(json!({
            "tensor": oob.tensor,
            "shape": oob.shape,
            "axis": oob.axis,
            "index": oob.index,
            "flat_offset": oob.flat_offset,
            "field": oob.field,
            "row": oob.row,
            "index_tile": oob.index_tile.as_ref().map(|(name, value)| json!({"name": name, "value": value})),
            "numpy": oob.message(),
        }));
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
    // An instruction without a line-table entry of its own (a label, a
    // loop's branch) takes the nearest one of its stream.
    let mnemonic = err.mnemonic.unwrap_or("instruction");
    // A run stopped at its limit did not fault: it was about to run this.
    let (own, other) = match err.kind {
        SimErrorKind::InstructionLimit => (
            format!("the run stopped at its limit before this {mnemonic}"),
            format!(
                "the run stopped at its limit before a {mnemonic} (without a source line) next to this code"
            ),
        ),
        _ => (
            format!("this {mnemonic} faulted"),
            format!("the faulting {mnemonic} (without a source line) is next to this code"),
        ),
    };
    let line = err.line.map(|line| (line, own)).or_else(|| {
        let line = nearest_line(program, err.queue?, err.index?)?;
        Some((line, other))
    });
    if let Some((span, label)) = line.and_then(|(line, label)| {
        Some((
            source_span(program, line, base_dir, sources, loader)?,
            label,
        ))
    }) {
        diag = diag.with_primary(span.0, span.1, label);
        if let Some((file, span)) = inst {
            diag = diag.with_secondary(file, span, "the faulting instruction");
        }
    } else if let Some((file, span)) = inst {
        diag = diag.with_primary(file, span, "the faulting instruction");
    } else if let Some((file, locator)) = nkasm {
        // A fault of no instruction: at the tensor it is about, or else
        // at the launch's first line.
        let span = err
            .tensor
            .as_deref()
            .and_then(|t| locator.tensor(t))
            .or_else(|| locator.first_line());
        if let Some(span) = span {
            let label = if err.tensor.is_some() {
                "declared here"
            } else {
                "in this program"
            };
            diag = diag.with_primary(file, span, label);
        }
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
            .and_then(|line| source_span(other_program, line, base_dir, sources, loader))
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

/// Warning E2009 for each undefined-output entry of a run
/// (`RunResult::undefined`, `--poison precise`): the output (`describe`
/// gives the kernel's words for a program argument and where it is
/// allocated), how many elements, the first one and, for values computed
/// from undefined memory, the source line of the first bad read. The same
/// facts go to `--message-format json` as `facts`.
/// Then warning E2010 for each timing-dependent read the kernel masks
/// (`RunResult::races`).
pub fn undefined_warnings(
    result: &RunResult,
    launch: &Launch,
    base_dir: &Path,
    sources: &mut SourceMap,
    loader: &dyn ModuleLoader,
    describe: impl Fn(&str, &SourceMap) -> (String, Option<(FileId, Span)>),
) -> Vec<Diagnostic> {
    let program = launch.main();
    let mut out = Vec::new();
    for u in &result.undefined {
        let (what, alloc) = describe(&u.output, sources);
        let total: u64 = u.shape.iter().product();
        let float = program
            .tensor_by_name(&u.output)
            .and_then(|id| program.tensor(id))
            .is_none_or(|t| t.dtype.is_float());
        let fill = if float { "NaN" } else { "4" };
        let first = format!(
            "[{}]",
            u.first_index
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        let origin = u.origin.as_ref().map(|site| {
            let core = launch
                .core(usize::from(site.core.unwrap_or(0)))
                .unwrap_or(program);
            let span = site
                .line
                .and_then(|line| source_span(core, line, base_dir, sources, loader));
            (site, span)
        });
        let mut diag = match &origin {
            None => Diagnostic::warning(
                "E2009",
                format!(
                    "output {what}: {} of {total} elements are never written (the first is {first}); they hold {fill}",
                    u.elements
                ),
            )
            .with_help(
                "a kernel may leave elements unwritten on purpose (a masked last tile, a partial scatter); if not, check the stores into this output. `--poison error` makes this an error",
            ),
            Some((site, _)) => Diagnostic::warning(
                "E2009",
                format!(
                    "output {what}: {} of {total} elements are computed from undefined memory (the first is {first}), first read by {site}",
                    u.elements
                ),
            )
            .with_help(
                "these values depend on memory no instruction wrote: check the loads, masks and stores that feed this output (`--poison error` stops at the first read)",
            ),
        };
        match (&origin, alloc) {
            (Some((_, Some((file, span)))), alloc) => {
                diag = diag.with_primary(*file, *span, "undefined memory is first read here");
                if let Some((file, span)) = alloc {
                    diag = diag.with_secondary(file, span, "the output is allocated here");
                }
            }
            (_, Some((file, span))) => diag = diag.with_primary(file, span, "allocated here"),
            _ => {}
        }
        let origin_json = origin.as_ref().map(|(site, span)| {
            let (file, line, column) = match span.and_then(|(f, s)| {
                let f = sources.get(f)?;
                Some((f.name().to_owned(), f.line_col(s.start)))
            }) {
                Some((name, lc)) => (json!(name), json!(lc.line), json!(lc.col)),
                None => (json!(null), json!(null), json!(null)),
            };
            json!({
                "mnemonic": site.mnemonic,
                "core": site.core,
                "queue": site.queue.to_string(),
                "index": site.index,
                "file": file,
                "line": line,
                "column": column,
            })
        });
        out.push(diag.with_facts(json!({
            "output": u.output,
            "shape": u.shape,
            "elements": u.elements,
            "total": total,
            "first_index": u.first_index,
            "cause": if origin.is_some() { "computed-from-undefined" } else { "never-written" },
            "origin": origin_json,
        })));
    }
    out.extend(
        result
            .races
            .iter()
            .map(|race| race_warning(race, launch, base_dir, sources, loader)),
    );
    out
}

/// Warning E2010 for a read of bytes the other core stores without
/// ordering whose value reaches nothing the kernel produces
/// (`RunResult::races`): the race's E2008 diagnostic, as a warning.
fn race_warning(
    race: &SimError,
    launch: &Launch,
    base_dir: &Path,
    sources: &mut SourceMap,
    loader: &dyn ModuleLoader,
) -> Diagnostic {
    let mut diag = runtime_fault(race, launch, None, base_dir, sources, loader);
    diag.severity = Severity::Warning;
    diag.code = "E2010";
    diag.message = format!("{}; the value read depends on timing", diag.message);
    diag.with_help(
        "nkic ran the launch again with the read seeing the other side of the store, and no output changed (a read the kernel masks or does not use); if the value should matter, order the two accesses with a core barrier",
    )
}

/// The line-table entry of the instruction nearest to `index` in `queue`'s
/// stream that has one (the next ones first: a label or a branch opens or
/// closes the code it belongs to).
fn nearest_line(program: &Program, queue: Queue, index: usize) -> Option<LineId> {
    let stream = program.stream(queue)?;
    let after = stream.get(index..)?.iter().find_map(|i| i.line);
    after.or_else(|| stream.get(..index)?.iter().rev().find_map(|i| i.line))
}

/// The kernel source span of a line-table entry, loading its file
/// through `loader`.
fn source_span(
    program: &Program,
    line: LineId,
    base_dir: &Path,
    sources: &mut SourceMap,
    loader: &dyn ModuleLoader,
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
            let text = loader.read(&path.to_string_lossy())?;
            sources.add(name.clone(), text)
        }
    };
    Some((file, Span::new(entry.span.start, entry.span.end)))
}

/// Finds the `.nkasm` line of the `index`-th instruction of a queue, so
/// verifier and runtime errors point into the program text.
pub struct InstructionLocator {
    /// (core section, queue name, spans of its instruction lines in order)
    queues: Vec<(u8, String, Vec<Span>)>,
    /// (core section, HBM tensor name, its `.arg` or `.hbm` line) in order.
    tensor_lines: Vec<(u8, String, Span)>,
    /// (core section, directive, line) of each `.sem` and `.line` line in
    /// order.
    other_decls: Vec<(u8, &'static str, Span)>,
    /// The first line that is not blank or a comment.
    first: Option<Span>,
    /// The `.queue` line of each (core, queue), and each `.core N` line.
    queue_lines: Vec<(u8, String, Span)>,
    core_lines: Vec<(u8, Span)>,
}

/// The span of the `i`-th of `lines` on `core` whose middle element `keep`
/// keeps.
fn nth_on<T>(
    lines: &[(u8, T, Span)],
    core: u8,
    i: usize,
    keep: impl Fn(&T) -> bool,
) -> Option<Span> {
    lines
        .iter()
        .filter(|(k, x, _)| *k == core && keep(x))
        .nth(i)
        .map(|(_, _, s)| *s)
}

impl InstructionLocator {
    pub fn new(text: &str) -> InstructionLocator {
        let mut queues: Vec<(u8, String, Vec<Span>)> = Vec::new();
        let mut queue_lines = Vec::new();
        let mut core_lines = Vec::new();
        let mut tensor_lines = Vec::new();
        let mut other_decls = Vec::new();
        let mut first = None;
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
            first = first.or(Some(whole));
            let declared = code
                .strip_prefix(".arg ")
                .or_else(|| code.strip_prefix(".hbm "))
                .and_then(|rest| rest.split_whitespace().next());
            let other = [".sem ", ".line "]
                .into_iter()
                .find(|d| code.starts_with(d));
            if let Some(name) = declared {
                tensor_lines.push((core, name.to_owned(), whole));
            } else if let Some(directive) = other {
                other_decls.push((core, directive, whole));
            } else if let Some(name) = code.strip_prefix(".queue") {
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
            tensor_lines,
            other_decls,
            first,
            queue_lines,
            core_lines,
        }
    }

    /// The `.arg` or `.hbm` line declaring HBM tensor `name` (of the first
    /// core that declares it).
    pub fn tensor(&self, name: &str) -> Option<Span> {
        self.tensor_lines
            .iter()
            .find(|(_, n, _)| n == name)
            .map(|(_, _, s)| *s)
    }

    /// The line of a declaration a verifier error is in
    /// ([`nkic_isa::Decl`]), on `core`.
    pub fn decl(&self, core: Option<u8>, decl: nkic_isa::Decl) -> Option<Span> {
        let c = core.unwrap_or(0);
        match decl {
            nkic_isa::Decl::Tensor(i) => nth_on(&self.tensor_lines, c, i, |_| true),
            nkic_isa::Decl::Semaphore(i) => nth_on(&self.other_decls, c, i, |d| *d == ".sem "),
            nkic_isa::Decl::Line(i) => nth_on(&self.other_decls, c, i, |d| *d == ".line "),
            nkic_isa::Decl::Stream(i) => nth_on(&self.queue_lines, c, i, |_| true),
        }
    }

    /// The program's first line (a `.target` directive, usually).
    pub fn first_line(&self) -> Option<Span> {
        self.first
    }

    /// The `.queue` line of `queue` on `core`, or without a queue the
    /// `.core` line of `core`: where a launch-level verifier error points.
    pub fn declaration(&self, core: Option<u8>, queue: Option<Queue>) -> Option<Span> {
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
    pub fn span(&self, core: Option<u8>, queue: Queue, index: usize) -> Option<Span> {
        let name = queue.to_string();
        let core = core.unwrap_or(0);
        self.queues
            .iter()
            .find(|(c, q, _)| *c == core && *q == name)
            .and_then(|(_, _, spans)| spans.get(index).copied())
    }
}

/// An output left partly unwritten (E2002 without an instruction): names
/// the kernel's variable ([`describe_output`]), labels the allocation, and
/// says what to check. Other faults pass unchanged.
fn unwritten_output(
    diag: Diagnostic,
    err: &nkic_sim::SimError,
    compiled: &Compiled,
    sources: &SourceMap,
) -> Diagnostic {
    let Some(tensor) = err.tensor.as_deref() else {
        return diag;
    };
    if err.kind != nkic_sim::SimErrorKind::UninitialisedRead {
        // Another fault about a tensor (its size, its input): at the
        // kernel's argument or allocation.
        return match describe_output(tensor, compiled, sources) {
            Some((_, Some(loc))) if diag.primary.is_none() => {
                diag.with_primary(loc.file, loc.span, "this tensor")
            }
            _ => diag,
        };
    }
    let Some((what, loc)) = describe_output(tensor, compiled, sources) else {
        return diag;
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

/// How the kernel names the program argument `tensor`: the kernel's
/// variable (the one the allocation is assigned to, when the source says
/// `name = nl.ndarray(...)`; else the storage's name) and the returned
/// tensor's position, in backquotes; and where it is allocated.
pub fn describe_output(
    tensor: &str,
    compiled: &Compiled,
    sources: &SourceMap,
) -> Option<(String, Option<nkic_ir::SrcLoc>)> {
    let kernel = compiled.kernels.first()?;
    let program = compiled.launch.main();
    let args: Vec<&str> = program.args().map(|(_, t)| t.name.as_str()).collect();
    // The kernel storage behind the program's argument `tensor`: a
    // returned tensor (by return index) or a written argument.
    let returned = kernel_outputs(kernel, program)
        .returned
        .iter()
        .position(|name| name == tensor);
    let storage = returned
        .and_then(|i| kernel.outputs.get(i).copied())
        .or_else(|| {
            args.iter()
                .position(|n| *n == tensor)
                .and_then(|j| kernel.args.get(j))
                .map(|a| a.storage)
        })?;
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
    Some((what, loc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_float_inputs_are_drawn_as_one_stream() {
        // More values than one chunk, ending inside a chunk: the bytes are
        // those of drawing every value first and encoding them at once.
        let n = 2 * RANDOM_CHUNK + 7;
        let mut program = Program::new(nkic_isa::Target::Trn3);
        program.add_tensor("x", DType::F16, &[1, n as u64], TensorKind::Input);
        let inputs = random_inputs(&program, 9);
        let mut rng = SplitMix64(9);
        let values: Vec<f32> = (0..n).map(|_| unit(&mut rng) * 2.0 - 1.0).collect();
        let mut want = Vec::new();
        numerics::encode(DType::F16, &values, &mut want);
        let (_, got) = &inputs.entries[0];
        assert_eq!(got.len(), want.len());
        assert!(got[..] == want[..]);
    }

    #[test]
    fn later_tensors_continue_the_stream_of_earlier_ones() {
        // A float tensor ending inside a chunk, a packed one (four values
        // per element), an integer one over two chunks and E8M0 scales
        // draw one sequence in turn.
        let (n, m, k, e) = (RANDOM_CHUNK + 3, RANDOM_CHUNK / 4 + 5, RANDOM_CHUNK + 9, 7);
        let mut program = Program::new(nkic_isa::Target::Trn3);
        program.add_tensor("x", DType::F32, &[1, n as u64], TensorKind::Input);
        program.add_tensor("y", DType::F8E5M2x4, &[1, m as u64], TensorKind::Input);
        program.add_tensor("z", DType::I32, &[1, k as u64], TensorKind::Input);
        program.add_tensor("s", DType::F8E8M0, &[1, e as u64], TensorKind::Input);
        let inputs = random_inputs(&program, 5);
        let mut rng = SplitMix64(5);
        let mut want = Vec::new();
        let draw = |count: usize, dtype: DType, rng: &mut SplitMix64| {
            let values: Vec<f32> = (0..count).map(|_| unit(rng) * 2.0 - 1.0).collect();
            let mut bytes = Vec::new();
            numerics::encode(dtype, &values, &mut bytes);
            bytes
        };
        want.push(draw(n, DType::F32, &mut rng));
        want.push(draw(4 * m, DType::F8E5M2x4, &mut rng));
        want.push(
            (0..k)
                .flat_map(|_| (((rng.next_u64() % 16) as i32) - 8).to_le_bytes())
                .collect(),
        );
        want.push((0..e).map(|_| rng.next_u64() as u8).collect());
        for ((name, got), want) in inputs.entries.iter().zip(&want) {
            assert!(got[..] == want[..], "{name:?}");
        }
        assert_eq!(inputs.entries.len(), 4);
    }
}
