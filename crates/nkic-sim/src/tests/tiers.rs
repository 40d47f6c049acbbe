//! The native tier against the interpreter: fixed instructions that must
//! take the native path and give exact values, and a property test of
//! random well-formed instructions (random dtypes, operators, access
//! patterns, partition offsets, aliasing, poison policies and undefined
//! bytes) whose memory afterwards must be the interpreter's bit for bit.

use nkic_isa::insn;
use nkic_isa::{ActFunc, AluOp, DType, Dim, Fp32, Imm, Op, Queue, ReduceCmd, Scalar};
use proptest::prelude::*;

use super::*;
use crate::jit;

/// Runs `op` on `b` as the machine does in the native tier: natively if
/// it qualifies, else interpreted. Returns whether it ran natively.
fn run_native(b: &mut Bench, queue: Queue, op: &Op) -> (bool, Result<(), Fault>) {
    let mut e = b.context(queue, op);
    if let Some(res) = jit::run(&mut e, op, true) {
        return (true, res);
    }
    (false, e.run(op).map(|_| ()))
}

/// Runs `op` on `b`, which must take the native path and not fault.
#[track_caller]
fn native_ok(b: &mut Bench, queue: Queue, op: &Op) {
    let (native, res) = run_native(b, queue, op);
    assert!(native && res.is_ok());
}

/// Runs `op` on two benches set up by `setup`, one interpreting it and
/// one in the native tier (which it must take), and asserts that both
/// succeed and leave the same memory.
#[track_caller]
fn same_in_both_tiers(queue: Queue, op: &Op, setup: impl Fn(&mut Bench)) {
    let mut interp = Bench::new();
    let mut native = Bench::new();
    setup(&mut interp);
    setup(&mut native);
    let want = interp.exec(queue, op);
    let (ran, got) = run_native(&mut native, queue, op);
    assert!(ran && got.is_ok() && want.is_ok(), "{op:?}");
    let diff = native.mem.first_difference(&interp.mem);
    assert!(diff.is_none(), "{op:?}: {diff:?}");
}

#[test]
fn an_f32_add_runs_natively_with_exact_sums() {
    let mut b = Bench::new();
    let (x, y) = (values(128 * 64, 1), values(128 * 64, 2));
    b.put(&tile(128, 64, 0, DType::F32), &x);
    b.put(&tile(128, 64, 4096, DType::F32), &y);
    let op = Op::TensorTensor(insn::TensorTensor {
        dst: tile(128, 64, 8192, DType::F32),
        src0: tile(128, 64, 0, DType::F32),
        src1: tile(128, 64, 4096, DType::F32),
        op: AluOp::Add,
    });
    native_ok(&mut b, Queue::Vector, &op);
    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    assert_bits(&b.get(&tile(128, 64, 8192, DType::F32)), &want);
}

#[test]
fn a_bf16_tensor_scalar_rounds_to_nearest_even_natively() {
    let mut b = Bench::new();
    // 1 + 2^-8 is a tie between two bf16 values: it rounds to the even
    // one, 1.0; 1 + 3·2^-9 rounds up to 1 + 2^-7.
    let x = [
        1.0 + 1.0 / 256.0,
        1.0 + 3.0 / 512.0,
        f32::from_bits(0x7fc1_2345),
    ];
    b.put(&tile(1, 3, 0, DType::F32), &x);
    let op = Op::TensorScalar(insn::TensorScalar {
        dst: tile(1, 3, 64, DType::BF16),
        src: tile(1, 3, 0, DType::F32),
        op0: AluOp::Multiply,
        operand0: Some(Scalar::imm(1.0)),
        reverse0: false,
        op1: Some(AluOp::Subtract),
        operand1: Some(Scalar::imm(0.0)),
        reverse1: true,
    });
    native_ok(&mut b, Queue::Vector, &op);
    // `reverse1`: 0 - t, so every value is negated; the NaN keeps its top
    // payload bits and gets the quiet bit (x86 subtraction keeps the NaN
    // operand's payload).
    assert_eq!(
        b.get_bits(&tile(1, 3, 64, DType::BF16)),
        [0xbf80, 0xbf81, 0x7fc1]
    );
}

#[test]
fn an_activation_on_a_strided_source_runs_natively() {
    let mut b = Bench::new();
    let x = values(4 * 16, 3);
    b.put(&tile(4, 16, 0, DType::F32), &x);
    b.put(&tile(4, 1, 256, DType::F32), &[0.5, 1.0, 1.5, 2.0]);
    let op = Op::Activation(insn::Activation {
        dst: tile(4, 8, 512, DType::F16),
        src: sb(0, 4, 0, &[(2, 8)], DType::F32),
        func: ActFunc::Exp,
        scale: Scalar::Vector(tile(4, 1, 256, DType::F32)),
        bias: Some(Scalar::imm(-1.0)),
        reduce_op: None,
        reduce_cmd: nkic_isa::ReduceCmd::Idle,
        reduce_res: None,
    });
    native_ok(&mut b, Queue::Scalar, &op);
    let scale = [0.5f32, 1.0, 1.5, 2.0];
    let want: Vec<f32> = (0..32)
        .map(|k| {
            let (p, i) = (k / 8, k % 8);
            let v = x[p * 16 + 2 * i] * scale[p] - 1.0;
            q(DType::F16, f64::from(v).exp() as f32)
        })
        .collect();
    assert_bits(&b.get(&tile(4, 8, 512, DType::F16)), &want);
}

/// Where both operands of an add, subtract or multiply are NaN, both
/// tiers give the first operand's NaN (the interpreter's `a op b`), even
/// where the compiler could swap a commutative operation's operands: a
/// source NaN of one sign times a scale NaN of the other (found by the
/// property below, with `activation_reduce`).
#[test]
fn a_nan_times_a_nan_keeps_the_first_operands_sign_in_both_tiers() {
    let (minus, plus) = (f32::from_bits(0xffc0_1234), f32::from_bits(0x7fc0_5678));
    let x = [minus, plus, minus, plus, 1.0, minus];
    // float16 −NaN sources times float8_e4m3fn +NaN scales (and the
    // reverse), into float8_e4m3fn, whose NaN keeps its sign.
    let op = Op::ActivationReduce(insn::ActivationReduce {
        dst: tile(2, 3, 512, DType::F8E4M3FN),
        src: tile(2, 3, 0, DType::F16),
        func: ActFunc::Tanh,
        scale: Scalar::Vector(tile(2, 1, 256, DType::F8E4M3FN)),
        bias: None,
        reduce_op: AluOp::Abs,
        reduce_res: tile(2, 1, 384, DType::F32),
    });
    same_in_both_tiers(Queue::Scalar, &op, |b| {
        b.put_bits(
            &tile(2, 3, 0, DType::F16),
            &[0xfced, 0x7e01, 0xfced, 0x3c00, 0xfced, 0x7e01],
        );
        b.put_bits(&tile(2, 1, 256, DType::F8E4M3FN), &[0x7f, 0xff]);
    });
    for op in [AluOp::Add, AluOp::Subtract, AluOp::Multiply] {
        let op = Op::TensorTensor(insn::TensorTensor {
            dst: tile(2, 3, 512, DType::F32),
            src0: tile(2, 3, 0, DType::F32),
            src1: tile(2, 3, 128, DType::F32),
            op,
        });
        same_in_both_tiers(Queue::Vector, &op, |b| {
            b.put(&tile(2, 3, 0, DType::F32), &x);
            b.put(
                &tile(2, 3, 128, DType::F32),
                &[plus, minus, plus, minus, plus, plus],
            );
        });
    }
}

#[test]
fn a_tensor_reduce_folds_each_run_left_from_its_first_element_natively() {
    let mut b = Bench::new();
    let x = values(2 * 12, 4);
    b.put(&tile(2, 12, 0, DType::F32), &x);
    // [2, 3, 4] reduced over the last dim, the source walked with the
    // middle dim innermost.
    let op = Op::TensorReduce(insn::TensorReduce {
        dst: tile(2, 3, 256, DType::F32),
        src: sb(0, 2, 0, &[(1, 3), (3, 4)], DType::F32),
        op: AluOp::Add,
        last_dims: 1,
        negate: true,
    });
    native_ok(&mut b, Queue::Vector, &op);
    let want: Vec<f32> = (0..6)
        .map(|k| {
            let (p, j) = (k / 3, k % 3);
            let c = |i: usize| x[p * 12 + j + 3 * i];
            -(((c(0) + c(1)) + c(2)) + c(3))
        })
        .collect();
    assert_bits(&b.get(&tile(2, 3, 256, DType::F32)), &want);
}

#[test]
fn an_activation_reduce_sums_the_unrounded_values_natively() {
    let mut b = Bench::new();
    let x = values(2 * 5, 5);
    b.put(&tile(2, 5, 0, DType::F32), &x);
    let op = Op::ActivationReduce(insn::ActivationReduce {
        dst: tile(2, 5, 256, DType::BF16),
        src: tile(2, 5, 0, DType::F32),
        func: ActFunc::Copy,
        scale: Scalar::imm(1.5),
        bias: None,
        reduce_op: AluOp::Add,
        reduce_res: tile(2, 1, 512, DType::F32),
    });
    native_ok(&mut b, Queue::Scalar, &op);
    let want: Vec<f32> = (0..2)
        .map(|p| (0..5).fold(0.0, |r, i| r + x[p * 5 + i] * 1.5))
        .collect();
    assert_bits(&b.get(&tile(2, 1, 512, DType::F32)), &want);
    assert_bits(&b.acc.scalar[..2], &want);
}

#[test]
fn an_iota_saturates_into_int8_natively() {
    let mut b = Bench::new();
    // Row p, position i: -300 + 7·p + 100·i, clamped to [-128, 127].
    let op = Op::Iota(insn::Iota {
        dst: tile(2, 6, 0, DType::I8),
        pattern: vec![Dim::new(100, 6)],
        offset: -300,
        channel_multiplier: 7,
    });
    native_ok(&mut b, Queue::GpSimd, &op);
    let want: Vec<u32> = (0..12)
        .map(|k| {
            let v = -300 + 7 * (k / 6) + 100 * (k % 6);
            u32::from(v.clamp(-128, 127) as i8 as u8)
        })
        .collect();
    assert_eq!(b.get_bits(&tile(2, 6, 0, DType::I8)), want);
}

#[test]
fn a_scan_carries_its_f32_running_value_across_pieces_natively() {
    let mut b = Bench::new();
    let (x, y) = (values(2 * 6, 6), values(2 * 6, 7));
    b.put(&tile(2, 6, 0, DType::F32), &x);
    b.put(&tile(2, 6, 64, DType::F32), &y);
    b.put(&tile(2, 1, 128, DType::F32), &[0.5, -2.0]);
    // The source's rows walk two runs of three, so a row is two pieces.
    let op = Op::TensorTensorScan(insn::TensorTensorScan {
        dst: tile(2, 6, 256, DType::BF16),
        src0: sb(0, 2, 0, &[(3, 2), (1, 3)], DType::F32),
        src1: tile(2, 6, 64, DType::F32),
        initial: Scalar::Vector(tile(2, 1, 128, DType::F32)),
        op0: AluOp::Multiply,
        op1: AluOp::Add,
        reverse0: false,
        reverse1: false,
    });
    native_ok(&mut b, Queue::Vector, &op);
    let mut want = Vec::new();
    for (p, start) in [0.5f32, -2.0].into_iter().enumerate() {
        let mut r = start;
        for i in 0..6 {
            r = x[p * 6 + i] * r + y[p * 6 + i];
            want.push(q(DType::BF16, r));
        }
    }
    assert_bits(&b.get(&tile(2, 6, 256, DType::BF16)), &want);
}

#[test]
fn a_contiguous_copy_moves_whole_rows_of_odd_lengths_natively() {
    let mut b = Bench::new();
    // 13 bf16 elements per row (26 bytes), each row one memmove.
    let bits: Vec<u32> = (0..2 * 13).map(|k| 0x3f80 + k).collect();
    b.put_bits(&tile(2, 13, 2, DType::BF16), &bits);
    let op = Op::TensorCopy(insn::TensorCopy {
        dst: tile(2, 13, 100, DType::BF16),
        src: tile(2, 13, 2, DType::BF16),
    });
    native_ok(&mut b, Queue::Vector, &op);
    assert_eq!(b.get_bits(&tile(2, 13, 100, DType::BF16)), bits);
}

/// Dense f32 `tensor_tensor` and `tensor_scalar` run four lanes at a
/// time natively: on random bits (NaN payloads among them), rows of 67
/// elements (a tail after the lanes), every lane operator and reverse
/// flag, out of place and in place, the memory afterwards is the
/// interpreter's bit for bit.
#[test]
fn dense_f32_arithmetic_in_lanes_leaves_the_interpreters_bits() {
    let mut g = Gen(0x5eed);
    let bits: Vec<u32> = (0..2 * 128 * 67).map(|_| g.next() as u32).collect();
    let x = tile(128, 67, 0, DType::F32);
    let y = tile(128, 67, 512, DType::F32);
    let out = tile(128, 67, 1024, DType::F32);
    let ops = [
        AluOp::Add,
        AluOp::Average,
        AluOp::Subtract,
        AluOp::Multiply,
        AluOp::Bypass,
    ];
    let mut cases = Vec::new();
    for op in ops {
        for dst in [out.clone(), x.clone()] {
            cases.push(Op::TensorTensor(insn::TensorTensor {
                dst,
                src0: x.clone(),
                src1: y.clone(),
                op,
            }));
        }
        for (reverse0, reverse1) in [(false, false), (true, false), (false, true)] {
            let operand = Scalar::Imm(Fp32::new(f32::from_bits(0x7fa0_0001)));
            cases.push(Op::TensorScalar(insn::TensorScalar {
                dst: out.clone(),
                src: x.clone(),
                op0: op,
                operand0: Some(Scalar::Imm(Fp32::new(-1.5))),
                reverse0,
                op1: Some(AluOp::Subtract),
                operand1: Some(operand),
                reverse1,
            }));
        }
    }
    for op in cases {
        same_in_both_tiers(Queue::Vector, &op, |b| {
            b.put_bits(&x, &bits[..128 * 67]);
            b.put_bits(&y, &bits[128 * 67..]);
        });
    }
}

/// Dense rows of bf16 and f32 operands in lanes (`jit::compile`'s
/// `Emit::wide`: four elements at a time, bf16 decoded and rounded per
/// lane; `Emit::wide_exp`: `exp` through `exp::exp_in_place` a chunk at a
/// time) leave the interpreter's bits: random bit patterns (NaN payloads,
/// infinities, rounding ties, inputs of `exp` far outside its range),
/// rows of 67 elements (a tail after the groups), in place too.
#[test]
fn dense_bf16_and_f32_rows_in_lanes_leave_the_interpreters_bits() {
    let mut g = Gen(0xb16);
    let bits: Vec<u32> = (0..2 * 128 * 67).map(|_| g.next() as u32).collect();
    let at = |offset: u64, dt: DType| tile(128, 67, offset, dt);
    let (bf, f) = (DType::BF16, DType::F32);
    // Each case with the dtypes its two sources are read as.
    let mut cases = Vec::new();
    for (d, a, b) in [(bf, bf, bf), (bf, bf, f), (f, bf, bf), (bf, f, f)] {
        for op in [AluOp::Add, AluOp::Subtract, AluOp::Multiply] {
            let tt = |dst| {
                Op::TensorTensor(insn::TensorTensor {
                    dst,
                    src0: at(0, a),
                    src1: at(512, b),
                    op,
                })
            };
            cases.push((tt(at(1024, d)), a, Some(b)));
            if d == a {
                cases.push((tt(at(0, d)), a, Some(b)));
            }
        }
        let ts = Op::TensorScalar(insn::TensorScalar {
            dst: at(1024, d),
            src: at(0, a),
            op0: AluOp::Subtract,
            operand0: Some(Scalar::imm(0.375)),
            reverse0: true,
            op1: Some(AluOp::Multiply),
            operand1: Some(Scalar::imm(-3.0)),
            reverse1: false,
        });
        let stt = Op::ScalarTensorTensor(insn::ScalarTensorTensor {
            dst: at(1024, d),
            src: at(0, a),
            op0: AluOp::Subtract,
            operand0: Scalar::imm(1.5),
            reverse0: false,
            op1: AluOp::Multiply,
            src1: at(512, b),
            reverse1: false,
        });
        let copy = Op::TensorCopy(insn::TensorCopy {
            dst: at(1024, d),
            src: at(0, a),
        });
        let exp = Op::Activation(insn::Activation {
            dst: at(1024, d),
            src: at(0, a),
            func: ActFunc::Exp,
            scale: Scalar::imm(0.5),
            bias: Some(Scalar::imm(-1.0)),
            reduce_op: None,
            reduce_cmd: ReduceCmd::Idle,
            reduce_res: None,
        });
        cases.extend([
            (ts, a, None),
            (stt, a, Some(b)),
            (copy, a, None),
            (exp, a, None),
        ]);
    }
    for (op, a, b) in cases {
        let queue = if matches!(op, Op::Activation(_)) {
            Queue::Scalar
        } else {
            Queue::Vector
        };
        same_in_both_tiers(queue, &op, |bench| {
            bench.put_bits(&at(0, a), &bits[..128 * 67]);
            if let Some(b) = b {
                bench.put_bits(&at(512, b), &bits[128 * 67..]);
            }
        });
    }
}

/// `affine_select` into dense f32 rows runs in four lanes (one select of
/// the source's value or `on_false`) and gives the element loop's bits:
/// every comparison, f32 and bf16 sources (NaN payloads included, kept
/// as they are), in place, masks crossing each row at a different
/// element (the causal mask of an attention tile), a large offset near
/// where i32 values stop being exact in f32, and rows too short for a
/// group of four.
#[test]
fn affine_selects_in_lanes_leave_the_interpreters_bits() {
    let mut g = Gen(0xaff1);
    let bits: Vec<u32> = (0..128 * 67).map(|_| g.next() as u32).collect();
    let at = |offset: u64, dt: DType, f: u32| tile(128, f, offset, dt);
    let comparisons = [
        AluOp::Equal,
        AluOp::NotEqual,
        AluOp::GreaterEqual,
        AluOp::Greater,
        AluOp::LessEqual,
        AluOp::Less,
    ];
    for a in [DType::F32, DType::BF16] {
        for (k, cmp) in comparisons.into_iter().enumerate() {
            for (pattern, offset, multiplier) in
                [(-1, 0, 1), (1, -40, 1), (-1, 16_777_217, -1), (2, 3, 0)]
            {
                for f in [67, 3] {
                    let select = |dst| {
                        Op::AffineSelect(insn::AffineSelect {
                            dst,
                            src: at(0, a, f),
                            pattern: vec![Dim::new(pattern, f)],
                            offset: offset + k as i32,
                            channel_multiplier: multiplier,
                            cmp,
                            on_false: Fp32::new(-3.402_823_5e38),
                        })
                    };
                    let mut ops = vec![select(at(1024, DType::F32, f))];
                    if a == DType::F32 {
                        ops.push(select(at(0, a, f)));
                    }
                    for op in ops {
                        same_in_both_tiers(Queue::GpSimd, &op, |bench| {
                            bench.put_bits(&at(0, a, f), &bits[..128 * f as usize]);
                        });
                    }
                }
            }
        }
    }
}

/// Maximum and minimum reductions of dense f32 and bf16 rows, folded in
/// four lanes (`Emit::wide_fold`), give the element loop's bits: NaN
/// payloads become the default NaN, a row whose extreme is zero keeps
/// the sign of its first zero, rows too short for a group of four keep
/// their first element as it is, and a run continued from an earlier
/// piece folds the accumulator in.
#[test]
fn max_and_min_reductions_in_lanes_leave_the_interpreters_bits() {
    let mut g = Gen(0xf01d);
    for dt in [DType::F32, DType::BF16] {
        // f32 bit patterns of each row's kind of values.
        let f = |x: f32| x.to_bits();
        let row = |g: &mut Gen, p: usize, len: usize| -> Vec<u32> {
            (0..len)
                .map(|i| match p % 8 {
                    0 => g.next() as u32,
                    1 => f(if g.chance(2) { 0.0 } else { -0.0 }),
                    2 => f([-1.0, -2.5, 0.0, -0.0, -0.5][i % 5]),
                    3 => f([-1.0, -0.0, -3.0, 0.0][i % 4]),
                    4 => f((g.next() % 1000) as f32 / 7.0),
                    5 if i == len / 2 => 0x7fa0_1234,
                    6 => f(f32::NEG_INFINITY),
                    _ => f((g.next() % 2001) as f32 / 16.0 - 62.5),
                })
                .collect()
        };
        for len in [1, 3, 4, 5, 8, 67] {
            let mut bits = Vec::new();
            for p in 0..128 {
                bits.extend(row(&mut g, p, len));
            }
            let bits: Vec<u32> = match dt {
                DType::BF16 => bits.iter().map(|b| b >> 16).collect(),
                _ => bits,
            };
            for op in [AluOp::Maximum, AluOp::Minimum] {
                for (src, dst, last_dims) in [
                    (
                        tile(128, len as u32, 0, dt),
                        tile(128, 1, 1024, DType::F32),
                        1,
                    ),
                    // Three runs of a third of the row each (when it has
                    // one), then the whole row as one run over two dims.
                    (
                        sb(0, 128, 0, &[(len as i64 / 3, 3), (1, len as u32 / 3)], dt),
                        tile(128, 3, 1024, DType::F32),
                        1,
                    ),
                    (
                        sb(0, 128, 0, &[(len as i64 / 3, 3), (1, len as u32 / 3)], dt),
                        tile(128, 1, 1024, DType::F32),
                        2,
                    ),
                ] {
                    if src.num_elements() == 0 {
                        continue;
                    }
                    let op = Op::TensorReduce(insn::TensorReduce {
                        dst,
                        src,
                        op,
                        last_dims,
                        negate: false,
                    });
                    same_in_both_tiers(Queue::Vector, &op, |b| {
                        b.put_bits(&tile(128, len as u32, 0, dt), &bits);
                    });
                }
            }
        }
    }
}

/// Instructions of 128 rows of 1024 elements, large enough for the
/// native tier to split their rows over two threads (`call_rows`), leave
/// the interpreter's bytes and per-row folds: in place, into another tile,
/// with per-row scales and an accumulated reduction.
#[test]
fn rows_split_over_two_threads_leave_the_interpreters_bits() {
    let mut g = Gen(0x5b1d);
    let n = 128 * 1024;
    let bits: Vec<u32> = (0..n)
        .map(|_| (g.next() as u32 & 0x807f_ffff) | ((g.below(12) as u32 + 120) << 23))
        .collect();
    let x = tile(128, 1024, 0, DType::F32);
    let out = tile(128, 1024, 4096, DType::BF16);
    let scale = tile(128, 1, 8192, DType::F32);
    let sums = tile(128, 1, 8196, DType::F32);
    let scales: Vec<u32> = (0..128)
        .map(|p| (0.25f32 * (p % 7) as f32 - 0.5).to_bits())
        .collect();
    let act = |dst: &AccessPattern, reduce: bool| {
        Op::Activation(insn::Activation {
            dst: dst.clone(),
            src: x.clone(),
            func: ActFunc::Exp,
            scale: Scalar::Vector(scale.clone()),
            bias: Some(Scalar::imm(-1.0)),
            reduce_op: reduce.then_some(AluOp::Add),
            reduce_cmd: if reduce {
                ReduceCmd::ResetReduce
            } else {
                ReduceCmd::Idle
            },
            reduce_res: reduce.then(|| sums.clone()),
        })
    };
    for op in [act(&x, false), act(&out, false), act(&out, true)] {
        same_in_both_tiers(Queue::Scalar, &op, |b| {
            b.put_bits(&x, &bits);
            b.put_bits(&scale, &scales);
        });
    }
    // Tiles side by side in the same partitions, the destination between
    // its sources and after them (`rows_apart`).
    let y = tile(128, 1024, 8200, DType::F32);
    let mid = tile(128, 1024, 4096, DType::F32);
    let after = tile(128, 1024, 12296, DType::F32);
    let add = |dst: &AccessPattern, src1: &AccessPattern| {
        Op::TensorTensor(insn::TensorTensor {
            dst: dst.clone(),
            src0: x.clone(),
            src1: src1.clone(),
            op: AluOp::Add,
        })
    };
    for op in [add(&mid, &y), add(&after, &y)] {
        same_in_both_tiers(Queue::Vector, &op, |b| {
            b.put_bits(&x, &bits);
            b.put_bits(&y, &bits[..n].iter().rev().copied().collect::<Vec<_>>());
        });
    }
}

/// Instructions whose rows are several pieces (a reduction, one piece per
/// output element; a transposing walk of the source, in place), large
/// enough for `call_pieces` to run the two halves of their rows on two
/// threads, leave the interpreter's bytes.
#[test]
fn pieces_split_over_two_threads_leave_the_interpreters_bits() {
    let mut g = Gen(0x9e3c);
    let bits: Vec<u32> = (0..128 * 1024)
        .map(|_| (g.next() as u32 & 0x807f_ffff) | ((g.below(12) as u32 + 120) << 23))
        .collect();
    let x = tile(128, 1024, 0, DType::F32);
    let cases = [
        // 128 rows of 16 sums of 64 elements, walked with the 16 outputs
        // innermost.
        Op::TensorReduce(insn::TensorReduce {
            dst: tile(128, 16, 4096, DType::F32),
            src: sb(0, 128, 0, &[(64, 16), (1, 64)], DType::F32),
            op: AluOp::Maximum,
            last_dims: 1,
            negate: false,
        }),
        // A source walked 32 x 32 transposed into a bf16 tile.
        Op::Activation(insn::Activation {
            dst: tile(128, 1024, 4096, DType::BF16),
            src: sb(0, 128, 0, &[(1, 32), (32, 32)], DType::F32),
            func: ActFunc::Exp,
            scale: Scalar::imm(0.5),
            bias: None,
            reduce_op: None,
            reduce_cmd: ReduceCmd::Idle,
            reduce_res: None,
        }),
        // The same walk of both, in place.
        Op::TensorTensor(insn::TensorTensor {
            dst: sb(0, 128, 0, &[(1, 32), (32, 32)], DType::F32),
            src0: sb(0, 128, 0, &[(1, 32), (32, 32)], DType::F32),
            src1: sb(0, 128, 0, &[(1, 32), (32, 32)], DType::F32),
            op: AluOp::Multiply,
        }),
    ];
    for op in cases {
        let queue = if matches!(op, Op::Activation(_)) {
            Queue::Scalar
        } else {
            Queue::Vector
        };
        same_in_both_tiers(queue, &op, |b| b.put_bits(&x, &bits));
    }
}

/// The native `exp` (its inline fast path and its libm fallback) gives
/// libm's f32 bits: over a strided sample of every f32 bit pattern, the
/// specials, and in-range inputs whose fast result is too near an f32
/// rounding midpoint to be trusted (`exp::fast` gives `None`).
#[test]
fn the_exp_activation_gives_libm_exp_natively() {
    // Every input of [1, 88] and [-87, -1] whose fast result is too near a
    // midpoint (a dozen or so each), the specials, then a strided sample.
    let in_range = |x: f32| (crate::exp::LO..=crate::exp::HI).contains(&f64::from(x));
    let mut bits: Vec<u32> = (0x3f80_0000..=0x42b0_0000u32)
        .chain(0xbf80_0000..=0xc2ae_0000)
        .filter(|&b| in_range(f32::from_bits(b)) && crate::exp::fast(f32::from_bits(b)).is_none())
        .collect();
    assert!(bits.len() >= 10, "{}", bits.len());
    bits.extend(
        [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            88.5,
            -87.5,
            -3.0e38,
            -104.0,
            -103.97,
            89.0,
            0.0,
            -0.0,
            1.0,
        ]
        .map(f32::to_bits),
    );
    let sample = (0..).map(|i: u32| i.wrapping_mul(16_411) ^ 0x5a5a);
    bits.extend(sample.take(128 * 2048 - bits.len()));
    let mut b = Bench::new();
    b.put_bits(&tile(128, 2048, 0, DType::F32), &bits);
    let op = Op::Activation(insn::Activation {
        dst: tile(128, 2048, 8192, DType::F32),
        src: tile(128, 2048, 0, DType::F32),
        func: ActFunc::Exp,
        scale: Scalar::imm(1.0),
        bias: None,
        reduce_op: None,
        reduce_cmd: nkic_isa::ReduceCmd::Idle,
        reduce_res: None,
    });
    native_ok(&mut b, Queue::Scalar, &op);
    let want: Vec<u32> = bits
        .iter()
        .map(|&x| (f64::from(f32::from_bits(x)).exp() as f32).to_bits())
        .collect();
    assert_eq!(b.get_bits(&tile(128, 2048, 8192, DType::F32)), want);
    // A destination every other element: the element loop's inline `exp`
    // instead of the dense rows' `exp::exp_in_place`.
    let strided = sb(0, 128, 16384, &[(2, 2048)], DType::F32);
    let Op::Activation(mut every_other) = op else {
        unreachable!("an activation")
    };
    every_other.dst = strided.clone();
    native_ok(&mut b, Queue::Scalar, &Op::Activation(every_other));
    assert_eq!(b.get_bits(&strided), want);
}

/// Every fp16 bit pattern decodes natively to `numerics::to_f32`'s bits
/// (zeros, subnormals, normals, infinities, NaN payloads).
#[test]
fn every_f16_value_decodes_natively_as_numerics_does() {
    let mut b = Bench::new();
    let bits: Vec<u32> = (0..1 << 16).collect();
    b.put_bits(&tile(128, 512, 0, DType::F16), &bits);
    let op = Op::TensorCopy(insn::TensorCopy {
        dst: tile(128, 512, 4096, DType::F32),
        src: tile(128, 512, 0, DType::F16),
    });
    native_ok(&mut b, Queue::Vector, &op);
    let want: Vec<u32> = bits
        .iter()
        .map(|&h| numerics::to_f32(DType::F16, h).to_bits())
        .collect();
    assert_eq!(b.get_bits(&tile(128, 512, 4096, DType::F32)), want);
}

/// f32 values at every exponent, with the mantissas that decide fp16
/// rounding (ties, one above and below, the subnormal boundaries), and
/// NaN payloads, encode natively to `numerics::from_f32`'s bits.
#[test]
fn f32_values_encode_to_f16_natively_as_numerics_does() {
    let mut b = Bench::new();
    let mantissas = [
        0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2fff, 0x3000, 0x3001, 0x40_0000, 0x40_0001,
        0x3f_ffff, 0x20_0000, 0x7f_e000, 0x7f_efff, 0x7f_f000, 0x7f_ffff, 0x12_3456, 0x55_5555,
        0x2a_aaaa, 0x7f_dfff, 0x00_3000, 0x00_0800, 0x00_07ff, 0x10_0000, 0x08_0000, 0x04_0000,
        0x02_0000, 0x01_0000, 0x00_8000, 0x00_4000,
    ];
    let mut bits = Vec::new();
    for sign in [0u32, 0x8000_0000] {
        for exp in 0..256u32 {
            for &m in &mantissas {
                bits.push(sign | exp << 23 | m);
            }
        }
    }
    let mut g = Gen(0x5eed);
    while bits.len() < 128 * 512 {
        bits.push(g.next() as u32);
    }
    b.put_bits(&tile(128, 512, 0, DType::F32), &bits);
    let op = Op::TensorCopy(insn::TensorCopy {
        dst: tile(128, 512, 4096 * 4, DType::F16),
        src: tile(128, 512, 0, DType::F32),
    });
    native_ok(&mut b, Queue::Vector, &op);
    let want: Vec<u32> = bits
        .iter()
        .map(|&x| numerics::from_f32(DType::F16, f32::from_bits(x)))
        .collect();
    let got = b.get_bits(&tile(128, 512, 4096 * 4, DType::F16));
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "f32 bits {:#010x}", bits[k]);
    }
}

#[test]
fn an_undefined_source_byte_leaves_the_instruction_to_the_interpreter() {
    let mut b = Bench::new();
    b.mem.set_poison(Poison::Precise);
    b.put(&tile(2, 4, 0, DType::F32), &[1.0; 8]);
    let op = Op::TensorCopy(insn::TensorCopy {
        dst: tile(2, 8, 64, DType::BF16),
        src: tile(2, 8, 0, DType::F32),
    });
    let (native, res) = run_native(&mut b, Queue::Vector, &op);
    assert!(!native && res.is_ok());
    let got = b.get_bits(&tile(2, 8, 64, DType::BF16));
    assert_eq!(got[..4], [0x3f80; 4]);
    assert_eq!(got[4..8], [0x7fc0; 4]);
}

/// A copy of never-written bytes over `dst` (`u8`), run by the
/// interpreter: with `Poison::Precise` it leaves them written and
/// undefined, with the copy's origin.
fn undefine(b: &mut Bench, dst: AccessPattern) {
    let src = AccessPattern {
        offset: 6 * REGION,
        ..dst.clone()
    };
    b.ok(
        Queue::Vector,
        &Op::TensorCopy(insn::TensorCopy { dst, src }),
    );
}

/// Sources holding written but undefined elements (a tile some of whose
/// elements were computed from never-written memory) run natively, and
/// the destination's definedness, origins and the accumulators' taint are
/// the interpreter's: elementwise, broadcast along the free axis, in
/// place, and folded into accumulator lanes.
#[test]
fn written_undefined_sources_run_natively_with_the_interpreters_shadow() {
    let setup = |b: &mut Bench| {
        b.mem.set_poison(Poison::Precise);
        b.put(&tile(4, 8, 0, DType::F32), &values(32, 1));
        b.put(&tile(4, 8, 256, DType::BF16), &values(32, 2));
        b.put(&tile(4, 1, 512, DType::F32), &[0.5, 1.5, 2.5, 3.5]);
        // Elements 2 and 3 of rows 1 and 2 of the f32 tile, then all of
        // row 3 of the bf16 tile from a second copy (another origin).
        undefine(b, sb(1, 2, 8, &[(1, 8)], DType::U8));
        undefine(b, sb(3, 1, 256, &[(1, 16)], DType::U8));
    };
    let f32_tile = tile(4, 8, 0, DType::F32);
    let bf16_tile = tile(4, 8, 256, DType::BF16);
    let ops = [
        (
            Queue::Vector,
            Op::TensorTensor(insn::TensorTensor {
                dst: tile(4, 8, 1024, DType::BF16),
                src0: f32_tile.clone(),
                src1: bf16_tile.clone(),
                op: AluOp::Add,
            }),
        ),
        (
            Queue::Vector,
            Op::TensorScalar(insn::TensorScalar {
                dst: f32_tile.clone(),
                src: f32_tile.clone(),
                op0: AluOp::Multiply,
                operand0: Some(Scalar::Vector(tile(4, 1, 512, DType::F32))),
                reverse0: false,
                op1: Some(AluOp::Subtract),
                operand1: Some(Scalar::imm(1.0)),
                reverse1: true,
            }),
        ),
        (
            Queue::Scalar,
            Op::ActivationReduce(insn::ActivationReduce {
                dst: tile(4, 8, 1024, DType::F32),
                src: bf16_tile.clone(),
                func: ActFunc::Exp,
                scale: Scalar::imm(0.5),
                bias: None,
                reduce_op: AluOp::Add,
                reduce_res: tile(4, 1, 2048, DType::F32),
            }),
        ),
        (
            Queue::Vector,
            Op::TensorReduce(insn::TensorReduce {
                dst: tile(4, 1, 1024, DType::F32),
                src: f32_tile.clone(),
                op: AluOp::Maximum,
                last_dims: 1,
                negate: false,
            }),
        ),
    ];
    for (i, (queue, op)) in ops.iter().enumerate() {
        let mut interp = Bench::new();
        let mut native = Bench::new();
        setup(&mut interp);
        setup(&mut native);
        interp.ok(*queue, op);
        native_ok(&mut native, *queue, op);
        let diff = native.mem.first_difference(&interp.mem);
        assert!(diff.is_none(), "{op:?}: {diff:?}");
        assert_eq!(native.acc.scalar_undef, interp.acc.scalar_undef, "{op:?}");
        assert_eq!(native.acc.vector_undef, interp.acc.vector_undef, "{op:?}");
        if i == 0 {
            // The destination did take undefinedness: the test is not
            // vacuous.
            let undefined: Vec<u32> = (0..32)
                .filter(|&k| {
                    let element = sb(
                        k / 8,
                        1,
                        1024 + u64::from(k % 8) * 2,
                        &[(1, 1)],
                        DType::BF16,
                    );
                    !native.mem.is_clean(&native.view(&element, false))
                })
                .collect();
            assert_eq!(undefined, [10, 11, 18, 19, 24, 25, 26, 27, 28, 29, 30, 31]);
        }
    }
}

/// A small deterministic generator (the property test draws its seed).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    fn chance(&mut self, in_n: u64) -> bool {
        self.below(in_n) == 0
    }

    /// A float immediate: ordinary values, special values, or raw bits.
    fn float(&mut self) -> f32 {
        match self.below(4) {
            0 => self.pick(&[0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, f32::INFINITY, f32::NAN]),
            1 => f32::from_bits(self.next() as u32),
            _ => (self.below(2001) as f32 - 1000.0) / 64.0,
        }
    }
}

const DTYPES: [DType; 14] = [
    DType::F32,
    DType::BF16,
    DType::F16,
    DType::TF32,
    DType::F8E4M3,
    DType::F8E4M3FN,
    DType::F8E5M2,
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::Bool,
];

/// Where each operand lives in every partition.
const REGION: u64 = 4096;

/// An operand pattern of `p` rows from `start`, free dims `counts`, in
/// region `region`: contiguous, strided, reversed or (for sources)
/// broadcast along a random dim.
fn pattern(
    g: &mut Gen,
    start: u32,
    p: u32,
    counts: &[u32],
    region: u64,
    dt: DType,
    source: bool,
) -> AccessPattern {
    let size = dt.size() as i64;
    let mut dims = Vec::new();
    let mut stride = 1i64 + g.below(2) as i64;
    for &c in counts.iter().rev() {
        dims.push((stride, c));
        stride *= i64::from(c) * (1 + g.below(2) as i64);
    }
    dims.reverse();
    if source && g.chance(4) && !dims.is_empty() {
        let k = g.below(dims.len() as u64) as usize;
        dims[k].0 = 0;
    }
    let mut offset = region + g.below(8) * size as u64;
    if g.chance(5) && !dims.is_empty() {
        // Walk the innermost dim backwards.
        let last = dims.len() - 1;
        let (s, c) = dims[last];
        offset += (s * (i64::from(c) - 1) * size) as u64;
        dims[last].0 = -s;
    }
    sb(start, p, offset, &dims, dt)
}

/// One random compute instruction of a kind the native tier supports, on
/// operands in distinct regions (or, sometimes, the destination exactly
/// on the first source).
fn instruction(g: &mut Gen) -> (Queue, Op) {
    let start = g.below(64) as u32;
    let p = 1 + g.below(64) as u32;
    let counts: Vec<u32> = (0..1 + g.below(3)).map(|_| 1 + g.below(5) as u32).collect();
    let dt = |g: &mut Gen| g.pick(&DTYPES);
    let a_dt = dt(g);
    let a = pattern(g, start, p, &counts, 0, a_dt, true);
    let d_dt = dt(g);
    let mut dst = pattern(g, start, p, &counts, 2 * REGION, d_dt, false);
    if g.chance(4) {
        dst = a.clone();
        let same_size: Vec<DType> = DTYPES
            .into_iter()
            .filter(|d| d.size() == a_dt.size())
            .collect();
        dst.dtype = g.pick(&same_size);
    }
    let scalar = |g: &mut Gen, k: u64| {
        if g.chance(2) {
            Scalar::Imm(Fp32::new(g.float()))
        } else {
            let sdt = g.pick(&DTYPES);
            let c = 1 + g.below(3) as u32;
            Scalar::Vector(sb(start, p, 3 * REGION + k * 64, &[(1, c)], sdt))
        }
    };
    let queue = g.pick(&[Queue::Vector, Queue::GpSimd, Queue::Scalar]);
    // An accumulator read-out: one value per row.
    let res = |g: &mut Gen| sb(start, p, 3 * REGION + 256, &[(1, 1)], g.pick(&DTYPES));
    let cmd = |g: &mut Gen| g.pick(ReduceCmd::ALL);
    // An affine pattern over the free positions, and its offsets.
    let affine = |g: &mut Gen| {
        let pattern: Vec<Dim> = counts
            .iter()
            .map(|&c| Dim::new(g.below(9) as i64 - 4, c))
            .collect();
        let offset = if g.chance(3) {
            g.next() as i32
        } else {
            g.below(64) as i32 - 32
        };
        (pattern, offset, g.below(9) as i32 - 4)
    };
    let op = match g.below(19) {
        0 => {
            let b_dt = dt(g);
            Op::TensorTensor(insn::TensorTensor {
                dst,
                src0: a,
                src1: pattern(g, start, p, &counts, REGION, b_dt, true),
                op: g.pick(AluOp::ALL),
            })
        }
        1 => Op::TensorScalar(insn::TensorScalar {
            dst,
            src: a,
            op0: g.pick(AluOp::ALL),
            operand0: (!g.chance(8)).then(|| scalar(g, 0)),
            reverse0: g.chance(2),
            op1: (!g.chance(3)).then(|| g.pick(AluOp::ALL)),
            operand1: Some(scalar(g, 1)),
            reverse1: g.chance(2),
        }),
        2 => Op::Activation(insn::Activation {
            dst,
            src: a,
            func: g.pick(ActFunc::ALL),
            scale: scalar(g, 0),
            bias: (!g.chance(3)).then(|| scalar(g, 1)),
            reduce_op: g.chance(2).then(|| g.pick(AluOp::ALL)),
            reduce_cmd: if g.chance(2) { ReduceCmd::Idle } else { cmd(g) },
            reduce_res: g.chance(2).then(|| res(g)),
        }),
        7 => Op::ActivationReduce(insn::ActivationReduce {
            dst,
            src: a,
            func: g.pick(ActFunc::ALL),
            scale: scalar(g, 0),
            bias: (!g.chance(3)).then(|| scalar(g, 1)),
            reduce_op: g.pick(AluOp::ALL),
            reduce_res: res(g),
        }),
        8 => Op::TensorScalarReduce(insn::TensorScalarReduce {
            dst,
            src: a,
            op0: g.pick(AluOp::ALL),
            operand0: (!g.chance(8)).then(|| scalar(g, 0)),
            reduce_op: g.pick(AluOp::ALL),
            reduce_cmd: cmd(g),
            reduce_init: g.chance(2).then(|| scalar(g, 2)),
            reduce_res: g.chance(2).then(|| res(g)),
            reduce_res_negate: g.chance(2),
        }),
        9 => {
            // Reduce the last `last_dims` dims of a source laid out in the
            // destination's region (the destination keeps the others).
            let last = 1 + g.below(counts.len() as u64) as usize;
            let kept = &counts[..counts.len() - last];
            let mut dst = pattern(g, start, p, kept, 2 * REGION, d_dt, false);
            if g.chance(8) {
                // Sometimes on the source: left to the interpreter.
                dst.offset -= 2 * REGION;
            }
            Op::TensorReduce(insn::TensorReduce {
                dst,
                src: a,
                op: g.pick(AluOp::ALL),
                last_dims: last as u8,
                negate: g.chance(2),
            })
        }
        3 => Op::TensorCopy(insn::TensorCopy { dst, src: a }),
        5 => Op::DmaCopy(insn::DmaCopy {
            dst,
            src: a,
            accumulate: g.chance(4),
            dge: nkic_isa::DgeMode::None,
            oob: nkic_isa::OobMode::Error,
            priority: None,
        }),
        4 => {
            let b_dt = dt(g);
            Op::ScalarTensorTensor(insn::ScalarTensorTensor {
                dst,
                src: a,
                op0: g.pick(AluOp::ALL),
                operand0: scalar(g, 0),
                reverse0: g.chance(2),
                op1: g.pick(AluOp::ALL),
                src1: pattern(g, start, p, &counts, REGION, b_dt, true),
                reverse1: g.chance(2),
            })
        }
        10 => {
            let (pattern, offset, channel_multiplier) = affine(g);
            Op::Iota(insn::Iota {
                dst,
                pattern,
                offset,
                channel_multiplier,
            })
        }
        11 => {
            let (pattern, offset, channel_multiplier) = affine(g);
            Op::AffineSelect(insn::AffineSelect {
                dst,
                src: a,
                pattern,
                offset,
                channel_multiplier,
                cmp: g.pick(AluOp::ALL),
                on_false: Fp32::new(g.float()),
            })
        }
        12 => {
            let pred_dt = dt(g);
            Op::SelectReduce(insn::SelectReduce {
                dst,
                predicate: pattern(g, start, p, &counts, REGION, pred_dt, true),
                on_true: a,
                on_false: scalar(g, 0),
                reverse_pred: g.chance(2),
                reduce_cmd: cmd(g),
                reduce_res: g.chance(2).then(|| res(g)),
            })
        }
        13 => {
            let b_dt = dt(g);
            Op::TensorTensorScan(insn::TensorTensorScan {
                dst,
                src0: a,
                src1: pattern(g, start, p, &counts, REGION, b_dt, true),
                initial: scalar(g, 0),
                op0: g.pick(AluOp::ALL),
                op1: g.pick(AluOp::ALL),
                reverse0: g.chance(2),
                reverse1: g.chance(2),
            })
        }
        14 => Op::TensorScalarCumulative(insn::TensorScalarCumulative {
            dst,
            src: a,
            op0: g.pick(AluOp::ALL),
            imm0: scalar(g, 0),
            op1: g.pick(AluOp::ALL),
            imm1: g.chance(2).then(|| scalar(g, 1)),
            reduce_cmd: cmd(g),
        }),
        15 => Op::Activate2(insn::Activate2 {
            dst,
            src: a,
            func: g.pick(ActFunc::ALL),
            op0: g.pick(AluOp::ALL),
            imm0: g.chance(4).then(|| scalar(g, 0)),
            reverse0: g.chance(2),
            op1: g.pick(AluOp::ALL),
            imm1: (!g.chance(4)).then(|| scalar(g, 1)),
            reverse1: g.chance(2),
            relu_param: g.chance(2).then(|| scalar(g, 2)),
            reduce_op: g.chance(2).then(|| g.pick(AluOp::ALL)),
            reduce_cmd: if g.chance(2) { ReduceCmd::Idle } else { cmd(g) },
            reduce_res: g.chance(2).then(|| res(g)),
        }),
        16 => Op::Exponential(insn::Exponential {
            dst,
            src: a,
            max_value: scalar(g, 0),
            reduce_cmd: cmd(g),
            reduce_init: g.chance(2).then(|| scalar(g, 1)),
            reduce_res: g.chance(2).then(|| res(g)),
        }),
        17 => Op::RangeSelect(insn::RangeSelect {
            dst,
            src: a,
            cmp0: g.pick(AluOp::ALL),
            bound0: scalar(g, 0),
            cmp1: g.pick(AluOp::ALL),
            bound1: scalar(g, 1),
            range_start: if g.chance(8) {
                i32::MAX - g.below(4) as i32
            } else {
                g.below(16) as i32 - 8
            },
            on_false: Fp32::new(g.float()),
            reduce_cmd: cmd(g),
            reduce_res: g.chance(2).then(|| res(g)),
        }),
        _ => Op::Memset(insn::Memset {
            dst,
            value: if g.chance(2) {
                Imm::Int(g.next() as i64 % 1000)
            } else {
                Imm::Float(Fp32::new(g.float()))
            },
        }),
    };
    (queue, op)
}

/// Two identical machine states: the first four regions of every
/// partition random bytes, except (sometimes) a never-written hole, and
/// random accumulators.
fn benches(g: &mut Gen, poison: Poison) -> (Bench, Bench) {
    let mut a = Bench::new();
    let mut b = Bench::new();
    let n = (4 * REGION) as u32;
    let bits: Vec<u32> = (0..128 * n).map(|_| g.next() as u32 & 0xff).collect();
    let whole = sb(0, 128, 0, &[(1, n)], DType::U8);
    for bench in [&mut a, &mut b] {
        bench.mem.set_poison(poison);
        bench.put_bits(&whole, &bits);
    }
    if g.chance(4) {
        // Forget a few bytes: recreate both states and write around a hole.
        let hole = (g.below(u64::from(n) - 64), 1 + g.below(64));
        for bench in [&mut a, &mut b] {
            *bench = Bench::new();
            bench.mem.set_poison(poison);
            let lo = sb(0, 128, 0, &[(1, hole.0 as u32)], DType::U8);
            let rest = (hole.0 + hole.1) as u32;
            let hi = sb(0, 128, u64::from(rest), &[(1, n - rest)], DType::U8);
            let bits_lo: Vec<u32> = (0..128)
                .flat_map(|p| bits[(p * n) as usize..][..hole.0 as usize].to_vec())
                .collect();
            let bits_hi: Vec<u32> = (0..128)
                .flat_map(|p| bits[(p * n + rest) as usize..][..(n - rest) as usize].to_vec())
                .collect();
            bench.put_bits(&lo, &bits_lo);
            bench.put_bits(&hi, &bits_hi);
        }
    }
    if poison != Poison::Error && g.chance(3) {
        // Written but undefined bytes (with `Poison::Precise`; poison
        // bytes otherwise) over a stretch of the regions.
        let (start, rows) = (g.below(64) as u32, 1 + g.below(64) as u32);
        let (at, len) = (g.below(4 * REGION - 256), 1 + g.below(256) as u32);
        for bench in [&mut a, &mut b] {
            undefine(bench, sb(start, rows, at, &[(1, len)], DType::U8));
        }
    }
    // Accumulators that earlier instructions left.
    let lanes: Vec<f32> = (0..2 * 128).map(|_| g.float()).collect();
    for bench in [&mut a, &mut b] {
        bench.acc.scalar.copy_from_slice(&lanes[..128]);
        bench.acc.vector.copy_from_slice(&lanes[128..]);
    }
    (a, b)
}

/// Runs the property's case for `seed`; the mnemonic of its instruction
/// if it ran natively.
fn case(seed: u64) -> Result<Option<&'static str>, TestCaseError> {
    let mut g = Gen(seed);
    let poison = g.pick(&[Poison::Precise, Poison::Error, Poison::Nan, Poison::Zero]);
    let (mut interp, mut native) = benches(&mut g, poison);
    let (queue, op) = instruction(&mut g);
    let want = interp.exec(queue, &op);
    let (ran, got) = run_native(&mut native, queue, &op);
    prop_assert_eq!(
        got.as_ref().map_err(|f| &f.message),
        want.as_ref().map_err(|f| &f.message),
        "{:?}",
        op
    );
    let diff = native.mem.first_difference(&interp.mem);
    prop_assert!(diff.is_none(), "{:?}: {:?}", op, diff);
    let lanes = |b: &Bench| {
        let bits = |xs: &[f32]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let acc = &b.acc;
        (
            bits(&acc.scalar),
            bits(&acc.vector),
            acc.scalar_undef.clone(),
            acc.vector_undef.clone(),
        )
    };
    prop_assert_eq!(lanes(&native), lanes(&interp), "{:?}", op);
    Ok(ran.then(|| op.mnemonic()))
}

#[test]
fn the_property_exercises_the_native_tier() {
    let mut native = std::collections::BTreeMap::<&str, usize>::new();
    for seed in 1..=96u64 {
        let seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        match case(seed) {
            Ok(Some(mnemonic)) => *native.entry(mnemonic).or_default() += 1,
            Ok(None) => {}
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    // Every kind the generator makes runs natively; the rest of the cases
    // meet undefined bytes, partial overlaps, bitwise operators or GpSimd
    // integer paths and run interpreted.
    let kinds: Vec<&str> = native.keys().copied().collect();
    assert_eq!(
        kinds,
        [
            "activate2",
            "activation",
            "activation_reduce",
            "affine_select",
            "dma_copy",
            "exponential",
            "iota",
            "memset",
            "range_select",
            "scalar_tensor_tensor",
            "select_reduce",
            "tensor_copy",
            "tensor_reduce",
            "tensor_scalar",
            "tensor_scalar_cumulative",
            "tensor_scalar_reduce",
            "tensor_tensor",
            "tensor_tensor_scan",
        ]
    );
    assert_eq!(native.values().sum::<usize>(), 86, "{native:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn both_tiers_leave_the_same_memory(seed in 1u64..u64::MAX) {
        case(seed)?;
    }
}
