//! The simulator's two tiers agree on every bundled kernel and every
//! `.nkasm` fixture: `SimTier::Jit` and `SimTier::Interp` must give the
//! same `RunResult` (every output byte, the simulated time, per-queue
//! statistics, the trace with every instruction's timestamps, undefined
//! outputs) or the same fault. So must the interpreter with its large
//! matmuls summed on rayon's pool (`SimConfig::matmul_worker`, the
//! default) and the pages it writes faulted in ahead by another thread
//! (`SimConfig::warm_pages`, the default), and without either (everything
//! on the one thread that steps); and so must the native tier when it
//! interprets the instructions whose loops are still being compiled
//! (`SimConfig::jit_background`, the command line's runs).
//!
//! Kernels run at their directive shapes with seeded random inputs; the
//! fixtures (`tests/nkasm/*.nkasm`, `crates/nkic-isa/tests/corpus/*.nkasm`)
//! with seeded random inputs too, so some of them fault, and the fault
//! must then be the same.

#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};

use common::root;
use nkic_backend::{BackendConfig, Schedule};
use nkic_diag::SourceMap;
use nkic_sim::{RunResult, SimConfig, SimError, SimTier};
use nkic_specialize::SpecializeConfig;

/// The files with extension `ext` in `dir`, in name order.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    out.sort();
    out
}

/// Runs `launch` in both tiers with a trace; panics on any difference.
fn check(name: &str, launch: &nkic_isa::Launch, inputs: &nkic_sim::Inputs) {
    let verified = nkic_isa::verify_launch(launch)
        .unwrap_or_else(|e| panic!("{name}: the program does not verify: {e:?}"));
    let run = |tier, threads, jit_background| -> Result<RunResult, SimError> {
        let config = SimConfig {
            tier,
            trace: true,
            matmul_worker: threads,
            warm_pages: threads,
            jit_background,
            ..SimConfig::default()
        };
        nkic_sim::run_launch(verified, inputs, &config)
    };
    let oracle = run(SimTier::Interp, false, false);
    for (what, other) in [
        (
            "the interpreter with the matmul worker and the warmer",
            run(SimTier::Interp, true, false),
        ),
        ("the native tier", run(SimTier::Jit, true, false)),
        (
            "the native tier compiling in the background",
            run(SimTier::Jit, true, true),
        ),
    ] {
        match (&oracle, &other) {
            (Ok(a), Ok(b)) => {
                for ((name_a, a), (_, b)) in a.outputs.iter().zip(&b.outputs) {
                    let (a, b) = (a.bytes(), b.bytes());
                    let first = a.iter().zip(b.iter()).position(|(x, y)| x != y);
                    assert!(
                        first.is_none() && a.len() == b.len(),
                        "{name}: output `{name_a}` of {what} differs at byte {first:?}"
                    );
                }
                assert_eq!(a.total_ps, b.total_ps, "{name}: simulated time of {what}");
                assert!(a == b, "{name}: the run result of {what} differs");
            }
            _ => assert_eq!(oracle, other, "{name}: the fault of {what} differs"),
        }
    }
}

#[test]
fn every_bundled_kernel_runs_the_same_in_both_tiers() {
    let before = nkic_sim::native_instructions();
    let kernels = files(&root().join("kernels"), "py");
    assert!(kernels.len() >= 10, "found {} kernels", kernels.len());
    for path in kernels {
        let name = path.display().to_string();
        let mut sources = SourceMap::new();
        let text = std::fs::read_to_string(&path).expect("kernel readable");
        let file = sources.add(name.clone(), text);
        let loader = |p: &str| std::fs::read_to_string(p).ok();
        let spec =
            nkic_specialize::specialize(&mut sources, file, &SpecializeConfig::default(), &loader);
        assert!(
            !spec.has_errors() && !spec.kernels.is_empty(),
            "{name}: does not specialize at its directive shapes"
        );
        let program = nkic_backend::compile_grid(
            &spec.kernels,
            &sources,
            &BackendConfig::scheduled(Schedule::Optimized),
        )
        .unwrap_or_else(|_| panic!("{name}: does not compile"));
        let inputs = nkic_driver::simulate::random_inputs(&program, 7);
        check(&name, &nkic_isa::Launch::single(program), &inputs);
    }
    assert!(
        nkic_sim::native_instructions() > before,
        "no kernel ran an instruction in the native tier"
    );
}

#[test]
fn every_nkasm_fixture_runs_the_same_in_both_tiers() {
    let mut fixtures = files(&root().join("tests/nkasm"), "nkasm");
    fixtures.extend(files(&root().join("crates/nkic-isa/tests/corpus"), "nkasm"));
    assert!(fixtures.len() >= 20, "found {} fixtures", fixtures.len());
    for path in fixtures {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(&path).expect("fixture readable");
        let Ok(launch) = nkic_isa::assemble_launch(&text) else {
            // Fixtures of assembler errors are not programs.
            continue;
        };
        let inputs = nkic_driver::simulate::random_inputs(launch.main(), 11);
        check(&name, &launch, &inputs);
    }
}
