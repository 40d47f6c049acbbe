//! End-to-end tests of the `nkic` command line: exit codes, diagnostics in
//! both formats, and `nkic run` on a bundled kernel against its NumPy
//! reference.

mod common;

use common::root;

use std::path::{Path, PathBuf};
use std::process::Output;

fn nkic(args: &[&str]) -> Output {
    common::run_nkic(args)
}

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("cli", name)
}

/// Runs `nkic compile kernels/tensor_add.py -o OUT`.
fn compile_tensor_add(out: &Path) -> Output {
    nkic(&[
        "compile",
        "kernels/tensor_add.py",
        "-o",
        out.to_str().unwrap(),
    ])
}

/// Runs `kernels/tensor_add.py` on its bundled inputs with `args` into a
/// new directory `name`, checks the output against the NumPy reference
/// and returns the JSON report.
fn run_tensor_add(name: &str, args: &[&str]) -> serde_json::Value {
    let data = root().join("kernels/data/tensor_add");
    let a = format!("a={}", data.join("a.npy").display());
    let b = format!("b={}", data.join("b.npy").display());
    let (_, expected) = common::read_f32_npy_shaped(&data.join("out0.npy"));
    let out = temp_dir(name);
    let mut all = vec![
        "run",
        "kernels/tensor_add.py",
        "--input",
        &a,
        "--input",
        &b,
        "--report",
        "json",
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let res = nkic(&all);
    assert!(
        res.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    let (shape, got) = common::read_f32_npy_shaped(&out.join("out0.npy"));
    assert_eq!(shape, vec![256, 512]);
    assert_eq!(got, expected, "{args:?}");
    serde_json::from_slice(&res.stdout).expect("one JSON object")
}

#[test]
fn run_tensor_add_matches_numpy_in_both_schedules() {
    for schedule in ["optimized", "sequential"] {
        let report = run_tensor_add(schedule, &["--schedule", schedule]);
        for field in [
            "simulated_ns",
            "lower_bound_ns",
            "hbm_bytes_read",
            "hbm_bytes_written",
            "flops",
        ] {
            assert!(report[field].is_number(), "missing {field}: {report}");
        }
        assert_eq!(report["hbm_bytes_read"], 2 * 256 * 512 * 4);
        assert_eq!(report["hbm_bytes_written"], 256 * 512 * 4);
        assert!(
            report["simulated_ns"].as_f64().unwrap() >= report["lower_bound_ns"].as_f64().unwrap()
        );
    }
}

/// `--target trn1` runs a bundled kernel on NeuronCore-v2's figures: the
/// same output as on trn2, in another simulated time (trn1's DMA engines
/// move 17 B/ns, trn2's 23).
#[test]
fn target_trn1_runs_a_bundled_kernel() {
    let time = |target: &str| {
        let report = run_tensor_add(&format!("target-{target}"), &["--target", target]);
        report["simulated_ns"].as_f64().expect("simulated_ns")
    };
    let (trn1, trn2) = (time("trn1"), time("trn2"));
    assert!(trn1 > trn2, "trn1 {trn1} ns, trn2 {trn2} ns");
}

#[test]
fn syntax_errors_exit_1_with_spans_in_both_formats() {
    let dir = temp_dir("syntax");
    let file = dir.join("bad.py");
    std::fs::write(&file, "def k(a):\n    x = \n    if x\n        pass\n").unwrap();
    let path = file.to_str().unwrap();
    let human = nkic(&["check", path]);
    assert_eq!(human.status.code(), Some(1));
    let text = String::from_utf8_lossy(&human.stderr);
    assert!(text.contains("bad.py:2:"), "{text}");
    assert!(text.contains("2 errors emitted"), "{text}");
    let json = nkic(&["check", path, "--message-format", "json"]);
    assert_eq!(json.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["severity"], "error");
    assert_eq!(lines[0]["line"], 2);
    assert_eq!(lines[1]["line"], 3);
    for l in &lines {
        for field in [
            "code",
            "message",
            "file",
            "column",
            "end_line",
            "end_column",
            "labels",
            "notes",
        ] {
            assert!(!l[field].is_null(), "missing {field}: {l}");
        }
    }
}

#[test]
fn bad_command_lines_and_missing_files() {
    assert_eq!(nkic(&["frobnicate"]).status.code(), Some(2));
    let missing = nkic(&["check", "no/such/kernel.py"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("E9001"));
    for cmd in ["check", "compile", "run", "exec"] {
        let help = nkic(&[cmd, "--help"]);
        assert!(help.status.success(), "{cmd} --help");
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("Usage: nkic"),
            "{cmd}"
        );
    }
    let version = nkic(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("nkic {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn compile_output_that_cannot_be_written_is_e9005() {
    let dir = temp_dir("unwritable");
    let target = dir.join("no/such/dir/add.nkasm");
    let res = compile_tensor_add(&target);
    assert_eq!(res.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        stderr.contains("error[E9005]: cannot write `") && stderr.contains("add.nkasm`"),
        "{stderr}"
    );
}

#[test]
fn compile_emits_a_program_that_exec_runs() {
    let dir = temp_dir("asm");
    let asm = dir.join("add.nkasm");
    let res = compile_tensor_add(&asm);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let data = root().join("kernels/data/tensor_add");
    // The directive says [256, 1024]; the bundled data is [256, 512], so the
    // program must reject it with a shape diagnostic rather than run.
    let a = format!("a={}", data.join("a.npy").display());
    let b = format!("b={}", data.join("b.npy").display());
    let res = nkic(&["exec", asm.to_str().unwrap(), "--input", &a, "--input", &b]);
    assert_eq!(res.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&res.stderr).contains("E1013"),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
}

/// `check` reports the allocator's capacity errors as `run` does (issue 13
/// item 4): two SBUF tiles of 128 KiB per partition overflow trn3's SBUF.
#[test]
fn check_reports_sbuf_overflow_like_run() {
    let dir = temp_dir("capacity");
    let file = dir.join("big.py");
    std::fs::write(
        &file,
        concat!(
            "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n\n",
            "# nkic: args x=float32[128,32768]\n",
            "@nki.jit\n",
            "def big(x):\n",
            "    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)\n",
            "    a = nl.ndarray((128, 32768), nl.float32, buffer=nl.sbuf)\n",
            "    b = nl.ndarray((128, 32768), nl.float32, buffer=nl.sbuf)\n",
            "    nisa.dma_copy(dst=a, src=x)\n",
            "    nisa.dma_copy(dst=b, src=x)\n",
            "    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)\n",
            "    nisa.dma_copy(dst=out, src=a)\n",
            "    return out\n",
        ),
    )
    .unwrap();
    let path = file.to_str().unwrap();
    for cmd in ["check", "run"] {
        let out = nkic(&[cmd, path]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains("[E0901] Error: the kernel's sbuf tensors do not fit: 262144 bytes per partition are alive at the peak"),
            "{cmd}: {text}"
        );
        assert!(text.contains("big.py:11:9"), "{cmd}: {text}");
    }
}

/// A kernel whose SBUF tiles do not fit is spilled with warning E0906 by
/// `check` and `run` alike (exit 0), and `--no-spill` keeps E0901 (exit 1)
/// for every command that takes compile options.
#[test]
fn spilling_warns_and_no_spill_keeps_the_overflow_error() {
    let kernel = "kernels/spill.py";
    for cmd in ["check", "run"] {
        let out = nkic(&[cmd, kernel]);
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{cmd}: {text}");
        assert!(
            text.contains("[E0906] Warning: 16 sbuf tensors did not fit and were spilled to HBM: 32 DMA instructions (16 stores, 16 reloads) move 8388608 bytes"),
            "{cmd}: {text}"
        );
        assert!(text.contains("spill.py:25:13"), "{cmd}: {text}");
    }
    for args in [
        &["check", "--no-spill", kernel][..],
        &["run", "--no-spill", kernel],
        &["profile", "--no-spill", kernel],
        &["compile", "--emit", "asm", "--no-spill", kernel],
    ] {
        let out = nkic(args);
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(
            text.contains("[E0901] Error: the kernel's sbuf tensors do not fit"),
            "{args:?}: {text}"
        );
        assert!(!text.contains("E0906"), "{args:?}: {text}");
    }
}

/// An `ml_dtypes` bfloat16 array is saved as opaque `<V2`: `--arg` names
/// its dtype, so `--input` needs no colon; without either nkic cannot
/// tell the dtype (E1016).
#[test]
fn raw_bits_inputs_take_the_dtype_of_their_arg() {
    let data = root().join("kernels/data/matmul_bf16");
    let a = data.join("a.npy");
    let b = data.join("b.npy");
    let outputs = |args: &[&str], name: &str| -> Vec<u8> {
        let out = temp_dir(name);
        let mut all = vec!["run", "kernels/matmul_bf16.py"];
        all.extend_from_slice(args);
        let out_flag = out.display().to_string();
        all.extend_from_slice(&["--out", &out_flag]);
        let res = nkic(&all);
        assert!(
            res.status.success(),
            "{}",
            String::from_utf8_lossy(&res.stderr)
        );
        std::fs::read(out.join("out0.npy")).expect("out0.npy")
    };
    let a_colon = format!("a={}:bfloat16", a.display());
    let a_plain = format!("a={}", a.display());
    let b_colon = format!("b={}:bfloat16", b.display());
    let named = outputs(&["--input", &a_colon, "--input", &b_colon], "colon");
    let declared = outputs(
        &[
            "--arg",
            "a=bfloat16[384,256]",
            "--input",
            &a_plain,
            "--input",
            &b_colon,
        ],
        "declared",
    );
    assert_eq!(named, declared);
    let res = nkic(&["check", "kernels/matmul_bf16.py"]);
    assert!(res.status.success());
    let res = nkic(&["run", "kernels/matmul_bf16.py", "--input", &a_plain]);
    assert_eq!(res.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(stderr.contains("E1016"), "{stderr}");
}

/// The kernel-optimization guide's v4 matmul (`mm_block_free`, float32)
/// keeps 320 KiB of loaded tiles per partition alive (`--no-spill`: E0901
/// with that peak); one block of it at K = 8192 compiles by loading the
/// `rhs` tiles that do not fit again for their second reader: no store.
#[test]
fn the_guides_v4_matmul_reloads_its_spilled_tiles_from_the_input() {
    let base = [
        "check",
        "kernels/published/matmul_versions.py",
        "--kernel",
        "mm_block_free",
        "--target",
        "trn2",
        "--arg",
        "a_t=float32[8192,256]",
        "--arg",
        "b=float32[8192,1024]",
    ];
    let text = stderr_with_exit_code(&base, 0);
    assert!(
        text.contains("[E0906] Warning: 60 sbuf tensors did not fit and were spilled to HBM: 60 DMA instructions (0 stores, 60 reloads) move 15728640 bytes"),
        "{text}"
    );
    let mut args = base.to_vec();
    args.insert(1, "--no-spill");
    let text = stderr_with_exit_code(&args, 1);
    assert!(
        text.contains("[E0901] Error: the kernel's sbuf tensors do not fit: 329728 bytes per partition are alive at the peak, 100352 more than the 229376 available"),
        "{text}"
    );
}

/// The standard error of `nkic args`, which must exit with `code`.
fn stderr_with_exit_code(args: &[&str], code: i32) -> String {
    let out = nkic(args);
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {text}");
    text
}
