//! The scheduling-quality bench over the bundled kernels (`kernels/*.py`).
//!
//! For every kernel file, at the shapes of its `# nkic: args` directive and,
//! for the kernels listed in [`LARGE`], at large shapes, the bench compiles
//! the kernel through the same library path as `nkic run`
//! (`nkic_specialize::specialize`, `nkic_backend::compile_grid`,
//! `nkic_sim::run`), once with the optimized and once with the sequential
//! schedule, runs both on the same random inputs (the generator and seed of
//! `nkic run`'s random inputs, floats uniform in [-1, 1)) with the race
//! detector on, and prints one row:
//!
//! * `simulated`: the optimized program's simulated time;
//! * `bound`: `nkic_backend::lower_bound` of the optimized program (the
//!   maximum over engines of their total busy time, each of the DMA
//!   engines all DMA queues share included, and HBM bytes over HBM
//!   bandwidth), with what limits it;
//!   The bound counts each instruction as many times as the run executed
//!   it (`lower_bound_counted`, the same as `lower_bound` without dynamic
//!   loops), and is checked against the issue's definition measured
//!   independently on the optimized run's trace (each compute engine's
//!   intervals, each DMA engine's data time, the HBM bytes moved): a
//!   difference is a failure (`!bound is not the issue's definition`);
//! * `sim/bound`: their ratio (1.00 is perfect);
//! * `sequential`: the sequential program's simulated time, and
//!   `speedup` = sequential / optimized;
//! * `bits`: whether both schedules produced identical output bytes (the
//!   scheduler oracle), which must always be `same`.
//!
//! The targets of the backend issue are checked and marked in the last
//! column: within 1.25× of the bound for the matmul, softmax and add
//! kernels (file stems containing one of [`BOUND_TARGET_KERNELS`]) at
//! sizes of at least 1024×1024 (an argument of at least 1024 × 1024
//! elements), and at least 2× faster than the sequential program for the
//! tiled kernels (every large case: each loops over many tiles). A `!`
//! marks a missed target. A kernel whose sequential program is already
//! within 2× of the bound (one engine does nearly all the work) cannot be
//! sped up 2× by any schedule; its row says so and does not count as a
//! miss. When no filter selects cases, a ratio-target kernel without a
//! case of that size is a failure too, so the target cannot go unchecked.
//!
//! A full run (no filter) ends with the compile time of a generated chain
//! of 100,000 `tensor_scalar` ops (issue 15: under 2 s; a miss is marked
//! and counted); `benches/scaling.rs` has the other scaling cases.
//!
//! Run it with `cargo bench -p nkic --bench quality`. Arguments after `--`:
//! substrings selecting cases by label (`matmul`, `softmax@1024x1024`),
//! `--check` (exit with failure when a target is missed or the schedules
//! disagree), `--timeline` (print each selected optimized run's
//! per-queue instruction timeline) and `--target=trn2` (another target
//! than the default trn3; the targets are checked the same way). Without `--bench` on its command line
//! (that is, under `cargo test --benches`) only the directive shapes of
//! the first two kernels run, as a smoke test.

// Only the 100,000-instruction chain is used here.
#[allow(dead_code)]
#[path = "common/scaling.rs"]
mod scaling;

#[path = "common/paths.rs"]
mod paths;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use nkic_backend::{BackendConfig, LowerBound, Schedule};
use nkic_diag::{Diagnostic, SourceMap};
// `nkic run`'s random inputs (same generator, same distributions).
use nkic_driver::simulate::random_inputs;
use nkic_isa::{DType, Engine, Program, Queue};
use nkic_sim::{RunResult, SimConfig};
use nkic_specialize::{ArgSpec, SpecializeConfig};

use paths::root;

/// Large shapes per kernel (file stem): the `--arg` bindings of each case
/// (a kernel may have several).
/// Kernels not listed run at their directive shapes only (`transpose_ap`
/// is the deliberately slow per-element transpose).
const LARGE: &[(&str, &[&str])] = &[
    ("avgpool2d", &["x=float32[256,128,128]"]),
    ("cumsum", &["x=float32[1024,1024]"]),
    (
        "flash_attention",
        &[
            "q_t=bfloat16[128,1024]",
            "k_t=bfloat16[128,1024]",
            "v=bfloat16[1024,128]",
        ],
    ),
    (
        "gelu_mlp",
        &[
            "x_t=float32[1024,1024]",
            "w1=float32[1024,1024]",
            "w2=float32[1024,1024]",
        ],
    ),
    (
        "layernorm",
        &[
            "x=float32[1024,1024]",
            "gamma=float32[1,1024]",
            "beta=float32[1,1024]",
        ],
    ),
    (
        "matmul",
        &["a_t=float32[1024,1024]", "b=float32[1024,1024]"],
    ),
    (
        "matmul_basic",
        &["a_t=float32[1024,1024]", "b=float32[1024,1024]"],
    ),
    (
        "matmul_bf16",
        &["a=bfloat16[1024,1024]", "b=bfloat16[1024,1024]"],
    ),
    (
        "matmul_blocked",
        &["a_t=float32[1024,1024]", "b=float32[1024,1024]"],
    ),
    (
        "matmul_fp8",
        &["a_t=float8_e4m3[1024,1024]", "b=float8_e4m3[1024,1024]"],
    ),
    ("rmsnorm", &["x=float32[1024,1024]", "w=float32[1,1024]"]),
    ("softmax", &["x=float32[1024,1024]"]),
    ("softmax", &["x=float32[4096,1024]"]),
    ("softmax_isa", &["x=bfloat16[1024,1024]"]),
    ("softmax_isa", &["x=bfloat16[4096,1024]"]),
    (
        "spmd_add",
        &["a=float32[1024,1024]", "b=float32[1024,1024]"],
    ),
    (
        "tensor_add",
        &["a=float32[1024,1024]", "b=float32[1024,1024]"],
    ),
    (
        "tensor_add_legacy",
        &["a=float32[1024,1024]", "b=float32[1024,1024]"],
    ),
    ("top8", &["x=float32[1024,1024]"]),
    ("transpose", &["x=float32[1024,1024]"]),
    ("transpose_dma", &["x=bfloat16[1024,1024]"]),
];

/// The kernels (by file-stem substring) the ratio target applies to.
const BOUND_TARGET_KERNELS: &[&str] = &["matmul", "softmax", "add"];

/// The ratio target: simulated time within this factor of the bound.
const BOUND_TARGET: f64 = 1.25;

/// The size from which the ratio target applies: an argument with at
/// least this many elements (1024 × 1024).
const BOUND_TARGET_ELEMENTS: u64 = 1024 * 1024;

/// The speedup target over the sequential program.
const SPEEDUP_TARGET: f64 = 2.0;

/// The seed of `nkic run`'s random inputs.
const SEED: u64 = 0;

/// One case: a kernel file at some shapes.
struct Case {
    /// `stem`, or `stem@<shape of the first argument>` for large shapes.
    label: String,
    stem: String,
    path: PathBuf,
    /// Argument bindings overriding the directive (empty: the directive's).
    args: Vec<ArgSpec>,
    large: bool,
    /// The most elements of any argument (0 at the directive shapes).
    elements: u64,
}

impl Case {
    /// True when the ratio target applies: a matmul, softmax or add
    /// kernel at a large shape of at least 1024×1024.
    fn bound_target(&self) -> bool {
        self.large
            && self.elements >= BOUND_TARGET_ELEMENTS
            && BOUND_TARGET_KERNELS.iter().any(|k| self.stem.contains(k))
    }
}

/// The measured figures of one case.
struct Row {
    simulated_ns: f64,
    bound: LowerBound,
    sequential_ns: f64,
    /// How the bound differs from the issue's definition measured on the
    /// optimized run, if it does.
    bound_mismatch: Option<String>,
    same_bits: bool,
    instructions: usize,
    compile_ms: f64,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let bench_mode = argv.iter().any(|a| a == "--bench");
    let check = argv.iter().any(|a| a == "--check");
    let timeline = argv.iter().any(|a| a == "--timeline");
    let target = match argv.iter().find_map(|a| a.strip_prefix("--target=")) {
        None => SpecializeConfig::default().target,
        Some(name) => match nkic_isa::Target::from_name(name) {
            Some(t) => t,
            None => {
                eprintln!("error: unknown target `{name}` (trn2 or trn3)");
                return ExitCode::FAILURE;
            }
        },
    };
    let filters: Vec<&str> = argv
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    let mut cases = match cases() {
        Ok(cases) => cases,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    if !bench_mode {
        // Smoke test under `cargo test --benches` (an unoptimised build).
        cases.retain(|c| !c.large);
        cases.truncate(2);
    }
    cases.retain(|c| filters.is_empty() || filters.iter().any(|f| c.label.contains(f)));
    println!(
        "{:28} {:>12} {:>12} {:>9} {:>7} {:>12} {:>8} {:>6} {:>6} {:>8}  targets",
        "kernel",
        "simulated",
        "bound",
        "limit",
        "sim/bd",
        "sequential",
        "speedup",
        "bits",
        "insts",
        "compile"
    );
    let mut failures = 0usize;
    let mut bound_checked: Vec<&str> = Vec::new();
    let mut speedup_checked = 0usize;
    for case in &cases {
        match measure(case, target, timeline) {
            Ok(row) => {
                let ratio = row.simulated_ns / row.bound.ns.max(f64::MIN_POSITIVE);
                let speedup = row.sequential_ns / row.simulated_ns.max(f64::MIN_POSITIVE);
                let mut marks = Vec::new();
                if case.bound_target() {
                    if let Some(k) = BOUND_TARGET_KERNELS.iter().find(|k| case.stem.contains(*k)) {
                        bound_checked.push(k);
                    }
                    let ok = ratio <= BOUND_TARGET;
                    marks.push(format!("{}bound≤{BOUND_TARGET}", if ok { "" } else { "!" }));
                    failures += usize::from(!ok);
                }
                if case.large {
                    // No schedule beats the bound, so when the sequential
                    // program is already within the target of the bound
                    // the speedup target cannot be met; say so instead.
                    let reachable = row.sequential_ns >= SPEEDUP_TARGET * row.bound.ns;
                    let ok = speedup >= SPEEDUP_TARGET;
                    if ok || reachable {
                        speedup_checked += 1;
                        marks.push(format!(
                            "{}speedup≥{SPEEDUP_TARGET}",
                            if ok { "" } else { "!" }
                        ));
                        failures += usize::from(!ok);
                    } else {
                        marks.push(format!(
                            "speedup≥{SPEEDUP_TARGET} unreachable (sequential is {:.2}x the bound)",
                            row.sequential_ns / row.bound.ns
                        ));
                    }
                }
                if let Some(why) = &row.bound_mismatch {
                    marks.push(format!("!bound is not the issue's definition: {why}"));
                    failures += 1;
                }
                if !row.same_bits {
                    marks.push("!bits differ".to_owned());
                    failures += 1;
                }
                println!(
                    "{:28} {:>10.0}ns {:>10.0}ns {:>9} {:>7.3} {:>10.0}ns {:>7.2}x {:>6} {:>6} {:>6.0}ms  {}",
                    case.label,
                    row.simulated_ns,
                    row.bound.ns,
                    row.bound.limited_by,
                    ratio,
                    row.sequential_ns,
                    speedup,
                    if row.same_bits { "same" } else { "DIFF" },
                    row.instructions,
                    row.compile_ms,
                    marks.join(" ")
                );
            }
            Err(err) => {
                failures += 1;
                println!("{:28} failed: {err}", case.label);
            }
        }
    }
    if filters.is_empty() && bench_mode {
        for k in BOUND_TARGET_KERNELS {
            if !bound_checked.contains(k) {
                failures += 1;
                println!(
                    "no `{k}` case of at least 1024x1024 was checked against the bound target"
                );
            }
        }
    }
    if filters.is_empty() && bench_mode {
        match compile_chain(CHAIN_OPS, target) {
            Ok((insts, ms)) => {
                let ok = ms < CHAIN_TARGET_MS;
                failures += usize::from(!ok);
                println!(
                    "compile of a {insts}-instruction program (a chain of {CHAIN_OPS} tensor_scalar ops): {ms:.0}ms {}compile<{CHAIN_TARGET_MS}ms",
                    if ok { "" } else { "!" }
                );
            }
            Err(err) => {
                failures += 1;
                println!("compile of a {CHAIN_OPS}-op chain failed: {err}");
            }
        }
    }
    println!(
        "{} case(s): {} checked against sim/bound ≤ {BOUND_TARGET}, {speedup_checked} against speedup ≥ {SPEEDUP_TARGET}; {failures} missed target(s) or failure(s)",
        cases.len(),
        bound_checked.len()
    );
    if check && failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The ops of the generated chain whose compile time the bench prints
/// (issue 15: a 100,000-instruction program compiles in under 2 s).
const CHAIN_OPS: usize = 100_000;

/// The compile-time target for the chain, in milliseconds.
const CHAIN_TARGET_MS: f64 = 2000.0;

/// Specializes and compiles a chain of `ops` `tensor_scalar` ops; returns
/// the instruction count and the compile time (specialization included).
fn compile_chain(ops: usize, target: nkic_isa::Target) -> Result<(usize, f64), String> {
    let mut sources = SourceMap::new();
    let file = sources.add(
        "chain.py".to_owned(),
        scaling::sequential_tensor_scalar(ops),
    );
    let config = SpecializeConfig {
        args: vec![ArgSpec {
            name: "a".to_owned(),
            dtype: DType::F32,
            shape: vec![128, 8],
        }],
        target,
        ..SpecializeConfig::default()
    };
    let loader = |_: &str| None;
    let t0 = Instant::now();
    let result = nkic_specialize::specialize(&mut sources, file, &config, &loader);
    if result.has_errors() || result.kernels.is_empty() {
        return Err(render(&result.diagnostics, &sources));
    }
    let program = nkic_backend::compile_grid(&result.kernels, &sources, &BackendConfig::default())
        .map_err(|d| render(&d, &sources))?;
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    Ok((program.queues.iter().map(|q| q.insts.len()).sum(), ms))
}

/// Every kernel file in `kernels/`, in name order, at its directive shapes
/// and, when listed in [`LARGE`], at large shapes.
fn cases() -> Result<Vec<Case>, String> {
    let dir = root().join("kernels");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    for path in paths {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        cases.push(Case {
            label: stem.clone(),
            stem: stem.clone(),
            path: path.clone(),
            args: Vec::new(),
            large: false,
            elements: 0,
        });
        for (_, bindings) in LARGE.iter().filter(|(name, _)| *name == stem) {
            let args = bindings
                .iter()
                .map(|b| b.parse::<ArgSpec>().map_err(|e| format!("{stem}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            let shape = args.first().map_or_else(String::new, |a| {
                a.shape
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("x")
            });
            let elements = args
                .iter()
                .map(|a| a.shape.iter().product::<u64>())
                .max()
                .unwrap_or(0);
            cases.push(Case {
                label: format!("{stem}@{shape}"),
                stem: stem.clone(),
                path: path.clone(),
                args,
                large: true,
                elements,
            });
        }
    }
    Ok(cases)
}

/// Renders diagnostics as plain text for an error message.
fn render(diags: &[Diagnostic], sources: &SourceMap) -> String {
    diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| nkic_diag::render(d, sources, nkic_diag::RenderConfig::default()))
        .collect::<Vec<_>>()
        .join("")
}

/// Specializes, compiles both ways, simulates both, and bounds.
fn measure(case: &Case, target: nkic_isa::Target, timeline: bool) -> Result<Row, String> {
    let mut sources = SourceMap::new();
    let text =
        std::fs::read_to_string(&case.path).map_err(|e| format!("{}: {e}", case.path.display()))?;
    let file = sources.add(case.path.display().to_string(), text);
    let config = SpecializeConfig {
        args: case.args.clone(),
        target,
        ..SpecializeConfig::default()
    };
    let loader = |p: &str| std::fs::read_to_string(p).ok();
    let result = nkic_specialize::specialize(&mut sources, file, &config, &loader);
    if result.has_errors() || result.kernels.is_empty() {
        return Err(format!(
            "specialization failed\n{}",
            render(&result.diagnostics, &sources)
        ));
    }
    let compile = |schedule| {
        nkic_backend::compile_grid(
            &result.kernels,
            &sources,
            &BackendConfig::scheduled(schedule),
        )
        .map_err(|d| format!("compilation failed\n{}", render(&d, &sources)))
    };
    let t0 = Instant::now();
    let optimized = compile(Schedule::Optimized)?;
    let compile_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let sequential = compile(Schedule::Sequential)?;
    let inputs = random_inputs(&optimized, SEED);
    let sim = |program: &Program, trace: bool| {
        let config = SimConfig {
            trace,
            race_check: true,
            ..SimConfig::default()
        };
        let verified = nkic_isa::verify(program)
            .map_err(|e| format!("the compiled program does not verify: {e:?}"))?;
        nkic_sim::run(verified, &inputs, &config).map_err(|e| format!("simulation failed: {e}"))
    };
    // The trace of the optimized run measures the bound's parts.
    let a = sim(&optimized, true)?;
    let b = sim(&sequential, false)?;
    if timeline {
        print_timeline(&case.label, &optimized, &a);
    }
    let bound = nkic_backend::lower_bound_counted(&optimized, &|q, i| a.executions(q, i));
    let measured = Measured::of(&optimized, &a);
    Ok(Row {
        simulated_ns: a.total_ns(),
        bound_mismatch: measured.mismatch(&bound),
        bound,
        sequential_ns: b.total_ns(),
        same_bits: a.outputs == b.outputs,
        instructions: optimized.queues.iter().map(|s| s.insts.len()).sum(),
        compile_ms,
    })
}

/// The parts of the issue's lower bound measured by the simulator on one
/// run, independently of `nkic_backend::lower_bound`: each compute
/// engine's total busy time (the sum of its instructions' intervals), each
/// DMA engine's total busy time (the time every transfer moved data on
/// it), and the HBM bytes read and written.
struct Measured {
    /// The busiest compute engine, in picoseconds.
    compute_ps: u64,
    /// The busiest DMA engine, in picoseconds.
    dma_engine_ps: u64,
    hbm_bytes: u64,
}

impl Measured {
    fn of(program: &Program, run: &RunResult) -> Measured {
        let engines = program.target.figures().dma_engines.max(1);
        let mut compute: BTreeMap<(u8, Queue), u64> = BTreeMap::new();
        let mut dma: BTreeMap<(u8, u32), u64> = BTreeMap::new();
        for e in &run.trace {
            if let Some(slot) = &e.dma {
                for k in 0..slot.engines {
                    *dma.entry((e.core, (slot.first_engine + k) % engines))
                        .or_insert(0) += slot.engine_busy_ps;
                }
            } else if e.queue.engine() != Engine::Dma {
                *compute.entry((e.core, e.queue)).or_insert(0) += e.free_ps - e.start_ps;
            }
        }
        Measured {
            compute_ps: compute.values().copied().max().unwrap_or(0),
            dma_engine_ps: dma.values().copied().max().unwrap_or(0),
            hbm_bytes: run.hbm_bytes_read + run.hbm_bytes_written,
        }
    }

    /// Where `bound` disagrees with these measurements: its busiest compute
    /// engine, its busiest DMA engine and its HBM bytes must be the
    /// measured ones (to the picosecond its nanoseconds round to), and it
    /// must be their maximum, or the total DMA queue time spread evenly
    /// over the DMA queues when that is larger (a weaker fact the bound
    /// may also use).
    fn mismatch(&self, bound: &LowerBound) -> Option<String> {
        let ns = |ps: u64| ps as f64 / 1000.0;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1.0);
        let compute = bound
            .per_engine
            .iter()
            .filter(|(e, _)| *e != Engine::Dma)
            .map(|(_, t)| *t)
            .fold(0.0, f64::max);
        let dma_engine = bound.dma_engine_ns.iter().copied().fold(0.0, f64::max);
        if !close(compute, ns(self.compute_ps)) {
            return Some(format!(
                "busiest compute engine {compute:.1}ns, measured {:.1}ns",
                ns(self.compute_ps)
            ));
        }
        if !close(dma_engine, ns(self.dma_engine_ps)) {
            return Some(format!(
                "busiest DMA engine {dma_engine:.1}ns, measured {:.1}ns",
                ns(self.dma_engine_ps)
            ));
        }
        if bound.hbm_bytes != self.hbm_bytes {
            return Some(format!(
                "{} HBM bytes, measured {}",
                bound.hbm_bytes, self.hbm_bytes
            ));
        }
        let issue = compute.max(dma_engine).max(bound.hbm_ns);
        if !close(bound.ns, issue) && !close(bound.ns, bound.dma_ns) {
            return Some(format!(
                "{:.1}ns, not the maximum {issue:.1}ns of its parts",
                bound.ns
            ));
        }
        None
    }
}

/// Prints every instruction of a run: queue, index, mnemonic, start, end
/// of interval and completion, in start order.
fn print_timeline(label: &str, program: &Program, run: &RunResult) {
    println!("--- timeline of {label} ({} queues)", program.queues.len());
    for e in &run.trace {
        println!(
            "  {:>8} #{:<4} {:24} start {:>10.1} free {:>10.1} end {:>10.1}",
            e.queue.to_string(),
            e.index,
            e.mnemonic,
            e.start_ps as f64 / 1000.0,
            e.free_ps as f64 / 1000.0,
            e.end_ps as f64 / 1000.0
        );
    }
    for q in &run.per_queue {
        println!(
            "  {:>8} busy {:>10.1}ns in {} instructions, last completion {:>10.1}ns",
            q.queue.to_string(),
            q.busy_ps as f64 / 1000.0,
            q.instructions,
            q.end_ps as f64 / 1000.0
        );
    }
}
