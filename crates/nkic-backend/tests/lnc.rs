//! Launches of two cores (LNC=2) built by `compile_launch` (and checked by
//! `check_launch`, which must report the same): the check that
//! both cores execute the same `core_barrier`s, and HBM tensors shared by
//! the instances of a grid.

mod common;

use nkic_backend::{BackendConfig, check_launch, compile_grid, compile_launch_with_warnings};

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
/// on failure. `check_launch` (`nkic check`, which emits no programs)
/// must report exactly the same.
fn launch(i0: &str, i1: &str) -> Result<nkic_isa::Launch, String> {
    let (k0, sources) = common::load_text(i0);
    let (k1, _) = common::load_text(i1);
    let kernels = [k0, k1];
    let config = BackendConfig::default();
    let compiled = compile_launch_with_warnings(&kernels, &sources, &config, 2);
    let checked = check_launch(&kernels, &sources, &config, 2);
    match (&compiled, &checked) {
        (Ok((_, warnings)), Ok(checked)) => assert_eq!(checked, warnings),
        (Err(errors), Err(checked)) => assert_eq!(checked, errors),
        _ => panic!("check_launch disagrees: {checked:?}"),
    }
    compiled
        .map(|(launch, _)| launch)
        .map_err(|diags| common::render(&diags, &sources))
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

/// One instance of a hand-off through an internal HBM scratch of buffer
/// `buffer`: instance `pid` stores its rows of `a` into rows `pid` of the
/// scratch, then loads rows 0 (instance 0's) and stores them as its rows
/// of `res`.
fn scratch_handoff(pid: u32, buffer: &str) -> String {
    let r0 = pid * 128;
    let r1 = r0 + 128;
    format!(
        "kernel \"handoff\" target=trn3 program_id=[{pid}] num_programs=[2]
file 0 \"kernel.py\"
t0 = shared_hbm float32[256, 64] \"a\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[256, 64] \"res\" @ kernel.py:40..48
t2 = {buffer} float32[256, 64] \"scratch\" @ kernel.py:80..88
t3 = sbuf float32[128, 64] \"x\" @ kernel.py:120..128
t4 = sbuf float32[128, 64] \"y\" @ kernel.py:160..168
op0 = dma_copy dst=t3[0:128, 0:64] src=t0[{r0}:{r1}, 0:64] engine=dma @ kernel.py:200..208
op1 = dma_copy dst=t2[{r0}:{r1}, 0:64] src=t3[0:128, 0:64] engine=dma @ kernel.py:240..248
op2 = dma_copy dst=t4[0:128, 0:64] src=t2[0:128, 0:64] engine=dma @ kernel.py:280..288
op3 = dma_copy dst=t1[{r0}:{r1}, 0:64] src=t4[0:128, 0:64] engine=dma @ kernel.py:320..328
return t1
"
    )
}

/// The internal HBM tensors of a one-core grid of the hand-off kernel.
fn one_core_internal(buffer: &str) -> (nkic_isa::Program, Vec<String>) {
    let (k0, sources) = common::load_text(&scratch_handoff(0, buffer));
    let (k1, _) = common::load_text(&scratch_handoff(1, buffer));
    let program = compile_grid(&[k0, k1], &sources, &BackendConfig::default())
        .unwrap_or_else(|e| panic!("{e:?}"));
    let internal = program
        .hbm
        .iter()
        .filter(|t| !t.kind.is_arg())
        .map(|t| t.name.clone())
        .collect();
    (program, internal)
}

#[test]
fn an_internal_shared_hbm_tensor_is_one_tensor_for_the_instances_of_one_core() {
    let (program, internal) = one_core_internal("shared_hbm");
    assert_eq!(internal, vec!["scratch".to_owned()]);
    // Instance 1 reads the rows instance 0 stored into the scratch, so
    // both halves of `res` are `a`'s first 128 rows.
    let inputs = common::inputs(&program, 3);
    let run = common::simulate(&program, &inputs);
    let a = common::input_bytes(&inputs, "a");
    let res = run.output("res").expect("the returned tensor").to_vec();
    let half = a.len() / 2;
    assert_eq!(res.len(), a.len());
    assert_eq!(&res[..half], &a[..half]);
    assert_eq!(&res[half..], &a[..half]);
}

#[test]
fn an_internal_private_hbm_tensor_stays_per_instance() {
    let (_, internal) = one_core_internal("private_hbm");
    assert_eq!(internal.len(), 2, "{internal:?}");
}

/// One core of a hand-off between the two cores through an internal
/// shared scratch: core `pid` stores its rows of `a` into the scratch, a
/// `core_barrier` on the scratch, then it loads the other core's rows as
/// its rows of `res` (so `res` is `a` with its halves swapped).
fn core_handoff(pid: u32) -> String {
    let (r0, r1) = (pid * 128, pid * 128 + 128);
    let (o0, o1) = (128 - pid * 128, 256 - pid * 128);
    format!(
        "kernel \"swap\" target=trn3 program_id=[{pid}] num_programs=[2]
file 0 \"kernel.py\"
t0 = shared_hbm float32[256, 64] \"a\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[256, 64] \"res\" @ kernel.py:40..48
t2 = shared_hbm float32[256, 64] \"scratch\" @ kernel.py:80..88
t3 = sbuf float32[128, 64] \"x\" @ kernel.py:120..128
t4 = sbuf float32[128, 64] \"y\" @ kernel.py:160..168
op0 = dma_copy dst=t3[0:128, 0:64] src=t0[{r0}:{r1}, 0:64] engine=dma @ kernel.py:200..208
op1 = dma_copy dst=t2[{r0}:{r1}, 0:64] src=t3[0:128, 0:64] engine=dma @ kernel.py:240..248
op2 = core_barrier data=t2[0:256, 0:64] engine=gpsimd @ kernel.py:280..288
op3 = dma_copy dst=t4[0:128, 0:64] src=t2[{o0}:{o1}, 0:64] engine=dma @ kernel.py:320..328
op4 = dma_copy dst=t1[{r0}:{r1}, 0:64] src=t4[0:128, 0:64] engine=dma @ kernel.py:360..368
return t1
"
    )
}

#[test]
fn the_cores_of_a_launch_share_an_internal_shared_hbm_tensor() {
    let launch = launch(&core_handoff(0), &core_handoff(1)).unwrap_or_else(|e| panic!("{e}"));
    for core in &launch.cores {
        let shared: Vec<_> = core
            .hbm
            .iter()
            .filter(|t| t.kind == nkic_isa::TensorKind::Shared)
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(shared, vec!["scratch"]);
    }
    assert!(
        launch
            .to_string()
            .contains(".hbm scratch f32[256,64] shared"),
        "{launch}"
    );
    let inputs = common::inputs(&launch.cores[0], 11);
    let config = nkic_sim::SimConfig {
        race_check: true,
        ..nkic_sim::SimConfig::default()
    };
    let verified = nkic_isa::verify_launch(&launch)
        .unwrap_or_else(|e| panic!("the compiled launch does not verify: {e:?}\n{launch}"));
    let run = nkic_sim::run_launch(verified, &inputs, &config)
        .unwrap_or_else(|e| panic!("simulation failed: {e}\n{launch}"));
    let a = common::input_bytes(&inputs, "a");
    let res = run.output("res").expect("the returned tensor").bytes();
    let half = a.len() / 2;
    assert_eq!(&res[..half], &a[half..]);
    assert_eq!(&res[half..], &a[..half]);
}

/// Fails unless `text` contains every one of `parts`.
fn assert_mentions(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "no {part:?} in:\n{text}");
    }
}

#[test]
fn a_shared_hbm_tensor_only_one_core_allocates_is_e0915_at_its_allocation() {
    // Core 1's instance stores its rows into `res` directly, without the
    // scratch that core 0's instance allocates.
    let text = launch(&core_handoff(0), &stores_then_barrier(1, Some("gpsimd")))
        .expect_err("only core 0 allocates `scratch`");
    // The label is on the allocation (bytes 80..88: line 3, column 1).
    assert_mentions(
        &text,
        &[
            "E0915",
            "only core 0 allocates the `nl.shared_hbm` tensor `scratch`",
            "core 1 never allocates this tensor",
            "[ kernel.py:3:1 ]",
        ],
    );
}

#[test]
fn instances_of_a_launch_returning_other_shapes_are_e0912_at_the_tensor() {
    let narrow = stores_then_barrier(1, None)
        .replace("float32[256, 64] \"res\"", "float32[256, 32] \"res\"")
        .replace("t1[128:256, 0:64]", "t1[128:256, 0:32]")
        .replace("t2[0:128, 0:64]\n", "t2[0:128, 0:32]\n");
    let text = launch(&stores_then_barrier(0, None), &narrow)
        .expect_err("the instances return `res` in two shapes");
    assert_mentions(
        &text,
        &[
            "E0912",
            "tensor `res` of program instance 1 has another shape or dtype than in instance 0",
            "float32[256, 32] in instance 1, float32[256, 64] in instance 0",
            "[ kernel.py:2:1 ]",
        ],
    );
}

/// Instance 1 returns a second tensor that instance 0 does not: E0912 at
/// that tensor, with both counts.
#[test]
fn instances_returning_different_tensors_are_e0912_at_the_extra_one() {
    let one = stores_then_barrier(0, None);
    let two = stores_then_barrier(1, None).replace(
        "return t1\n",
        "t3 = shared_hbm float32[128, 64] \"extra\" @ kernel.py:240..250\nreturn t1, t3\n",
    );
    let text = launch(&one, &two).expect_err("the instances return different tensors");
    assert!(
        text.contains("[E0912] Error: program instance 1 returns 2 tensors, instance 0 returns 1"),
        "{text}"
    );
    assert!(
        text.contains("returned by one instance and not the other"),
        "{text}"
    );
    // The label is on the extra tensor (byte 240: line 7 of the synthetic source).
    assert!(text.contains("kernel.py:7:1"), "{text}");
}
