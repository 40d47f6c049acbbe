//! The run-time checks through `nkic exec` on hand-written `.nkasm`: data
//! races are caught on every run with both instructions and both source
//! lines named (E2008), and `--poison precise|error|nan|zero` decides what
//! reading never-written memory does.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nkic-sanitizers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The one diagnostic of a failed run (`ok` false), a race (E2008) with
/// `message`.
fn the_race<'d>(ok: bool, diags: &'d [Value], message: &str) -> &'d Value {
    assert!(!ok);
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(d["code"], "E2008");
    assert_eq!(d["message"], message);
    d
}

/// Runs `nkic exec` in `dir` with JSON diagnostics; returns (ok, the
/// diagnostics, stdout).
fn exec(dir: &Path, program: &str, extra: &[&str]) -> (bool, Vec<Value>, String) {
    std::fs::write(dir.join("p.nkasm"), program).expect("write program");
    let out = Command::new(env!("CARGO_BIN_EXE_nkic"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .arg("exec")
        .arg("p.nkasm")
        .args(["--message-format", "json"])
        .args(extra)
        .output()
        .expect("the nkic binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let diags = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("code").is_some())
        .collect();
    (out.status.success(), diags, stdout)
}

/// The (file, line) of every label of a diagnostic.
fn label_lines(diag: &Value) -> Vec<(String, u64)> {
    diag["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .map(|l| {
            (
                l["file"].as_str().expect("file").to_owned(),
                l["line"].as_u64().expect("line"),
            )
        })
        .collect()
}

/// Two queues write the same tile and a third waits for both: nothing
/// orders the two writes.
const WRITE_WRITE: &str = "\
.target trn3
.arg out f32[1,4] output
.sem a
.sem b
.queue vector
  memset dst=sbuf[0:1]:f32[1,4] value=1.0 signal(a)
.queue gpsimd
  memset dst=sbuf[0:1]:f32[1,4] value=2.0 signal(b)
.queue dma0
  dma_copy dst=hbm.out[0:1*4]:f32[1,4] src=sbuf[0:1]:f32[1,4] wait(a>=1) wait(b>=1)
";

#[test]
fn a_write_write_race_names_both_nkasm_lines() {
    let dir = temp("ww");
    let (ok, diags, _) = exec(&dir, WRITE_WRITE, &[]);
    let d = the_race(
        ok,
        &diags,
        "data race: `dst` overwrites bytes that memset at vector[0] writes through `dst`, and no semaphore orders the two by memset at gpsimd[0]",
    );
    // Line 8 is gpsimd's memset (primary), line 6 vector's.
    assert_eq!(
        label_lines(d),
        vec![("p.nkasm".to_owned(), 8), ("p.nkasm".to_owned(), 6)]
    );
    // Ordering the second write after the first removes the race.
    let fixed = WRITE_WRITE.replace("value=2.0 signal(b)", "value=2.0 wait(a>=1) signal(b)");
    let (ok, diags, _) = exec(&dir, &fixed, &["--out", "o"]);
    assert!(ok, "{diags:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// ScalarE reads a tile that a DMA is still loading: the load signals
/// nothing, so the read is not ordered after the write. Both instructions
/// carry line-table entries into `racy.py`.
const READ_WRITE: &str = "\
.target trn3
.file \"racy.py\"
.line l0 f0 3:5 SPAN0
.line l1 f0 4:5 SPAN1
.arg a f32[128,512] input
.arg out f32[128,512] output
.sem done
.queue dma0
  dma_copy dst=sbuf[0:128]:f32[1,512] src=hbm.a[0:128*512]:f32[1,512]  # l0
  dma_copy dst=hbm.out[0:128*512]:f32[1,512] src=sbuf[0:128]+2048:f32[1,512] wait(done>=1)
.queue scalar
  activation dst=sbuf[0:128]+2048:f32[1,512] src=sbuf[0:128]:f32[1,512] func=exp scale=1.0 signal(done)  # l1
";

const KERNEL: &str = "@nki.jit\ndef k(a):\n    t = nl.load(a)\n    u = nl.exp(t)\n    return u\n";

fn span_of(line: usize) -> String {
    let start: usize = KERNEL
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    let text = KERNEL.lines().nth(line - 1).expect("line");
    let indent = text.len() - text.trim_start().len();
    format!("{}..{}", start + indent, start + text.len())
}

#[test]
fn a_read_write_race_names_both_kernel_lines() {
    let dir = temp("rw");
    std::fs::write(dir.join("racy.py"), KERNEL).expect("kernel");
    let program = READ_WRITE
        .replace("SPAN0", &span_of(3))
        .replace("SPAN1", &span_of(4));
    let a: Vec<u8> = {
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        let mut header =
            "{'descr': '<f4', 'fortran_order': False, 'shape': (128, 512), }".to_owned();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
        npy.extend_from_slice(header.as_bytes());
        npy.extend(std::iter::repeat_n(0u8, 128 * 512 * 4));
        npy
    };
    std::fs::write(dir.join("a.npy"), a).expect("input");
    let (ok, diags, _) = exec(&dir, &program, &["--input", "a=a.npy"]);
    let d = the_race(
        ok,
        &diags,
        "data race: `src` reads bytes that dma_copy at dma0[0] (racy.py:3:5) writes through `dst`, and no semaphore orders the two by activation at scalar[0] (racy.py:4:5)",
    );
    // Primary at the reader's kernel line, then its `.nkasm` line, then the
    // writer's kernel line and `.nkasm` line.
    assert_eq!(
        label_lines(d),
        vec![
            ("racy.py".to_owned(), 4),
            ("p.nkasm".to_owned(), 12),
            ("racy.py".to_owned(), 3),
            ("p.nkasm".to_owned(), 9),
        ]
    );
    // Every step order reports the race, not only the default.
    for order in ["reverse", "earliest"] {
        let (ok, diags, _) = exec(
            &dir,
            &program,
            &["--input", "a=a.npy", "--step-order", order],
        );
        assert!(!ok && diags[0]["code"] == "E2008", "{order}: {diags:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A store of a tile nothing wrote.
const UNINIT: &str = "\
.target trn3
.arg out f32[1,4] output
.queue dma0
  dma_copy dst=hbm.out[0:1*4]:f32[1,4] src=sbuf[0:1]:f32[1,4]
";

fn out_values(dir: &Path) -> Vec<f32> {
    let bytes = std::fs::read(dir.join("o/out0.npy")).expect("out0.npy");
    bytes[bytes.len() - 16..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn poison_decides_what_uninitialised_reads_give() {
    let dir = temp("poison");
    // By default the run completes: the output holds values computed from
    // never-written memory (NaN), warning E2009 names the first bad read.
    let (ok, diags, _) = exec(&dir, UNINIT, &["--out", "o"]);
    assert!(ok, "{diags:?}");
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["code"], "E2009");
    assert_eq!(diags[0]["severity"], "warning");
    assert_eq!(
        diags[0]["message"],
        "output `out`: 4 of 4 elements are computed from undefined memory (the first is [0, 0]), first read by dma_copy at dma0[0]"
    );
    assert_eq!(
        diags[0]["facts"],
        serde_json::json!({
            "output": "out",
            "shape": [1, 4],
            "elements": 4,
            "total": 4,
            "first_index": [0, 0],
            "cause": "computed-from-undefined",
            "origin": {
                "mnemonic": "dma_copy",
                "core": null,
                "queue": "dma0",
                "index": 0,
                "file": null,
                "line": null,
                "column": null
            }
        })
    );
    assert!(out_values(&dir).iter().all(|v| v.is_nan()));
    let (ok, diags, _) = exec(&dir, UNINIT, &["--poison", "error"]);
    assert!(!ok);
    assert_eq!(diags[0]["code"], "E2002");
    assert_eq!(
        diags[0]["message"],
        "read of uninitialised memory through `src`: sbuf partition 0 byte 0 was never written by dma_copy at dma0[0]"
    );
    assert_eq!(label_lines(&diags[0]), vec![("p.nkasm".to_owned(), 4)]);
    let help = diags[0]["help"].to_string();
    assert!(help.contains("`--poison precise` runs on"), "{help}");
    let (ok, diags, _) = exec(&dir, UNINIT, &["--poison", "nan", "--out", "o"]);
    assert!(ok, "{diags:?}");
    assert!(out_values(&dir).iter().all(|v| v.is_nan()));
    let (ok, diags, _) = exec(&dir, UNINIT, &["--poison", "zero", "--out", "o"]);
    assert!(ok, "{diags:?}");
    assert_eq!(out_values(&dir), vec![0.0; 4]);
    let _ = std::fs::remove_dir_all(dir);
}

/// A kernel that stores half its returned tensor: E2009 (by default) and
/// E2002 (`--poison error`) name the kernel's variable and point at its
/// allocation, not at the program's `out0`.
#[test]
fn an_unwritten_output_names_the_kernel_variable() {
    let dir = temp("unwritten");
    std::fs::write(
        dir.join("k.py"),
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n# nkic: args a=float32[128,64]\n@nki.jit\ndef k(a):\n    result = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n    t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)\n    nisa.dma_copy(dst=t, src=a)\n    nisa.dma_copy(dst=result[0:64, :], src=t[0:64, :])\n    return result\n",
    )
    .expect("write kernel");
    let run = |poison: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_nkic"))
            .current_dir(&dir)
            .env("NO_COLOR", "1")
            .args([
                "run",
                "k.py",
                "--message-format",
                "json",
                "--poison",
                poison,
            ])
            .output()
            .expect("the nkic binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let diag: Value = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("code").is_some())
            .unwrap_or_else(|| panic!("a diagnostic: {stdout}"));
        (out.status.success(), diag)
    };
    // By default: warning E2009 with the same names.
    let (ok, diag) = run("precise");
    assert!(ok);
    assert_eq!(diag["code"], "E2009");
    assert_eq!(
        diag["message"],
        "output `result` (returned tensor 0, `out0`): 4096 of 8192 elements are never written (the first is [64, 0]); they hold NaN"
    );
    assert_eq!(label_lines(&diag), vec![("k.py".to_owned(), 9)]);
    let (ok, diag) = run("error");
    assert!(!ok);
    assert_eq!(diag["code"], "E2002");
    assert_eq!(
        diag["message"],
        "output `result` (returned tensor 0, `out0`) is not fully written: byte 16384 (element 4096) was never written (4096 of 8192 elements never written)"
    );
    assert_eq!(label_lines(&diag), vec![("k.py".to_owned(), 9)]);
    assert!(
        diag["help"]
            .to_string()
            .contains("check the stores into it")
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A loop that never ends stops at `--max-sim-ms` with E2007 at the
/// instruction that would start after the limit.
#[test]
fn a_loop_that_never_ends_stops_at_the_time_limit() {
    let dir = temp("forever");
    let program = "\
.target trn3
.queue vector
L0:
  nop
  jump target=L0
";
    let (ok, diags, _) = exec(&dir, program, &["--max-sim-ms", "1"]);
    assert!(!ok);
    assert_eq!(diags[0]["code"], "E2007", "{diags:?}");
    let message = diags[0]["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("the run passed 1 ms of simulated time after "),
        "{message}"
    );
    // No limit below 1 ms: 0 is a usage error (exit 2) naming the flag.
    std::fs::write(dir.join("p.nkasm"), program).expect("write program");
    let out = Command::new(env!("CARGO_BIN_EXE_nkic"))
        .current_dir(&dir)
        .args(["exec", "p.nkasm", "--max-sim-ms", "0"])
        .output()
        .expect("the nkic binary runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--max-sim-ms"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}
