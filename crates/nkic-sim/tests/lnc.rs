//! Multi-core launches (LNC=2): two cores sharing HBM arguments, each with
//! its own queues, SBUF and DMA engines; `core_barrier` orders them and
//! the race detector catches cross-core accesses nothing orders.

mod common;

use common::{ORDERS, floats, orders_and_seeded, run};
use nkic_isa::{Launch, assemble_launch, verify_launch};
use nkic_sim::{Inputs, RunResult, SimConfig, SimError, SimErrorKind, StepOrder, TraceEvent};

/// Verifies and runs a launch.
fn run_launch(l: &Launch, inputs: &Inputs, config: &SimConfig) -> Result<RunResult, SimError> {
    let verified = verify_launch(l).unwrap_or_else(|e| panic!("{e:?}"));
    nkic_sim::run_launch(verified, inputs, config)
}

/// Core `c` copies its half of `a` (columns `c·256..`) to `out`; with
/// `barrier`, each core then reads the half the other core wrote, after a
/// `core_barrier` on GpSimd that waits for its own store.
fn exchange(barrier: bool) -> String {
    let mut text = String::from(".target trn3\n");
    for core in 0..2 {
        let mine = core * 1024;
        let theirs = (1 - core) * 1024;
        text.push_str(&format!(
            "\n.core {core}\n.file \"lnc.py\"\n.line l0 f0 7:5 100..140\n.line l1 f0 9:5 160..200\n\
             .arg a f32[128,512] input\n.arg out f32[128,512] output\n\
             .sem loaded\n.sem stored\n.sem synced\n\n.queue dma0\n\
             \x20 dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.a[0:128*512]+{mine}:f32[1,256] signal(loaded)\n\
             \x20 dma_copy dst=hbm.out[0:128*512]+{mine}:f32[1,256] src=sbuf[0:128]:f32[1,256] wait(loaded>=1) signal(stored)  # l0 lnc.py:7:5\n"
        ));
        if barrier {
            text.push_str(&format!(
                "  dma_copy dst=sbuf[0:128]+1024:f32[1,256] src=hbm.out[0:128*512]+{theirs}:f32[1,256] wait(synced>=1)  # l1 lnc.py:9:5\n\n\
                 .queue gpsimd\n  core_barrier wait(stored>=1) signal(synced)\n"
            ));
        } else {
            text.push_str(&format!(
                "  dma_copy dst=sbuf[0:128]+1024:f32[1,256] src=hbm.out[0:128*512]+{theirs}:f32[1,256] wait(stored>=1)  # l1 lnc.py:9:5\n"
            ));
        }
    }
    text
}

fn launch(text: &str) -> Launch {
    let launch = assemble_launch(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    if let Err(e) = verify_launch(&launch) {
        panic!("{e:?}\n{text}");
    }
    launch
}

/// The text of a two-core launch of `core0` and `core1` (program texts
/// without `.target`).
fn two_cores(core0: &str, core1: &str) -> String {
    format!(".target trn3\n\n.core 0\n{core0}\n.core 1\n{core1}")
}

/// The first 256 columns of each of the 128 rows of `a` (`[128, 512]`).
fn left_halves(a: &[f32]) -> Vec<f32> {
    a.chunks(512).flat_map(|row| row[..256].to_vec()).collect()
}

/// The trace events of the `mnemonic` instructions of `res`.
fn events<'a>(res: &'a RunResult, mnemonic: &str) -> Vec<&'a TraceEvent> {
    res.trace
        .iter()
        .filter(|e| e.mnemonic == mnemonic)
        .collect()
}

fn input_a() -> (Vec<f32>, Inputs) {
    let values: Vec<f32> = (0..128 * 512).map(|i| i as f32 * 0.5 - 7.0).collect();
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    (values, Inputs::new().with("a", bytes))
}

#[test]
fn two_cores_share_the_arguments() {
    let l = launch(&exchange(true));
    let (a, inputs) = input_a();
    let res = run_launch(&l, &inputs, &SimConfig::default()).expect("the launch runs");
    assert_eq!(floats(&res.output("out").expect("out").bytes()), a);
    assert_eq!(res.cores(), 2);
    // Both cores ran their four instructions (3 DMAs and a barrier).
    let mut per_core = [0u64; 2];
    for q in &res.per_queue {
        per_core[usize::from(q.core)] += q.instructions;
    }
    assert_eq!(per_core, [4, 4]);
    assert_eq!(res.instructions, 8);
    // The run ends with the slower core.
    assert_eq!(res.total_ps, res.core_end_ps(0).max(res.core_end_ps(1)));
    // Trace events carry their core; the barriers complete together.
    let barriers = events(&res, "core_barrier");
    assert_eq!(barriers.len(), 2);
    assert_ne!(barriers[0].core, barriers[1].core);
    assert_eq!(barriers[0].end_ps, barriers[1].end_ps);
    assert_eq!(barriers[0].start_ps, barriers[1].start_ps);
    // The barrier completes core_barrier_ns after the later arrival.
    let f = nkic_isa::Target::Trn3.figures();
    assert!(barriers[0].end_ps - barriers[0].start_ps >= u64::from(f.core_barrier_ns) * 1000);
}

#[test]
fn every_step_order_gives_the_same_bytes_and_times() {
    let l = launch(&exchange(true));
    let (_, inputs) = input_a();
    let base = run_launch(&l, &inputs, &SimConfig::default()).expect("runs");
    for order in [
        StepOrder::Reverse,
        StepOrder::Earliest,
        StepOrder::Seeded(3),
        StepOrder::Seeded(11),
    ] {
        let config = SimConfig::stepping(order);
        let res = run_launch(&l, &inputs, &config).expect("runs");
        assert_eq!(res.outputs, base.outputs, "{order:?}");
        assert_eq!(res.total_ps, base.total_ps, "{order:?}");
        assert_eq!(res.trace, base.trace, "{order:?}");
    }
}

#[test]
fn an_unordered_cross_core_read_is_a_race_naming_both_cores() {
    let l = launch(&exchange(false));
    let (_, inputs) = input_a();
    for order in ORDERS {
        let config = SimConfig::stepping(order);
        let err = run_launch(&l, &inputs, &config).expect_err("the launch races");
        assert_eq!(err.kind, SimErrorKind::Race, "{err}");
        let related = err.related.as_ref().expect("the other access");
        assert_ne!(err.core, related.core, "{err}");
        assert!(err.core.is_some() && related.core.is_some());
        // One side is the store (line 7), the other the read of the other
        // core's half (line 9).
        let mut lines = [err.source.as_deref(), related.source.as_deref()];
        lines.sort();
        assert_eq!(lines, [Some("lnc.py:7:5"), Some("lnc.py:9:5")], "{err}");
        let text = err.to_string();
        assert!(
            text.contains("no semaphore or core barrier orders the two"),
            "{text}"
        );
        assert!(
            text.contains("core0.dma0[") && text.contains("core1.dma0["),
            "{text}"
        );
    }
}

#[test]
fn a_barrier_without_a_partner_is_rejected_or_deadlocks() {
    // Different static barrier counts: the launch verifier rejects it, so
    // it never runs.
    let text = exchange(true).replace(
        "\n.queue gpsimd\n  core_barrier wait(stored>=1) signal(synced)\n\n.core 1",
        "\n.queue gpsimd\n  core_barrier wait(stored>=1) signal(synced)\n  core_barrier\n\n.core 1",
    );
    let l = assemble_launch(&text).expect("assembles");
    let errors = verify_launch(&l).expect_err("barrier counts differ");
    assert!(
        errors.iter().any(|e| e
            .to_string()
            .contains("1 `core_barrier` in this queue but 2")),
        "{errors:?}"
    );
    // The same counts, but core 0 runs its barrier twice in a loop: only
    // the run can tell, and it deadlocks.
    let text = exchange(true).replace(
        "\n.queue gpsimd\n  core_barrier wait(stored>=1) signal(synced)\n\n.core 1",
        "\n.queue gpsimd\n  reg_set dst=r0 value=0\nL0:\n  core_barrier wait(stored>=1) signal(synced)\n  reg_alu dst=r0 op=add a=r0 b=1\n  branch cond=lt a=r0 b=2 target=L0\n\n.core 1",
    );
    let l = assemble_launch(&text).expect("assembles");
    let (_, inputs) = input_a();
    let err = run_launch(&l, &inputs, &SimConfig::default()).expect_err("deadlock");
    assert_eq!(err.kind, SimErrorKind::Deadlock);
    assert!(
        err.message
            .contains("core0.gpsimd[2] `core_barrier` waits for core 1's gpsimd queue"),
        "{}",
        err.message
    );
}

/// `n` blocks of 128×256 f32 copied from `a` to `out` on one DMA queue of
/// core `core`, blocks `first..first + n`.
fn copies(first: usize, n: usize) -> String {
    let mut text = String::from(
        ".arg a f32[128,4096] input\n.arg out f32[128,4096] output\n.sem loaded\n\n.queue dma0\n",
    );
    // The k-th block (k = 1..=n): its byte offset in `a` and `out`, its
    // SBUF slot, and k, which the store's wait counts loads to.
    let blocks = || (1..=n).map(|k| ((first + k - 1) * 1024, (k - 1) * 1024, k));
    for (off, slot, _) in blocks() {
        text.push_str(&format!(
            "  dma_copy dst=sbuf[0:128]+{slot}:f32[1,256] src=hbm.a[0:128*4096]+{off}:f32[1,256] signal(loaded)\n"
        ));
    }
    text.push_str("\n.queue dma1\n");
    for (off, slot, k) in blocks() {
        text.push_str(&format!(
            "  dma_copy dst=hbm.out[0:128*4096]+{off}:f32[1,256] src=sbuf[0:128]+{slot}:f32[1,256] wait(loaded>={k})\n"
        ));
    }
    text
}

#[test]
fn two_cores_move_data_faster_than_one() {
    let one = nkic_isa::assemble(&format!(".target trn3\n{}", copies(0, 16))).expect("one core");
    nkic_isa::verify(&one).expect("verifies");
    let two = launch(&two_cores(&copies(0, 8), &copies(8, 8)));
    let values: Vec<f32> = (0..128 * 4096).map(|i| (i % 977) as f32).collect();
    let inputs = Inputs::new().with("a", values.iter().flat_map(|v| v.to_le_bytes()).collect());
    let serial = run(&one, &inputs, &SimConfig::default()).expect("one core runs");
    let parallel = run_launch(&two, &inputs, &SimConfig::default()).expect("two cores run");
    assert_eq!(serial.outputs, parallel.outputs);
    assert_eq!(
        floats(&parallel.output("out").expect("out").bytes()),
        values
    );
    assert_eq!(parallel.hbm_bytes_read, serial.hbm_bytes_read);
    // Each core has its own DMA engines and HBM share.
    assert!(
        parallel.total_ps < serial.total_ps,
        "two cores {} ps, one core {} ps",
        parallel.total_ps,
        serial.total_ps
    );
}

#[test]
fn a_one_core_launch_runs_like_its_program() {
    let text = format!(".target trn3\n{}", copies(0, 4));
    let l = launch(&text);
    assert!(!l.is_multi_core());
    let p = nkic_isa::assemble(&text).expect("assembles");
    assert_eq!(nkic_isa::print_launch(&l), nkic_isa::print(&p));
    let values: Vec<f32> = (0..128 * 4096).map(|i| i as f32).collect();
    let inputs = Inputs::new().with("a", values.iter().flat_map(|v| v.to_le_bytes()).collect());
    let a = run(&p, &inputs, &SimConfig::default()).expect("runs");
    let b = run_launch(&l, &inputs, &SimConfig::default()).expect("runs");
    // Only the first four blocks are written: the same warning.
    assert_eq!(a, b);
    assert_eq!(a.undefined.len(), 1);
    let strict = SimConfig {
        poison: nkic_sim::Poison::Error,
        ..SimConfig::default()
    };
    let a = run(&p, &inputs, &strict);
    let b = run_launch(&l, &inputs, &strict);
    // With `Poison::Error`: the same fault.
    assert_eq!(a, b);
    assert!(a.is_err_and(|e| e.kind == SimErrorKind::UninitialisedRead));
}

#[test]
fn a_barrier_names_its_data_without_accessing_it() {
    // `data` names the shared output the cores synchronise on: no access
    // for the race detector, and the same bytes and times as without it.
    let plain = launch(&exchange(true));
    let named = launch(&exchange(true).replace(
        "core_barrier wait(stored>=1)",
        "core_barrier data=hbm.out[0:128*512]:f32[1,512] wait(stored>=1)",
    ));
    assert_ne!(plain, named);
    let (_, inputs) = input_a();
    let a = run_launch(&plain, &inputs, &SimConfig::default()).expect("runs");
    let b = run_launch(&named, &inputs, &SimConfig::default()).expect("runs");
    assert_eq!(a.outputs, b.outputs);
    assert_eq!(a.total_ps, b.total_ps);
    // On chip it is rejected: the barrier synchronises a shared HBM tensor.
    let bad = assemble_launch(&exchange(true).replace(
        "core_barrier wait(stored>=1)",
        "core_barrier data=sbuf[0:128]:f32[1,256] wait(stored>=1)",
    ))
    .expect("assembles");
    let errors = verify_launch(&bad).expect_err("on-chip data");
    assert!(
        errors[0].message.contains("names the shared HBM tensor"),
        "{errors:?}"
    );
}

#[test]
fn reads_of_what_the_other_core_writes_later_are_a_race() {
    // Each core first reads the other core's half of `out` and only then
    // stores its own: both reads see never-written bytes, and the cause
    // is the race with the other core's store, whatever the step order.
    let text = exchange(false)
        .replace(" wait(stored>=1)  # l1", "  # l1")
        .replace(
            "signal(stored)  # l0 lnc.py:7:5\n  dma_copy dst=sbuf[0:128]+1024",
            "signal(stored)  # l0 lnc.py:7:5\n\n.queue dma1\n  dma_copy dst=sbuf[0:128]+1024",
        );
    let l = launch(&text);
    let (_, inputs) = input_a();
    for order in orders_and_seeded(5) {
        let config = SimConfig::stepping(order);
        let err = run_launch(&l, &inputs, &config).expect_err("a race");
        assert_eq!(err.kind, SimErrorKind::Race, "{order:?}: {err}");
        assert!(err.core.is_some());
    }
}

#[test]
fn sendrecv_swaps_tiles_between_the_cores() {
    // Core c loads its half of `a`, swaps it with the other core, and
    // stores what it received at its own half of `out`: `out` is `a` with
    // its halves exchanged.
    let core = |c: usize| {
        format!(
            ".arg a f32[128,512] input\n.arg out f32[128,512] output\n.sem loaded\n.sem got\n\n\
             .queue gpsimd\n  sendrecv dst=sbuf[0:128]+1024:f32[1,256] src=sbuf[0:128]:f32[1,256] pipe=0 wait(loaded>=1) signal(got)\n\n\
             .queue dma0\n  dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.a[0:128*512]+{off}:f32[1,256] signal(loaded)\n\
             \x20 dma_copy dst=hbm.out[0:128*512]+{off}:f32[1,256] src=sbuf[0:128]+1024:f32[1,256] wait(got>=1)\n",
            off = c * 1024
        )
    };
    let l = launch(&two_cores(&core(0), &core(1)));
    let (a, inputs) = input_a();
    let want: Vec<f32> = (0..128)
        .flat_map(|r| {
            let row = &a[r * 512..(r + 1) * 512];
            row[256..]
                .iter()
                .chain(&row[..256])
                .copied()
                .collect::<Vec<_>>()
        })
        .collect();
    let mut times = Vec::new();
    for order in ORDERS {
        let config = SimConfig::stepping(order);
        let res = run_launch(&l, &inputs, &config).expect("runs");
        assert_eq!(
            floats(&res.output("out").expect("out").bytes()),
            want,
            "{order:?}"
        );
        times.push(res.total_ps);
        let swaps = events(&res, "sendrecv");
        assert_eq!(swaps.len(), 2);
        assert_eq!(swaps[0].start_ps, swaps[1].start_ps);
    }
    assert!(times.windows(2).all(|w| w[0] == w[1]));
    // Without a partner (a one-core launch) the verifier refuses it.
    let one = assemble_launch(&format!(".target trn3\n{}", core(0))).expect("assembles");
    let errors = verify_launch(&one).expect_err("one core");
    assert!(
        errors[0]
            .message
            .contains("`sendrecv` needs a launch of two cores")
    );
    // A barrier on one core where the other has the exchange: the paired
    // sequences differ.
    let mixed = two_cores(
        &core(0),
        &core(1).replace(
            "sendrecv dst=sbuf[0:128]+1024:f32[1,256] src=sbuf[0:128]:f32[1,256] pipe=0",
            "core_barrier",
        ),
    );
    let errors = verify_launch(&assemble_launch(&mixed).expect("assembles")).expect_err("mixed");
    assert!(
        errors[0].message.contains(
            "(`core_barrier`) differ from those of the same queue of core 0 (`sendrecv`)"
        ),
        "{errors:?}"
    );
}

#[test]
fn two_cores_storing_identical_bytes_is_no_race() {
    // Both cores load a block of `a` and store it to the whole of `out`
    // without any ordering: the same block is the unsharded path of an
    // LNC kernel (accepted, the bytes are the same); different blocks race.
    let core = |src_off: usize| {
        format!(
            ".arg a f32[128,512] input\n.arg out f32[128,256] output\n.sem loaded\n\n\
             .queue dma0\n  dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.a[0:128*512]+{src_off}:f32[1,256] signal(loaded)\n\
             \x20 dma_copy dst=hbm.out[0:128*256]:f32[1,256] src=sbuf[0:128]:f32[1,256] wait(loaded>=1)\n"
        )
    };
    let (a, inputs) = input_a();
    let want = left_halves(&a);
    let same = launch(&two_cores(&core(0), &core(0)));
    for order in ORDERS {
        let config = SimConfig::stepping(order);
        let res = run_launch(&same, &inputs, &config).expect("identical stores are accepted");
        assert_eq!(floats(&res.output("out").expect("out").bytes()), want);
    }
    let different = launch(&two_cores(&core(0), &core(1024)));
    for order in ORDERS {
        let config = SimConfig::stepping(order);
        let err = run_launch(&different, &inputs, &config).expect_err("different data races");
        assert_eq!(err.kind, SimErrorKind::Race, "{err}");
        assert_ne!(err.core, err.related.as_ref().and_then(|r| r.core));
    }
}

#[test]
fn reading_back_a_store_the_other_core_mirrored_is_no_race() {
    // Both cores store the same block to the shared `mid` (mirrored
    // stores), then each reads `mid` back after its own store: the other
    // core's store is unordered with that read but leaves the same bytes,
    // so the read sees one value whenever it lands (an LNC kernel's
    // unsharded path reading back its own result). Reading back without
    // having stored is still a race (`reads_of_what_the_other_core_...`).
    let core = ".arg a f32[128,512] input\n.arg out f32[128,256] output\n.hbm mid f32[128,256] shared\n\
         .sem loaded\n.sem stored\n.sem back\n\n\
         .queue dma0\n  dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.a[0:128*512]:f32[1,256] signal(loaded)\n\
         \x20 dma_copy dst=hbm.mid[0:128*256]:f32[1,256] src=sbuf[0:128]:f32[1,256] wait(loaded>=1) signal(stored)\n\n\
         .queue dma1\n  dma_copy dst=sbuf[0:128]+1024:f32[1,256] src=hbm.mid[0:128*256]:f32[1,256] wait(stored>=1) signal(back)\n\
         \x20 dma_copy dst=hbm.out[0:128*256]:f32[1,256] src=sbuf[0:128]+1024:f32[1,256] wait(back>=1)\n";
    let (a, inputs) = input_a();
    let want = left_halves(&a);
    let l = launch(&two_cores(core, core));
    for order in ORDERS {
        let config = SimConfig::stepping(order);
        let res = run_launch(&l, &inputs, &config).expect("a read of mirrored stores is accepted");
        assert_eq!(floats(&res.output("out").expect("out").bytes()), want);
    }
}

/// Core 0 reads the `cache` argument while core 1 stores new rows into
/// it without ordering (an LNC kernel updating a cache the other core
/// reads); with `use_read`, core 0's output is the cache it read,
/// otherwise it is a copy of `a` and the read value is never used.
fn cache_update(use_read: bool) -> Launch {
    let header = ".arg a f32[128,512] input\n.arg cache f32[128,256] inout\n.arg out f32[128,256] output\n\
                  .sem loaded\n\n.queue dma0\n";
    let out_src = if use_read {
        "sbuf[0:128]"
    } else {
        "sbuf[0:128]+1024"
    };
    let core0 = format!(
        "{header}  dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.cache[0:128*256]:f32[1,256] signal(loaded)\n\
         \x20 dma_copy dst=sbuf[0:128]+1024:f32[1,256] src=hbm.a[0:128*512]:f32[1,256] signal(loaded)\n\
         \x20 dma_copy dst=hbm.out[0:128*256]:f32[1,256] src={out_src}:f32[1,256] wait(loaded>=2)\n"
    );
    let core1 = format!(
        "{header}  dma_copy dst=sbuf[0:128]:f32[1,256] src=hbm.a[0:128*512]+1024:f32[1,256] signal(loaded)\n\
         \x20 dma_copy dst=hbm.cache[0:128*256]:f32[1,256] src=sbuf[0:128]:f32[1,256] wait(loaded>=1)\n"
    );
    launch(&two_cores(&core0, &core1))
}

#[test]
fn a_timing_dependent_read_whose_value_is_unused_is_a_warning() {
    let (a, inputs) = input_a();
    let cache: Vec<u8> = (0..128 * 256)
        .flat_map(|i| (i as f32).to_le_bytes())
        .collect();
    let inputs = inputs.with("cache", cache);
    let want_out = left_halves(&a);
    for order in ORDERS {
        let config = SimConfig::stepping(order);
        let res =
            run_launch(&cache_update(false), &inputs, &config).expect("an unused racy read runs");
        assert_eq!(
            floats(&res.output("out").expect("out").bytes()),
            want_out,
            "{order:?}"
        );
        assert_eq!(res.races.len(), 1, "{order:?}: {:?}", res.races);
        let race = &res.races[0];
        assert_eq!(race.kind, SimErrorKind::Race);
        assert!(race.to_string().contains("core0.dma0[0]"), "{race}");
        assert!(race.to_string().contains("core1.dma0[1]"), "{race}");
        // The same read copied to the output is the error.
        let err = run_launch(&cache_update(true), &inputs, &config).expect_err("the read matters");
        assert_eq!(err.kind, SimErrorKind::Race, "{order:?}: {err}");
    }
}
