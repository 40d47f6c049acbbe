//! Helpers shared by the integration tests that drive the `nkic` binary:
//! the workspace root the binary runs from, fresh temporary directories,
//! and one run of the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root; tests name kernel files relative to it.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the nkic crate lives at <root>/crates/nkic")
        .to_path_buf()
}

/// A fresh, empty directory `nkic-<suite>-<pid>-<name>` in the system's
/// temporary directory.
pub fn temp_dir(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nkic-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs the `nkic` binary from the workspace root with colours off.
pub fn run_nkic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nkic"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the nkic binary runs")
}

/// Writes a float32 `.npy` file (version 1, C order).
#[allow(dead_code)]
pub fn write_f32_npy(path: &std::path::Path, shape: &[usize], values: &[f32]) {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        dims.join(", ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(
        &u16::try_from(header.len())
            .expect("short header")
            .to_le_bytes(),
    );
    bytes.extend_from_slice(header.as_bytes());
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).expect("write npy");
}

/// The float32 payload of a version 1 `.npy` file.
#[allow(dead_code)]
pub fn read_f32_npy(path: &std::path::Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    bytes[10 + len..]
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A parsed `.npy` file: its dtype descriptor, shape and raw payload bytes.
#[allow(dead_code)]
pub struct Npy {
    pub descr: String,
    pub shape: Vec<u64>,
    pub payload: Vec<u8>,
}

#[allow(dead_code)]
pub fn read_npy(path: &Path) -> Npy {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        &bytes[..6],
        b"\x93NUMPY",
        "{} is not a .npy file",
        path.display()
    );
    // Version 1 uses a 2-byte header length, versions 2 and 3 a 4-byte one.
    let (header_start, header_len) = if bytes[6] == 1 {
        (10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize)
    } else {
        (
            12,
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
        )
    };
    let header = std::str::from_utf8(&bytes[header_start..header_start + header_len])
        .expect("ascii npy header");
    assert!(
        header.contains("'fortran_order': False"),
        "{}: only C-order arrays are supported: {header}",
        path.display()
    );
    let descr = header
        .split("'descr': '")
        .nth(1)
        .and_then(|s| s.split('\'').next())
        .expect("descr")
        .to_string();
    let shape = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("shape")
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    Npy {
        descr,
        shape,
        payload: bytes[header_start + header_len..].to_vec(),
    }
}

/// The shape and values of a little-endian `<f4` `.npy` file.
#[allow(dead_code)]
pub fn read_f32_npy_shaped(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let npy = read_npy(path);
    assert_eq!(npy.descr, "<f4", "{}", path.display());
    let values = npy
        .payload
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (npy.shape, values)
}

/// Runs `nkic run KERNEL --input NAME=<.npy> --out DIR` in a fresh
/// temporary directory on a float32 `[rows, cols]` input whose element
/// `[r, c]` is `cols · r + c` (so every element names its place), asserts
/// success, reads the first `N` outputs (`out0.npy`, …) and removes the
/// directory. Returns the input and the outputs.
#[allow(dead_code)]
pub fn run_on_positions<const N: usize>(
    suite: &str,
    kernel: &str,
    name: &str,
    [rows, cols]: [usize; 2],
) -> (Vec<f32>, [Vec<f32>; N]) {
    let values: Vec<f32> = (0..rows * cols).map(|v| v as f32).collect();
    let dir = temp_dir(suite, name);
    let input = dir.join(format!("{name}.npy"));
    write_f32_npy(&input, &[rows, cols], &values);
    let input_flag = format!("{name}={}", input.display());
    let out_dir = dir.join("out");
    let out = run_nkic(&[
        "run",
        kernel,
        "--input",
        &input_flag,
        "--out",
        out_dir.to_str().expect("utf-8 path"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let outputs = std::array::from_fn(|i| read_f32_npy(&out_dir.join(format!("out{i}.npy"))));
    let _ = std::fs::remove_dir_all(&dir);
    (values, outputs)
}
