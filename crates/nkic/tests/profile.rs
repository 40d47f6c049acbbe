//! `nkic profile` and `nkic run --dump` through the real binary: the
//! trace is valid Chrome trace-event JSON (schema checked here), the SVG
//! timeline is well-formed XML (a small checker below), the summary of a
//! bundled kernel is snapshotted, and dumps hold every value written.

mod common;

use common::root;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn temp(name: &str) -> PathBuf {
    common::temp_dir("profile", name)
}

/// Runs nkic from the workspace root; returns (status ok, stdout, stderr).
fn nkic(args: &[&str]) -> (bool, String, String) {
    let out = common::run_nkic(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The matmul kernel with its bundled inputs.
fn matmul_args(command: &str) -> Vec<String> {
    vec![
        command.to_owned(),
        "kernels/matmul.py".to_owned(),
        "--input".to_owned(),
        "a_t=kernels/data/matmul/a_t.npy".to_owned(),
        "--input".to_owned(),
        "b=kernels/data/matmul/b.npy".to_owned(),
    ]
}

fn num(v: &Value, key: &str, what: &str) -> f64 {
    v.get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{what}: `{key}` is missing or not a number: {v}"))
}

/// Checks the trace-event schema: the object format with `traceEvents`;
/// every event has `ph`, `pid`, `tid`, `name` and `ts`; complete events
/// (`X`) have a non-negative `dur`; flow events (`s`, `f`) have an `id`
/// and a `cat`, and each `id` has one start and one finish, not before it;
/// every thread with slices is named by `thread_name` metadata; on each
/// thread the slices are in `ts` order and never overlap. Returns the
/// slices per thread name (`pid` 1) or `pid:name` (other processes).
fn check_trace(text: &str) -> BTreeMap<String, Vec<Value>> {
    let trace: Value = serde_json::from_str(text).expect("trace.json is JSON");
    let events = trace
        .get("traceEvents")
        .and_then(Value::as_array)
        .expect("a traceEvents array");
    assert!(!events.is_empty());
    let mut names: BTreeMap<(i64, i64), String> = BTreeMap::new();
    let mut slices: BTreeMap<(i64, i64), Vec<Value>> = BTreeMap::new();
    let mut flows: BTreeMap<u64, (Option<f64>, Option<f64>)> = BTreeMap::new();
    for e in events {
        let ph = e.get("ph").and_then(Value::as_str).expect("ph");
        let pid = e.get("pid").and_then(Value::as_i64).expect("pid");
        let tid = e.get("tid").and_then(Value::as_i64).expect("tid");
        let name = e.get("name").and_then(Value::as_str).expect("name");
        let ts = num(e, "ts", name);
        assert!(ts >= 0.0, "{e}");
        match ph {
            "M" => {
                let arg = &e["args"];
                match name {
                    "thread_name" => {
                        let n = arg["name"].as_str().expect("thread name").to_owned();
                        assert!(names.insert((pid, tid), n).is_none(), "thread named twice");
                    }
                    "process_name" => assert!(arg["name"].is_string()),
                    "thread_sort_index" => assert!(arg["sort_index"].is_i64()),
                    other => panic!("unexpected metadata event {other}"),
                }
            }
            "X" => {
                assert!(num(e, "dur", name) >= 0.0, "{e}");
                slices.entry((pid, tid)).or_default().push(e.clone());
            }
            "s" | "f" => {
                let id = e["id"].as_u64().expect("flow id");
                assert!(e["cat"].is_string(), "{e}");
                let f = flows.entry(id).or_default();
                let slot = if ph == "s" { &mut f.0 } else { &mut f.1 };
                assert!(slot.replace(ts).is_none(), "flow {id} has two {ph}");
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    for (id, (s, f)) in flows {
        let (Some(s), Some(f)) = (s, f) else {
            panic!("flow {id} is not paired");
        };
        assert!(f >= s, "flow {id} ends before it starts");
    }
    let mut out = BTreeMap::new();
    for (key, list) in slices {
        let name = names
            .get(&key)
            .unwrap_or_else(|| panic!("thread {key:?} has slices but no thread_name"))
            .clone();
        let name = if key.0 == 1 {
            name
        } else {
            format!("{}:{name}", key.0)
        };
        for pair in list.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let end = num(a, "ts", "a") + num(a, "dur", "a");
            assert!(
                num(b, "ts", "b") >= num(a, "ts", "a"),
                "{name}: not in ts order: {a} then {b}"
            );
            assert!(
                num(b, "ts", "b") + 1e-9 >= end,
                "{name}: overlapping slices: {a} then {b}"
            );
        }
        out.insert(name, list);
    }
    out
}

/// A small XML well-formedness checker: one root element, properly nested
/// and matching tags, quoted attributes without `<`, no duplicate
/// attributes, entities only `&amp; &lt; &gt; &quot; &apos;` or numeric.
fn check_xml(text: &str) -> Result<usize, String> {
    fn name_ok(n: &str) -> bool {
        let mut cs = n.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && cs.all(|c| c.is_ascii_alphanumeric() || "_:.-".contains(c))
    }
    fn entities_ok(t: &str) -> bool {
        let mut rest = t;
        while let Some(i) = rest.find('&') {
            let tail = &rest[i + 1..];
            let Some(j) = tail.find(';') else {
                return false;
            };
            let ent = &tail[..j];
            let ok = matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                || ent
                    .strip_prefix("#x")
                    .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
                || ent
                    .strip_prefix('#')
                    .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
            if !ok {
                return false;
            }
            rest = &tail[j + 1..];
        }
        true
    }
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut elements = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            if !entities_ok(rest) || (stack.is_empty() && !rest.trim().is_empty()) {
                return Err(format!("bad trailing text {rest:?}"));
            }
            break;
        };
        let chars = &rest[..lt];
        if !entities_ok(chars) || (stack.is_empty() && !chars.trim().is_empty()) {
            return Err(format!("bad text {chars:?}"));
        }
        rest = &rest[lt..];
        if let Some(body) = rest.strip_prefix("<!--") {
            let end = body.find("-->").ok_or("unterminated comment")?;
            rest = &body[end + 3..];
            continue;
        }
        if let Some(body) = rest.strip_prefix("<?") {
            let end = body.find("?>").ok_or("unterminated declaration")?;
            rest = &body[end + 2..];
            continue;
        }
        let gt = rest.find('>').ok_or("unterminated tag")?;
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("stray </{name}>"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
            continue;
        }
        let (body, selfclose) = match tag.strip_suffix('/') {
            Some(b) => (b, true),
            None => (tag, false),
        };
        let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
        let name = &body[..name_end];
        if !name_ok(name) {
            return Err(format!("bad element name {name:?}"));
        }
        // Attributes: name="value" pairs.
        let mut attrs = body[name_end..].trim();
        let mut seen = Vec::new();
        while !attrs.is_empty() {
            let eq = attrs
                .find('=')
                .ok_or(format!("attribute without value in <{name}>"))?;
            let an = attrs[..eq].trim();
            if !name_ok(an) || seen.contains(&an) {
                return Err(format!("bad or repeated attribute {an:?} in <{name}>"));
            }
            seen.push(an);
            let after = attrs[eq + 1..].trim_start();
            let quote = after.chars().next().ok_or("missing attribute value")?;
            if quote != '"' && quote != '\'' {
                return Err(format!("unquoted attribute {an} in <{name}>"));
            }
            let close = after[1..]
                .find(quote)
                .ok_or("unterminated attribute value")?;
            let value = &after[1..1 + close];
            if value.contains('<') || !entities_ok(value) {
                return Err(format!("bad attribute value {value:?}"));
            }
            attrs = after[close + 2..].trim_start();
        }
        if stack.is_empty() {
            roots += 1;
            if roots > 1 {
                return Err("more than one root element".to_owned());
            }
        }
        elements += 1;
        if !selfclose {
            stack.push(name.to_owned());
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> is never closed"));
    }
    if roots != 1 {
        return Err("no root element".to_owned());
    }
    Ok(elements)
}

#[test]
fn the_xml_checker_rejects_malformed_documents() {
    assert_eq!(check_xml("<svg a=\"1\"><g><rect/></g></svg>\n"), Ok(3));
    assert!(check_xml("<svg><g></svg>").is_err());
    assert!(check_xml("<svg a=1></svg>").is_err());
    assert!(check_xml("<svg>a & b</svg>").is_err());
    assert!(check_xml("<svg/><svg/>").is_err());
    assert!(check_xml("<svg a=\"1\" a=\"2\"/>").is_err());
    assert!(check_xml("<svg><title>x &lt; y</title></svg>").is_ok());
}

#[test]
fn profile_writes_a_valid_trace_a_well_formed_svg_and_the_outputs() {
    let dir = temp("matmul");
    let mut args = matmul_args("profile");
    args.extend(["--out".to_owned(), dir.display().to_string()]);
    args.extend(["--format".to_owned(), "json".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, stdout, stderr) = nkic(&args);
    assert!(ok, "{stderr}");
    let summary: Value = serde_json::from_str(stdout.trim()).expect("one JSON summary");
    let text = std::fs::read_to_string(dir.join("trace.json")).expect("trace.json");
    let threads = check_trace(&text);
    // One thread per queue of the summary, with one instruction slice per
    // executed instruction.
    let queues = summary["queues"].as_array().expect("queues");
    let engines: Vec<&String> = threads
        .keys()
        .filter(|k| k.starts_with("2:engine "))
        .collect();
    assert_eq!(threads.len(), queues.len() + engines.len());
    // Every transfer appears on each DMA engine it used.
    let engine_slices: usize = engines.iter().map(|k| threads[*k].len()).sum();
    let mut engine_uses = 0;
    let mut instructions = 0;
    let mut waits = 0;
    for q in queues {
        let name = q["queue"].as_str().expect("queue name");
        let slices = threads.get(name).expect("a thread per queue");
        let (sem, inst): (Vec<&Value>, Vec<&Value>) =
            slices.iter().partition(|s| s["cat"] == "semaphore");
        assert_eq!(
            inst.len() as u64,
            q["instructions"].as_u64().expect("count")
        );
        instructions += inst.len();
        waits += sem.len();
        for s in inst {
            let a = &s["args"];
            engine_uses += a["dma_engines"].as_u64().unwrap_or(0) as usize;
            assert_eq!(a["opcode"], s["name"]);
            assert!(a["operands"].is_object() && a["bytes"].is_u64() && a["flops"].is_u64());
            let src = a["source"]
                .as_str()
                .expect("every kernel instruction has a line");
            assert!(src.starts_with("kernels/matmul.py:"), "{src}");
            if s["name"] == "nc_matmul" {
                assert_eq!(a["flops"], 2 * 128 * 128 * 256, "{s}");
                assert_eq!(a["operands"]["moving"], "in sbuf float32[128,256]");
            }
        }
    }
    assert_eq!(
        instructions as u64,
        summary["instructions"].as_u64().expect("n")
    );
    assert!(waits > 0, "the matmul waits for its loads");
    assert!(engine_slices > 0);
    assert_eq!(engine_slices, engine_uses);
    let flows = text.matches("\"ph\":\"s\"").count();
    assert_eq!(flows, waits, "one arrow per semaphore wait");
    let total = summary["simulated_ns"].as_f64().expect("time");
    let other = serde_json::from_str::<Value>(&text).expect("json")["otherData"]["simulated_us"]
        .as_f64()
        .expect("simulated_us");
    assert!((other * 1000.0 - total).abs() < 1e-3);
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).expect("timeline.svg");
    let elements = check_xml(&svg).unwrap_or_else(|e| panic!("timeline.svg: {e}"));
    assert!(elements > queues.len() * 2, "{elements} elements");
    assert!(svg.contains(">tensor</text>") && svg.contains(">nc_matmul</text>"));
    assert!(dir.join("out0.npy").exists(), "the outputs are written too");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn profile_summary_of_the_matmul_kernel() {
    let args = matmul_args("profile");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, stdout, stderr) = nkic(&args);
    assert!(ok, "{stderr}");
    insta::assert_snapshot!(stdout);
}

#[test]
fn profile_json_summary_fields() {
    let mut args = matmul_args("profile");
    args.extend(["--report".to_owned(), "json".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, stdout, stderr) = nkic(&args);
    assert!(ok, "{stderr}");
    let s: Value = serde_json::from_str(stdout.trim()).expect("JSON");
    // 4 matmuls of 128 × 128 × 256.
    assert_eq!(s["flops"], 4 * 2 * 128 * 128 * 256);
    let t = s["simulated_ns"].as_f64().expect("time");
    let bound = s["lower_bound_ns"].as_f64().expect("bound");
    assert!(t >= bound, "{t} < {bound}");
    assert!((s["bound_ratio"].as_f64().expect("ratio") - t / bound).abs() < 1e-3);
    assert!(
        (s["tflops"].as_f64().expect("tflops") - 4.0 * 2.0 * 128.0 * 128.0 * 256.0 / t / 1000.0)
            .abs()
            < 1e-3
    );
    // The kernel's matmuls take fp32 inputs: a quarter of the bf16 peak.
    assert!((s["peak_tflops"].as_f64().expect("peak") - 78.6432 / 4.0).abs() < 1e-3);
    assert_eq!(s["peak_mode"], "fp32");
    for q in s["queues"].as_array().expect("queues") {
        let (busy, idle) = (
            q["busy"].as_f64().expect("b"),
            q["idle"].as_f64().expect("i"),
        );
        assert!(
            (busy + idle - 1.0).abs() < 1e-3 && (0.0..=1.0).contains(&busy),
            "{q}"
        );
    }
    // The critical path's shares add up to the whole run (up to the top-10
    // cut) and its groups are ordered by time.
    let groups = s["critical_path"]["groups"].as_array().expect("groups");
    assert!(!groups.is_empty());
    let times: Vec<f64> = groups
        .iter()
        .map(|g| g["ns"].as_f64().expect("ns"))
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]));
    assert!(times.iter().sum::<f64>() <= t + 1e-3);
    let lines = s["top_lines"].as_array().expect("lines");
    assert!(lines.iter().all(|l| {
        l["source"]
            .as_str()
            .is_some_and(|x| x.starts_with("kernels/matmul.py:"))
    }));
}

/// Runs the bundled `tensor_add` on its data with `--dump name --out out`.
fn dump_tensor_add(name: &str, out: &str) {
    let (ok, _, stderr) = nkic(&[
        "run",
        "kernels/tensor_add.py",
        "--input",
        "a=kernels/data/tensor_add/a.npy",
        "--input",
        "b=kernels/data/tensor_add/b.npy",
        "--dump",
        name,
        "--out",
        out,
    ]);
    assert!(ok, "{stderr}");
}

#[test]
fn dump_writes_every_value_of_a_tensor() {
    let dir = temp("dump");
    let out = dir.display().to_string();
    dump_tensor_add("out0", &out);
    // The kernel stores out0 in [128, 512] tiles, one per loop iteration:
    // one value per tile, each the tile written, together covering the
    // result.
    let (shape, want) =
        common::read_f32_npy_shaped(&root().join("kernels/data/tensor_add/out0.npy"));
    let (rows, cols) = (shape[0] as usize, shape[1] as usize);
    let tiles: Vec<(usize, usize)> = (0..rows / 128)
        .flat_map(|r| (0..cols / 512).map(move |c| (128 * r, 512 * c)))
        .collect();
    let index = std::fs::read_to_string(dir.join("dump/out0/index.txt")).expect("index.txt");
    let lines: Vec<&str> = index.lines().collect();
    assert_eq!(lines.len(), tiles.len(), "{index}");
    let mut seen = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let file = format!("{k:04}.npy");
        assert!(line.starts_with(&file), "{line}");
        assert!(
            line.contains(" dma_copy dst float32[128,512] kernels/tensor_add.py:"),
            "{line}"
        );
        let (shape, got) = common::read_f32_npy_shaped(&dir.join("dump/out0").join(&file));
        assert_eq!(shape, vec![128, 512]);
        let block = |(r0, c0): (usize, usize)| -> Vec<f32> {
            (0..128)
                .flat_map(|r| want[(r0 + r) * cols + c0..(r0 + r) * cols + c0 + 512].to_vec())
                .collect()
        };
        let at = tiles
            .iter()
            .copied()
            .find(|&t| block(t) == got)
            .unwrap_or_else(|| panic!("{file} is no tile of the result"));
        seen.push(at);
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), tiles.len(), "every tile is dumped once");
    // An on-chip tile is known by the variable it was assigned to: every
    // value of `sum_tile` is one 128-row block of the result.
    let _ = std::fs::remove_dir_all(&dir);
    dump_tensor_add("sum_tile", &out);
    let index = std::fs::read_to_string(dir.join("dump/sum_tile/index.txt")).expect("index.txt");
    assert_eq!(index.lines().count(), rows / 128, "{index}");
    let mut blocks = Vec::new();
    for (k, line) in index.lines().enumerate() {
        assert!(line.contains(" tensor_tensor dst float32[128,"), "{line}");
        let (shape, got) =
            common::read_f32_npy_shaped(&dir.join(format!("dump/sum_tile/{k:04}.npy")));
        assert_eq!(shape, vec![128, cols as u64]);
        let block = (0..rows / 128)
            .find(|&r| want[r * 128 * cols..(r + 1) * 128 * cols] == got[..])
            .unwrap_or_else(|| panic!("value {k} of sum_tile is no block of the result"));
        blocks.push(block);
    }
    blocks.sort_unstable();
    blocks.dedup();
    assert_eq!(blocks.len(), rows / 128, "every block is dumped once");
    // An unknown name is an error listing the known ones.
    let (ok, _, stderr) = nkic(&["run", "kernels/tensor_add.py", "--dump", "nope"]);
    assert!(!ok);
    assert!(
        stderr.contains("E1017") && stderr.contains("a, a_tile, b, b_tile, out0, sum_tile"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs the `nkic` binary from the workspace root with colours off and both
/// outputs piped, the read end of stdout (`close_stdout`) or of stderr
/// closed at once, and waits for it.
fn run_closing(args: impl IntoIterator<Item = impl AsRef<OsStr>>, close_stdout: bool) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nkic"))
        .current_dir(root())
        .env("NO_COLOR", "1")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the nkic binary runs");
    if close_stdout {
        drop(child.stdout.take());
    } else {
        drop(child.stderr.take());
    }
    child.wait_with_output().expect("nkic ends")
}

/// A reader that closes the pipe early (`nkic run … | head -1`) ends the
/// output quietly: no panic, success.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    for command in ["run", "profile"] {
        // Close the read end before nkic writes its report.
        let out = run_closing([command, "kernels/matmul.py"], true);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{command}: {stderr}");
        assert!(out.status.success(), "{command}: {stderr}");
    }
}

/// A closed stderr (`nkic check … 2>&1 | head -c 5`) is no panic either:
/// the diagnostics are lost, the exit code still says there were errors.
#[test]
fn a_closed_stderr_is_not_a_panic() {
    let dir = temp("closed_stderr");
    let file = dir.join("broken.py");
    std::fs::write(&file, "def f(:\n    pass\nx = = 1\n").expect("write the kernel");
    for _ in 0..4 {
        // Close the read end before nkic writes its diagnostics.
        let out = run_closing([OsStr::new("check"), file.as_os_str()], false);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `--input` mistakes: the same argument twice is E1018; a misspelt dtype
/// after the colon is a command-line error naming it.
#[test]
fn run_rejects_duplicate_inputs_and_unknown_dtypes() {
    let a = "a=kernels/data/tensor_add/a.npy";
    let (ok, _, stderr) = nkic(&["run", "kernels/tensor_add.py", "--input", a, "--input", a]);
    assert!(!ok);
    assert!(
        stderr.contains("error[E1018]: `--input a` is given more than once"),
        "{stderr}"
    );
    let (ok, _, stderr) = nkic(&[
        "run",
        "kernels/tensor_add.py",
        "--input",
        "a=kernels/data/tensor_add/a.npy:floot",
    ]);
    assert!(!ok);
    assert!(stderr.contains("unknown dtype `floot`"), "{stderr}");
}

/// `run` and `profile` on a file whose kernel arguments are unknown cannot
/// do anything, which is an error (E1019), not a silent success.
#[test]
fn run_without_kernel_arguments_is_an_error() {
    let dir = temp("noargs");
    let file = dir.join("k.py");
    std::fs::write(&file, "import nki\n\n@nki.jit\ndef k(a):\n    return a\n").expect("kernel");
    for command in ["run", "profile"] {
        let (ok, _, stderr) = nkic(&[command, &file.display().to_string()]);
        assert!(!ok, "{command}");
        assert!(
            stderr.contains("error[E1019]: nothing to run"),
            "{command}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// An fp8 `double_row` kernel is measured against the double-row peak
/// (twice the bf16 one), so its utilisation stays at most 100 %.
#[test]
fn the_tensor_peak_follows_the_matmul_mode() {
    let (ok, stdout, stderr) = nkic(&["profile", "kernels/matmul_fp8.py", "--format", "json"]);
    assert!(ok, "{stderr}");
    let s: Value = serde_json::from_str(stdout.trim()).expect("json");
    assert_eq!(s["peak_mode"], "fp8 double_row");
    assert!(
        (num(&s, "peak_tflops", "fp8") - 2.0 * 78.6432).abs() < 1e-3,
        "{s}"
    );
    assert!(num(&s, "tflops", "fp8") <= num(&s, "peak_tflops", "fp8"));
    // Without matmuls the bf16 peak stands.
    let (ok, stdout, stderr) = nkic(&["profile", "kernels/tensor_add.py", "--format", "json"]);
    assert!(ok, "{stderr}");
    let s: Value = serde_json::from_str(stdout.trim()).expect("json");
    assert_eq!(s["peak_mode"], "bf16 dense");
    assert!(
        (num(&s, "peak_tflops", "add") - 78.6432).abs() < 1e-3,
        "{s}"
    );
}
