//! Data-driven end-to-end test of every bundled kernel.
//!
//! For each directory `kernels/data/<name>/` the test runs
//! `nkic run kernels/<name>.py` with every `<arg>.npy` in that directory as an
//! input, once with `--schedule optimized` and once with
//! `--schedule sequential`. The two schedules must produce bit-identical
//! outputs, and every returned tensor `out<i>.npy` must match the NumPy
//! reference of the same name within the tolerance written in
//! `kernels/data/<name>/tolerance.txt` (`rtol=<x> atol=<y>`, compared as
//! `|got - want| <= atol + rtol * |want|`, NaN only matching NaN). A `#`
//! starts a comment that runs to the end of its line; tolerance files use
//! comments to justify their numbers.
//! Arrays of dtypes NumPy lacks, saved by ml_dtypes as opaque void arrays
//! (`<V2` for bfloat16, `<V1` for the fp8 formats), are passed to nkic with
//! the dtype the kernel's `# nkic: args` directive declares for that
//! argument (`--input x=x.npy:float8_e4m3`); a `<V2` reference output is
//! compared as bfloat16. Integer outputs (indices) are compared by value.
//! A second test checks that every kernel file in `kernels/` has its
//! reference script `kernels/ref/<name>.py` and its data directory.

mod common;

use common::{Npy, read_npy, root};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The elements of a floating-point or integer `.npy` payload widened to
/// f64 (exact for every supported dtype).
fn to_f64(npy: &Npy, path: &Path) -> Vec<f64> {
    match npy.descr.as_str() {
        "<f4" => npy
            .payload
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        "<f8" => npy
            .payload
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
        // ml_dtypes saves bfloat16 as the opaque `<V2`; nkic writes the
        // raw bits as `<u2`. Both are decoded as bfloat16 here.
        "<V2" | "<u2" => npy
            .payload
            .chunks_exact(2)
            .map(|c| {
                f64::from(f32::from_bits(
                    u32::from(u16::from_le_bytes([c[0], c[1]])) << 16,
                ))
            })
            .collect(),
        "<f2" => npy
            .payload
            .chunks_exact(2)
            .map(|c| half_to_f64(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        // Integer outputs (indices, counts) are compared by value.
        "<u4" => npy
            .payload
            .chunks_exact(4)
            .map(|c| f64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        "<i4" => npy
            .payload
            .chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        "|u1" => npy.payload.iter().map(|&b| f64::from(b)).collect(),
        "|i1" => npy
            .payload
            .iter()
            .map(|&b| f64::from(i8::from_le_bytes([b])))
            .collect(),
        other => panic!("{}: unsupported reference dtype {other}", path.display()),
    }
}

/// Decodes an IEEE binary16 value.
fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Parses `rtol=<x> atol=<y>` from a tolerance file, skipping `#` comments.
fn read_tolerance(path: &Path) -> (f64, f64) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (every kernel needs a tolerance)", path.display()));
    let mut rtol = None;
    let mut atol = None;
    let fields = text
        .lines()
        .map(|line| line.split_once('#').map_or(line, |(code, _)| code))
        .flat_map(str::split_whitespace);
    for field in fields {
        let (key, value) = field
            .split_once('=')
            .unwrap_or_else(|| panic!("{}: bad field {field:?}", path.display()));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|e| panic!("{}: bad number in {field:?}: {e}", path.display()));
        match key {
            "rtol" => rtol = Some(value),
            "atol" => atol = Some(value),
            _ => panic!("{}: unknown key {key:?}", path.display()),
        }
    }
    (
        rtol.unwrap_or_else(|| panic!("{}: missing rtol", path.display())),
        atol.unwrap_or_else(|| panic!("{}: missing atol", path.display())),
    )
}

/// The sorted `.npy` file names in `dir` whose stem satisfies `keep`.
fn npy_files(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("kernel data dir")
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.strip_suffix(".npy").is_some_and(&keep))
        .collect();
    names.sort();
    names
}

fn is_output(stem: &str) -> bool {
    stem.strip_prefix("out")
        .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// The dtype of every argument in `kernels/<name>.py`'s `# nkic: args`
/// directive (`a=float8_e4m3[512,256]` gives `a` → `float8_e4m3`).
fn declared_dtypes(name: &str) -> BTreeMap<String, String> {
    let path = root().join(format!("kernels/{name}.py"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("# nkic: args"))
        .flat_map(str::split_whitespace)
        .filter_map(|field| {
            let (arg, ty) = field.split_once('=')?;
            let dtype = ty.split('[').next()?;
            Some((arg.to_string(), dtype.to_string()))
        })
        .collect()
}

fn run_kernel(name: &str, data: &Path, schedule: &str) -> PathBuf {
    let out = std::env::temp_dir().join(format!(
        "nkic-kernels-{}-{name}-{schedule}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("temp dir");
    let declared = declared_dtypes(name);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nkic"));
    cmd.current_dir(root())
        .env("NO_COLOR", "1")
        .arg("run")
        .arg(format!("kernels/{name}.py"));
    for input in npy_files(data, |stem| !is_output(stem)) {
        let arg = input.trim_end_matches(".npy");
        let path = data.join(&input);
        // ml_dtypes writes bfloat16 and fp8 arrays as opaque void arrays;
        // nkic cannot infer their dtype from the file, so it is named from
        // the kernel's directive.
        let suffix = if read_npy(&path).descr.contains('V') {
            let dtype = declared.get(arg).unwrap_or_else(|| {
                panic!("{name}: `{arg}` is a void array but `# nkic: args` does not declare it")
            });
            format!(":{dtype}")
        } else {
            String::new()
        };
        cmd.arg("--input")
            .arg(format!("{arg}={}{suffix}", path.display()));
    }
    cmd.arg("--schedule").arg(schedule).arg("--out").arg(&out);
    let res = cmd.output().expect("the nkic binary runs");
    assert!(
        res.status.success(),
        "{name} ({schedule}) failed:\n{}{}",
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr)
    );
    out
}

fn check_kernel(name: &str, data: &Path) {
    let (rtol, atol) = read_tolerance(&data.join("tolerance.txt"));
    let outputs = npy_files(data, is_output);
    assert!(!outputs.is_empty(), "{name}: no out<i>.npy reference");
    let optimized = run_kernel(name, data, "optimized");
    let sequential = run_kernel(name, data, "sequential");
    for file in &outputs {
        let want_path = data.join(file);
        let want = read_npy(&want_path);
        let opt = read_npy(&optimized.join(file));
        let seq = read_npy(&sequential.join(file));
        assert!(
            opt.payload == seq.payload && opt.descr == seq.descr,
            "{name}/{file}: optimized and sequential schedules differ"
        );
        assert_eq!(opt.shape, want.shape, "{name}/{file}: shape");
        // The reference's `<V2` (ml_dtypes bfloat16) corresponds to nkic's
        // `<u2` bfloat16 bits; every other dtype must match exactly.
        let want_descr = if want.descr == "<V2" {
            "<u2"
        } else {
            want.descr.as_str()
        };
        assert_eq!(opt.descr, want_descr, "{name}/{file}: dtype");
        let got = to_f64(&opt, &optimized.join(file));
        let want = to_f64(&want, &want_path);
        let mut bad = 0usize;
        let mut first = None;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let ok = if w.is_nan() {
                g.is_nan()
            } else {
                (g - w).abs() <= atol + rtol * w.abs()
            };
            if !ok {
                bad += 1;
                first.get_or_insert((i, *g, *w));
            }
        }
        assert!(
            bad == 0,
            "{name}/{file}: {bad} of {} elements outside rtol={rtol} atol={atol}; first at flat index {:?} (got, want)",
            got.len(),
            first
        );
    }
    let _ = std::fs::remove_dir_all(optimized);
    let _ = std::fs::remove_dir_all(sequential);
}

/// The names `name` gives the entries of directory `dir`, sorted; asserts
/// there are several (`what` names them in the message).
fn sorted_names(
    dir: &Path,
    what: &str,
    name: impl FnMut(std::fs::DirEntry) -> Option<String>,
) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(name)
        .collect();
    names.sort();
    assert!(names.len() >= 2, "expected several {what}, found {names:?}");
    names
}

#[test]
fn every_bundled_kernel_matches_its_reference_in_both_schedules() {
    let data_root = root().join("kernels/data");
    let names = sorted_names(&data_root, "bundled kernels", |e| {
        e.path()
            .is_dir()
            .then(|| e.file_name().into_string().ok())?
    });
    // Each kernel runs in its own thread so the test takes about as long as
    // the slowest kernel; failures are collected and reported together.
    let handles: Vec<_> = names
        .iter()
        .map(|name| {
            let name = name.clone();
            let data = data_root.join(&name);
            std::thread::spawn(move || check_kernel(&name, &data))
        })
        .collect();
    let mut failed = Vec::new();
    for (name, handle) in names.iter().zip(handles) {
        if handle.join().is_err() {
            failed.push(name.clone());
        }
    }
    assert!(failed.is_empty(), "kernels failing: {failed:?}");
}

#[test]
fn every_kernel_file_has_a_reference_script_and_data() {
    let kernels = root().join("kernels");
    let names = sorted_names(&kernels, "kernels", |e| {
        let n = e.file_name().into_string().ok()?;
        n.strip_suffix(".py").map(str::to_string)
    });
    let missing: Vec<String> = names
        .iter()
        .flat_map(|name| {
            [
                kernels.join("ref").join(format!("{name}.py")),
                kernels.join("data").join(name).join("tolerance.txt"),
            ]
        })
        .filter(|path| !path.is_file())
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "kernels without a reference: {missing:?}"
    );
}
