//! nkic's simulated times beside AWS's published hardware measurements.
//!
//! Every row runs one of nkic's own kernels in `kernels/published/` (written
//! after the published versions, never copied) at the published shape with
//! `nkic profile --format json` (the binary of this build) and compares its
//! simulated time with the figure in `docs/cycle-model.md` ("Published
//! measurements", which names the source of every figure):
//!
//! * an **absolute** row (a trn2 measurement) compares the time itself;
//! * a **ratio** row (a trn1 measurement, run on nkic's `trn1` target)
//!   compares the time relative to a reference version of the same
//!   tutorial, measured the same way, with the published ratio.
//!
//! Each row prints nkic's figure, the published one and `|log2(nkic /
//! published)|`; the summary gives the median and the largest. The
//! calibration target (issue #16) is a median of at most 0.15 and no row
//! above log2(1.5) = 0.585.
//!
//! Run it with `cargo bench -p nkic --bench published` (minutes: the
//! matmuls at 4096 × 8192 × 8192 compute every product). Arguments after
//! `--`: substrings selecting rows by label, `--check` (fail when the
//! target is missed), `--nkic=PATH` (time another `nkic` binary, such
//! as a build of an older commit, for before/after figures) and
//! `--trn1-on=TARGET` (run the trn1 rows on another target, such as
//! `trn2`, where they ran before nkic had a trn1 target). Under `cargo test --benches` (no `--bench`) it runs
//! nothing but checks that the table's kernels exist.

#[path = "common/paths.rs"]
mod paths;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use paths::root;

/// One kernel run: a label, its file in `kernels/published/`, kernel name,
/// target, arguments and compile-time constants.
struct Run {
    label: &'static str,
    file: &'static str,
    kernel: &'static str,
    target: &'static str,
    args: &'static [&'static str],
    consts: &'static [&'static str],
}

/// One published figure: the run it measures, the published time in
/// microseconds, and, for a ratio row, the reference run and its published
/// time (the row compares `run / reference`).
struct Figure {
    run: &'static str,
    published_us: f64,
    reference: Option<(&'static str, f64)>,
    source: &'static str,
}

const MM32: &[&str] = &["a_t=float32[8192,4096]", "b=float32[8192,8192]"];
const MM16: &[&str] = &["a_t=bfloat16[8192,4096]", "b=bfloat16[8192,8192]"];

macro_rules! ssm_args {
    ($ch:literal, $seq:literal) => {
        &[
            concat!("delta=float32[1,", $ch, ",", $seq, "]"),
            concat!("u=float32[1,", $ch, ",", $seq, "]"),
            concat!("a=float32[", $ch, ",16]"),
            concat!("b=float32[1,16,", $seq, "]"),
            concat!("c=float32[1,16,", $seq, "]"),
        ]
    };
}

/// The published blocking of the fully blocked matmul (16, 2 and 8 tiles
/// in M, N and K, in both the kernel-optimization guide's v5 and the trn1
/// tutorial's optimization 3). Given explicitly: the kernel's `# nkic:
/// consts` line (a small example) applies whenever `--const` is not.
const BLOCK_ALL: &[&str] = &["BM=16", "BN=2", "BK=8"];

/// A run with no compile-time constants on `target`.
const fn run_on(
    target: &'static str,
    label: &'static str,
    file: &'static str,
    kernel: &'static str,
    args: &'static [&'static str],
) -> Run {
    Run {
        label,
        file,
        kernel,
        target,
        args,
        consts: &[],
    }
}

/// A trn2 run with no compile-time constants.
const fn run(
    label: &'static str,
    file: &'static str,
    kernel: &'static str,
    args: &'static [&'static str],
) -> Run {
    run_on("trn2", label, file, kernel, args)
}

const RUNS: &[Run] = &[
    run(
        "trn2 mm v2 tiled f32",
        "matmul_versions.py",
        "mm_tiled",
        MM32,
    ),
    run(
        "trn2 mm v3 hoisted f32",
        "matmul_versions.py",
        "mm_hoisted",
        MM32,
    ),
    run(
        "trn2 mm v4 block-free f32",
        "matmul_versions.py",
        "mm_block_free",
        MM32,
    ),
    Run {
        label: "trn2 mm v5 block-all f32",
        file: "matmul_versions.py",
        kernel: "mm_block_all",
        target: "trn2",
        args: MM32,
        consts: BLOCK_ALL,
    },
    run_on(
        "trn1",
        "trn1 mm tiled bf16",
        "matmul_versions.py",
        "mm_tiled",
        MM16,
    ),
    run_on(
        "trn1",
        "trn1 mm hoisted bf16",
        "matmul_versions.py",
        "mm_hoisted",
        MM16,
    ),
    run_on(
        "trn1",
        "trn1 mm block-free bf16",
        "matmul_versions.py",
        "mm_block_free",
        MM16,
    ),
    Run {
        label: "trn1 mm block-all bf16",
        file: "matmul_versions.py",
        kernel: "mm_block_all",
        target: "trn1",
        args: MM16,
        consts: BLOCK_ALL,
    },
    run_on(
        "trn1",
        "trn1 ssm v1 4096x512",
        "mamba_versions.py",
        "ssm_v1",
        ssm_args!("4096", "512"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v2 4096x512",
        "mamba_versions.py",
        "ssm_v2",
        ssm_args!("4096", "512"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v2 4096x2048",
        "mamba_versions.py",
        "ssm_v2",
        ssm_args!("4096", "2048"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v3 4096x2048",
        "mamba_versions.py",
        "ssm_v3",
        ssm_args!("4096", "2048"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v2 4096x4096",
        "mamba_versions.py",
        "ssm_v2",
        ssm_args!("4096", "4096"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v3 4096x4096",
        "mamba_versions.py",
        "ssm_v3",
        ssm_args!("4096", "4096"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v1 256x512",
        "mamba_versions.py",
        "ssm_v1",
        ssm_args!("256", "512"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v2 4096x8192",
        "mamba_versions.py",
        "ssm_v2",
        ssm_args!("4096", "8192"),
    ),
    run_on(
        "trn1",
        "trn1 ssm v3 4096x8192",
        "mamba_versions.py",
        "ssm_v3",
        ssm_args!("4096", "8192"),
    ),
];

const KO: &str = "nki/guides/tutorials/kernel-optimization.rst";
const MMT: &str = "nki/tutorials/matrix_multiplication.rst@1db4d74e, Performance table";
const MAMBA: &str = "nki/guides/tutorials/fused_mamba.rst";

const FIGURES: &[Figure] = &[
    Figure {
        run: "trn2 mm v2 tiled f32",
        published_us: 39_890.0,
        reference: None,
        source: KO,
    },
    Figure {
        run: "trn2 mm v3 hoisted f32",
        published_us: 28_200.0,
        reference: None,
        source: KO,
    },
    Figure {
        run: "trn2 mm v4 block-free f32",
        published_us: 28_410.0,
        reference: None,
        source: KO,
    },
    Figure {
        run: "trn2 mm v5 block-all f32",
        published_us: 28_300.0,
        reference: None,
        source: KO,
    },
    Figure {
        run: "trn1 mm hoisted bf16",
        published_us: 42_960.0,
        reference: Some(("trn1 mm tiled bf16", 51_800.0)),
        source: MMT,
    },
    Figure {
        run: "trn1 mm block-free bf16",
        published_us: 22_070.0,
        reference: Some(("trn1 mm tiled bf16", 51_800.0)),
        source: MMT,
    },
    Figure {
        run: "trn1 mm block-all bf16",
        published_us: 6_970.0,
        reference: Some(("trn1 mm tiled bf16", 51_800.0)),
        source: MMT,
    },
    Figure {
        run: "trn1 ssm v2 4096x512",
        published_us: 1_610.0,
        reference: Some(("trn1 ssm v1 4096x512", 2_340.0)),
        source: MAMBA,
    },
    Figure {
        run: "trn1 ssm v2 4096x2048",
        published_us: 8_900.0,
        reference: Some(("trn1 ssm v2 4096x512", 1_600.0)),
        source: MAMBA,
    },
    Figure {
        run: "trn1 ssm v3 4096x2048",
        published_us: 6_600.0,
        reference: Some(("trn1 ssm v2 4096x512", 1_600.0)),
        source: MAMBA,
    },
    Figure {
        run: "trn1 ssm v2 4096x4096",
        published_us: 17_600.0,
        reference: Some(("trn1 ssm v2 4096x512", 1_600.0)),
        source: MAMBA,
    },
    Figure {
        run: "trn1 ssm v3 4096x4096",
        published_us: 13_300.0,
        reference: Some(("trn1 ssm v2 4096x512", 1_600.0)),
        source: MAMBA,
    },
    // The toy example's profile (256 channels), against v1 at 4096.
    Figure {
        run: "trn1 ssm v1 256x512",
        published_us: 172.93,
        reference: Some(("trn1 ssm v1 4096x512", 2_340.0)),
        source: MAMBA,
    },
    // The profiles at seq 8192: v2 spills (on trn1 and in nkic), v3 not.
    Figure {
        run: "trn1 ssm v2 4096x8192",
        published_us: 53_330.0,
        reference: Some(("trn1 ssm v2 4096x512", 1_600.0)),
        source: MAMBA,
    },
    Figure {
        run: "trn1 ssm v3 4096x8192",
        published_us: 27_800.0,
        reference: Some(("trn1 ssm v2 4096x512", 1_600.0)),
        source: MAMBA,
    },
];

/// The median |log2| target and the worst allowed (×1.5).
const MEDIAN_TARGET: f64 = 0.15;
const WORST_TARGET: f64 = 0.585;

/// The simulated time of `run` in microseconds, by the `nkic` binary `bin`,
/// on `trn1_on` instead of trn1 when given.
fn simulate(bin: &Path, run: &Run, trn1_on: Option<&str>) -> Result<f64, String> {
    let path = root().join("kernels/published").join(run.file);
    let target = match trn1_on {
        Some(other) if run.target == "trn1" => other,
        _ => run.target,
    };
    let mut cmd = Command::new(bin);
    cmd.arg("profile")
        .arg(&path)
        .args(["--kernel", run.kernel, "--target", target])
        .args(["--format", "json", "--max-sim-ms", "10000"]);
    for a in run.args {
        cmd.args(["--arg", a]);
    }
    for c in run.consts {
        cmd.args(["--const", c]);
    }
    let out = cmd.output().map_err(|e| format!("cannot run nkic: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("bad JSON from nkic profile: {e}"))?;
    json["simulated_ns"]
        .as_f64()
        .map(|ns| ns / 1000.0)
        .ok_or_else(|| "no simulated_ns".to_owned())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let bench_mode = argv.iter().any(|a| a == "--bench");
    let check = argv.iter().any(|a| a == "--check");
    let bin = PathBuf::from(
        argv.iter()
            .find_map(|a| a.strip_prefix("--nkic="))
            .unwrap_or(env!("CARGO_BIN_EXE_nkic")),
    );
    let trn1_on = argv.iter().find_map(|a| a.strip_prefix("--trn1-on="));
    let filters: Vec<&str> = argv
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    let by_label: BTreeMap<&str, &Run> = RUNS.iter().map(|r| (r.label, r)).collect();
    for f in FIGURES {
        for label in std::iter::once(f.run).chain(f.reference.map(|r| r.0)) {
            let Some(run) = by_label.get(label) else {
                eprintln!("error: figure names unknown run `{label}`");
                return ExitCode::FAILURE;
            };
            let path = root().join("kernels/published").join(run.file);
            if !path.is_file() {
                eprintln!("error: {} does not exist", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if !bench_mode {
        return ExitCode::SUCCESS;
    }
    let selected: Vec<&Figure> = FIGURES
        .iter()
        .filter(|f| filters.is_empty() || filters.iter().any(|s| f.run.contains(s)))
        .collect();
    let mut times: BTreeMap<&str, Result<f64, String>> = BTreeMap::new();
    let mut time = |label: &'static str| -> Result<f64, String> {
        times
            .entry(label)
            .or_insert_with(|| simulate(&bin, by_label[label], trn1_on))
            .clone()
    };
    println!(
        "| measurement | kind | nkic | published | nkic/published | abs log2 | source |\n|---|---|---|---|---|---|---|"
    );
    let mut logs = Vec::new();
    let mut failures = 0usize;
    for f in selected {
        let row = (|| -> Result<(String, f64, f64), String> {
            let t = time(f.run)?;
            match f.reference {
                None => Ok(("µs".to_owned(), t, f.published_us)),
                Some((r, pr)) => {
                    let tr = time(r)?;
                    Ok((format!("ratio to {r}"), t / tr, f.published_us / pr))
                }
            }
        })();
        match row {
            Ok((kind, nkic, published)) => {
                let q = nkic / published;
                let l = q.log2().abs();
                logs.push(l);
                println!(
                    "| {} | {kind} | {nkic:.3} | {published:.3} | {q:.3} | {l:.3} | {} |",
                    f.run, f.source
                );
            }
            Err(e) => {
                failures += 1;
                println!(
                    "| {} | failed: {} | | | | | {} |",
                    f.run,
                    e.trim(),
                    f.source
                );
            }
        }
    }
    logs.sort_by(f64::total_cmp);
    let median = if logs.is_empty() {
        0.0
    } else if logs.len() % 2 == 1 {
        logs[logs.len() / 2]
    } else {
        (logs[logs.len() / 2 - 1] + logs[logs.len() / 2]) / 2.0
    };
    let worst = logs.last().copied().unwrap_or(0.0);
    let ok = failures == 0 && median <= MEDIAN_TARGET && worst <= WORST_TARGET;
    println!(
        "\n{} row(s), {failures} failed: median abs log2 {median:.3} (target ≤ {MEDIAN_TARGET}), worst {worst:.3} (≤ {WORST_TARGET}, ×1.5): {}",
        logs.len(),
        if ok { "met" } else { "missed" }
    );
    if check && !ok {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
