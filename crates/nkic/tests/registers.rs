//! Sequencer registers (issue 13): a kernel whose unrolled loop makes more
//! run-time registers than a queue has (80 `scalar_offset` reads, 64
//! registers) compiles, because registers whose live ranges do not overlap
//! share a physical register, and computes the right rows.

mod common;

/// A version 1 `.npy` file of a row-major float32 array.
fn npy_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        dims.join(", ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(
        &u16::try_from(header.len())
            .expect("short header")
            .to_le_bytes(),
    );
    out.extend_from_slice(header.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[test]
fn eighty_run_time_offsets_share_sixty_four_registers() {
    let dir = common::temp_dir("registers", "gather_80_rows");
    // table[r, c] = 64 r + c, so every element names its row.
    let table: Vec<f32> = (0..128 * 64).map(|v| v as f32).collect();
    let input = dir.join("table.npy");
    std::fs::write(&input, npy_f32(&[128, 64], &table)).expect("write table.npy");
    let input_flag = format!("table={}", input.display());
    let out_dir = dir.join("out");
    let out = common::run_nkic(&[
        "run",
        "crates/nkic/tests/registers/gather_80_rows.py",
        "--input",
        &input_flag,
        "--out",
        out_dir.to_str().expect("utf-8 path"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let bytes = std::fs::read(out_dir.join("out0.npy")).expect("out0.npy");
    let payload = &bytes[bytes.len() - 80 * 64 * 4..];
    let got: Vec<f32> = payload
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for i in 0..80 {
        let row = (7 * i) % 128;
        for c in 0..64 {
            assert_eq!(got[i * 64 + c], (row * 64 + c) as f32, "out[{i}, {c}]");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
