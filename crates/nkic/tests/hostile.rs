//! The hostile-input regression corpus (issue 17): one small input per way a
//! hostile user broke nkic, each run through the binary with the exact
//! diagnostic code and exit code asserted. Large inputs are generated here
//! rather than committed. On Linux every run is under `prlimit` (address
//! space 4 GiB, 60 s of CPU) when it is installed, so a regression shows as
//! a failed run rather than a stuck or swapping machine.

// The shared helpers; this suite runs the binary its own way (under
// `prlimit`, in a temporary directory), so some are unused here.
#[allow(dead_code)]
mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::temp_dir;

/// Runs the binary in `dir` under resource limits when `prlimit` exists.
fn run_limited(dir: &Path, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_nkic");
    let limited = Command::new("prlimit").arg("--version").output().is_ok();
    let mut cmd = if limited {
        let mut c = Command::new("prlimit");
        c.args(["--as=4294967296", "--cpu=60", "--"]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the nkic binary runs")
}

/// The codes of the JSON diagnostics on standard output.
fn codes(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["code"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Every JSON diagnostic has a location.
fn all_located(out: &Output) -> bool {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .all(|v| !v["line"].is_null())
}

const HEADER: &str = "import nki\nimport nki.language as nl\n\n\n";

fn kernel(body: &str) -> String {
    format!(
        "{HEADER}# nkic: args a=float32[128,64]\n@nki.jit\ndef k(a):\n{body}    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n    nl.store(out, nl.load(a))\n    return out\n"
    )
}

fn check(dir: &Path, name: &str, text: &str, extra: &[&str]) -> Output {
    std::fs::write(dir.join(name), text).unwrap();
    let mut args = vec!["check", name, "--message-format", "json"];
    args.extend_from_slice(extra);
    run_limited(dir, &args)
}

#[test]
fn deep_nesting_is_a_located_error() {
    let dir = temp_dir("hostile", "nesting");
    for (name, header) in [
        ("for.py", "for i in range(1):"),
        ("if.py", "if True:"),
        ("while.py", "while False:"),
    ] {
        let mut body = String::new();
        for depth in 1..=300 {
            body.push_str(&" ".repeat(depth + 3));
            body.push_str(header);
            body.push('\n');
        }
        body.push_str(&" ".repeat(304));
        body.push_str("pass\n");
        let out = check(&dir, name, &kernel(&body), &[]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(codes(&out), ["E0021"], "{name}");
        assert!(all_located(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compile_time_bombs_hit_the_budget() {
    let dir = temp_dir("hostile", "budget");
    let fib = format!(
        "{HEADER}def f(n):\n    if n == 0:\n        return 1\n    return f(n - 1) + f(n - 1)\n\n\n{}",
        kernel("    f(40)\n").trim_start_matches(HEADER)
    );
    for (name, text, code, extra) in [
        ("fib.py", fib, "E0260", &["--max-steps", "200000"][..]),
        (
            "double.py",
            kernel("    s = 'x'\n    for i in range(64):\n        s = s + s\n"),
            "E0261",
            &["--max-value-bytes", "1000000"][..],
        ),
        (
            "join.py",
            kernel("    s = ','.join(['x' * 1000] * 100000)\n"),
            "E0261",
            &["--max-value-bytes", "1000000"][..],
        ),
        (
            "replace.py",
            kernel("    s = 'xx'\n    for i in range(64):\n        s = s.replace('x', 'xx')\n"),
            "E0261",
            &["--max-value-bytes", "1000000"][..],
        ),
    ] {
        let out = check(&dir, name, &text, extra);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(codes(&out), [code], "{name}");
        assert!(all_located(&out));
    }
    // 40k dict inserts and a repr of a hugely shared list are cheap.
    let out = check(
        &dir,
        "dict.py",
        &kernel(
            "    d = {}\n    for i in range(40000):\n        d[i] = i\n    assert len(d) == 40000\n    l = [1]\n    for i in range(30):\n        l = [l, l]\n    t = str(l)\n",
        ),
        &[],
    );
    assert_eq!(codes(&out), Vec::<String>::new());
    assert_eq!(out.status.code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_command_lines_and_files() {
    let dir = temp_dir("hostile", "cli");
    std::fs::write(dir.join("k.py"), kernel("")).unwrap();
    // A grid beyond the limit is an error at the kernel; a zero is a bad
    // command line.
    let out = run_limited(
        &dir,
        &[
            "check",
            "k.py",
            "--grid",
            "65536,65536",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(
        (out.status.code(), codes(&out)),
        (Some(1), vec!["E0225".to_string()])
    );
    let out = run_limited(&dir, &["check", "k.py", "--grid", "0"]);
    assert_eq!(out.status.code(), Some(2));
    // The kernel is never overwritten by its own dump.
    let before = std::fs::read(dir.join("k.py")).unwrap();
    let out = run_limited(
        &dir,
        &[
            "compile",
            "k.py",
            "--emit",
            "ast",
            "-o",
            "k.py",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(
        (out.status.code(), codes(&out)),
        (Some(1), vec!["E9005".to_string()])
    );
    assert_eq!(std::fs::read(dir.join("k.py")).unwrap(), before);
    // Not UTF-8: located at the first bad byte.
    std::fs::write(dir.join("bad.py"), b"x = 1\n\xff\n").unwrap();
    let out = run_limited(&dir, &["check", "bad.py", "--message-format", "json"]);
    assert_eq!(codes(&out), ["E9002"]);
    assert!(all_located(&out));
    // A device is not read.
    if Path::new("/dev/zero").exists() {
        let out = run_limited(&dir, &["check", "/dev/zero", "--message-format", "json"]);
        assert_eq!(
            (out.status.code(), codes(&out)),
            (Some(1), vec!["E9001".to_string()])
        );
    }
    // A million invalid lines print at most 1,000 diagnostics.
    std::fs::write(dir.join("dollars.py"), "$\n".repeat(100_000)).unwrap();
    let out = run_limited(&dir, &["check", "dollars.py", "--message-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(codes(&out).len(), 1000);
    assert!(String::from_utf8_lossy(&out.stderr).contains("99000 more diagnostics"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kernel_arguments_from_every_source_are_checked() {
    let dir = temp_dir("hostile", "args");
    std::fs::write(dir.join("k.py"), kernel("")).unwrap();
    for bad in ["a=float32[128,,64]", "a=float32[,128,64]"] {
        let out = run_limited(&dir, &["check", "k.py", "--arg", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
    let out = run_limited(
        &dir,
        &[
            "check",
            "k.py",
            "--arg",
            "a=float32[128,64]",
            "--arg",
            "a=float32[128,64]",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(
        (out.status.code(), codes(&out)),
        (Some(1), vec!["E0217".to_string()])
    );
    // Lone `\r` line ends keep the directives (no syntax-only note).
    std::fs::write(dir.join("cr.py"), kernel("").replace('\n', "\r")).unwrap();
    let out = run_limited(&dir, &["check", "cr.py", "--message-format", "json"]);
    assert_eq!((out.status.code(), codes(&out)), (Some(0), vec![]));
    // A subset of `--input`: the other inputs are random.
    let two = kernel("")
        .replace(
            "args a=float32[128,64]",
            "args a=float32[128,64] b=float32[128,64]",
        )
        .replace("def k(a):", "def k(a, b):");
    std::fs::write(dir.join("two.py"), two).unwrap();
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (128, 64), }";
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    npy.extend(vec![0u8; 128 * 64 * 4]);
    std::fs::write(dir.join("b.npy"), npy).unwrap();
    let out = run_limited(
        &dir,
        &[
            "run",
            "two.py",
            "--input",
            "b=b.npy",
            "--message-format",
            "json",
        ],
    );
    assert_eq!(
        (out.status.code(), codes(&out)),
        (Some(0), vec![]),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crafted_npy_headers_are_refused() {
    let dir = temp_dir("hostile", "npy");
    std::fs::write(dir.join("k.py"), kernel("")).unwrap();
    let mut braces = b"\x93NUMPY\x01\x00\x10\x00".to_vec();
    braces.extend(b"{".repeat(16));
    std::fs::write(dir.join("braces.npy"), braces).unwrap();
    let mut v2 = b"\x93NUMPY\x02\x00\xff\xff\xff\xff".to_vec();
    v2.push(b'{');
    std::fs::write(dir.join("v2.npy"), v2).unwrap();
    for file in ["braces.npy", "v2.npy"] {
        let input = format!("a={file}");
        let out = run_limited(
            &dir,
            &["run", "k.py", "--input", &input, "--message-format", "json"],
        );
        assert_eq!(
            (out.status.code(), codes(&out)),
            (Some(1), vec!["E1014".to_string()]),
            "{file}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
