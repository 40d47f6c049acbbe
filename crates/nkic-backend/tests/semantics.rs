//! End-to-end checks of what the backend emits: results against NumPy-style
//! references computed here, SPMD grids, and the minimality of the
//! semaphore waits.

mod common;

use nkic_isa::insn;
use std::collections::BTreeMap;

use nkic_backend::{BackendConfig, Schedule, compile, compile_grid};
use nkic_isa::{Program, Queue};

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn input(inputs: &nkic_sim::Inputs, name: &str) -> Vec<f32> {
    f32s(&common::input_bytes(inputs, name))
}

fn run_fixture(name: &str) -> (Program, nkic_sim::Inputs, nkic_sim::RunResult) {
    let (kernel, sources) = common::load(name);
    let program = compile(&kernel, &sources, &BackendConfig::default())
        .unwrap_or_else(|d| panic!("{name}: {d:?}"));
    let inputs = common::inputs(&program, 3);
    let res = common::simulate(&program, &inputs);
    (program, inputs, res)
}

#[test]
fn tiled_add_adds() {
    let (_, inputs, res) = run_fixture("add_tiled");
    let (a, b) = (input(&inputs, "a"), input(&inputs, "b"));
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    assert_eq!(out.len(), 512 * 512);
    for i in 0..out.len() {
        assert_eq!(out[i], a[i] + b[i], "element {i}");
    }
}

#[test]
fn on_chip_operands_carry_the_kernels_tensor_names() {
    for schedule in [Schedule::Optimized, Schedule::Sequential] {
        let (kernel, sources) = common::load("add_tiled");
        let program =
            compile(&kernel, &sources, &BackendConfig::scheduled(schedule)).expect("compiles");
        let mut adds = 0;
        for stream in &program.queues {
            for (k, inst) in stream.insts.iter().enumerate() {
                let name = |field| program.operand_name(stream.queue, k, field);
                match inst.op.mnemonic() {
                    "tensor_tensor" => {
                        adds += 1;
                        assert_eq!(name("dst"), Some("c_tile"));
                        assert_eq!(name("src0"), Some("a_tile"));
                        assert_eq!(name("src1"), Some("b_tile"));
                    }
                    "dma_copy" => {
                        let (dst, src) = (name("dst"), name("src"));
                        assert!(
                            matches!(
                                (dst, src),
                                (Some("a_tile"), Some("a"))
                                    | (Some("b_tile"), Some("b"))
                                    | (Some("out"), Some("c_tile"))
                            ),
                            "{dst:?} <- {src:?}"
                        );
                    }
                    other => panic!("unexpected {other}"),
                }
            }
        }
        assert_eq!(adds, 4);
    }
}

#[test]
fn tiled_matmul_multiplies() {
    let (_, inputs, res) = run_fixture("matmul_tiled");
    let (lhs_t, rhs) = (input(&inputs, "lhsT"), input(&inputs, "rhs"));
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    let (m, k, n) = (256, 256, 512);
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|kk| f64::from(lhs_t[kk * m + i]) * f64::from(rhs[kk * n + j]))
                .sum();
            let got = f64::from(out[i * n + j]);
            assert!(
                (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "({i}, {j}): {got} vs {want}"
            );
        }
    }
}

#[test]
fn softmax_rows_sum_to_one() {
    let (_, inputs, res) = run_fixture("softmax");
    let x = input(&inputs, "x");
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    for r in 0..256 {
        let row = &x[r * 512..(r + 1) * 512];
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f64 = row.iter().map(|&v| f64::from(v - max).exp()).sum();
        for c in 0..512 {
            let want = f64::from(row[c] - max).exp() / sum;
            let got = f64::from(out[r * 512 + c]);
            assert!((got - want).abs() <= 1e-5, "({r}, {c}): {got} vs {want}");
        }
    }
}

/// One instance of an SPMD kernel: `out[pid] = exp(x[pid])` by row blocks.
fn grid_instance(pid: u32) -> String {
    let r0 = pid * 128;
    format!(
        "kernel \"grid_exp\" target=trn3 program_id=[{pid}] num_programs=[2]
file 0 \"kernel.py\"
t0 = shared_hbm float32[256, 64] \"x\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[256, 64] \"out\" @ kernel.py:40..48
t2 = sbuf float32[128, 64] \"tile\" @ kernel.py:80..88
t3 = sbuf float32[128, 64] \"res\" @ kernel.py:120..128
op0 = dma_copy dst=t2[0:128, 0:64] src=t0[{r0}:{r1}, 0:64] engine=dma @ kernel.py:160..168
op1 = activation dst=t3[0:128, 0:64] src=t2[0:128, 0:64] func=exp scale=1.0 engine=scalar @ kernel.py:200..208
op2 = dma_copy dst=t1[{r0}:{r1}, 0:64] src=t3[0:128, 0:64] engine=dma @ kernel.py:240..248
return t1
",
        r1 = r0 + 128
    )
}

#[test]
fn grid_instances_share_arguments_and_outputs() {
    let (k0, sources) = common::load_text(&grid_instance(0));
    let (k1, _) = common::load_text(&grid_instance(1));
    let kernels = [k0, k1];
    let opt =
        compile_grid(&kernels, &sources, &BackendConfig::default()).expect("the grid compiles");
    let seq = compile_grid(
        &kernels,
        &sources,
        &BackendConfig::scheduled(Schedule::Sequential),
    )
    .expect("the grid compiles");
    let args: Vec<_> = opt.args().map(|(_, t)| (t.name.clone(), t.kind)).collect();
    assert_eq!(
        args,
        vec![
            ("x".to_owned(), nkic_isa::TensorKind::Input),
            ("out".to_owned(), nkic_isa::TensorKind::Output)
        ]
    );
    let inputs = common::inputs(&opt, 5);
    let a = common::simulate(&opt, &inputs);
    let b = common::simulate(&seq, &inputs);
    assert_eq!(a.outputs, b.outputs);
    let x = input(&inputs, "x");
    let out = f32s(&a.output("out").expect("out is an output").bytes());
    for i in 0..x.len() {
        let want = f64::from(x[i]).exp();
        assert!(
            (f64::from(out[i]) - want).abs() <= 1e-6 * want,
            "element {i}"
        );
    }
    // The two instances use distinct tiles, so they overlap in time.
    assert!(a.total_ps < b.total_ps);
}

/// The bytes of `values` in hexadecimal, as IR text writes data.
fn hex_f32(values: impl Iterator<Item = f32>) -> String {
    let bytes: Vec<u8> = values.flat_map(f32::to_le_bytes).collect();
    let mut out = String::new();
    nkic_isa::field::write_hex(&bytes, &mut out);
    out
}

/// The constant `w` of `grid_constants`, the same in every instance.
fn constant_w(i: usize) -> f32 {
    i as f32 * 0.5
}

/// The constant `b` of `grid_constants`, private to instance `pid`.
fn constant_b(pid: u32, i: usize) -> f32 {
    (pid + 1) as f32 * 1000.0 + i as f32
}

/// Instance `pid` of a grid of two: `out[pid] = x[pid] + w + b` by row
/// blocks, with `w` a `shared_hbm` constant and `b` a `private_hbm` one.
fn grid_constants(pid: u32) -> String {
    let r0 = pid * 128;
    format!(
        "kernel \"consts\" target=trn3 program_id=[{pid}] num_programs=[2]
file 0 \"kernel.py\"
t0 = shared_hbm float32[256, 4] \"x\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[256, 4] \"out\" @ kernel.py:40..48
t2 = shared_hbm float32[128, 4] \"w\" data={w} @ kernel.py:80..88
t3 = private_hbm float32[128, 4] \"b\" data={b} @ kernel.py:120..128
t4 = sbuf float32[128, 4] \"xs\" @ kernel.py:160..168
t5 = sbuf float32[128, 4] \"ws\" @ kernel.py:200..208
t6 = sbuf float32[128, 4] \"bs\" @ kernel.py:240..248
t7 = sbuf float32[128, 4] \"s\" @ kernel.py:280..288
t8 = sbuf float32[128, 4] \"t\" @ kernel.py:320..328
op0 = dma_copy dst=t4[0:128, 0:4] src=t0[{r0}:{r1}, 0:4] engine=dma @ kernel.py:360..368
op1 = dma_copy dst=t5[0:128, 0:4] src=t2[0:128, 0:4] engine=dma @ kernel.py:400..408
op2 = dma_copy dst=t6[0:128, 0:4] src=t3[0:128, 0:4] engine=dma @ kernel.py:440..448
op3 = tensor_tensor dst=t7[0:128, 0:4] src0=t4[0:128, 0:4] src1=t5[0:128, 0:4] op=add engine=? @ kernel.py:480..488
op4 = tensor_tensor dst=t8[0:128, 0:4] src0=t7[0:128, 0:4] src1=t6[0:128, 0:4] op=add engine=? @ kernel.py:520..528
op5 = dma_copy dst=t1[{r0}:{r1}, 0:4] src=t8[0:128, 0:4] engine=dma @ kernel.py:560..568
return t1
",
        r1 = r0 + 128,
        w = hex_f32((0..512).map(constant_w)),
        b = hex_f32((0..512).map(|i| constant_b(pid, i))),
    )
}

#[test]
fn constants_hold_their_data_in_the_program() {
    let (k0, sources) = common::load_text(&grid_constants(0));
    let (k1, _) = common::load_text(&grid_constants(1));
    let kernels = [k0, k1];
    let program =
        compile_grid(&kernels, &sources, &BackendConfig::default()).expect("the grid compiles");
    // One shared `w` for both instances, a private `b` for each (the
    // second named after its storage, t3).
    let consts: Vec<_> = program
        .tensors()
        .filter(|(_, t)| t.data.is_some())
        .map(|(_, t)| (t.name.as_str(), t.kind))
        .collect();
    assert_eq!(
        consts,
        vec![
            ("w", nkic_isa::TensorKind::Shared),
            ("b", nkic_isa::TensorKind::Internal),
            ("b_3", nkic_isa::TensorKind::Internal),
        ]
    );
    let w = program
        .tensor_by_name("w")
        .and_then(|id| program.tensor(id));
    let want: Vec<u8> = (0..512)
        .map(constant_w)
        .flat_map(f32::to_le_bytes)
        .collect();
    assert_eq!(w.and_then(|t| t.data.as_deref()), Some(&want[..]));
    let inputs = common::inputs(&program, 5);
    let res = common::simulate(&program, &inputs);
    let x = input(&inputs, "x");
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    for (i, (&got, &x)) in out.iter().zip(&x).enumerate() {
        let (pid, j) = ((i / 512) as u32, i % 512);
        assert_eq!(got, x + constant_w(j) + constant_b(pid, j), "element {i}");
    }
}

/// Instance `pid` of a grid of two that loads the 128-row block `src` of
/// the inout argument `a` (three blocks) and stores it doubled into block
/// `dst`.
fn grid_inplace(pid: u32, src: u32, dst: u32) -> String {
    let (s0, d0) = (src * 128, dst * 128);
    format!(
        "kernel \"inplace\" target=trn3 program_id=[{pid}] num_programs=[2]
file 0 \"kernel.py\"
t0 = shared_hbm float32[384, 64] \"a\" arg=0 inout @ kernel.py:0..8
t1 = sbuf float32[128, 64] \"x\" @ kernel.py:40..48
t2 = sbuf float32[128, 64] \"y\" @ kernel.py:80..88
op0 = dma_copy dst=t1[0:128, 0:64] src=t0[{s0}:{s1}, 0:64] engine=dma @ kernel.py:120..128
op1 = tensor_scalar dst=t2[0:128, 0:64] src=t1[0:128, 0:64] op0=multiply operand0=2.0 engine=? @ kernel.py:160..168
op2 = dma_copy dst=t0[{d0}:{d1}, 0:64] src=t2[0:128, 0:64] engine=dma @ kernel.py:200..208
",
        s1 = s0 + 128,
        d1 = d0 + 128
    )
}

#[test]
fn grid_instances_that_depend_on_each_other_are_warned_about() {
    // Blocks (source, destination) of instances 0 and 1: the E0913
    // warnings on one core, and the values of `a` the serial program
    // leaves (instance 0 first, then instance 1).
    let run = |blocks: [(u32, u32); 2]| {
        let (k0, sources) = common::load_text(&grid_inplace(0, blocks[0].0, blocks[0].1));
        let (k1, _) = common::load_text(&grid_inplace(1, blocks[1].0, blocks[1].1));
        let kernels = [k0, k1];
        let warnings = nkic_backend::launch_warnings(&kernels, &sources, 1);
        let mut outs = Vec::new();
        for schedule in [Schedule::Optimized, Schedule::Sequential] {
            let program = compile_grid(&kernels, &sources, &BackendConfig::scheduled(schedule))
                .expect("the grid compiles");
            let inputs = common::inputs(&program, 9);
            let res = common::simulate(&program, &inputs);
            let out = f32s(&res.output("a").expect("a is written").bytes());
            outs.push((input(&inputs, "a"), out));
        }
        assert_eq!(outs[0].1, outs[1].1, "both schedules agree");
        (warnings, outs.swap_remove(0))
    };
    let block = |v: &[f32], b: usize| v[b * 128 * 64..(b + 1) * 128 * 64].to_vec();
    let twice = |v: Vec<f32>| v.into_iter().map(|x| 2.0 * x).collect::<Vec<f32>>();
    // Each instance reads the other's block and writes its own: a warning
    // naming both, and instance 1 reads what instance 0 already wrote.
    let (warnings, (a, out)) = run([(1, 0), (0, 1)]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].code, "E0913");
    assert!(!warnings[0].is_error());
    assert!(
        warnings[0]
            .message
            .contains("grid instances 0 and 1 both access bytes of `a`"),
        "{}",
        warnings[0].message
    );
    assert!(
        warnings[0]
            .notes
            .iter()
            .any(|n| n.contains("under LNC=2 this is a race")),
        "{:?}",
        warnings[0].notes
    );
    assert_eq!(block(&out, 0), twice(block(&a, 1)));
    assert_eq!(block(&out, 1), twice(twice(block(&a, 1))));
    // Instance 1 reads the block instance 0 writes: warned about as well.
    let (warnings, _) = run([(0, 0), (0, 1)]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    // Each instance reads and writes only its own block: no warning.
    let (warnings, (a, out)) = run([(0, 0), (1, 1)]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(block(&out, 0), twice(block(&a, 0)));
    assert_eq!(block(&out, 1), twice(block(&a, 1)));
    // Both store the same block from a block nobody writes: identical
    // redundant stores, no warning.
    let (warnings, (a, out)) = run([(2, 0), (2, 0)]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(block(&out, 0), twice(block(&a, 2)));
}

#[test]
fn overflow_notes_group_allocation_sites_and_list_the_largest() {
    // Ten one-bank PSUM tiles of their own sites, and six of one site
    // (`qk`, as the blocks of a legacy tensor), all alive together.
    let mut text = String::from(
        "kernel \"many\" target=trn3 program_id=[0] num_programs=[1]
file 0 \"kernel.py\"
t0 = shared_hbm float32[128, 512] \"out\" arg=0 output @ kernel.py:0..8
t1 = sbuf float32[128, 512] \"acc\" @ kernel.py:40..48
",
    );
    let sites: Vec<(String, u32)> = (0..10)
        .map(|i| (format!("bank{i}"), 80 + 40 * i))
        .chain((0..6).map(|_| ("qk".to_owned(), 600)))
        .collect();
    for (k, (name, at)) in sites.iter().enumerate() {
        text.push_str(&format!(
            "t{} = psum float32[128, 512] \"{name}\" @ kernel.py:{at}..{}\n",
            k + 2,
            at + 8
        ));
    }
    let mut line = 1000;
    let mut op = |text: &mut String, body: String| {
        let n = (line - 1000) / 40;
        text.push_str(&format!(
            "op{n} = {body} @ kernel.py:{line}..{}\n",
            line + 8
        ));
        line += 40;
    };
    op(
        &mut text,
        "memset dst=t1[0:128, 0:512] value=0.0 engine=vector".to_owned(),
    );
    for k in 0..sites.len() {
        op(
            &mut text,
            format!(
                "memset dst=t{}[0:128, 0:512] value=1.0 engine=vector",
                k + 2
            ),
        );
    }
    for k in 0..sites.len() {
        op(
            &mut text,
            format!(
                "tensor_tensor dst=t1[0:128, 0:512] src0=t1[0:128, 0:512] src1=t{}[0:128, 0:512] op=add engine=vector",
                k + 2
            ),
        );
    }
    op(
        &mut text,
        "dma_copy dst=t0[0:128, 0:512] src=t1[0:128, 0:512] engine=dma".to_owned(),
    );
    let (kernel, sources) = common::load_text(&text);
    // Spilling off: the test is about the overflow error's notes.
    let config = BackendConfig {
        no_spill: true,
        ..BackendConfig::default()
    };
    let diags =
        compile(&kernel, &sources, &config).expect_err("sixteen PSUM banks do not fit in eight");
    assert_eq!(diags[0].code, "E0902");
    let notes = &diags[0].notes;
    // The eight largest sites in first-use order (banks 0..6, then one
    // line for `qk`'s six tensors), then the three sites left out.
    assert_eq!(notes.len(), 9, "{notes:#?}");
    assert!(
        notes.iter().any(|n| n.contains("`qk`")
            && n.contains("6 tensors × 2048 bytes = 12288 bytes per partition")),
        "{notes:#?}"
    );
    assert_eq!(
        notes[8],
        "and 3 more allocation sites alive at the peak (3 tensors, 6144 bytes per partition)"
    );
    // One label per site shown (the failing tile has the primary one).
    assert!(diags[0].secondary.len() <= 8, "{:#?}", diags[0].secondary);
}

/// Checks that no wait of `program` is implied by queue order, earlier
/// waits of its queue, or another wait of the same instruction; returns
/// the number of waits.
fn assert_minimal_waits(name: &str, program: &Program) -> usize {
    // The signalling instructions of every semaphore, in order.
    let mut signallers: BTreeMap<u32, Vec<(Queue, usize)>> = BTreeMap::new();
    for s in &program.queues {
        for (i, inst) in s.insts.iter().enumerate() {
            for sem in &inst.signals {
                signallers.entry(sem.0).or_default().push((s.queue, i));
            }
        }
    }
    type Clock = BTreeMap<Queue, usize>;
    let mut done: BTreeMap<(Queue, usize), Clock> = BTreeMap::new();
    let mut next: BTreeMap<Queue, usize> = program.queues.iter().map(|s| (s.queue, 0)).collect();
    let mut known: BTreeMap<Queue, Clock> = BTreeMap::new();
    let mut waits = 0;
    let total: usize = program.queues.iter().map(|s| s.insts.len()).sum();
    let mut processed = 0;
    while processed < total {
        let mut progress = false;
        for s in &program.queues {
            let i = next[&s.queue];
            let Some(inst) = s.insts.get(i) else { continue };
            let producers: Vec<(Queue, usize)> = inst
                .waits
                .iter()
                .map(|w| signallers[&w.sem.0][w.value as usize - 1])
                .collect();
            if !producers.iter().all(|p| done.contains_key(p)) {
                continue;
            }
            let mut clock = known.remove(&s.queue).unwrap_or_default();
            for &(q, k) in &producers {
                assert!(
                    clock.get(&q).copied().unwrap_or(0) < k + 1,
                    "{name}: {}[{i}] waits for {q}[{k}], already known complete",
                    s.queue
                );
                for &(q2, k2) in &producers {
                    if (q2, k2) != (q, k) {
                        assert!(
                            done[&(q2, k2)].get(&q).copied().unwrap_or(0) < k + 1,
                            "{name}: {}[{i}] waits for {q}[{k}], implied by its wait for {q2}[{k2}]",
                            s.queue
                        );
                    }
                }
            }
            for p in &producers {
                for (&q, &n) in &done[p] {
                    let e = clock.entry(q).or_insert(0);
                    *e = (*e).max(n);
                }
            }
            waits += producers.len();
            let mut mine = clock.clone();
            let e = mine.entry(s.queue).or_insert(0);
            *e = (*e).max(i + 1);
            done.insert((s.queue, i), mine);
            known.insert(s.queue, clock);
            *next.get_mut(&s.queue).expect("every queue has a cursor") += 1;
            processed += 1;
            progress = true;
        }
        assert!(progress, "{name}: the waits form a cycle");
    }
    waits
}

#[test]
fn waits_are_minimal() {
    for name in common::fixture_names() {
        // The bodies of dynamic loops are emitted as a token chain (see
        // the `dynamic` module), which waits for every previous step by
        // design.
        if name.starts_with("err_") || name.starts_with("dyn_") {
            continue;
        }
        let (kernel, sources) = common::load(&name);
        let program = compile(&kernel, &sources, &BackendConfig::default()).expect("compiles");
        let waits = assert_minimal_waits(&name, &program);
        let signals: usize = program
            .queues
            .iter()
            .flat_map(|s| &s.insts)
            .map(|i| i.signals.len())
            .sum();
        // Every signal is awaited by someone: no signal without a wait.
        assert!(
            signals <= waits,
            "{name}: {signals} signals for {waits} waits"
        );
    }
}

#[test]
fn unnamed_returned_tensors_are_named_by_return_index() {
    let text = "kernel \"k\" target=trn3 program_id=[] num_programs=[]
file 0 \"kernel.py\"
t0 = shared_hbm float32[128, 8] \"x\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[128, 8] \"\" @ kernel.py:40..48
t2 = sbuf float32[128, 8] \"\" @ kernel.py:80..88
op0 = dma_copy dst=t2[0:128, 0:8] src=t0[0:128, 0:8] engine=dma @ kernel.py:120..128
op1 = dma_copy dst=t1[0:128, 0:8] src=t2[0:128, 0:8] engine=dma @ kernel.py:160..168
return t1
";
    let (kernel, sources) = common::load_text(text);
    let program = compile(&kernel, &sources, &BackendConfig::default()).expect("compiles");
    let args: Vec<_> = program.args().map(|(_, t)| t.name.clone()).collect();
    assert_eq!(args, vec!["x".to_owned(), "out0".to_owned()]);
    let inputs = common::inputs(&program, 2);
    let res = common::simulate(&program, &inputs);
    assert_eq!(
        res.output("out0").map(|o| o.to_vec()),
        Some(common::input_bytes(&inputs, "x"))
    );
}

#[test]
fn dynamic_loops_compute_what_they_say() {
    // for i in dynamic_range(8): out[i] = exp(x[i])
    let (_, inputs, res) = run_fixture("dyn_range");
    let x = input(&inputs, "x");
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    assert_eq!(out.len(), 1024 * 64);
    for i in 0..x.len() {
        let want = f64::from(x[i]).exp();
        assert!(
            (f64::from(out[i]) - want).abs() <= 1e-6 * want,
            "dyn_range element {i}"
        );
    }
    // n = 3; while n: acc += x; n -= 1
    let (_, inputs, res) = run_fixture("dyn_while");
    let x = input(&inputs, "x");
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    for i in 0..x.len() {
        assert_eq!(out[i], 0.0 + x[i] + x[i] + x[i], "dyn_while element {i}");
    }
    // A trip count of 4 loaded from memory, times an inner loop of 2.
    let (_, inputs, res) = run_fixture("dyn_nested");
    let x = input(&inputs, "x");
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    for i in 0..x.len() {
        assert_eq!(out[i], x[i] * 2.0, "dyn_nested element {i}");
    }
}

#[test]
fn independent_work_overlaps_dynamic_loops() {
    // y[j] = 3 * z[j] for four static tiles, two before and two after a
    // dynamic loop out[i] = exp(x[i]) that touches none of their bytes.
    let (kernel, sources) = common::load("dyn_overlap");
    let build = |schedule| {
        compile(&kernel, &sources, &BackendConfig::scheduled(schedule))
            .expect("dyn_overlap compiles")
    };
    let (opt, seq) = (build(Schedule::Optimized), build(Schedule::Sequential));
    let inputs = common::inputs(&opt, 5);
    let a = common::simulate(&opt, &inputs);
    let b = common::simulate(&seq, &inputs);
    // The scheduler oracle: the same bytes both ways.
    assert_eq!(a.outputs, b.outputs);
    let (x, z) = (input(&inputs, "x"), input(&inputs, "z"));
    let out = f32s(&a.output("out").expect("out is an output").bytes());
    let y = f32s(&a.output("y").expect("y is an output").bytes());
    assert_eq!(out.len(), x.len());
    for i in 0..x.len() {
        let want = f64::from(x[i]).exp();
        assert!(
            (f64::from(out[i]) - want).abs() <= 1e-6 * want,
            "out element {i}"
        );
    }
    assert_eq!(y.len(), z.len());
    for i in 0..z.len() {
        assert_eq!(y[i], 3.0 * z[i], "y element {i}");
    }
    // The static tiles run alongside the loop: the last two no longer wait
    // for the loop's eight iterations, the first two not for each other.
    let (t_opt, t_seq) = (a.total_ns(), b.total_ns());
    assert!(
        t_opt < 0.8 * t_seq,
        "optimized {t_opt} ns vs sequential {t_seq} ns"
    );
    // The static transfers after the loop do not wait for it, and the
    // loop's steps wait for nothing of the static tiles: no top-level
    // instruction waits on a semaphore of the loop, no loop step on one of
    // the top level.
    let loop_sems: Vec<u32> = opt
        .semaphores
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name.starts_with("loop0_"))
        .map(|(k, _)| u32::try_from(k).expect("few semaphores"))
        .collect();
    assert!(!loop_sems.is_empty(), "the loop has semaphores");
    for inst in opt.queues.iter().flat_map(|s| &s.insts) {
        let in_loop = inst.signals.iter().any(|s| loop_sems.contains(&s.0));
        let waits_loop = inst.waits.iter().any(|w| loop_sems.contains(&w.sem.0));
        let waits_top = inst.waits.iter().any(|w| !loop_sems.contains(&w.sem.0));
        assert!(
            if in_loop { !waits_top } else { !waits_loop },
            "{inst:?} crosses between the loop and the static tiles"
        );
    }
}

/// The loop body's steps depend on each other within an iteration and on
/// the previous iteration only through the reused tiles, so with the
/// optimized schedule consecutive iterations overlap: the body no longer
/// runs as one chain, and both schedules still compute the same bytes.
#[test]
fn dynamic_loop_iterations_overlap() {
    let (kernel, sources) = common::load("dyn_range");
    let build = |schedule| {
        compile(&kernel, &sources, &BackendConfig::scheduled(schedule)).expect("dyn_range compiles")
    };
    let (opt, seq) = (build(Schedule::Optimized), build(Schedule::Sequential));
    let inputs = common::inputs(&opt, 6);
    let a = common::simulate(&opt, &inputs);
    let b = common::simulate(&seq, &inputs);
    assert_eq!(a.outputs, b.outputs);
    assert!(
        a.total_ps * 4 < b.total_ps * 3,
        "optimized {} ns vs sequential {} ns",
        a.total_ns(),
        b.total_ns()
    );
    // The load of the next iteration waits for the activation that read
    // the tile (every earlier iteration of the scalar queue), not for the
    // store of the current one.
    let dma = opt
        .queues
        .iter()
        .find(|s| s.queue == Queue::Dma(0))
        .expect("the loop's transfers are on dma0");
    let load = dma
        .insts
        .iter()
        .find(|i| matches!(&i.op, nkic_isa::Op::DmaCopy(insn::DmaCopy { dst, .. }) if dst.mem.is_on_chip()))
        .expect("the load");
    let names: Vec<&str> = load
        .waits
        .iter()
        .map(|w| opt.semaphores[w.sem.0 as usize].name.as_str())
        .collect();
    assert_eq!(names, vec!["loop0_scalar"], "{load:?}");
}

#[test]
fn the_bound_of_a_run_counts_loop_trips() {
    // dyn_range runs its body 8 times: the static bound counts it once,
    // the bound of the run counts every execution the trace shows.
    let (program, _, res) = run_fixture("dyn_range");
    let once = nkic_backend::lower_bound(&program);
    assert!(once.loops_counted_once);
    let mut runs: BTreeMap<(Queue, usize), u64> = BTreeMap::new();
    for e in &res.trace {
        *runs.entry((e.queue, e.index)).or_default() += 1;
    }
    let counted = nkic_backend::lower_bound_counted(&program, &|q, i| {
        runs.get(&(q, i)).copied().unwrap_or(0)
    });
    assert!(!counted.loops_counted_once);
    assert_eq!(counted.hbm_bytes, 8 * once.hbm_bytes);
    assert_eq!(
        counted.hbm_bytes,
        res.hbm_bytes_read + res.hbm_bytes_written
    );
    assert!(counted.ns > 4.0 * once.ns, "{} vs {}", counted.ns, once.ns);
    assert!(
        res.total_ns() >= counted.ns,
        "{} vs {}",
        res.total_ns(),
        counted.ns
    );
    // A program without loops: both agree.
    let (program, _, _) = run_fixture("add_tiled");
    let once = nkic_backend::lower_bound(&program);
    assert!(!once.loops_counted_once);
    assert_eq!(nkic_backend::lower_bound_counted(&program, &|_, _| 1), once);
}

#[test]
fn pe_tiles_get_their_partitions() {
    // Four 64x64 @ 64x512 products, each on one quarter of the PE array
    // (tile_position = [row, col]): the compiler places each fresh input
    // tile on partition `row` and each result on partition `col`.
    let mut t = String::from(
        "kernel \"pe\" target=trn3 program_id=[] num_programs=[]\nfile 0 \"kernel.py\"\nt0 = shared_hbm float32[4, 64, 64] \"a\" arg=0 input @ kernel.py:0..4\nt1 = shared_hbm float32[4, 64, 512] \"b\" arg=1 input @ kernel.py:0..4\nt2 = shared_hbm float32[4, 64, 512] \"out\" arg=2 output @ kernel.py:0..4\n",
    );
    for k in 0..4 {
        for (j, (kind, shape)) in [
            ("sbuf", "[64, 64]"),
            ("sbuf", "[64, 512]"),
            ("psum", "[64, 512]"),
            ("sbuf", "[64, 512]"),
        ]
        .into_iter()
        .enumerate()
        {
            t += &format!(
                "t{} = {kind} float32{shape} \"x{k}_{j}\" @ kernel.py:40..44\n",
                3 + 4 * k + j
            );
        }
    }
    for k in 0..4 {
        let (a, b, r, c) = (3 + 4 * k, 4 + 4 * k, 5 + 4 * k, 6 + 4 * k);
        let (row, col) = ((k / 2) * 64, (k % 2) * 64);
        t += &format!(
            "op{} = dma_copy dst=t{a}[0:64, 0:64] src=t0.ap([[64, 64], [1, 64]], offset={}) engine=? @ kernel.py:80..84\n",
            5 * k,
            4096 * k
        );
        t += &format!(
            "op{} = dma_copy dst=t{b}[0:64, 0:512] src=t1.ap([[512, 64], [1, 512]], offset={}) engine=? @ kernel.py:80..84\n",
            5 * k + 1,
            32768 * k
        );
        t += &format!(
            "op{} = nc_matmul dst=t{r}[0:64, 0:512] stationary=t{a}[0:64, 0:64] moving=t{b}[0:64, 0:512] accumulate=false tile_position=[{row}, {col}] tile_size=[64, 64] engine=? @ kernel.py:120..124\n",
            5 * k + 2
        );
        t += &format!(
            "op{} = tensor_copy dst=t{c}[0:64, 0:512] src=t{r}[0:64, 0:512] engine=? @ kernel.py:160..164\n",
            5 * k + 3
        );
        t += &format!(
            "op{} = dma_copy dst=t2.ap([[512, 64], [1, 512]], offset={}) src=t{c}[0:64, 0:512] engine=? @ kernel.py:200..204\n",
            5 * k + 4,
            32768 * k
        );
    }
    let (kernel, sources) = common::load_text(&t);
    let mut outputs = Vec::new();
    for schedule in [Schedule::Optimized, Schedule::Sequential] {
        let program = compile(&kernel, &sources, &BackendConfig::scheduled(schedule))
            .unwrap_or_else(|d| panic!("{d:?}"));
        let tensor = program.stream(Queue::Tensor).unwrap_or_default();
        let mut starts: Vec<(u32, u32)> = tensor
            .iter()
            .map(|i| match &i.op {
                nkic_isa::Op::NcMatmul(insn::NcMatmul {
                    dst, stationary, ..
                }) => (stationary.partition_start, dst.partition_start),
                other => panic!("unexpected {}", other.mnemonic()),
            })
            .collect();
        starts.sort_unstable();
        assert_eq!(starts, vec![(0, 0), (0, 64), (64, 0), (64, 64)]);
        let inputs = common::inputs(&program, 5);
        let res = common::simulate(&program, &inputs);
        let (a, b) = (input(&inputs, "a"), input(&inputs, "b"));
        let out = f32s(&res.output("out").expect("out").bytes());
        for k in 0..4 {
            for m in 0..64 {
                for n in 0..512 {
                    let want: f64 = (0..64)
                        .map(|j| {
                            f64::from(a[k * 4096 + j * 64 + m])
                                * f64::from(b[k * 32768 + j * 512 + n])
                        })
                        .sum();
                    let got = f64::from(out[k * 32768 + m * 512 + n]);
                    assert!(
                        (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                        "[{k}, {m}, {n}]"
                    );
                }
            }
        }
        outputs.push(res.outputs);
    }
    assert_eq!(outputs[0], outputs[1]);
}

/// The SBUF/PSUM byte offsets of every on-chip operand of `program`.
fn offsets(program: &Program, mem: nkic_isa::Memory) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for s in &program.queues {
        for inst in &s.insts {
            for operand in inst.op.operands() {
                if operand.ap.mem == mem {
                    out.push((operand.field.to_owned(), operand.ap.offset));
                }
            }
        }
    }
    out
}

#[test]
fn independent_iterations_get_their_own_buffers() {
    let (kernel, sources) = common::load("multibuffer");
    let program = compile(&kernel, &sources, &BackendConfig::default()).expect("compiles");
    // Eight iterations, two 4 KiB tiles each: all sixteen fit side by side.
    let mut dsts: Vec<u64> = offsets(&program, nkic_isa::Memory::Sbuf)
        .into_iter()
        .filter(|(f, _)| f == "dst")
        .map(|(_, o)| o)
        .collect();
    dsts.sort_unstable();
    dsts.dedup();
    assert_eq!(dsts, (0..16).map(|k| k * 4096).collect::<Vec<u64>>());
}

/// `n` iterations of load → exp → store on `[128, cols]` f32 tiles.
fn pipeline(n: usize, cols: usize) -> String {
    let mut t = format!(
        "kernel \"pipe\" target=trn3 program_id=[] num_programs=[]\nfile 0 \"kernel.py\"\nL0 = affine_range trips={n} @ kernel.py:0..4\nt0 = shared_hbm float32[{rows}, {cols}] \"x\" arg=0 input @ kernel.py:0..4\nt1 = shared_hbm float32[{rows}, {cols}] \"out\" arg=1 output @ kernel.py:0..4\n",
        rows = 128 * n
    );
    for i in 0..n {
        t += &format!(
            "t{a} = sbuf float32[128, {cols}] \"in\" iter=[L0={i}] @ kernel.py:40..44\nt{b} = sbuf float32[128, {cols}] \"res\" iter=[L0={i}] @ kernel.py:80..84\n",
            a = 2 + 2 * i,
            b = 3 + 2 * i
        );
    }
    for i in 0..n {
        let (a, b, r0, r1) = (2 + 2 * i, 3 + 2 * i, 128 * i, 128 * i + 128);
        t += &format!(
            "op{} = dma_copy dst=t{a}[0:128, 0:{cols}] src=t0[{r0}:{r1}, 0:{cols}] engine=dma iter=[L0={i}] @ kernel.py:120..124\n",
            3 * i
        );
        t += &format!(
            "op{} = activation dst=t{b}[0:128, 0:{cols}] src=t{a}[0:128, 0:{cols}] func=exp scale=1.0 engine=scalar iter=[L0={i}] @ kernel.py:160..164\n",
            3 * i + 1
        );
        t += &format!(
            "op{} = dma_copy dst=t1[{r0}:{r1}, 0:{cols}] src=t{b}[0:128, 0:{cols}] engine=dma iter=[L0={i}] @ kernel.py:200..204\n",
            3 * i + 2
        );
    }
    t
}

#[test]
fn tiles_are_reused_when_capacity_is_short() {
    // Sixteen iterations of two 48 KiB tiles need 1.5 MiB per partition
    // without reuse; the allocator falls back to fewer buffers, and the
    // program still computes exp(x) and overlaps iterations.
    let (kernel, sources) = common::load_text(&pipeline(16, 12288));
    let opt = compile(&kernel, &sources, &BackendConfig::default()).expect("compiles");
    let seq = compile(
        &kernel,
        &sources,
        &BackendConfig::scheduled(Schedule::Sequential),
    )
    .expect("compiles");
    let mut distinct: Vec<u64> = offsets(&opt, nkic_isa::Memory::Sbuf)
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(
        distinct.len() >= 4,
        "at least double buffering: {distinct:?}"
    );
    assert!(distinct.len() < 32, "some reuse: {distinct:?}");
    let inputs = common::inputs(&opt, 9);
    let a = common::simulate(&opt, &inputs);
    let b = common::simulate(&seq, &inputs);
    assert_eq!(a.outputs, b.outputs);
    // The loads and stores share the DMA engines, which bound the kernel:
    // the overlapped program runs at that bound, the sequential one also
    // waits for every transfer's latency and every exp.
    let bound = nkic_backend::lower_bound(&opt);
    assert_eq!(bound.limited_by, "dma");
    assert!(
        a.total_ns() <= 1.02 * bound.ns,
        "{} ns vs the bound {} ns",
        a.total_ns(),
        bound.ns
    );
    assert!(
        3 * a.total_ps < 2 * b.total_ps,
        "{} vs {}",
        a.total_ps,
        b.total_ps
    );
}

#[test]
fn psum_tiles_never_straddle_banks() {
    // Three [128, 384] f32 PSUM tiles (1536 bytes) alive together: each
    // stays inside one 2 KiB bank.
    let mut t = String::from(
        "kernel \"banks\" target=trn3 program_id=[] num_programs=[]\nfile 0 \"kernel.py\"\nt0 = shared_hbm float32[128, 384] \"out\" arg=0 output @ kernel.py:0..4\nt1 = sbuf float32[128, 384] \"acc\" @ kernel.py:0..4\n",
    );
    for p in 0..3 {
        t += &format!(
            "t{} = psum float32[128, 384] \"p{p}\" @ kernel.py:40..44\n",
            p + 2
        );
    }
    t += "op0 = memset dst=t1[0:128, 0:384] value=0.0 engine=vector @ kernel.py:80..84\n";
    for p in 0..3 {
        t += &format!(
            "op{} = memset dst=t{}[0:128, 0:384] value=1.0 engine=vector @ kernel.py:80..84\n",
            p + 1,
            p + 2
        );
    }
    for p in 0..3 {
        t += &format!(
            "op{} = tensor_tensor dst=t1[0:128, 0:384] src0=t1[0:128, 0:384] src1=t{}[0:128, 0:384] op=add engine=vector @ kernel.py:80..84\n",
            p + 4,
            p + 2
        );
    }
    t += "op7 = dma_copy dst=t0[0:128, 0:384] src=t1[0:128, 0:384] engine=dma @ kernel.py:80..84\n";
    let (kernel, sources) = common::load_text(&t);
    let program = compile(&kernel, &sources, &BackendConfig::default()).expect("compiles");
    let mut starts: Vec<u64> = offsets(&program, nkic_isa::Memory::Psum)
        .into_iter()
        .map(|(_, o)| o)
        .collect();
    starts.sort_unstable();
    starts.dedup();
    assert_eq!(starts.len(), 3);
    for s in &starts {
        assert_eq!(
            s / 2048,
            (s + 1536 - 1) / 2048,
            "PSUM tile at {s} straddles a bank"
        );
    }
    let res = common::simulate(&program, &common::inputs(&program, 1));
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    assert!(out.iter().all(|&v| v == 3.0));
}

#[test]
fn gathers_and_scatters_move_the_indexed_rows() {
    let (program, inputs, res) = run_fixture("gather_scatter");
    let text = program.to_string();
    assert!(text.contains("dma_gather") && text.contains("dma_scatter"));
    let x = input(&inputs, "x");
    let even = f32s(&res.output("even").expect("even is an output").bytes());
    let inter = f32s(
        &res.output("interleaved")
            .expect("interleaved is an output")
            .bytes(),
    );
    for p in 0..128 {
        for c in 0..64 {
            assert_eq!(even[p * 64 + c], x[2 * p * 64 + c], "even row {p}");
            assert_eq!(
                inter[2 * p * 64 + c],
                x[p * 64 + c],
                "interleaved row {}",
                2 * p
            );
            assert_eq!(
                inter[(2 * p + 1) * 64 + c],
                x[(128 + p) * 64 + c],
                "interleaved row {}",
                2 * p + 1
            );
        }
    }
}

#[test]
fn integer_tensor_tensor_runs_exactly_on_gpsimd() {
    // Many independent int32 adds: balance would spread them over Vector
    // and GpSimd, whose integer results differ, so they all go to GpSimd,
    // where integer arithmetic is exact (isa.md §4.3).
    let mut t = String::from(
        "kernel \"ints\" target=trn3 program_id=[] num_programs=[]\nfile 0 \"kernel.py\"\nt0 = shared_hbm int32[128, 64] \"out\" arg=0 output @ kernel.py:0..4\nt1 = sbuf int32[128, 64] \"a\" @ kernel.py:0..4\n",
    );
    for k in 0..6 {
        t += &format!(
            "t{} = sbuf int32[128, 64] \"s{k}\" @ kernel.py:0..4\n",
            k + 2
        );
    }
    t += "op0 = iota dst=t1[0:128, 0:64] pattern=[[1, 64]] offset=16777217 channel_multiplier=64 engine=gpsimd @ kernel.py:40..44\n";
    let lines: Vec<String> = (0..6)
        .map(|k| {
            format!(
                "op{} = tensor_tensor dst=t{}[0:128, 0:64] src0=t1[0:128, 0:64] src1=t1[0:128, 0:64] op=add engine=? @ kernel.py:80..84\n",
                k + 1,
                k + 2
            )
        })
        .collect();
    t += &lines.concat();
    t += "op7 = dma_copy dst=t0[0:128, 0:64] src=t7[0:128, 0:64] engine=dma @ kernel.py:120..124\n";
    let (kernel, sources) = common::load_text(&t);
    let program = compile(&kernel, &sources, &BackendConfig::default()).expect("compiles");
    let on = |q: Queue| {
        program
            .stream(q)
            .unwrap_or_default()
            .iter()
            .filter(|i| i.op.mnemonic() == "tensor_tensor")
            .count()
    };
    assert_eq!((on(Queue::Vector), on(Queue::GpSimd)), (0, 6));
    // Values above 2^24 add exactly: out[p, j] = 2 * (16777217 + 64 p + j).
    let result = common::simulate(&program, &common::inputs(&program, 1));
    let out = result.output("out").expect("the output").bytes();
    for p in 0..128i64 {
        for j in 0..64i64 {
            let k = ((p * 64 + j) * 4) as usize;
            let got = i32::from_le_bytes([out[k], out[k + 1], out[k + 2], out[k + 3]]);
            assert_eq!(
                i64::from(got),
                2 * (16_777_217 + 64 * p + j),
                "at [{p}, {j}]"
            );
        }
    }
}

#[test]
fn trn2_programs_use_trn2_figures() {
    let text = std::fs::read_to_string(common::fixture_dir().join("matmul_tiled.ir"))
        .expect("the fixture exists")
        .replace("target=trn3", "target=trn2");
    let (kernel, sources) = common::load_text(&text);
    let program = compile(&kernel, &sources, &BackendConfig::default()).expect("compiles");
    assert_eq!(program.target, nkic_isa::Target::Trn2);
    let inputs = common::inputs(&program, 4);
    let res = common::simulate(&program, &inputs);
    let (lhs_t, rhs) = (input(&inputs, "lhsT"), input(&inputs, "rhs"));
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    let (m, k, n) = (256, 256, 512);
    for (i, j) in [(0, 0), (17, 300), (255, 511), (128, 5)] {
        let want: f64 = (0..k)
            .map(|kk| f64::from(lhs_t[kk * m + i]) * f64::from(rhs[kk * n + j]))
            .sum();
        assert!((f64::from(out[i * n + j]) - want).abs() <= 1e-4 * (1.0 + want.abs()));
    }
}

/// A spilled tile that was loaded from an input is loaded again for each
/// later read (rematerialized) instead of being stored to HBM: `x0` of
/// `spill_reload` waits while three tiles fill SBUF and is read twice, so
/// the program loads it twice, has no spill tensor and stores nothing but
/// the output, and the result is the unspilled kernel's.
#[test]
fn spilled_loads_are_loaded_again_from_their_input() {
    let (program, inputs, res) = run_fixture("spill_reload");
    let text = program.to_string();
    assert!(!text.contains("_spill"), "{text}");
    let loads_of = |offset: &str| {
        text.lines()
            .filter(|l| {
                l.contains("dma_copy") && l.contains(&format!("src=hbm.x[0:128*16384]{offset}:"))
            })
            .count()
    };
    assert_eq!(loads_of(""), 2, "x0 is loaded once per read:\n{text}");
    assert_eq!(loads_of("+8388608"), 1, "x1 is loaded once:\n{text}");
    let dmas = text.lines().filter(|l| l.contains("dma_copy")).count();
    assert_eq!(dmas, 4, "three loads and the output store:\n{text}");
    let x = input(&inputs, "x");
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    let n = 128 * 16384;
    assert_eq!(out.len(), n);
    for i in 0..n {
        let (x0, x1) = (x[i], x[n + i]);
        let want = (((x1 + x1) + x1) + x0) + x0;
        assert_eq!(out[i].to_bits(), want.to_bits(), "element {i}");
    }
}

#[test]
fn trn1_serialises_vector_and_gpsimd_on_the_sbuf_port() {
    // Eight independent fp32 adds that may run on VectorE or GpSimd, then
    // a small store of each. On trn2 the two engines share the work in
    // parallel; on trn1 they cannot access SBUF in parallel
    // (docs/cycle-model.md, "Shared RAM ports"), so the SBUF port bounds
    // the kernel, and the simulated run keeps to that bound.
    let ir = |target: &str| {
        let mut t = format!(
            "kernel \"adds\" target={target} program_id=[] num_programs=[]\nfile 0 \"kernel.py\"\nt0 = shared_hbm float32[1024, 8] \"out\" arg=0 output @ kernel.py:0..4\nt1 = sbuf float32[128, 512] \"a\" @ kernel.py:0..4\nop0 = memset dst=t1[0:128, 0:512] value=1.5 engine=vector @ kernel.py:40..44\n"
        );
        for k in 0..8 {
            t += &format!(
                "t{s} = sbuf float32[128, 512] \"s{k}\" @ kernel.py:0..4\nop{a} = tensor_tensor dst=t{s}[0:128, 0:512] src0=t1[0:128, 0:512] src1=t1[0:128, 0:512] op=add engine=? @ kernel.py:80..84\nop{b} = dma_copy dst=t0[{r0}:{r1}, 0:8] src=t{s}[0:128, 0:8] engine=dma @ kernel.py:120..124\n",
                s = k + 2,
                a = 2 * k + 1,
                b = 2 * k + 2,
                r0 = 128 * k,
                r1 = 128 * k + 128
            );
        }
        let (kernel, sources) = common::load_text(&t);
        compile(&kernel, &sources, &BackendConfig::default()).expect("compiles")
    };
    let (trn1, trn2) = (ir("trn1"), ir("trn2"));
    let busy = |p: &Program, q: Queue| -> u64 {
        p.stream(q)
            .unwrap_or_default()
            .iter()
            .map(|i| p.target.cost(q, &i.op).busy_ps)
            .sum()
    };
    let bound = nkic_backend::lower_bound(&trn1);
    assert_eq!(bound.limited_by, "sbuf port");
    let port_ps = busy(&trn1, Queue::Vector) + busy(&trn1, Queue::GpSimd);
    assert_eq!(bound.ns, port_ps as f64 / 1000.0);
    let run1 = common::simulate(&trn1, &common::inputs(&trn1, 1));
    assert!(run1.total_ps >= port_ps, "{} < {port_ps}", run1.total_ps);
    // Both engines took work, and no two of their intervals overlap.
    let mut held: Vec<(u64, u64)> = run1
        .trace
        .iter()
        .filter(|e| matches!(e.queue, Queue::Vector | Queue::GpSimd))
        .map(|e| (e.start_ps, e.free_ps))
        .collect();
    assert!(busy(&trn1, Queue::Vector) > 0 && busy(&trn1, Queue::GpSimd) > 0);
    assert_eq!(held.len(), 9, "the memset and the eight adds");
    held.sort_unstable();
    assert!(held.windows(2).all(|w| w[0].1 <= w[1].0), "{held:?}");
    // On trn2 the engines overlap: the run takes less than their sum.
    let run2 = common::simulate(&trn2, &common::inputs(&trn2, 1));
    let sum2 = busy(&trn2, Queue::Vector) + busy(&trn2, Queue::GpSimd);
    assert!(nkic_backend::lower_bound(&trn2).limited_by != "sbuf port");
    assert!(run2.total_ps < sum2, "{} vs {sum2}", run2.total_ps);
    for run in [&run1, &run2] {
        let out = f32s(&run.output("out").expect("the output").bytes());
        assert!(out.iter().all(|&v| v == 3.0));
    }
}

/// The dependency graph of `text` with the edges `which` asks for.
fn graph_of(text: &str, which: nkic_backend::deps::Edges<'_>) -> nkic_backend::deps::Graph {
    let (kernel, sources) = common::load_text(text);
    let unit = nkic_backend::collect::collect(std::slice::from_ref(&kernel), &sources)
        .unwrap_or_else(|d| panic!("{d:?}"));
    let layout = nkic_backend::alloc::allocate(&unit, &sources).unwrap_or_else(|d| panic!("{d:?}"));
    nkic_backend::deps::build(&unit, &layout, Schedule::Optimized, which)
}

/// The number of edges of `text`'s dependency graph, all and reduced.
fn edge_counts(text: &str) -> (usize, usize) {
    use nkic_backend::deps::Edges;
    let edges = |which| -> usize { graph_of(text, which).preds.iter().map(Vec::len).sum() };
    (edges(Edges::All), edges(Edges::Reduced))
}

/// Compiles and runs `text` on random inputs (seed `seed`): its input `x`
/// and its output `out`.
fn run_x_to_out(text: &str, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let (kernel, sources) = common::load_text(text);
    let program =
        compile(&kernel, &sources, &BackendConfig::default()).unwrap_or_else(|d| panic!("{d:?}"));
    let inputs = common::inputs(&program, seed);
    let res = common::simulate(&program, &inputs);
    let out = f32s(&res.output("out").expect("out is an output").bytes());
    (input(&inputs, "x"), out)
}

/// `n` scatters into one output through the same index tile: each one may
/// write any row, so each depends on the one before.
fn scatter_chain(n: usize) -> String {
    let mut text = String::from(
        "kernel \"scatters\" target=trn3 program_id=[0] num_programs=[1]
file 0 \"kernel.py\"
t0 = shared_hbm float32[128, 64] \"x\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[256, 64] \"out\" arg=1 output @ kernel.py:40..48
t2 = sbuf int32[128, 1] \"idx\" @ kernel.py:80..88
t3 = sbuf float32[128, 64] \"tile\" @ kernel.py:120..128
op0 = iota dst=t2[0:128, 0:1] pattern=[[0, 1]] offset=0 channel_multiplier=2 engine=gpsimd @ kernel.py:160..168
op1 = dma_copy dst=t3[0:128, 0:64] src=t0[0:128, 0:64] engine=dma @ kernel.py:200..208
",
    );
    for k in 0..n {
        text.push_str(&format!(
            "op{} = dma_copy dst=t1.ap([[64, 128], [1, 64]], offset=0, vector_offset=t2[0:128, 0:1]) src=t3[0:128, 0:64] engine=dma @ kernel.py:240..248\n",
            k + 2
        ));
    }
    text
}

#[test]
fn may_writes_of_a_whole_tensor_keep_the_reduced_graph_linear() {
    let n = 40;
    let (all, reduced) = edge_counts(&scatter_chain(n));
    // Every scatter waits for the iota and the load (2 each); in the full
    // graph also for every scatter before it, in the reduced one for the
    // one just before (the others' edges follow through it).
    assert_eq!(all, 2 * n + n * (n - 1) / 2);
    assert_eq!(reduced, 2 * n + (n - 1));
    // Each scatter writes what it reads: the output is the tile at the
    // rows the index tile names, the others stay as the simulator starts.
    let (x, out) = run_x_to_out(&scatter_chain(n), 5);
    for p in 0..128 {
        assert_eq!(
            out[2 * p * 64..2 * p * 64 + 64],
            x[p * 64..p * 64 + 64],
            "row {p}"
        );
    }
}

/// A kernel's input `x` (t0), output `out` (t1) and two SBUF tiles (t2,
/// t3), with op0 loading `x` into t2.
const LOAD_X: &str = "kernel \"shadow\" target=trn3 program_id=[0] num_programs=[1]
file 0 \"kernel.py\"
t0 = shared_hbm float32[128, 64] \"x\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[128, 64] \"out\" arg=1 output @ kernel.py:40..48
t2 = sbuf float32[128, 64] \"tile\" @ kernel.py:80..88
t3 = sbuf float32[128, 64] \"copy\" @ kernel.py:120..128
op0 = dma_copy dst=t2[0:128, 0:64] src=t0[0:128, 0:64] engine=dma @ kernel.py:160..168
";

/// A tile read `reads` times and then rewritten `writes` times in its
/// first column, before it goes out.
fn reads_then_partial_writes(reads: usize, writes: usize) -> String {
    let mut text = String::from(LOAD_X);
    let mut op = 1;
    for _ in 0..reads {
        text.push_str(&format!(
            "op{op} = tensor_copy dst=t3[0:128, 0:64] src=t2[0:128, 0:64] engine=? @ kernel.py:200..208\n"
        ));
        op += 1;
    }
    for k in 0..writes {
        text.push_str(&format!(
            "op{op} = memset dst=t2[0:128, 0:1] value={k}.0 engine=? @ kernel.py:240..248\n"
        ));
        op += 1;
    }
    text.push_str(&format!(
        "op{op} = dma_copy dst=t1[0:128, 0:64] src=t2[0:128, 0:64] engine=dma @ kernel.py:280..288\n"
    ));
    text
}

#[test]
fn a_covering_write_shadows_the_accesses_before_it() {
    let (reads, writes) = (30, 20);
    let text = reads_then_partial_writes(reads, writes);
    let (all, reduced) = edge_counts(&text);
    // The full graph: copy `k` on the load and on the `k - 1` copies
    // before it (all write `copy`); each memset on the load, every copy
    // and every memset before it; the store on the load and every memset.
    let full = (reads + reads * (reads - 1) / 2)
        + (writes * (1 + reads) + writes * (writes - 1) / 2)
        + (1 + writes);
    assert_eq!(all, full);
    // Reduced: a copy on the load and the copy before it (whose write it
    // covers); the first memset on the load and every copy; each later
    // one only on the memset before it, which covers its bytes, so the
    // copies are ordered before it through that memset; the store on the
    // load and the last memset (the others are covered).
    assert_eq!(reduced, (2 * reads - 1) + (1 + reads) + (writes - 1) + 2);
    // The output: the last memset's value in the first column.
    let (x, out) = run_x_to_out(&text, 7);
    for p in 0..128 {
        assert_eq!(out[p * 64], (writes - 1) as f32, "row {p}");
        assert_eq!(
            out[p * 64 + 1..p * 64 + 64],
            x[p * 64 + 1..p * 64 + 64],
            "row {p}"
        );
    }
}

/// `out = 2 * x` through two `(rows, width)` float32 tiles alive together
/// in one instruction.
fn doubled_through_two_tiles(rows: u64, width: u64) -> String {
    format!(
        "kernel \"halves\" target=trn3 program_id=[0] num_programs=[1]
file 0 \"kernel.py\"
t0 = shared_hbm float32[{rows}, {width}] \"x\" arg=0 input @ kernel.py:0..8
t1 = shared_hbm float32[{rows}, {width}] \"out\" arg=1 output @ kernel.py:40..48
t2 = sbuf float32[{rows}, {width}] \"a\" @ kernel.py:80..88
t3 = sbuf float32[{rows}, {width}] \"b\" @ kernel.py:120..128
op0 = dma_copy dst=t2[0:{rows}, 0:{width}] src=t0[0:{rows}, 0:{width}] engine=dma @ kernel.py:160..168
op1 = tensor_scalar dst=t3[0:{rows}, 0:{width}] src=t2[0:{rows}, 0:{width}] op0=multiply operand0=2.0 engine=? @ kernel.py:200..208
op2 = dma_copy dst=t1[0:{rows}, 0:{width}] src=t3[0:{rows}, 0:{width}] engine=dma @ kernel.py:240..248
"
    )
}

#[test]
fn tiles_too_wide_to_share_partitions_take_the_other_half() {
    let capacity = u64::from(
        nkic_isa::Target::Trn3
            .figures()
            .sbuf_usable_bytes_per_partition,
    );
    // Each tile takes 60 % of a partition: they cannot both start at
    // partition 0, but 64 rows each fit on partitions 0–63 and 64–127.
    let width = capacity * 6 / 10 / 4;
    let (x, out) = run_x_to_out(&doubled_through_two_tiles(64, width), 11);
    assert_eq!(out.len(), x.len());
    for (e, (&o, &i)) in out.iter().zip(&x).enumerate() {
        assert_eq!(o, 2.0 * i, "element {e}");
    }
    let (kernel, sources) = common::load_text(&doubled_through_two_tiles(64, width));
    let layout = {
        let unit = nkic_backend::collect::collect(std::slice::from_ref(&kernel), &sources)
            .unwrap_or_else(|d| panic!("{d:?}"));
        nkic_backend::alloc::allocate(&unit, &sources).unwrap_or_else(|d| panic!("{d:?}"))
    };
    let starts: Vec<u32> = layout
        .placements
        .iter()
        .filter_map(|p| match p {
            Some(nkic_ir::Placement::OnChip { partition, .. }) => Some(*partition),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [0, 64]);
    // With 65 rows no half holds a tile: the kernel does not fit.
    let (kernel, sources) = common::load_text(&doubled_through_two_tiles(65, width));
    let config = BackendConfig {
        no_spill: true,
        ..BackendConfig::default()
    };
    let err = compile(&kernel, &sources, &config).expect_err("65 rows do not fit");
    assert_eq!(err[0].code, "E0901", "{err:?}");
}

/// The dependency graph leaves the reads of a tensor no op writes (the
/// input `x`) out of its index, but keeps those of a tensor an op writes
/// later: the write of `out` by op3 waits for op2's read of `out` (a
/// write-after-read edge, its only reason), as well as for op1's write of
/// `out` and op0's write of the tile it stores.
#[test]
fn a_write_waits_for_earlier_reads_of_its_tensor() {
    let text = format!(
        "{LOAD_X}op1 = dma_copy dst=t1[0:128, 0:64] src=t2[0:128, 0:64] engine=dma @ kernel.py:200..208
op2 = dma_copy dst=t3[0:128, 0:64] src=t1[0:128, 0:64] engine=dma @ kernel.py:240..248
op3 = dma_copy dst=t1[0:128, 0:64] src=t2[0:128, 0:64] engine=dma @ kernel.py:280..288
"
    );
    let graph = graph_of(&text, nkic_backend::deps::Edges::All);
    assert_eq!(graph.preds, vec![vec![], vec![0], vec![1], vec![0, 1, 2]]);
}
