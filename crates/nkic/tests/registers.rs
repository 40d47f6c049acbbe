//! Sequencer registers (issue 13): a kernel whose unrolled loop makes more
//! run-time registers than a queue has (80 `scalar_offset` reads, 64
//! registers) compiles, because registers whose live ranges do not overlap
//! share a physical register, and computes the right rows.

mod common;

#[test]
fn eighty_run_time_offsets_share_sixty_four_registers() {
    // table[r, c] = 64 r + c, so every element names its row.
    let table: Vec<f32> = (0..128 * 64).map(|v| v as f32).collect();
    let out_dir = common::run_with_input(
        "registers",
        "crates/nkic/tests/registers/gather_80_rows.py",
        "table",
        &[128, 64],
        &table,
    );
    let got = common::read_f32_npy(&out_dir.join("out0.npy"));
    for i in 0..80 {
        let row = (7 * i) % 128;
        for c in 0..64 {
            assert_eq!(got[i * 64 + c], (row * 64 + c) as f32, "out[{i}, {c}]");
        }
    }
    let _ = std::fs::remove_dir_all(out_dir.parent().expect("a temporary directory"));
}
