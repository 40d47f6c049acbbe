//! Launches of two cores (LNC=2) built by `compile_launch`: the check that
//! both cores execute the same `core_barrier`s, and HBM tensors shared by
//! the instances of a grid.

mod common;

use nkic_backend::{BackendConfig, compile_launch};
use nkic_diag::{RenderConfig, render_all};

/// One instance of a kernel that stores its rows of `res`, then (when
/// `barrier` is `Some(engine)`) runs a `core_barrier` on `res` there.
fn stores_then_barrier(pid: u32, barrier: Option<&str>) -> String {
    let r0 = pid * 128;
    let r1 = r0 + 128;
    let mut text = format!(
        "kernel \"barrier\" target=trn3 program_id=[{pid}] num_programs=[2]
file 0 \"kernel.py\"
t0 = shared_hbm float32[256, 64] \"a\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[256, 64] \"res\" @ kernel.py:40..48
t2 = sbuf float32[128, 64] \"x\" @ kernel.py:80..88
op0 = dma_copy dst=t2[0:128, 0:64] src=t0[{r0}:{r1}, 0:64] engine=dma @ kernel.py:120..128
op1 = dma_copy dst=t1[{r0}:{r1}, 0:64] src=t2[0:128, 0:64] engine=dma @ kernel.py:160..168
"
    );
    if let Some(engine) = barrier {
        text.push_str(&format!(
            "op2 = core_barrier data=t1[0:256, 0:64] engine={engine} @ kernel.py:200..230\n"
        ));
    }
    text.push_str("return t1\n");
    text
}

/// Compiles the two instances as an LNC=2 launch; the rendered diagnostics
/// on failure.
fn launch(i0: &str, i1: &str) -> Result<nkic_isa::Launch, String> {
    let (k0, sources) = common::load_text(i0);
    let (k1, _) = common::load_text(i1);
    compile_launch(&[k0, k1], &sources, &BackendConfig::default(), 2).map_err(|diags| {
        render_all(
            &diags,
            &sources,
            RenderConfig {
                color: false,
                unicode: false,
            },
        )
    })
}

#[test]
fn a_barrier_on_both_cores_compiles() {
    let both = launch(
        &stores_then_barrier(0, Some("gpsimd")),
        &stores_then_barrier(1, Some("gpsimd")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(both.cores.len(), 2);
    for core in &both.cores {
        let barriers = core
            .queues
            .iter()
            .flat_map(|q| &q.insts)
            .filter(|i| i.op.mnemonic() == "core_barrier")
            .count();
        assert_eq!(barriers, 1);
    }
}

#[test]
fn a_barrier_only_one_core_executes_is_e0914_at_the_barrier() {
    let text = launch(
        &stores_then_barrier(0, Some("gpsimd")),
        &stores_then_barrier(1, None),
    )
    .expect_err("core 1 never reaches the barrier");
    assert!(text.contains("E0914"), "{text}");
    assert!(!text.contains("E0999"), "{text}");
    assert!(
        text.contains(
            "only core 0 executes this `core_barrier`: core 0 executes 1 `core_barrier`, core 1 none"
        ),
        "{text}"
    );
    assert!(text.contains("core 1 never reaches this barrier"), "{text}");
    assert!(
        text.contains("core 0 runs instance 0 and core 1 runs instance 1"),
        "{text}"
    );
    // The label is on the barrier (byte 200 of the synthetic source, whose
    // lines are 40 bytes long: line 6, column 1).
    assert!(text.contains("[ kernel.py:6:1 ]"), "{text}");

    let text = launch(
        &stores_then_barrier(0, None),
        &stores_then_barrier(1, Some("gpsimd")),
    )
    .expect_err("core 0 never reaches the barrier");
    assert!(
        text.contains("only core 1 executes this `core_barrier`"),
        "{text}"
    );
}

#[test]
fn barriers_on_different_engines_are_e0914() {
    let text = launch(
        &stores_then_barrier(0, Some("gpsimd")),
        &stores_then_barrier(1, Some("vector")),
    )
    .expect_err("the barriers pair up on different queues");
    assert!(
        text.contains("barrier 1 of core 0 runs on gpsimd, core 1's on vector"),
        "{text}"
    );
}
