//! Sequencer registers (issue 13): a kernel whose unrolled loop makes more
//! run-time registers than a queue has (80 `scalar_offset` reads, 64
//! registers) compiles, because registers whose live ranges do not overlap
//! share a physical register, and computes the right rows.

mod common;

#[test]
fn eighty_run_time_offsets_share_sixty_four_registers() {
    // table[r, c] = 64 r + c, so every element names its row.
    let (_, [got]) = common::run_on_positions(
        "registers",
        "crates/nkic/tests/registers/gather_80_rows.py",
        "table",
        [128, 64],
    );
    for i in 0..80 {
        let row = (7 * i) % 128;
        for c in 0..64 {
            assert_eq!(got[i * 64 + c], (row * 64 + c) as f32, "out[{i}, {c}]");
        }
    }
}
