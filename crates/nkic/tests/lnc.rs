//! LNC=2 through the real binary: a grid of two runs on two cores sharing
//! HBM (`nkic run`, `profile`, `compile --emit asm`, `exec`), matches the
//! element-wise reference in both schedules, is faster than the same grid
//! on one core (`--lnc 1`), and cross-core races are E2008 naming both
//! cores and source lines.
//!
//! The kernels are `tests/lnc/*.py` beside this file.

mod common;

use common::root;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn temp(name: &str) -> PathBuf {
    common::temp_dir("lnc", name)
}

/// Runs nkic from the workspace root; returns (exit code, stdout, stderr).
fn nkic(args: &[&str]) -> (i32, String, String) {
    let out = common::run_nkic(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `nkic run KERNEL --input I… --schedule SCHEDULE --out OUT EXTRA…`.
fn run_scheduled(
    kernel: &str,
    inputs: &[&str],
    schedule: &str,
    out: &Path,
    extra: &[&str],
) -> (i32, String, String) {
    let out = out.display().to_string();
    let mut args = vec!["run", kernel];
    for input in inputs {
        args.extend(["--input", input]);
    }
    args.extend(["--schedule", schedule, "--out", &out]);
    args.extend(extra);
    nkic(&args)
}

const ADD: &str = "crates/nkic/tests/lnc/spmd_add_1d.py";

fn json(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn ns(report: &Value) -> f64 {
    report["simulated_ns"].as_f64().expect("simulated_ns")
}

/// Writes `DIR/NAME.npy`, a float32 `[rows, cols]` array whose element `i`
/// (row-major) is `((i · mul) mod modulo) · scale + offset`, and returns
/// its values and the `NAME=PATH` input.
fn write_input(
    dir: &Path,
    name: &str,
    [rows, cols]: [usize; 2],
    (mul, modulo, scale, offset): (usize, usize, f32, f32),
) -> (Vec<f32>, String) {
    let values: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * mul) % modulo) as f32 * scale + offset)
        .collect();
    let path = dir.join(format!("{name}.npy"));
    common::write_f32_npy(&path, &[rows, cols], &values);
    (values, format!("{name}={}", path.display()))
}

#[test]
fn a_grid_of_two_runs_on_two_cores_and_matches_the_reference() {
    let dir = temp("add");
    let (rows, cols) = (512, 1024);
    let (a, a_in) = write_input(&dir, "a", [rows, cols], (37, 1001, 0.013, -6.0));
    let (b, b_in) = write_input(&dir, "b", [rows, cols], (11, 997, -0.021, 3.5));
    let mut outs = Vec::new();
    let mut times = Vec::new();
    for schedule in ["optimized", "sequential"] {
        let out = dir.join(schedule);
        let (code, stdout, stderr) =
            run_scheduled(ADD, &[&a_in, &b_in], schedule, &out, &["--report", "json"]);
        assert_eq!(code, 0, "{stderr}");
        let report = json(&stdout);
        // Two cores, each with its own queues, in the report.
        let cores = report["cores"].as_array().expect("a cores array");
        assert_eq!(cores.len(), 2, "{report}");
        let engines = report["engines"].as_object().expect("engines");
        assert!(engines.contains_key("core0.vector") && engines.contains_key("core1.vector"));
        assert!(engines.contains_key("core0.dma0") && engines.contains_key("core1.dma0"));
        // The run's time is the slower core's; each core ran half the
        // instructions.
        let core_ns: Vec<f64> = cores.iter().map(ns).collect();
        assert_eq!(ns(&report), core_ns[0].max(core_ns[1]), "{report}");
        let instrs: Vec<u64> = cores
            .iter()
            .map(|c| c["instructions"].as_u64().expect("instructions"))
            .collect();
        assert_eq!(instrs[0], instrs[1]);
        assert_eq!(
            instrs[0] + instrs[1],
            report["instructions"].as_u64().unwrap_or(0)
        );
        times.push(ns(&report));
        outs.push(common::read_f32_npy(&out.join("out0.npy")));
    }
    // NumPy's a + b, element by element in float32.
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(outs[0], want);
    assert_eq!(
        outs[0].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        outs[1].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "the schedules agree bit for bit"
    );
    // The same grid on one core (`--lnc 1`) gives the same bytes, later:
    // two cores have twice the engines, DMA engines and HBM share.
    let out = dir.join("one");
    let out_text = out.display().to_string();
    let (code, stdout, stderr) = nkic(&[
        "run", ADD, "--input", &a_in, "--input", &b_in, "--lnc", "1", "--out", &out_text,
        "--report", "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let serial = json(&stdout);
    assert!(serial.get("cores").is_none(), "{serial}");
    assert!(serial["engines"].get("vector").is_some());
    assert_eq!(common::read_f32_npy(&out.join("out0.npy")), want);
    assert!(
        times[0] < ns(&serial),
        "two cores {} ns, one core {} ns",
        times[0],
        ns(&serial)
    );
    // The bound of the launch is the bound of its slower core, below the
    // one-core bound of the whole grid.
    let bound = |r: &Value| r["lower_bound_ns"].as_f64().expect("lower_bound_ns");
    let (code, stdout, _) = nkic(&[
        "run", ADD, "--input", &a_in, "--input", &b_in, "--report", "json",
    ]);
    assert_eq!(code, 0);
    let two = json(&stdout);
    assert!(bound(&two) < bound(&serial), "{two} vs {serial}");
    assert!(bound(&two) <= ns(&two));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `nisa.sendrecv` swaps SBUF tiles between the two cores: each core's
/// half of `x` arrives in the other core's tile, exactly, through the
/// shared DMA and through GpSimd's internal DMA, in both schedules; each
/// core's program has its two `sendrecv`s (Sync and GpSimd queues).
#[test]
fn sendrecv_swaps_tiles_between_the_cores() {
    let dir = temp("sendrecv");
    let n = 256;
    let (x, x_in) = write_input(&dir, "x", [n, n], (29, 1009, 0.017, -8.0));
    let kernel = "crates/nkic/tests/lnc/sendrecv_swap.py";
    let swapped: Vec<f32> = x[n * n / 2..]
        .iter()
        .chain(&x[..n * n / 2])
        .copied()
        .collect();
    let tripled: Vec<f32> = swapped.iter().map(|v| v * 3.0).collect();
    for schedule in ["optimized", "sequential"] {
        let out = dir.join(schedule);
        let (code, _, stderr) = run_scheduled(kernel, &[&x_in], schedule, &out, &[]);
        assert_eq!(code, 0, "{schedule}: {stderr}");
        assert!(
            common::read_f32_npy(&out.join("out0.npy")) == swapped,
            "{schedule}: res"
        );
        assert!(
            common::read_f32_npy(&out.join("out1.npy")) == tripled,
            "{schedule}: res3"
        );
    }
    let (code, asm, stderr) = nkic(&["compile", kernel]);
    assert_eq!(code, 0, "{stderr}");
    for core in asm.split(".core ").skip(1) {
        let lines: Vec<&str> = core
            .lines()
            .filter(|l| l.trim_start().starts_with("sendrecv "))
            .collect();
        assert_eq!(lines.len(), 2, "{core}");
        assert!(
            lines.iter().any(|l| l.contains(" pipe=0"))
                && lines.iter().any(|l| l.contains(" pipe=1")),
            "{core}"
        );
    }
    assert_eq!(asm.matches(".core ").count(), 2, "{asm}");
}

#[test]
fn each_core_embeds_its_own_constants() {
    let dir = temp("constants");
    let kernel = "crates/nkic/tests/lnc/core_constants.py";
    for schedule in ["optimized", "sequential"] {
        let out = dir.join(schedule);
        let (code, _, stderr) = run_scheduled(kernel, &[], schedule, &out, &[]);
        assert_eq!(code, 0, "{schedule}: {stderr}");
        let want = [3.0f32, 3.0, 3.0, 3.0, 4.0, 4.0, 4.0, 4.0];
        assert_eq!(
            common::read_f32_npy(&out.join("out0.npy")),
            want,
            "{schedule}"
        );
    }
    // Both cores' programs carry the constants as data: one each the same,
    // one each its own.
    let (code, asm, stderr) = nkic(&["compile", kernel]);
    assert_eq!(code, 0, "{stderr}");
    let ones = ".data shared_constant_1 0000803f0000803f0000803f0000803f";
    assert_eq!(asm.matches(ones).count(), 2, "{asm}");
    assert!(asm.contains("00000040000000400000004000000040"), "{asm}");
    assert!(asm.contains("00004040000040400000404000004040"), "{asm}");
}

#[test]
fn the_two_core_program_text() {
    // `nkic compile` of the grid at `[256, 512]`, with `extra` arguments.
    let compile = |extra: &[&str]| {
        let mut args = vec![
            "compile",
            ADD,
            "--arg",
            "a=float32[256,512]",
            "--arg",
            "b=float32[256,512]",
        ];
        args.extend(extra);
        nkic(&args)
    };
    let (code, stdout, stderr) = compile(&[]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(stdout);
    // The text assembles back into the same launch.
    let launch = nkic_isa::assemble_launch(&stdout).expect("the printed launch assembles");
    assert_eq!(launch.cores.len(), 2);
    assert_eq!(nkic_isa::verify_launch(&launch).err(), None);
    assert_eq!(nkic_isa::print_launch(&launch), stdout);
    // `--lnc 1` keeps the grid on one core: no sections.
    let (code, one, _) = compile(&["--lnc", "1"]);
    assert_eq!(code, 0);
    assert!(!one.contains(".core"), "{one}");
}

#[test]
fn lnc2_needs_an_even_grid() {
    // `check` refuses the launch exactly as `run` does.
    for cmd in ["run", "check"] {
        let (code, _, stderr) = nkic(&[cmd, ADD, "--grid", "1", "--lnc", "2"]);
        assert_eq!(code, 1, "{cmd}: {stderr}");
        assert!(
            stderr.contains("E1020") && stderr.contains("but the grid has 1 instance"),
            "{cmd}: {stderr}"
        );
    }
    let (code, _, stderr) = nkic(&["check", ADD, "--lnc", "2"]);
    assert_eq!(code, 0, "a grid of two passes check: {stderr}");
}

#[test]
fn two_cores_writing_the_same_bytes_race() {
    let (code, _, stderr) = nkic(&["run", "crates/nkic/tests/lnc/spmd_overlap.py"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("[E2008]"), "{stderr}");
    assert!(
        stderr.contains("core0.dma") && stderr.contains("core1.dma"),
        "both cores are named: {stderr}"
    );
    assert!(
        stderr.contains("no semaphore or core barrier orders the two"),
        "{stderr}"
    );
    // Both accesses are the store of line 20, one per core.
    assert_eq!(
        stderr.matches("spmd_overlap.py:20:5").count(),
        3,
        "{stderr}"
    );
    assert!(
        stderr.contains("the other access: dma_copy at core"),
        "{stderr}"
    );
}

#[test]
fn an_hbm_fence_self_copy_after_identical_stores_is_no_race() {
    let dir = temp("fence");
    let (rows, cols) = (128, 512);
    let (a, a_in) = write_input(&dir, "a", [rows, cols], (29, 1009, 0.017, -8.0));
    let out = dir.join("out");
    let out_text = out.display().to_string();
    let (code, _, stderr) = nkic(&[
        "run",
        "crates/nkic/tests/lnc/hbm_fence.py",
        "--input",
        &a_in,
        "--out",
        &out_text,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("E2008"), "{stderr}");
    let want: Vec<f32> = a.iter().map(|x| x * 2.0).collect();
    assert_eq!(common::read_f32_npy(&out.join("out0.npy")), want);
}

/// The golden exchange fixture without its barriers: each core's read of
/// the other core's half is unordered.
#[test]
fn exec_reports_a_cross_core_race_at_both_nkasm_lines() {
    let dir = temp("race");
    let text = std::fs::read_to_string(root().join("tests/nkasm/core_barrier_exchange.nkasm"))
        .expect("the fixture exists");
    let racy = text.replace(
        "  core_barrier data=hbm.out[0:128*512]:f32[1,512] wait(stored>=1) signal(synced)\n",
        "  nop wait(stored>=1) signal(synced)\n",
    );
    assert_ne!(racy, text);
    let path = dir.join("racy.nkasm");
    std::fs::write(&path, &racy).expect("write");
    let input = format!(
        "a={}",
        root()
            .join("tests/nkasm/core_barrier_exchange.in.a.npy")
            .display()
    );
    let (code, _, stderr) = nkic(&["exec", &path.display().to_string(), "--input", &input]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("[E2008]"), "{stderr}");
    assert!(
        stderr.contains("core0.dma0[") && stderr.contains("core1.dma0["),
        "{stderr}"
    );
    // The faulting instruction and the other one are both labelled in the
    // `.nkasm` text.
    assert!(stderr.contains("the faulting instruction"), "{stderr}");
    assert!(
        stderr.contains("the other access: dma_copy at core"),
        "{stderr}"
    );
    // With the barrier the fixture runs.
    let (code, stdout, stderr) = nkic(&[
        "exec",
        "tests/nkasm/core_barrier_exchange.nkasm",
        "--input",
        &input,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("on 2 cores of trn3 (LNC=2)"), "{stdout}");
    assert!(stdout.contains("core1.gpsimd"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn profile_shows_both_cores() {
    let dir = temp("profile");
    let out = dir.display().to_string();
    let (code, stdout, stderr) = nkic(&["profile", ADD, "--out", &out, "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let summary = json(&stdout);
    let cores = summary["cores"].as_array().expect("a cores array");
    assert_eq!(cores.len(), 2, "{summary}");
    assert_eq!(cores[1]["core"], 1);
    let slowest = cores
        .iter()
        .map(|c| c["simulated_ns"].as_f64().expect("ns"))
        .fold(0.0, f64::max);
    assert!((slowest - summary["simulated_ns"].as_f64().expect("ns")).abs() < 1e-3);
    let queues = summary["queues"].as_array().expect("queues");
    for core in [0, 1] {
        assert!(
            queues.iter().any(|q| q["core"].as_u64() == Some(core)
                && q["queue"].as_str() == Some(&format!("core{core}.vector"))),
            "{summary}"
        );
    }
    // One process per core for the queues and one for its DMA engines.
    let trace = json(&std::fs::read_to_string(dir.join("trace.json")).expect("trace.json"));
    let events = trace["traceEvents"].as_array().expect("events");
    let mut processes: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap_or(0),
                e["args"]["name"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    processes.sort();
    assert_eq!(processes.len(), 4, "{processes:?}");
    assert!(processes[0].1.ends_with("core 0") && processes[2].1.ends_with("core 1"));
    assert_eq!(processes[1].1, "core 0 DMA engines");
    assert_eq!(processes[3].1, "core 1 DMA engines");
    for pid in [1, 3] {
        assert!(
            events.iter().any(|e| e["ph"] == "X"
                && e["pid"].as_u64() == Some(pid)
                && e["name"] == "dma_copy"),
            "pid {pid} has slices"
        );
    }
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).expect("timeline.svg");
    assert!(svg.contains(">core0.vector<") && svg.contains(">core1.dma0<"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn launch_verifier_errors_point_at_the_core_section() {
    let dir = temp("verify");
    let text = std::fs::read_to_string(root().join("tests/nkasm/core_barrier_exchange.nkasm"))
        .expect("the fixture exists");
    // Core 1 declares `a` with another shape.
    let at = text.find(".core 1").expect("core 1");
    let bad = format!(
        "{}{}",
        &text[..at],
        text[at..].replacen(".arg a f32[128,512] input", ".arg a f32[128,1024] input", 1)
    );
    let path = dir.join("bad.nkasm");
    std::fs::write(&path, &bad).expect("write");
    let (code, stdout, _) = nkic(&[
        "exec",
        &path.display().to_string(),
        "--message-format",
        "json",
    ]);
    assert_eq!(code, 1);
    let diag: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("core 1: the cores of a launch share"))
        })
        .unwrap_or_else(|| panic!("the argument mismatch: {stdout}"));
    assert_eq!(diag["code"], "E1002");
    // The label is on the `.core 1` line.
    let line = bad[..at].lines().count() as u64 + 1;
    assert_eq!(diag["labels"][0]["line"].as_u64(), Some(line), "{diag}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Core 0 reads `cache` while core 1 stores new rows into it with no
/// barrier, and core 0's output does not use what it read: warning E2010
/// naming both instructions, and the run succeeds.
#[test]
fn exec_warns_about_a_masked_timing_dependent_read() {
    let dir = temp("masked_race");
    let header = ".arg a f32[128,512] input\n.arg cache f32[128,256] inout\n.arg out f32[128,256] output\n\
                  .sem loaded\n\n.queue dma0\n";
    let text = format!(
        ".target trn3\n\n.core 0\n{header}\
         \x20 dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.cache[0:128*256]:f32[1,256] signal(loaded)\n\
         \x20 dma_copy dst=sbuf[0:128]+1024:f32[1,256] src=hbm.a[0:128*512]:f32[1,256] signal(loaded)\n\
         \x20 dma_copy dst=hbm.out[0:128*256]:f32[1,256] src=sbuf[0:128]+1024:f32[1,256] wait(loaded>=2)\n\n\
         .core 1\n{header}\
         \x20 dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.a[0:128*512]+1024:f32[1,256] signal(loaded)\n\
         \x20 dma_copy dst=hbm.cache[0:128*256]:f32[1,256] src=sbuf[0:128]:f32[1,256] wait(loaded>=1)\n"
    );
    let path = dir.join("masked.nkasm");
    std::fs::write(&path, &text).expect("write");
    let a: Vec<f32> = (0..128 * 512).map(|i| i as f32 * 0.25).collect();
    let cache: Vec<f32> = (0..128 * 256).map(|i| -(i as f32)).collect();
    common::write_f32_npy(&dir.join("a.npy"), &[128, 512], &a);
    common::write_f32_npy(&dir.join("cache.npy"), &[128, 256], &cache);
    let a_in = format!("a={}", dir.join("a.npy").display());
    let cache_in = format!("cache={}", dir.join("cache.npy").display());
    let (code, _, stderr) = nkic(&[
        "exec",
        &path.display().to_string(),
        "--input",
        &a_in,
        "--input",
        &cache_in,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("warning[E2010]"), "{stderr}");
    assert!(
        stderr.contains("the value read depends on timing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("core0.dma0[0]") && stderr.contains("core1.dma0[1]"),
        "{stderr}"
    );
    assert!(!stderr.contains("E2008"), "{stderr}");
}
