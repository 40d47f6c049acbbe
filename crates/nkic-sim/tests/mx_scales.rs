//! The MX scale operands touch only the scale rows the hardware uses: the
//! first 4 partitions of each 32-partition quadrant (docs/isa.md,
//! `nc_matmul_mx`). The partitions between them may hold anything, or
//! nothing, and another queue may use them at the same time.

mod common;

use common::{floats, orders_and_seeded, run};
use nkic_isa::{Program, assemble, verify};
use nkic_sim::{Inputs, SimConfig, SimErrorKind, StepOrder};

/// `quantize_mx` of `a` (bf16 [128, 8]) into the 100-row scale view at
/// byte 128, then `nc_matmul_mx` of the quantized tile with itself
/// reading that view, the [2, 2] result stored to `out`. With `rows`, a
/// DMA that nothing orders against those instructions stores bytes
/// (memset on gpsimd first) into partitions `rows` of the scale view's
/// bytes.
fn program(rows: Option<&str>) -> Program {
    let other = rows.map_or(String::new(), |rows| {
        format!(
            "\n.queue gpsimd\n  memset dst=sbuf[0:32]+1024:u8[1,2] value=9 signal(z)\n\n\
             .queue dma1\n  dma_copy dst=sbuf[{rows}]+128:u8[1,2] src=sbuf[{rows}]+1024:u8[1,2] wait(z>=1)\n"
        )
    });
    let text = format!(
        ".target trn3\n.arg a bf16[128,8] input\n.arg out f32[2,2] output\n\
         .sem in\n.sem q\n.sem mm\n.sem done\n.sem z\n\n\
         .queue dma0\n\
         \x20 dma_copy dst=sbuf[0:128]:bf16[1,8] src=hbm.a[0:128*8]:bf16[1,8] signal(in)\n\
         \x20 dma_copy dst=hbm.out[0:2*2]:f32[1,2] src=sbuf[0:2]+256:f32[1,2] wait(done>=1)\n\n\
         .queue vector\n\
         \x20 quantize_mx dst=sbuf[0:128]+64:f8e4m3fnx4[1,2] src=sbuf[0:128]:bf16[1,8] dst_scale=sbuf[0:100]+128:e8m0[1,2] wait(in>=1) signal(q)\n\
         \x20 tensor_copy dst=sbuf[0:2]+256:f32[1,2] src=psum[0:2]:f32[1,2] wait(mm>=1) signal(done)\n\n\
         .queue tensor\n\
         \x20 nc_matmul_mx dst=psum[0:2]:f32[1,2] stationary=sbuf[0:128]+64:f8e4m3fnx4[1,2] moving=sbuf[0:128]+64:f8e4m3fnx4[1,2] stationary_scale=sbuf[0:100]+128:e8m0[1,2] moving_scale=sbuf[0:100]+128:e8m0[1,2] wait(q>=1) signal(mm)\n{other}"
    );
    let p = assemble(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    if let Err(e) = verify(&p) {
        panic!("{e:?}\n{text}");
    }
    p
}

/// Small integers −3..=3: every group's scale makes the fp8 lanes exact
/// (|v| · 2^6 or 2^7 ≤ 192), so the MX product is the exact product.
fn input() -> (Vec<f32>, Inputs) {
    let a: Vec<f32> = (0..128 * 8).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
    let bytes = a
        .iter()
        .flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes())
        .collect();
    (a, Inputs::new().with("a", bytes))
}

/// `out[m, n] = Σ_k Σ_q a[k, 4m + q] · a[k, 4n + q]`.
fn expected(a: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; 4];
    for m in 0..2 {
        for n in 0..2 {
            for k in 0..128 {
                for q in 0..4 {
                    out[m * 2 + n] += a[k * 8 + 4 * m + q] * a[k * 8 + 4 * n + q];
                }
            }
        }
    }
    out
}

#[test]
fn matmul_mx_reads_only_the_scale_rows_quantize_mx_wrote() {
    // Partitions 4..31, 36..63 and 68..95 of the scale view are never
    // written; the default poison policy faults on any read of them.
    let p = program(None);
    let (a, inputs) = input();
    for order in orders_and_seeded(5) {
        let config = SimConfig::stepping(order);
        let res = run(&p, &inputs, &config).unwrap_or_else(|e| panic!("{order:?}: {e}"));
        assert_eq!(
            floats(&res.output("out").expect("out").bytes()),
            expected(&a),
            "{order:?}"
        );
    }
}

#[test]
fn another_queue_may_use_the_partitions_between_the_scale_rows() {
    // Unordered writes to partitions 4..31 of the scale view's bytes: no
    // MX instruction touches them, so there is no race.
    let p = program(Some("4:28"));
    let (a, inputs) = input();
    for order in [
        StepOrder::RoundRobin,
        StepOrder::Reverse,
        StepOrder::Seeded(2),
    ] {
        let config = SimConfig::stepping(order);
        let res = run(&p, &inputs, &config).unwrap_or_else(|e| panic!("{order:?}: {e}"));
        assert_eq!(
            floats(&res.output("out").expect("out").bytes()),
            expected(&a)
        );
    }
}

#[test]
fn an_unordered_write_to_a_scale_row_is_still_a_race() {
    // Partition 33 holds scales of data partitions 8..15 of the second
    // quadrant: quantize_mx writes it and nc_matmul_mx reads it.
    let p = program(Some("33:1"));
    let (_, inputs) = input();
    for order in [StepOrder::RoundRobin, StepOrder::Reverse] {
        let config = SimConfig::stepping(order);
        let err = run(&p, &inputs, &config).expect_err("a race on a scale row");
        assert_eq!(err.kind, SimErrorKind::Race, "{order:?}: {err}");
    }
}
