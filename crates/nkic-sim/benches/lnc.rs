//! Speed targets of two-core (LNC=2) launches, in simulated time: the same
//! work split over two cores against one core doing all of it.
//!
//! Run with `cargo bench -p nkic-sim --bench lnc`. Each workload adds
//! `a + b` block by block (`tiles` blocks of 128 × 2048 f32: two loads on
//! two DMA queues, a Vector add, a store); one core runs every block, a
//! two-core launch gives each core half of them. Each core has its own
//! engines, DMA engines and HBM share (docs/cycle-model.md), so the split
//! should approach 2×. The bench prints both times and exits with an error
//! when a speed-up falls below its target.

use nkic_isa::{Launch, assemble, assemble_launch, verify, verify_launch};
use nkic_sim::{Inputs, SimConfig, run, run_launch};

/// The speed-up a two-core launch must reach over one core.
const TARGET_SPEEDUP: f64 = 1.8;

/// One core's program text (no `.target`) for blocks `first..first + n`
/// of `total`.
fn core_text(first: u64, n: u64, total: u64) -> String {
    let rows = total * 128;
    let mut t = format!(
        ".arg a f32[{rows},2048] input\n.arg b f32[{rows},2048] input\n.arg out f32[{rows},2048] output\n.sem la\n.sem lb\n.sem added\n.sem stored\n"
    );
    // Two SBUF slots per operand, reused every other block.
    let slot = |k: u64, which: u64| (k % 2) * 24_576 + which * 8192;
    // Block k reuses block k - 2's slots: from the third block on it waits
    // until `sem` says block k - 2 is done with them.
    let reuse = |sem: &str, k: u64| {
        if k >= 2 {
            format!(" wait({sem}>={})", k - 1)
        } else {
            String::new()
        }
    };
    t.push_str("\n.queue vector\n");
    for k in 0..n {
        let wait_store = reuse("stored", k);
        t.push_str(&format!(
            "  tensor_tensor dst=sbuf[0:128]+{}:f32[1,2048] src0=sbuf[0:128]+{}:f32[1,2048] src1=sbuf[0:128]+{}:f32[1,2048] op=add wait(la>={}) wait(lb>={}){wait_store} signal(added)\n",
            slot(k, 2),
            slot(k, 0),
            slot(k, 1),
            k + 1,
            k + 1
        ));
    }
    for (queue, name, which, sem) in [(0, "a", 0, "la"), (1, "b", 1, "lb")] {
        t.push_str(&format!("\n.queue dma{queue}\n"));
        for k in 0..n {
            let off = (first + k) * 128 * 2048 * 4;
            let wait = reuse("added", k);
            t.push_str(&format!(
                "  dma_copy dst=sbuf[0:128]+{}:f32[1,2048] src=hbm.{name}[0:128*2048]+{off}:f32[1,2048]{wait} signal({sem})\n",
                slot(k, which)
            ));
        }
    }
    t.push_str("\n.queue dma2\n");
    for k in 0..n {
        let off = (first + k) * 128 * 2048 * 4;
        t.push_str(&format!(
            "  dma_copy dst=hbm.out[0:128*2048]+{off}:f32[1,2048] src=sbuf[0:128]+{}:f32[1,2048] wait(added>={}) signal(stored)\n",
            slot(k, 2),
            k + 1
        ));
    }
    t
}

fn main() {
    let mut failed = false;
    for tiles in [8u64, 32] {
        let rows = (tiles * 128) as usize;
        let one = assemble(&format!(".target trn3\n{}", core_text(0, tiles, tiles)))
            .unwrap_or_else(|e| panic!("{e:?}"));
        let one = verify(&one).unwrap_or_else(|e| panic!("{e:?}"));
        let half = tiles / 2;
        let two: Launch = assemble_launch(&format!(
            ".target trn3\n\n.core 0\n{}\n.core 1\n{}",
            core_text(0, half, tiles),
            core_text(half, half, tiles)
        ))
        .unwrap_or_else(|e| panic!("{e:?}"));
        let two = verify_launch(&two).unwrap_or_else(|e| panic!("{e:?}"));
        let values = |seed: u32| -> Vec<u8> {
            (0..rows * 2048)
                .flat_map(|i| (((i as u32).wrapping_mul(seed) % 1000) as f32 * 0.01).to_le_bytes())
                .collect()
        };
        let inputs = Inputs::new().with("a", values(7)).with("b", values(13));
        let config = SimConfig {
            trace: false,
            ..SimConfig::default()
        };
        let serial = run(one, &inputs, &config).expect("one core runs");
        let parallel = run_launch(two, &inputs, &config).expect("two cores run");
        assert_eq!(serial.outputs, parallel.outputs, "the same sums");
        let speedup = serial.total_ps as f64 / parallel.total_ps as f64;
        let ok = speedup >= TARGET_SPEEDUP;
        failed |= !ok;
        println!(
            "add {tiles} blocks of 128x2048 f32: one core {:.3} us, two cores {:.3} us, {speedup:.2}x (target {TARGET_SPEEDUP}x) {}",
            serial.total_ns() / 1000.0,
            parallel.total_ns() / 1000.0,
            if ok { "ok" } else { "BELOW TARGET" }
        );
    }
    if failed {
        std::process::exit(1);
    }
}
