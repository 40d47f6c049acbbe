//! Runtime faults and warnings through `nkic run` (issue #14 items 1 and
//! 4): each kernel of `tests/runtime/` runs with the default `--poison
//! precise` and with `--poison error`; the exit status and the rendered
//! diagnostics of both are snapshotted (`snapshots/runtime__<kernel>.snap`).
//!
//! - `masked_last_tile.py`: a legacy kernel computes on the partitions its
//!   masked last tile never loads and never stores them: no diagnostic by
//!   default (and its output is bit-identical to `--poison zero`'s, which
//!   reads the same defined elements), E2002 with `--poison error`.
//! - `scatter_half.py`: a scatter writes every other row of its output on
//!   purpose: warning E2009 (never written, filled with NaN).
//! - `one_tile_of_many.py`: one 128×512 tile stored into a 32 MiB output:
//!   the file holds the tile and NaN everywhere else (written in halves
//!   side by side, the fill made a piece at a time).
//! - `spin_forever.py`: a `while` loop polls a flag nothing clears:
//!   E2007 at `--max-sim-ms`, labelled at the loop's header.
//! - `depends_on_scratch.py`: the output is computed from a tile nothing
//!   wrote: warning E2009 naming the output and the line of the first bad
//!   read.
//! - `index_from_scratch.py`: gather indices from a tile nothing wrote:
//!   error E2002 in both modes.
//! - `gather_out_of_bounds.py`: row 43 of a gather's index tile holds 129
//!   for a 128-row tensor: E2001 in NumPy's words, with the same facts as
//!   JSON `facts`.

mod common;

/// Runs `nkic run crates/nkic/tests/runtime/NAME.py --poison POISON [extra]` from
/// the workspace root; returns `exit: <code>` and the rendered
/// diagnostics.
fn run(name: &str, poison: &str, extra: &[&str]) -> String {
    let file = format!("crates/nkic/tests/runtime/{name}.py");
    let mut args = vec!["run", &file, "--poison", poison];
    args.extend_from_slice(extra);
    let out = common::run_nkic(&args);
    format!(
        "$ nkic run {file} --poison {poison}{}\nexit: {}\n{}",
        extra.iter().map(|a| format!(" {a}")).collect::<String>(),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn snapshot(name: &str) {
    let text = format!("{}\n{}", run(name, "precise", &[]), run(name, "error", &[]));
    insta::assert_snapshot!(name, text);
}

#[test]
fn masked_last_tile() {
    snapshot("masked_last_tile");
    // The default reads the same defined elements as `--poison zero`:
    // bit-identical outputs, none of them NaN.
    let mut outs = Vec::new();
    for poison in ["precise", "zero"] {
        let dir = common::temp_dir("undefined", poison);
        let text = run(
            "masked_last_tile",
            poison,
            &["--out", dir.to_str().expect("utf-8 path")],
        );
        assert!(text.contains("exit: 0"), "{text}");
        outs.push(std::fs::read(dir.join("out0.npy")).expect("out0.npy"));
        let _ = std::fs::remove_dir_all(dir);
    }
    assert_eq!(outs[0], outs[1]);
    let payload = &outs[0][outs[0].len() - 200 * 64 * 4..];
    assert!(
        payload
            .chunks_exact(4)
            .all(|c| !f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_nan())
    );
}

#[test]
fn scatter_half() {
    snapshot("scatter_half");
    // The file holds the scattered rows and the fill in the others: NaN by
    // default, zero with `--poison zero`, the written rows the same.
    let mut files = Vec::new();
    for poison in ["precise", "zero"] {
        let dir = common::temp_dir("undefined", &format!("scatter_{poison}"));
        let text = run(
            "scatter_half",
            poison,
            &["--out", dir.to_str().expect("utf-8 path")],
        );
        assert!(text.contains("exit: 0"), "{text}");
        files.push(common::read_f32_npy(&dir.join("out0.npy")));
        let _ = std::fs::remove_dir_all(dir);
    }
    let rows = |values: &[f32]| values.chunks(32).map(<[f32]>::to_vec).collect::<Vec<_>>();
    let (nan, zero) = (rows(&files[0]), rows(&files[1]));
    assert_eq!(nan.len(), 128);
    for (r, (n, z)) in nan.iter().zip(&zero).enumerate() {
        if r % 2 == 1 {
            assert!(n.iter().all(|v| v.is_nan()), "row {r}: {n:?}");
            assert!(z.iter().all(|&v| v == 0.0), "row {r}: {z:?}");
        } else {
            assert!(n.iter().all(|v| !v.is_nan()), "row {r}: {n:?}");
            assert_eq!(n, z, "row {r}");
        }
    }
}

/// A 32 MiB output with one tile stored (written in two halves side by
/// side, `npy::write_file`): the tile holds the input, every other
/// element the fill, NaN.
#[test]
fn one_tile_of_many() {
    let dir = common::temp_dir("undefined", "one_tile");
    let input = dir.join("a.npy");
    let a: Vec<f32> = (0..128 * 512).map(|i| i as f32).collect();
    common::write_f32_npy(&input, &[128, 512], &a);
    let out = dir.join("out");
    let text = run(
        "one_tile_of_many",
        "precise",
        &[
            "--input",
            &format!("a={}", input.display()),
            "--out",
            out.to_str().expect("utf-8 path"),
        ],
    );
    assert!(text.contains("exit: 0"), "{text}");
    assert!(
        text.contains("8323072 of 8388608 elements are never written"),
        "{text}"
    );
    let (shape, values) = common::read_f32_npy_shaped(&out.join("out0.npy"));
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(shape, [4096, 2048]);
    for (r, row) in values.chunks(2048).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            if (128..256).contains(&r) && (512..1024).contains(&c) {
                assert_eq!(v, a[(r - 128) * 512 + c - 512], "[{r}, {c}]");
            } else {
                assert!(v.is_nan(), "[{r}, {c}]: {v}");
            }
        }
    }
}

/// A loop polling a flag nothing clears runs into `--max-sim-ms`: E2007
/// points at the loop's header whether the limit falls on its counter
/// (an instruction with the header's line) or on its condition label (no
/// line: the nearest instruction's, the branch after it).
#[test]
fn spin_forever() {
    let text: Vec<String> = ["3", "4"]
        .iter()
        .map(|ms| run("spin_forever", "precise", &["--max-sim-ms", ms]))
        .collect();
    insta::assert_snapshot!("spin_forever", text.join("\n"));
}

#[test]
fn depends_on_scratch() {
    snapshot("depends_on_scratch");
}

#[test]
fn index_from_scratch() {
    snapshot("index_from_scratch");
}

#[test]
fn gather_out_of_bounds() {
    snapshot("gather_out_of_bounds");
    let out = common::run_nkic(&[
        "run",
        "crates/nkic/tests/runtime/gather_out_of_bounds.py",
        "--message-format",
        "json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let diag: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("a diagnostic: {stdout}"));
    assert_eq!(diag["code"], "E2001");
    assert_eq!(
        diag["facts"],
        serde_json::json!({
            "tensor": "a",
            "shape": [128, 32],
            "axis": 0,
            "index": 129,
            "flat_offset": 129 * 32,
            "field": "src",
            "row": 43,
            "index_tile": {"name": "rows", "value": 129},
            "numpy": "index 129 is out of bounds for axis 0 with size 128",
        })
    );
}
