//! Per-instruction golden tests of the reference interpreter through the
//! real `nkic exec` binary.
//!
//! Every `tests/nkasm/<instr>_<case>.nkasm` is run with its inputs
//! `<stem>.in.<arg>.npy`, and each output `outN.npy` is compared with
//! `<stem>.ref.outN.npy`, which `tests/nkasm/gen.py` computes in NumPy from
//! the semantics in `docs/isa.md`. Comparison is exact (bytes) unless the
//! fixture states a tolerance in a header comment,
//! `# golden: rtol=1e-6 atol=0`, which then applies to its `float32` outputs
//! only (NaN matches NaN, infinities must match exactly). A fixture with more
//! than one queue also runs under every `--step-order`, and each order must
//! give the same bytes as the first.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The step orders of `nkic exec --step-order`.
const STEP_ORDERS: [&str; 3] = ["round-robin", "reverse", "earliest"];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/nkasm")
}

/// A `.npy` array: its descr (`<f4`, `<u2`, …), shape and raw data bytes.
#[derive(Debug)]
struct Npy {
    descr: String,
    shape: Vec<usize>,
    data: Vec<u8>,
}

/// Reads the simple `.npy` format: magic, version, header length, a Python
/// dict header, then the little-endian data in C order.
fn read_npy(path: &Path) -> Result<Npy, String> {
    let bytes =
        std::fs::read(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(format!("{} is not a .npy file", path.display()));
    }
    let (header_len, start) = if bytes[6] == 1 {
        (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10)
    } else {
        let len = bytes
            .get(8..12)
            .ok_or_else(|| format!("{} has a truncated header", path.display()))?;
        (
            u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize,
            12,
        )
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| format!("{} has a malformed header", path.display()))?;
    let field = |key: &str| -> Result<&str, String> {
        let at = header
            .find(&format!("'{key}':"))
            .ok_or_else(|| format!("{}: no `{key}` in the header {header:?}", path.display()))?;
        Ok(header[at + key.len() + 3..].trim_start())
    };
    let descr = field("descr")?
        .trim_start_matches('\'')
        .split('\'')
        .next()
        .unwrap_or("")
        .to_owned();
    if field("fortran_order")?.starts_with("True") {
        return Err(format!("{} is in Fortran order", path.display()));
    }
    let shape_text = field("shape")?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| format!("{}: malformed shape in {header:?}", path.display()))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|err| format!("{}: shape {s:?}: {err}", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Npy {
        descr,
        shape,
        data: bytes[start + header_len..].to_vec(),
    })
}

/// What a fixture's `# golden:` header says.
#[derive(Debug, Default, Clone, Copy)]
struct Tolerance {
    rtol: f64,
    atol: f64,
}

fn parse_header(text: &str) -> Result<Option<Tolerance>, String> {
    let mut tol = None;
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("# golden:") else {
            continue;
        };
        let mut t = Tolerance::default();
        for item in rest.split_whitespace() {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("malformed `# golden:` item {item:?}"))?;
            let value: f64 = value
                .parse()
                .map_err(|err| format!("`# golden:` {key}={value}: {err}"))?;
            match key {
                "rtol" => t.rtol = value,
                "atol" => t.atol = value,
                _ => return Err(format!("unknown `# golden:` key {key:?}")),
            }
        }
        tol = Some(t);
    }
    Ok(tol)
}

/// Files of `dir` whose names start with `prefix` and end with `.npy`, as
/// (the part between, path), sorted.
fn files_with_prefix(dir: &Path, prefix: &str) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_str()?.to_owned();
                    let middle = name.strip_prefix(prefix)?.strip_suffix(".npy")?.to_owned();
                    Some((middle, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Runs `nkic exec` on a fixture with one step order, writing into `out`.
fn run_exec(
    program: &Path,
    inputs: &[(String, PathBuf)],
    out: &Path,
    order: &str,
) -> Result<(), String> {
    // A stale directory from an earlier run must not supply outputs.
    let _ = std::fs::remove_dir_all(out);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nkic"));
    cmd.arg("exec")
        .arg(program)
        .arg("--out")
        .arg(out)
        .arg("--step-order")
        .arg(order);
    for (name, path) in inputs {
        cmd.arg("--input").arg(format!("{name}={}", path.display()));
    }
    let output = cmd
        .output()
        .map_err(|err| format!("cannot run nkic: {err}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nkic exec --step-order {order} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Shows element `i` of `data` (of dtype `descr`) for a failure message.
fn show(descr: &str, data: &[u8], i: usize, size: usize) -> String {
    let Some(chunk) = data.get(i * size..(i + 1) * size) else {
        return "<missing>".into();
    };
    let mut word = 0u64;
    for (k, b) in chunk.iter().enumerate() {
        word |= u64::from(*b) << (8 * k);
    }
    match descr {
        "<f4" => format!("{:e} (0x{word:08x})", f32::from_bits(word as u32)),
        "<f8" => format!("{:e} (0x{word:016x})", f64::from_bits(word)),
        "<i4" => format!("{}", word as u32 as i32),
        "<i2" => format!("{}", word as u16 as i16),
        "|i1" => format!("{}", word as u8 as i8),
        _ => format!("{word} (0x{word:0w$x})", w = size * 2),
    }
}

fn element_size(descr: &str) -> Result<usize, String> {
    descr
        .get(2..)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("unsupported descr {descr:?}"))
}

/// Compares one output with its reference; `None` when they agree.
fn compare(got: &Npy, want: &Npy, tol: Option<Tolerance>) -> Result<Option<String>, String> {
    if got.descr != want.descr || got.shape != want.shape {
        return Ok(Some(format!(
            "dtype/shape {} {:?}, expected {} {:?}",
            got.descr, got.shape, want.descr, want.shape
        )));
    }
    let size = element_size(&want.descr)?;
    let n = want.shape.iter().product::<usize>();
    if got.data.len() < n * size || want.data.len() < n * size {
        return Ok(Some("truncated data".into()));
    }
    let tolerant = tol.filter(|_| want.descr == "<f4");
    let mismatch = (0..n).find(|&i| {
        let (g, w) = (
            &got.data[i * size..(i + 1) * size],
            &want.data[i * size..(i + 1) * size],
        );
        match tolerant {
            None => g != w,
            Some(t) => {
                let g = f64::from(f32::from_le_bytes([g[0], g[1], g[2], g[3]]));
                let w = f64::from(f32::from_le_bytes([w[0], w[1], w[2], w[3]]));
                let ok = if w.is_nan() || g.is_nan() {
                    w.is_nan() && g.is_nan()
                } else if w.is_infinite() || g.is_infinite() {
                    g == w
                } else {
                    (g - w).abs() <= t.atol + t.rtol * w.abs()
                };
                !ok
            }
        }
    });
    Ok(mismatch.map(|i| {
        let bad = (0..n)
            .filter(|&j| got.data[j * size..(j + 1) * size] != want.data[j * size..(j + 1) * size])
            .count();
        format!(
            "first mismatch at flat index {i} (shape {:?}): got {}, expected {} ({bad} of {n} elements differ in bits)",
            want.shape,
            show(&want.descr, &got.data, i, size),
            show(&want.descr, &want.data, i, size),
        )
    }))
}

/// Runs one fixture and compares all its outputs; `Err` describes the first
/// problem.
fn check_exec(program: &Path, scratch: &Path) -> Result<(), String> {
    let dir = program.parent().unwrap_or(Path::new("."));
    let stem = program
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("non-UTF-8 fixture name")?;
    let text = std::fs::read_to_string(program).map_err(|err| err.to_string())?;
    let tol = parse_header(&text)?;
    let inputs = files_with_prefix(dir, &format!("{stem}.in."));
    let refs = files_with_prefix(dir, &format!("{stem}.ref."));
    if refs.is_empty() {
        return Err("no references (run tests/nkasm/gen.py)".into());
    }
    let n_queues = text
        .lines()
        .filter(|l| l.trim_start().starts_with(".queue"))
        .count();
    let orders: &[&str] = if n_queues > 1 {
        &STEP_ORDERS
    } else {
        &STEP_ORDERS[..1]
    };
    let mut first: Option<Vec<(String, Vec<u8>)>> = None;
    for order in orders {
        let out = scratch.join(stem).join(order);
        run_exec(program, &inputs, &out, order)?;
        let produced: BTreeSet<String> = files_with_prefix(&out, "out")
            .into_iter()
            .map(|(m, _)| format!("out{m}"))
            .collect();
        let expected: BTreeSet<String> = refs.iter().map(|(m, _)| m.clone()).collect();
        if produced != expected {
            return Err(format!("outputs {produced:?}, references {expected:?}"));
        }
        let mut bytes = Vec::new();
        for (name, ref_path) in &refs {
            let got_path = out.join(format!("{name}.npy"));
            let got = read_npy(&got_path)?;
            if first.is_none() {
                let want = read_npy(ref_path)?;
                if let Some(msg) = compare(&got, &want, tol)? {
                    return Err(format!("{name} (step order {order}): {msg}"));
                }
            }
            bytes.push((
                name.clone(),
                std::fs::read(&got_path).map_err(|e| e.to_string())?,
            ));
        }
        match &first {
            None => first = Some(bytes),
            Some(base) => {
                for ((name, a), (_, b)) in base.iter().zip(&bytes) {
                    if a != b {
                        return Err(format!(
                            "{name}: --step-order {order} gives different bytes than {}",
                            STEP_ORDERS[0]
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn fixtures() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "nkasm"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn every_fixture_matches_its_numpy_reference() {
    let fixtures = fixtures();
    assert!(
        fixtures.len() >= 10,
        "found only {} fixtures in {}",
        fixtures.len(),
        fixture_dir().display()
    );
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("exec_golden");
    // Fixtures are independent processes; a few threads keep the suite near a second. Each
    // thread takes every n-th fixture, and the failures are sorted so the report is stable.
    let n_threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let mut failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n_threads)
            .map(|t| {
                let (fixtures, scratch) = (&fixtures, &scratch);
                scope.spawn(move || {
                    fixtures
                        .iter()
                        .skip(t)
                        .step_by(n_threads)
                        .filter_map(|f| {
                            check_exec(f, scratch).err().map(|msg| {
                                format!(
                                    "{}: {msg}",
                                    f.file_name().and_then(|n| n.to_str()).unwrap_or("?")
                                )
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec!["a harness thread panicked".into()])
            })
            .collect()
    });
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        fixtures.len(),
        failures.join("\n")
    );
}

/// Every instruction of the ISA appears in at least one fixture.
#[test]
fn every_instruction_has_a_fixture() {
    let mut used = BTreeSet::new();
    for f in fixtures() {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for line in text.lines() {
            let code = line.split('#').next().unwrap_or("").trim();
            if code.is_empty() || code.starts_with('.') {
                continue;
            }
            if code.starts_with('L') && code.ends_with(':') {
                used.insert("label".to_owned());
            } else if let Some(word) = code.split_whitespace().next() {
                used.insert(word.to_owned());
            }
        }
    }
    let missing: Vec<&str> = nkic_isa::Op::MNEMONICS
        .iter()
        .copied()
        .filter(|m| !used.contains(*m))
        .collect();
    assert!(
        missing.is_empty(),
        "instructions without a golden fixture: {missing:?}"
    );
}
