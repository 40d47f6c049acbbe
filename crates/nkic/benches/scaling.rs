//! The scaling bench: generated programs whose size is a parameter, each
//! compiled (and, for the run cases, simulated) through the same library
//! path as `nkic run` (`nkic_specialize::specialize`,
//! `nkic_driver::compile_kernels`, `nkic_sim::run_launch`), one child
//! process per case so that each row's peak RSS is its own.
//!
//! The cases are those of issue 15 item 4 ("cost that grows linearly with
//! the program"): a chain of `tensor_scalar` ops on one tile, independent
//! memsets, a launch grid of many instances, one tile stored into a
//! 16 GiB output (memory must follow what a program touches) and two
//! runaway dynamic loops (which must stop with E2007), one of them of
//! stores, beside queues that only count through it. Each row prints the instruction count,
//! the compile and run times and the peak RSS; `docs/cycle-model.md`
//! ("Scaling") keeps the numbers from before and after the fixes.
//!
//! Run it with `cargo bench -p nkic --bench scaling`; arguments after `--`
//! select cases by label substring. Without `--bench` (under `cargo test
//! --benches`) every case runs at a small size as a smoke test.

#[path = "common/scaling.rs"]
mod scaling;

use std::process::{Command, ExitCode};
use std::time::Instant;

use nkic_backend::BackendConfig;
use nkic_diag::SourceMap;
use nkic_sim::SimConfig;
use nkic_specialize::{ArgSpec, SpecializeConfig};

/// One generated case: its label, kernel text, launch grid, and whether
/// it is simulated too.
struct Case {
    label: String,
    text: String,
    grid: Vec<u32>,
    run: bool,
}

/// The cases at bench sizes (`full`) or smoke-test sizes.
fn cases(full: bool) -> Vec<Case> {
    let pick = |big: usize, small: usize| if full { big } else { small };
    let chain_compile = pick(100_000, 200);
    let chain_run = pick(40_000, 200);
    let memsets = pick(10_000, 200);
    let grid = pick(4_000, 8);
    // 65536² float32 elements: 16 GiB (issue 15 item 4).
    let output_side = pick(65_536, 1_024);
    let output_gib = (output_side * output_side * 4) as f64 / f64::from(1 << 30);
    vec![
        Case {
            label: format!("tensor_scalar chain {chain_compile} (compile)"),
            text: scaling::sequential_tensor_scalar(chain_compile),
            grid: Vec::new(),
            run: false,
        },
        Case {
            label: format!("tensor_scalar chain {chain_run}"),
            text: scaling::sequential_tensor_scalar(chain_run),
            grid: Vec::new(),
            run: true,
        },
        Case {
            label: format!("independent memsets {memsets}"),
            text: scaling::independent_memsets(memsets),
            grid: Vec::new(),
            run: true,
        },
        Case {
            label: format!("grid {grid} (compile)"),
            text: scaling::grid_instance(),
            grid: vec![u32::try_from(grid).unwrap_or(u32::MAX)],
            run: false,
        },
        Case {
            label: format!("one tile of a {output_gib} GiB output"),
            text: scaling::one_tile_of_output(output_side, output_side),
            grid: Vec::new(),
            run: true,
        },
        Case {
            label: "runaway loop to E2007".to_owned(),
            text: scaling::runaway_loop(),
            grid: Vec::new(),
            run: full,
        },
        Case {
            label: "runaway loop of stores to E2007".to_owned(),
            text: scaling::runaway_store_loop(),
            grid: Vec::new(),
            run: full,
        },
    ]
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let full = argv.iter().any(|a| a == "--bench");
    if let Some(k) = argv.iter().position(|a| a == "--case") {
        let index = argv.get(k + 1).and_then(|s| s.parse::<usize>().ok());
        let Some(case) = index.and_then(|i| cases(full).into_iter().nth(i)) else {
            eprintln!("error: --case needs a case index");
            return ExitCode::FAILURE;
        };
        return match measure(&case) {
            Ok(line) => {
                println!("{line} {:>9.0}MB", peak_rss_mb());
                ExitCode::SUCCESS
            }
            Err(e) => {
                println!("failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let filters: Vec<&str> = argv
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("error: cannot find the bench executable");
        return ExitCode::FAILURE;
    };
    println!(
        "{:40} {:>8} {:>11} {:>11} {:>11}",
        "case", "insts", "compile", "run", "peak RSS"
    );
    let mut failures = 0usize;
    for (i, case) in cases(full).iter().enumerate() {
        if !filters.is_empty() && !filters.iter().any(|f| case.label.contains(f)) {
            continue;
        }
        let mut cmd = Command::new(&exe);
        cmd.arg("--case").arg(i.to_string());
        if full {
            cmd.arg("--bench");
        }
        match cmd.output() {
            Ok(out) => {
                let text = String::from_utf8_lossy(&out.stdout);
                println!("{:40} {}", case.label, text.trim_end());
                failures += usize::from(!out.status.success());
            }
            Err(e) => {
                println!("{:40} failed to start: {e}", case.label);
                failures += 1;
            }
        }
    }
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Compiles (and runs) one case; returns the row without the RSS.
fn measure(case: &Case) -> Result<String, String> {
    let mut sources = SourceMap::new();
    let file = sources.add("scaling.py".to_owned(), case.text.clone());
    let config = SpecializeConfig {
        args: vec![ArgSpec {
            name: "a".to_owned(),
            dtype: nkic_isa::DType::F32,
            shape: vec![128, 8],
        }],
        grid: case.grid.clone(),
        max_instances: 1 << 20,
        ..SpecializeConfig::default()
    };
    let loader = |_: &str| None;
    let t0 = Instant::now();
    let result = nkic_specialize::specialize(&mut sources, file, &config, &loader);
    if result.has_errors() || result.kernels.is_empty() {
        return Err("specialization failed".to_owned());
    }
    let compiled = nkic_driver::compile::compile_kernels(
        result.kernels,
        &case.grid,
        None,
        &sources,
        &BackendConfig::default(),
    )
    .map_err(|_| "compilation failed".to_owned())?;
    let compile_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let insts: usize = compiled
        .launch
        .cores
        .iter()
        .flat_map(|p| &p.queues)
        .map(|q| q.insts.len())
        .sum();
    let run = if case.run {
        let program = &compiled.launch.cores[0];
        let inputs = nkic_driver::simulate::random_inputs(program, 0);
        let config = SimConfig {
            trace: false,
            ..SimConfig::default()
        };
        let t1 = Instant::now();
        let outcome = match nkic_isa::verify_launch(&compiled.launch) {
            Ok(verified) => match nkic_sim::run_launch(verified, &inputs, &config) {
                Ok(_) => "ok".to_owned(),
                Err(e) => format!("{:?}", e.kind),
            },
            Err(errors) => format!("does not verify: {errors:?}"),
        };
        format!("{:>9.0}ms {outcome}", t1.elapsed().as_secs_f64() * 1000.0)
    } else {
        format!("{:>11}", "-")
    };
    Ok(format!("{insts:>8} {compile_ms:>9.0}ms {run}"))
}

/// The process's peak resident set size in MB (`VmHWM`, Linux); 0
/// elsewhere.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}
