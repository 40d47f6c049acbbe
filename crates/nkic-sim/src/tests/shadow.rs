//! The definedness shadow (`Poison::Precise`) on random masked kernels:
//! two inputs are loaded under random row/column masks into 16-partition
//! tiles, a random chain of elementwise instructions combines full tiles
//! (computing on the lanes the masks left unwritten, as legacy kernels
//! do), and a masked store writes part of the output. The defined part of
//! each tile is known by construction (the intersection of the masks it
//! depends on), so the test knows exactly which stored elements are
//! undefined.

use nkic_isa::insn;
use nkic_isa::{AluOp, DType, Imm, Instruction, Op, Program, Queue, Scalar, TensorId, TensorKind};
use proptest::prelude::*;

use super::*;
use crate::{Inputs, Poison, SimConfig};

const P: u32 = 16;
const F: u32 = 8;

/// One instruction of the chain: `Scale(i)` doubles tile `i`, `Add(i, j)`
/// adds tiles `i` and `j`, `Copy(i)` copies tile `i`; each writes a new
/// tile.
#[derive(Clone, Debug)]
enum Step {
    Scale(usize),
    Add(usize, usize),
    Copy(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0usize..8).prop_map(Step::Scale),
        (0usize..8, 0usize..8).prop_map(|(i, j)| Step::Add(i, j)),
        (0usize..8).prop_map(Step::Copy),
    ]
}

/// Tile `k` of the kernel, at SBUF byte offset `64 · k` of each partition.
fn t(k: usize, rows: u32, cols: u32) -> AccessPattern {
    sb(0, rows, 64 * k as u64, &[(1, cols)], DType::F32)
}

/// The program, and the defined rectangle (rows, columns) of its last
/// tile. With `garbage`, every tile is first set to that value, so no
/// read is ever of never-written memory.
fn kernel(
    masks: [(u32, u32); 2],
    steps: &[Step],
    store: (u32, u32),
    garbage: Option<f32>,
) -> (Program, (u32, u32)) {
    let mut p = program(&[
        ("a", DType::F32, &[P as u64, F as u64], TensorKind::Input),
        ("b", DType::F32, &[P as u64, F as u64], TensorKind::Input),
        ("out", DType::F32, &[P as u64, F as u64], TensorKind::Output),
    ]);
    let loaded = p.add_semaphore("loaded");
    let done = p.add_semaphore("done");
    let tiles = 2 + steps.len();
    // With `garbage`, the loads wait for the memsets (`ready`).
    let ready = garbage.map(|g| {
        for k in 0..tiles {
            p.stream_mut(Queue::GpSimd)
                .push(Instruction::new(Op::Memset(insn::Memset {
                    dst: t(k, P, F),
                    value: Imm::Float(nkic_isa::Fp32::new(g)),
                })));
        }
        let ready = p.add_semaphore("ready");
        if let Some(last) = p.stream_mut(Queue::GpSimd).last_mut() {
            last.signals.push(ready);
        }
        ready
    });
    for (k, &(rows, cols)) in masks.iter().enumerate() {
        let mut load = Instruction::new(dma_op(
            t(k, rows, cols),
            hbm(
                TensorId(k as u32),
                rows,
                i64::from(F),
                0,
                &[(1, cols)],
                DType::F32,
            ),
        ));
        if let Some(ready) = ready {
            load = load.wait(ready, 1);
        }
        p.stream_mut(Queue::Dma(0)).push(load);
    }
    if let Some(last) = p.stream_mut(Queue::Dma(0)).last_mut() {
        last.signals.push(loaded);
    }
    let mut defined: Vec<(u32, u32)> = masks.to_vec();
    for (n, s) in steps.iter().enumerate() {
        let k = 2 + n;
        let pick = |i: usize| i % k;
        let (op, rect) = match *s {
            Step::Scale(i) => (
                Op::tensor_scalar(
                    t(k, P, F),
                    t(pick(i), P, F),
                    AluOp::Multiply,
                    Scalar::imm(2.0),
                ),
                defined[pick(i)],
            ),
            Step::Add(i, j) => {
                let (a, b) = (defined[pick(i)], defined[pick(j)]);
                (
                    Op::TensorTensor(insn::TensorTensor {
                        dst: t(k, P, F),
                        src0: t(pick(i), P, F),
                        src1: t(pick(j), P, F),
                        op: AluOp::Add,
                    }),
                    (a.0.min(b.0), a.1.min(b.1)),
                )
            }
            Step::Copy(i) => (
                Op::TensorCopy(insn::TensorCopy {
                    dst: t(k, P, F),
                    src: t(pick(i), P, F),
                }),
                defined[pick(i)],
            ),
        };
        let mut inst = Instruction::new(op);
        if n == 0 {
            inst = inst.wait(loaded, 1);
        }
        p.stream_mut(Queue::Vector).push(inst);
        defined.push(rect);
    }
    if let Some(last) = p.stream_mut(Queue::Vector).last_mut() {
        last.signals.push(done);
    }
    let last = tiles - 1;
    let (rows, cols) = store;
    let store = Instruction::new(dma_op(
        hbm(TensorId(2), rows, i64::from(F), 0, &[(1, cols)], DType::F32),
        t(last, rows, cols),
    ))
    .wait(done, 1)
    .wait(loaded, 1);
    p.stream_mut(Queue::Dma(1)).push(store);
    (p, defined[last])
}

fn dma_op(dst: AccessPattern, src: AccessPattern) -> Op {
    Op::DmaCopy(insn::DmaCopy {
        dst,
        src,
        accumulate: false,
        dge: nkic_isa::DgeMode::None,
        oob: nkic_isa::OobMode::Error,
        priority: None,
    })
}

fn poison(poison: Poison) -> SimConfig {
    SimConfig {
        poison,
        ..SimConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn masked_kernels_keep_defined_elements_exact(
        masks in [(1..=P, 1..=F), (1..=P, 1..=F)],
        steps in prop::collection::vec(step(), 1..6),
        store in (1..=P, 1..=F),
        garbage in prop_oneof![Just(0.0f32), Just(-3.5), Just(f32::NAN), Just(1e30)],
    ) {
        let inputs = Inputs::new()
            .with("a", f32_bytes(&values((P * F) as usize, 1)))
            .with("b", f32_bytes(&values((P * F) as usize, 2)));
        let (plain, (dr, dc)) = kernel(masks, &steps, store, None);
        let precise = run(&plain, &inputs, &poison(Poison::Precise)).expect("the default runs");
        let got = precise.output("out").expect("out").to_vec();
        // What the shadow reports is exactly what the masks imply.
        let (sr, sc) = store;
        let stored = u64::from(sr * sc);
        let from_undefined = stored - u64::from(sr.min(dr) * sc.min(dc));
        let never = u64::from(P * F) - stored;
        let counts: Vec<(bool, u64)> = precise
            .undefined
            .iter()
            .map(|u| (u.origin.is_none(), u.elements))
            .collect();
        let mut want = Vec::new();
        if never > 0 {
            want.push((true, never));
        }
        if from_undefined > 0 {
            want.push((false, from_undefined));
        }
        prop_assert_eq!(counts, want);
        // `--poison error` passes only when nothing undefined is read or
        // left in the output; then it agrees bit for bit.
        if let Ok(strict) = run(&plain, &inputs, &poison(Poison::Error)) {
            prop_assert!(precise.undefined.is_empty());
            prop_assert_eq!(strict.output("out").map(|o| o.to_vec()), Some(got.clone()));
        }
        // Whatever the never-written memory held, every stored element the
        // masks define is bit-identical.
        let (filled, _) = kernel(masks, &steps, store, Some(garbage));
        let other = run(&filled, &inputs, &poison(Poison::Zero)).expect("runs");
        let other = other.output("out").expect("out").bytes();
        for r in 0..sr.min(dr) {
            for c in 0..sc.min(dc) {
                let at = ((r * F + c) * 4) as usize;
                prop_assert_eq!(&got[at..at + 4], &other[at..at + 4], "element [{}, {}]", r, c);
            }
        }
    }
}

/// Whether every element of `ap` is defined (`read_defined` succeeds).
fn defined(b: &mut Bench, ap: &AccessPattern) -> bool {
    let v = b.mem.view(ap, &b.regs, "src", false).expect("in bounds");
    b.mem.read_defined(&v, &mut Vec::new()).is_ok()
}

#[test]
fn accumulator_lanes_carry_undefined_rows_across_instructions() {
    let mut b = Bench::new();
    b.mem.set_poison(Poison::Precise);
    // Row 1 of `src` is never written.
    let src = tile(2, 3, 0, DType::F32);
    b.put(&tile(1, 3, 0, DType::F32), &[1.0, 2.0, 3.0]);
    let full = tile(2, 3, 64, DType::F32);
    b.put(&full, &[1.0; 6]);
    let cum = |dst: &AccessPattern, src: &AccessPattern, reduce_cmd| {
        Op::TensorScalarCumulative(insn::TensorScalarCumulative {
            dst: dst.clone(),
            src: src.clone(),
            op0: AluOp::Add,
            imm0: Scalar::imm(0.0),
            op1: AluOp::Add,
            imm1: None,
            reduce_cmd,
        })
    };
    let (first, second) = (tile(2, 3, 128, DType::F32), tile(2, 3, 192, DType::F32));
    b.ok(
        Queue::Vector,
        &cum(&first, &src, nkic_isa::ReduceCmd::ResetReduce),
    );
    assert!(defined(&mut b, &tile(1, 3, 128, DType::F32)));
    assert!(!defined(&mut b, &sb(1, 1, 128, &[(1, 3)], DType::F32)));
    // Continuing the scan from defined data: lane 1 still holds the
    // undefined sum, so row 1 stays undefined, row 0 is defined.
    b.ok(
        Queue::Vector,
        &cum(&second, &full, nkic_isa::ReduceCmd::Reduce),
    );
    assert!(defined(&mut b, &tile(1, 3, 192, DType::F32)));
    assert!(!defined(&mut b, &sb(1, 1, 192, &[(1, 3)], DType::F32)));
    // A reset forgets it.
    b.ok(
        Queue::Vector,
        &cum(&second, &full, nkic_isa::ReduceCmd::ResetReduce),
    );
    assert!(defined(&mut b, &second));
}

#[test]
fn stream_shuffle_moves_definedness_row_by_row() {
    // Rows 16..32 of `src` are never written: a shuffle moving row 16 to
    // row 0 (and writing nothing else) leaves row 0 undefined and row 1,
    // which it does not write, as it was; moving row 3 keeps row 0 defined.
    let mut b = Bench::new();
    b.mem.set_poison(Poison::Precise);
    b.put(&sb(0, 16, 0, &[(1, 4)], DType::F32), &[1.0; 64]);
    let src = sb(0, 32, 0, &[(1, 4)], DType::F32);
    let dst = sb(0, 32, 64, &[(1, 4)], DType::F32);
    b.put(&dst, &[2.0; 128]);
    let shuffle = |from: u8| {
        let mut mask = vec![255u8; 32];
        mask[0] = from;
        Op::StreamShuffle(insn::StreamShuffle {
            dst: dst.clone(),
            src: src.clone(),
            mask,
        })
    };
    b.ok(Queue::Vector, &shuffle(3));
    assert!(defined(&mut b, &dst));
    b.ok(Queue::Vector, &shuffle(16));
    assert!(!defined(&mut b, &sb(0, 1, 64, &[(1, 4)], DType::F32)));
    assert!(defined(&mut b, &sb(1, 31, 64, &[(1, 4)], DType::F32)));
}

/// A matmul adds into PSUM in place only when that is all reading and
/// writing it would do: undefined operands, an undefined or never-written
/// accumulator still make undefined results (or the uninitialised-read
/// fault), and defined ones stay defined.
#[test]
fn matmuls_into_psum_keep_definedness_and_faults() {
    let mut b = Bench::new();
    b.mem.set_poison(Poison::Precise);
    // Stationary row 1 (of K = 2) is never written: every product sums it.
    let st = tile(2, 4, 0, DType::F32);
    b.put(&tile(1, 4, 0, DType::F32), &[1.0; 4]);
    let good_st = tile(2, 4, 64, DType::F32);
    b.put(&good_st, &[1.0; 8]);
    let mv = tile(2, 3, 128, DType::F32);
    b.put(&mv, &[2.0; 6]);
    let dst = ps(tile(4, 3, 0, DType::F32));
    let mm =
        |s: &AccessPattern, accumulate| Op::matmul(dst.clone(), s.clone(), mv.clone(), accumulate);
    // Undefined operand: every output row undefined.
    b.ok(Queue::Tensor, &mm(&st, false));
    assert!(!defined(&mut b, &ps(sb(0, 1, 0, &[(1, 3)], DType::F32))));
    // Defined operands onto an undefined accumulator: still undefined.
    b.ok(Queue::Tensor, &mm(&good_st, true));
    assert!(!defined(&mut b, &ps(sb(3, 1, 0, &[(1, 3)], DType::F32))));
    // A fresh product makes it defined, and accumulating keeps it so.
    b.ok(Queue::Tensor, &mm(&good_st, false));
    assert!(defined(&mut b, &dst));
    b.ok(Queue::Tensor, &mm(&good_st, true));
    assert!(defined(&mut b, &dst));
    assert_eq!(b.get(&dst), vec![8.0; 12]);
    // Accumulating with an undefined operand makes it undefined again.
    b.ok(Queue::Tensor, &mm(&st, true));
    assert!(!defined(&mut b, &ps(sb(2, 1, 0, &[(1, 3)], DType::F32))));

    // Accumulating into never-written PSUM faults under `Poison::Error`.
    let mut b = Bench::new();
    b.put(&good_st, &[1.0; 8]);
    b.put(&mv, &[2.0; 6]);
    let err = b
        .exec(Queue::Tensor, &mm(&good_st, true))
        .expect_err("the accumulator was never written");
    assert_eq!(err.kind, crate::error::SimErrorKind::UninitialisedRead);
}
