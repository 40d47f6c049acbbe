//! The `.nkasm` corpus of `nkic-isa` (crates/nkic-isa/tests/corpus) run
//! through the assembler and the simulator.

use nkic_isa::{DType, Queue, assemble};

use super::*;
use crate::{Inputs, Poison, SimConfig, SimErrorKind, StepOrder};

const DYNAMIC_LOOP: &str = include_str!("../../../nkic-isa/tests/corpus/dynamic_loop.nkasm");
const ALL_OPS: &str = include_str!("../../../nkic-isa/tests/corpus/all_ops.nkasm");

fn loop_inputs(n: i32) -> (Vec<f32>, Inputs) {
    let a = values(1024 * 512, 21);
    let inputs = Inputs::new()
        .with("a", f32_bytes(&a))
        .with("n", n.to_le_bytes().to_vec());
    (a, inputs)
}

#[test]
fn dynamic_loop_computes_exp_of_every_tile_in_every_step_order() {
    let p = assemble(DYNAMIC_LOOP).expect("the corpus assembles");
    let (a, inputs) = loop_inputs(8);
    let want: Vec<f32> = a.iter().map(|&x| f64::from(x).exp() as f32).collect();
    let mut first = None;
    for order in [
        StepOrder::RoundRobin,
        StepOrder::Reverse,
        StepOrder::Earliest,
        StepOrder::Seeded(3),
    ] {
        let config = SimConfig {
            step_order: order,
            // The race sanitizer finds nothing to report in the corpus loop.
            race_check: true,
            ..SimConfig::default()
        };
        let r = run(&p, &inputs, &config).unwrap_or_else(|e| panic!("{order:?}: {e}"));
        assert_eq!(r.output("out").map(|o| o.to_vec()), Some(f32_bytes(&want)));
        match &first {
            None => first = Some(r),
            Some(f) => {
                assert_eq!(r.total_ps, f.total_ps, "{order:?}");
                assert_eq!(r.trace, f.trace, "{order:?}");
            }
        }
    }
    // Per queue: 3 setup instructions, `L1` and the first branch, then 8
    // iterations of `L0`, the data instruction, `reg_alu`, `L1`, `branch`.
    let f = first.expect("ran");
    assert_eq!(f.instructions, 3 * (3 + 2 + 8 * 5));
    let scalar = f
        .per_queue
        .iter()
        .find(|q| q.queue == Queue::Scalar)
        .expect("scalar stream");
    assert_eq!(scalar.instructions, 3 + 2 + 8 * 5);
}

#[test]
fn dynamic_loop_running_past_the_tensor_faults_at_its_source_line() {
    let p = assemble(DYNAMIC_LOOP).expect("the corpus assembles");
    let (_, inputs) = loop_inputs(9);
    let e = run(&p, &inputs, &SimConfig::default()).unwrap_err();
    assert_eq!(e.kind, SimErrorKind::OutOfBounds);
    assert_eq!(e.queue, Some(Queue::Dma(0)));
    assert_eq!(e.source.as_deref(), Some("loop.py:6:9"));
    assert_eq!(
        e.message,
        "out-of-bounds read of hbm tensor `a` bytes 2097152..2359296 (size 2097152) through `src`: index 1024 is out of bounds for axis 0 with size 1024"
    );
    assert_eq!(
        e.oob.as_deref(),
        Some(&crate::OutOfBounds {
            tensor: "a".to_owned(),
            shape: vec![1024, 512],
            axis: 0,
            index: 1024,
            flat_offset: 1024 * 512,
            field: "src",
            row: 0,
            index_tile: None,
        })
    );
    // Fewer iterations leave the output partly unwritten: an error with
    // `Poison::Error`, a warning by default.
    let (_, inputs) = loop_inputs(3);
    let strict = SimConfig {
        poison: Poison::Error,
        ..SimConfig::default()
    };
    let e = run(&p, &inputs, &strict).unwrap_err();
    assert_eq!(e.kind, SimErrorKind::UninitialisedRead);
    let r = run(&p, &inputs, &SimConfig::default()).expect("runs by default");
    assert_eq!(r.undefined.len(), 1);
    let u = &r.undefined[0];
    assert_eq!(
        (
            u.output.as_str(),
            u.elements,
            &u.first_index[..],
            u.origin.is_none()
        ),
        ("out", 5 * 128 * 512, &[3 * 128, 0][..], true)
    );
    let out = r.output("out").expect("out").bytes();
    assert!(
        out[3 * 128 * 512 * 4..]
            .chunks(4)
            .all(|c| c == f32::NAN.to_le_bytes())
    );
    let zero = SimConfig {
        poison: Poison::Zero,
        ..SimConfig::default()
    };
    let r = run(&p, &inputs, &zero).expect("runs with zero poison");
    let out = r.output("out").expect("out").bytes();
    assert!(out[3 * 128 * 512 * 4..].iter().all(|&b| b == 0));
}

#[test]
fn every_instruction_of_the_all_ops_corpus_executes() {
    let p = assemble(ALL_OPS).expect("the corpus assembles");
    let mut inputs = Inputs::new();
    for (_, t) in p.args() {
        if t.kind.is_arg() && t.kind != nkic_isa::TensorKind::Output {
            let bytes = match t.dtype {
                DType::I32 => vec![0; t.bytes() as usize],
                _ => f32_bytes(&values(t.bytes() as usize / 4, 5))
                    .into_iter()
                    .take(t.bytes() as usize)
                    .collect(),
            };
            inputs.insert(t.name.as_str(), bytes);
        }
    }
    // The corpus exercises every instruction once with no semaphores
    // between queues, so the race detector (rightly) objects to it.
    let config = SimConfig {
        poison: Poison::Zero,
        race_check: false,
        ..SimConfig::default()
    };
    let r = run(&p, &inputs, &config).unwrap_or_else(|e| panic!("{e}"));
    // With n = 0 the sync queue's loop body (`L0:` and `reg_alu`) never
    // runs; every other instruction executes once.
    let total: usize = p.queues.iter().map(|s| s.insts.len()).sum();
    assert_eq!(r.instructions as usize, total - 2);
}
