//! Vector (and GpSimd) elementwise, reduction, selection, statistics,
//! MX quantisation, shuffles, random numbers and the GpSimd gathers.

use nkic_isa::insn;
use nkic_isa::{AluOp, DType, Dim, Fp32, Op, Queue, ReduceCmd, Scalar};

use super::*;
use crate::error::SimErrorKind;

fn tt(dst: &AccessPattern, a: &AccessPattern, b: &AccessPattern, op: AluOp) -> Op {
    Op::TensorTensor(insn::TensorTensor {
        dst: dst.clone(),
        src0: a.clone(),
        src1: b.clone(),
        op,
    })
}

#[test]
fn tensor_tensor_arithmetic_over_128_partitions_and_a_psum_input() {
    let mut bn = Bench::new();
    let a = tile(128, 4, 0, DType::BF16);
    let b = ps(sb(0, 128, 0, &[(1, 4)], DType::F32));
    let av: Vec<f32> = values(512, 7)
        .into_iter()
        .map(|x| q(DType::BF16, x))
        .collect();
    let bv = values(512, 8);
    bn.put(&a, &av);
    bn.put(&b, &bv);
    let dst = tile(128, 4, 64, DType::F32);
    for op in [
        AluOp::Subtract,
        AluOp::Maximum,
        AluOp::Less,
        AluOp::AbsMin,
        AluOp::LogicalXor,
    ] {
        bn.ok(Queue::Vector, &tt(&dst, &a, &b, op));
        let want: Vec<f32> = av
            .iter()
            .zip(&bv)
            .map(|(&x, &y)| crate::alu::alu(op, x, y))
            .collect();
        assert_bits(&bn.get(&dst), &want);
    }
    // Spot values by hand.
    bn.put(&tile(1, 4, 128, DType::F32), &[2.0, -3.0, 0.0, 5.0]);
    bn.put(&tile(1, 4, 160, DType::F32), &[3.0, -3.0, -0.0, 2.0]);
    let d1 = tile(1, 4, 192, DType::F32);
    bn.ok(
        Queue::Vector,
        &tt(
            &d1,
            &tile(1, 4, 128, DType::F32),
            &tile(1, 4, 160, DType::F32),
            AluOp::Multiply,
        ),
    );
    assert_bits(&bn.get(&d1), &[6.0, 9.0, -0.0, 10.0]);
    bn.ok(
        Queue::GpSimd,
        &tt(
            &d1,
            &tile(1, 4, 128, DType::F32),
            &tile(1, 4, 160, DType::F32),
            AluOp::Power,
        ),
    );
    assert_bits(&bn.get(&d1), &[8.0, 2.0f32.powf(0.0) / (-27.0), 1.0, 25.0]);
}

#[test]
fn tensor_tensor_bitwise_and_exact_int32_on_gpsimd() {
    let mut b = Bench::new();
    let x = tile(1, 4, 0, DType::I8);
    let y = tile(1, 4, 16, DType::I8);
    b.put_bits(&x, &[0xf0, 0x0f, 0x80, 0x01]);
    b.put_bits(&y, &[0x3c, 0xff, 0x01, 0x07]);
    let d = tile(1, 4, 32, DType::I16);
    b.ok(Queue::Vector, &tt(&d, &x, &y, AluOp::BitwiseXor));
    // int8 values are sign-extended to 32 bits first: 0xf0 → 0xfffffff0.
    assert_eq!(b.get_bits(&d), vec![0xffcc, 0xfff0, 0xff81, 0x0006]);
    b.ok(Queue::Vector, &tt(&d, &x, &y, AluOp::RightShift));
    // 0xfffffff0 >> (0x3c mod 32 = 28) = 0xf; 0xf >> (−1 mod 32 = 31) = 0; 0xffffff80 >> 1.
    assert_eq!(b.get_bits(&d), vec![0x000f, 0x0000, 0xffc0, 0x0000]);

    let a = tile(1, 3, 64, DType::I32);
    let c = tile(1, 3, 80, DType::I32);
    b.put_bits(&a, &[16_777_217, i32::MAX as u32, (-5i32) as u32]);
    b.put_bits(&c, &[2, 1, 3]);
    let d32 = tile(1, 3, 96, DType::I32);
    b.ok(Queue::GpSimd, &tt(&d32, &a, &c, AluOp::Add));
    assert_eq!(
        b.get_bits(&d32),
        vec![16_777_219, i32::MIN as u32, (-2i32) as u32]
    );
    // On Vector the same add goes through f32 (and saturates on the way back).
    b.ok(Queue::Vector, &tt(&d32, &a, &c, AluOp::Add));
    assert_eq!(
        b.get_bits(&d32),
        vec![16_777_218, i32::MAX as u32, (-2i32) as u32]
    );
    let du = tile(1, 3, 112, DType::U32);
    b.ok(Queue::GpSimd, &tt(&du, &a, &c, AluOp::Less));
    // Unsigned comparison when dst is uint32: 0xfffffffb < 3 is false.
    assert_eq!(b.get_bits(&du), vec![0, 0, 0]);
}

#[test]
fn tensor_scalar_orders_operands_and_broadcasts_vectors() {
    let mut b = Bench::new();
    let src = tile(2, 3, 0, DType::F32);
    b.put(&src, &[1.0, 2.0, 4.0, -1.0, 0.5, 8.0]);
    let v = tile(2, 1, 64, DType::F32);
    b.put(&v, &[10.0, 100.0]);
    let dst = tile(2, 3, 128, DType::F32);
    let op = Op::TensorScalar(insn::TensorScalar {
        dst: dst.clone(),
        src: src.clone(),
        op0: AluOp::Subtract,
        operand0: Some(Scalar::Vector(v)),
        reverse0: true,
        op1: Some(AluOp::Multiply),
        operand1: Some(Scalar::imm(0.5)),
        reverse1: false,
    });
    b.ok(Queue::Vector, &op);
    assert_bits(&b.get(&dst), &[4.5, 4.0, 3.0, 50.5, 49.75, 46.0]);
    let rs = Op::TensorScalar(insn::TensorScalar {
        dst: dst.clone(),
        src,
        op0: AluOp::Rsqrt,
        operand0: None,
        reverse0: false,
        op1: None,
        operand1: None,
        reverse1: false,
    });
    b.ok(Queue::GpSimd, &rs);
    let got = b.get(&dst);
    assert_eq!(got[0], 1.0);
    assert_eq!(got[2], 0.5);
    assert!(got[3].is_nan());
    // Bitwise with an immediate truncated toward zero.
    let ints = tile(1, 2, 192, DType::U16);
    b.put_bits(&ints, &[0x1234, 0xffff]);
    let bw = Op::tensor_scalar2(
        ints.clone(),
        ints.clone(),
        AluOp::BitwiseAnd,
        Scalar::imm(255.9),
        AluOp::LeftShift,
        Scalar::imm(4.0),
    );
    b.ok(Queue::Vector, &bw);
    assert_eq!(b.get_bits(&ints), vec![0x0340, 0x0ff0]);
}

#[test]
fn unary_operators_apply_to_the_data_whatever_the_reverse_flags() {
    let mut b = Bench::new();
    let src = tile(2, 3, 0, DType::F32);
    b.put(&src, &[-4.0, 3.0, -0.5, 2.0, -1.5, 0.25]);
    let dst = tile(2, 3, 64, DType::F32);
    let ts = |op0, operand0, reverse0, op1, operand1, reverse1| {
        Op::TensorScalar(insn::TensorScalar {
            dst: dst.clone(),
            src: src.clone(),
            op0,
            operand0,
            reverse0,
            op1,
            operand1,
            reverse1,
        })
    };
    // abs(src)² whether or not an operand is given to the reversed `abs`.
    let squares = [16.0, 9.0, 0.25, 4.0, 2.25, 0.0625];
    let given = ts(
        AluOp::Abs,
        Some(Scalar::imm(5.0)),
        true,
        Some(AluOp::Square),
        None,
        false,
    );
    b.ok(Queue::Vector, &given);
    assert_bits(&b.get(&dst), &squares);
    let missing = ts(AluOp::Abs, None, true, Some(AluOp::Square), None, false);
    b.ok(Queue::Vector, &missing);
    assert_bits(&b.get(&dst), &squares);
    // A reversed unary `op1` applies to `t`: (src + 1)², not 3².
    let second = ts(
        AluOp::Add,
        Some(Scalar::imm(1.0)),
        false,
        Some(AluOp::Square),
        Some(Scalar::imm(3.0)),
        true,
    );
    b.ok(Queue::Vector, &second);
    assert_bits(&b.get(&dst), &[9.0, 16.0, 0.25, 9.0, 0.25, 1.5625]);
    // Reversed `reciprocal` and `bypass` also keep to the data.
    let recip = ts(
        AluOp::Reciprocal,
        Some(Scalar::imm(8.0)),
        true,
        Some(AluOp::Bypass),
        Some(Scalar::imm(7.0)),
        true,
    );
    b.ok(Queue::Vector, &recip);
    assert_bits(
        &b.get(&dst),
        &[-0.25, 1.0 / 3.0, -2.0, 0.5, -1.0 / 1.5, 4.0],
    );
    // The bitwise path: a reversed `invert` inverts the data, not 0xff.
    let ints = tile(1, 2, 128, DType::U16);
    b.put_bits(&ints, &[0x1234, 0x00f0]);
    let inv = Op::TensorScalar(insn::TensorScalar {
        dst: ints.clone(),
        src: ints.clone(),
        op0: AluOp::Invert,
        operand0: Some(Scalar::imm(255.0)),
        reverse0: true,
        op1: Some(AluOp::BitwiseAnd),
        operand1: Some(Scalar::imm(65535.0)),
        reverse1: true,
    });
    b.ok(Queue::Vector, &inv);
    assert_eq!(b.get_bits(&ints), vec![0xedcb, 0xff0f]);
    // `scalar_tensor_tensor`: op0 = abs (reversed, operand ignored), then a
    // reversed `reciprocal` of t that ignores src1.
    let src1 = tile(2, 3, 160, DType::F32);
    b.put(&src1, &[100.0; 6]);
    let stt = Op::ScalarTensorTensor(insn::ScalarTensorTensor {
        dst: dst.clone(),
        src: src.clone(),
        op0: AluOp::Abs,
        operand0: Scalar::imm(9.0),
        reverse0: true,
        op1: AluOp::Reciprocal,
        src1: src1.clone(),
        reverse1: true,
    });
    b.ok(Queue::Vector, &stt);
    assert_bits(&b.get(&dst), &[0.25, 1.0 / 3.0, 2.0, 0.5, 1.0 / 1.5, 4.0]);
    // `tensor_tensor_scan`: a reversed unary `op0` reads src0[i], not r, so
    // r = square(src0[i]) + src1[i] at every step.
    let init = tile(2, 1, 224, DType::F32);
    b.put(&init, &[50.0, 60.0]);
    let scan = Op::TensorTensorScan(insn::TensorTensorScan {
        dst: dst.clone(),
        src0: src,
        src1,
        initial: Scalar::Vector(init),
        op0: AluOp::Square,
        op1: AluOp::Add,
        reverse0: true,
        reverse1: false,
    });
    b.ok(Queue::Vector, &scan);
    assert_bits(
        &b.get(&dst),
        &[116.0, 109.0, 100.25, 104.0, 102.25, 100.0625],
    );
}

#[test]
fn scalar_tensor_tensor_with_reversed_operands() {
    let mut b = Bench::new();
    let src = tile(1, 3, 0, DType::F32);
    let src1 = tile(1, 3, 32, DType::BF16);
    b.put(&src, &[1.0, 2.0, 3.0]);
    b.put(&src1, &[10.0, 20.0, 30.0]);
    let dst = tile(1, 3, 64, DType::F32);
    let op = Op::ScalarTensorTensor(insn::ScalarTensorTensor {
        dst: dst.clone(),
        src,
        op0: AluOp::Subtract,
        operand0: Scalar::imm(1.0),
        reverse0: false,
        op1: AluOp::Subtract,
        src1,
        reverse1: true,
    });
    b.ok(Queue::Vector, &op);
    assert_bits(&b.get(&dst), &[10.0, 19.0, 28.0]);
}

#[test]
fn tensor_scalar_reduce_and_cumulative_share_the_vector_accumulators() {
    let mut b = Bench::new();
    let src = tile(2, 4, 0, DType::F32);
    b.put(&src, &[1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0]);
    let dst = tile(2, 4, 64, DType::F32);
    let res = tile(2, 1, 128, DType::F32);
    let init = tile(2, 1, 136, DType::F32);
    b.put(&init, &[100.0, 1000.0]);
    let op = Op::TensorScalarReduce(insn::TensorScalarReduce {
        dst: dst.clone(),
        src: src.clone(),
        op0: AluOp::Multiply,
        operand0: Some(Scalar::imm(2.0)),
        reduce_op: AluOp::Add,
        reduce_cmd: ReduceCmd::LoadReduce,
        reduce_init: Some(Scalar::Vector(init)),
        reduce_res: Some(res.clone()),
        reduce_res_negate: true,
    });
    b.ok(Queue::Vector, &op);
    assert_bits(&b.get(&dst), &[2.0, 4.0, 6.0, 8.0, -2.0, -4.0, -6.0, -8.0]);
    assert_bits(&b.get(&res), &[-120.0, -980.0]);
    // A cumulative chain continuing from the accumulators (120, 980).
    let cum = Op::TensorScalarCumulative(insn::TensorScalarCumulative {
        dst: dst.clone(),
        src: src.clone(),
        op0: AluOp::Add,
        imm0: Scalar::imm(0.0),
        op1: AluOp::Subtract,
        imm1: None,
        reduce_cmd: ReduceCmd::Reduce,
    });
    b.ok(Queue::Vector, &cum);
    // reg = x − reg: 1 − 120 = −119, 2 + 119 = 121, 3 − 121 = −118, 4 + 118 = 122.
    assert_bits(
        &b.get(&dst),
        &[-119.0, 121.0, -118.0, 122.0, -981.0, 979.0, -982.0, 978.0],
    );
    let prod = Op::TensorScalarCumulative(insn::TensorScalarCumulative {
        dst: dst.clone(),
        src,
        op0: AluOp::Multiply,
        imm0: Scalar::imm(1.0),
        op1: AluOp::Multiply,
        imm1: None,
        reduce_cmd: ReduceCmd::ResetReduce,
    });
    b.ok(Queue::Vector, &prod);
    assert_bits(&b.get(&dst), &[1.0, 2.0, 6.0, 24.0, -1.0, 2.0, -6.0, 24.0]);
}

#[test]
fn tensor_reduce_over_trailing_dims() {
    let mut b = Bench::new();
    // [P=2, 2, 3]: reduce the last dim (3) → [2, 2]; or both → [2, 1].
    let src = sb(0, 2, 0, &[(3, 2), (1, 3)], DType::F32);
    b.put(
        &src,
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -1.0, 0.5, 7.0, 2.0, 2.0, 2.0],
    );
    let dst = tile(2, 2, 64, DType::F32);
    let red = |dst: &AccessPattern, op, last_dims, negate| {
        Op::TensorReduce(insn::TensorReduce {
            dst: dst.clone(),
            src: src.clone(),
            op,
            last_dims,
            negate,
        })
    };
    b.ok(Queue::Vector, &red(&dst, AluOp::Subtract, 1, false));
    assert_bits(&b.get(&dst), &[-4.0, -7.0, -8.5, -2.0]);
    b.ok(Queue::Vector, &red(&dst, AluOp::Maximum, 1, true));
    assert_bits(&b.get(&dst), &[-3.0, -6.0, -7.0, -2.0]);
    let one = tile(2, 1, 96, DType::BF16);
    b.ok(Queue::Vector, &red(&one, AluOp::Add, 2, false));
    assert_bits(&b.get(&one), &[21.0, 12.5]);
    // Bitwise or of raw bits.
    let ints = tile(1, 3, 128, DType::U8);
    b.put_bits(&ints, &[1, 4, 0x40]);
    let o = tile(1, 1, 160, DType::U8);
    b.ok(
        Queue::Vector,
        &Op::TensorReduce(insn::TensorReduce {
            dst: o.clone(),
            src: ints,
            op: AluOp::BitwiseOr,
            last_dims: 1,
            negate: false,
        }),
    );
    assert_eq!(b.get_bits(&o), vec![0x45]);
}

#[test]
fn tensor_partition_reduce_folds_partitions() {
    let mut b = Bench::new();
    let src = tile(4, 2, 0, DType::F32);
    b.put(&src, &[1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 4.0, 8.0]);
    let dst = tile(1, 2, 64, DType::F32);
    let pr = |op| {
        Op::TensorPartitionReduce(insn::TensorPartitionReduce {
            dst: dst.clone(),
            src: src.clone(),
            op,
        })
    };
    b.ok(Queue::GpSimd, &pr(AluOp::Add));
    assert_bits(&b.get(&dst), &[10.0, 2.0]);
    b.ok(Queue::GpSimd, &pr(AluOp::Average));
    assert_bits(&b.get(&dst), &[2.5, 0.5]);
    b.ok(Queue::GpSimd, &pr(AluOp::Maximum));
    assert_bits(&b.get(&dst), &[4.0, 8.0]);
}

#[test]
fn tensor_tensor_scan_linear_recurrence() {
    let mut b = Bench::new();
    let a = tile(2, 3, 0, DType::F32);
    let c = tile(2, 3, 32, DType::F32);
    b.put(&a, &[2.0, 2.0, 2.0, 0.5, 0.5, 0.5]);
    b.put(&c, &[1.0, 1.0, 1.0, 4.0, 4.0, 4.0]);
    let init = tile(2, 1, 64, DType::F32);
    b.put(&init, &[0.0, 8.0]);
    let dst = tile(2, 3, 96, DType::F32);
    let op = Op::TensorTensorScan(insn::TensorTensorScan {
        dst: dst.clone(),
        src0: a,
        src1: c,
        initial: Scalar::Vector(init),
        op0: AluOp::Multiply,
        op1: AluOp::Add,
        reverse0: false,
        reverse1: false,
    });
    b.ok(Queue::Vector, &op);
    // r = a·r + b: row 0: 1, 3, 7; row 1: 8, 8, 8.
    assert_bits(&b.get(&dst), &[1.0, 3.0, 7.0, 8.0, 8.0, 8.0]);
}

fn copy_predicated(
    dst: &AccessPattern,
    src: &AccessPattern,
    predicate: &AccessPattern,
    reverse_pred: bool,
) -> Op {
    Op::TensorCopyPredicated(insn::TensorCopyPredicated {
        dst: dst.clone(),
        src: src.clone(),
        predicate: predicate.clone(),
        reverse_pred,
    })
}

#[test]
fn tensor_copy_predicated_writes_only_selected_elements() {
    let mut b = Bench::new();
    let src = tile(1, 4, 0, DType::F32);
    b.put(&sb(0, 1, 0, &[(1, 2)], DType::F32), &[1.0, 2.0]);
    // Elements 2 and 3 of src are never written; they are not selected.
    let pred = tile(1, 4, 32, DType::U16);
    b.put_bits(&pred, &[0, 7, 0, 0]);
    let dst = tile(1, 4, 64, DType::F32);
    b.put(&dst, &[-1.0, -1.0, -1.0, -1.0]);
    b.ok(Queue::Vector, &copy_predicated(&dst, &src, &pred, false));
    assert_bits(&b.get(&dst), &[-1.0, 2.0, -1.0, -1.0]);
    let f = b
        .exec(Queue::Vector, &copy_predicated(&dst, &src, &pred, true))
        .unwrap_err();
    assert_eq!(f.kind, SimErrorKind::UninitialisedRead);
}

#[test]
fn reciprocal_and_exponential_with_accumulation() {
    let mut b = Bench::new();
    let src = tile(2, 2, 0, DType::F32);
    b.put(&src, &[2.0, -0.25, 0.0, 3.0]);
    let dst = tile(2, 2, 32, DType::F32);
    b.ok(
        Queue::Vector,
        &Op::Reciprocal(insn::Reciprocal {
            dst: dst.clone(),
            src: src.clone(),
        }),
    );
    assert_bits(&b.get(&dst), &[0.5, -4.0, f32::INFINITY, 1.0 / 3.0]);
    let res = tile(2, 1, 64, DType::F32);
    let op = Op::Exponential(insn::Exponential {
        dst: dst.clone(),
        src,
        max_value: Scalar::imm(2.0),
        reduce_cmd: ReduceCmd::LoadReduce,
        reduce_init: Some(Scalar::imm(1.0)),
        reduce_res: Some(res.clone()),
    });
    b.ok(Queue::Vector, &op);
    let e = |x: f32| f64::from(x).exp() as f32;
    let y = [1.0, e(-2.25), e(-2.0), e(1.0)];
    assert_bits(&b.get(&dst), &y);
    assert_bits(&b.get(&res), &[1.0 + (y[0] + y[1]), 1.0 + (y[2] + y[3])]);
}

#[test]
fn range_and_select_reduce_keep_a_running_maximum() {
    let mut b = Bench::new();
    let src = tile(2, 5, 0, DType::F32);
    b.put(
        &src,
        &[5.0, 1.0, 2.0, 3.0, 9.0, -1.0, -2.0, -3.0, -4.0, -5.0],
    );
    let b0 = tile(2, 1, 64, DType::F32);
    let b1 = tile(2, 1, 68, DType::F32);
    b.put(&b0, &[11.0, 10.0]);
    b.put(&b1, &[13.0, 12.0]);
    let dst = tile(2, 5, 96, DType::F32);
    let res = tile(2, 1, 128, DType::F32);
    let op = Op::RangeSelect(insn::RangeSelect {
        dst: dst.clone(),
        src: src.clone(),
        cmp0: AluOp::GreaterEqual,
        bound0: Scalar::Vector(b0),
        cmp1: AluOp::Less,
        bound1: Scalar::Vector(b1),
        range_start: 10,
        on_false: Fp32::new(f32::MIN),
        reduce_cmd: ReduceCmd::ResetReduce,
        reduce_res: Some(res.clone()),
    });
    b.ok(Queue::Vector, &op);
    let m = f32::MIN;
    // Row 0 keeps idx 11, 12 (i = 1, 2); row 1 keeps idx 10, 11 (i = 0, 1).
    assert_bits(&b.get(&dst), &[m, 1.0, 2.0, m, m, -1.0, -2.0, m, m, m]);
    assert_bits(&b.get(&res), &[2.0, -1.0]);
    let pred = tile(2, 5, 160, DType::I8);
    b.put_bits(&pred, &[1, 0, 0, 0, 1, 0, 0, 0, 0, 0]);
    let sr = Op::SelectReduce(insn::SelectReduce {
        dst: dst.clone(),
        predicate: pred,
        on_true: src,
        on_false: Scalar::imm(-100.0),
        reverse_pred: false,
        reduce_cmd: ReduceCmd::Reduce,
        reduce_res: Some(res.clone()),
    });
    b.ok(Queue::Vector, &sr);
    let h = -100.0;
    assert_bits(&b.get(&dst), &[5.0, h, h, h, 9.0, h, h, h, h, h]);
    assert_bits(&b.get(&res), &[9.0, -1.0]);
}

#[test]
fn max8_find_index8_and_match_replace8() {
    let mut b = Bench::new();
    let src = tile(1, 11, 0, DType::F32);
    b.put(
        &src,
        &[1.0, 2.0, 3.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0],
    );
    let top = tile(1, 8, 64, DType::F32);
    b.ok(
        Queue::Vector,
        &Op::Max8(insn::Max8 {
            dst: top.clone(),
            src: src.clone(),
        }),
    );
    assert_bits(&b.get(&top), &[8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 4.0]);
    let vals = tile(1, 8, 96, DType::F32);
    b.put(&vals, &[3.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]);
    let idx = tile(1, 8, 128, DType::U32);
    b.ok(
        Queue::Vector,
        &Op::FindIndex8(insn::FindIndex8 {
            dst: idx.clone(),
            src: src.clone(),
            vals: vals.clone(),
        }),
    );
    assert_eq!(b.get_bits(&idx), vec![2, 4, 5, 6, 7, 8, 9, 10]);
    let dst = tile(1, 11, 160, DType::F32);
    let mr = Op::MatchReplace8(insn::MatchReplace8 {
        dst: dst.clone(),
        src: src.clone(),
        vals,
        imm: Fp32::new(-1.0),
        dst_idx: Some(idx.clone()),
    });
    b.ok(Queue::Vector, &mr);
    assert_eq!(b.get_bits(&idx), vec![2, 10, 9, 8, 7, 6, 5, 4]);
    assert_bits(
        &b.get(&dst),
        &[
            1.0, 2.0, -1.0, 4.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
        ],
    );
    // Not found → all ones in u16; NaN sorts first in max8.
    let v2 = tile(1, 8, 224, DType::F32);
    b.put(&v2, &[42.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0]);
    let i16 = tile(1, 8, 256, DType::U16);
    b.ok(
        Queue::Vector,
        &Op::FindIndex8(insn::FindIndex8 {
            dst: i16.clone(),
            src: src.clone(),
            vals: v2,
        }),
    );
    assert_eq!(
        b.get_bits(&i16),
        vec![0xffff, 0, 0xffff, 1, 0xffff, 0xffff, 0xffff, 0xffff]
    );
    b.put(
        &tile(1, 11, 0, DType::F32),
        &[
            1.0,
            f32::NAN,
            3.0,
            -0.0,
            0.0,
            f32::INFINITY,
            5.0,
            6.0,
            7.0,
            -8.0,
            8.0,
        ],
    );
    b.ok(
        Queue::Vector,
        &Op::Max8(insn::Max8 {
            dst: top.clone(),
            src,
        }),
    );
    let got = b.get(&top);
    assert!(got[0].is_nan());
    assert_bits(&got[1..], &[f32::INFINITY, 8.0, 7.0, 6.0, 5.0, 3.0, 1.0]);
}

#[test]
fn bn_stats_and_bn_aggr() {
    let mut b = Bench::new();
    let src = tile(2, 5, 0, DType::F32);
    b.put(&src, &[1.0, 10.0, 3.0, 20.0, 5.0, 7.0, 7.0, 7.0, 7.0, 7.0]);
    let st = tile(2, 6, 64, DType::F32);
    b.ok(
        Queue::Vector,
        &Op::BnStats(insn::BnStats {
            dst: st.clone(),
            src,
        }),
    );
    // Even: 1, 3, 5 → n 3, mean 3, M2 8; odd: 10, 20 → n 2, mean 15, M2 50.
    assert_bits(
        &b.get(&st),
        &[3.0, 3.0, 8.0, 2.0, 15.0, 50.0, 3.0, 7.0, 0.0, 2.0, 7.0, 0.0],
    );
    let ag = tile(2, 2, 128, DType::F32);
    b.ok(
        Queue::Vector,
        &Op::BnAggr(insn::BnAggr {
            dst: ag.clone(),
            src: st,
        }),
    );
    // All of 1, 10, 3, 20, 5: mean 7.8, population variance 46.16 (in f32).
    let got = b.get(&ag);
    let (n, d) = (5.0f32, 15.0f32 - 3.0);
    let mean = 3.0 + d * 2.0 / n;
    let var = (8.0 + 50.0 + d * d * 3.0 * 2.0 / n) / n;
    assert_bits(&got, &[mean, var, 7.0, 0.0]);
    assert!((got[1] - 46.16).abs() < 1e-4);
}

#[test]
fn quantize_mx_then_matmul_mx_round_trip_values() {
    let mut b = Bench::new();
    // 32 partitions × 8 elements of bf16 → [32, 2] e4m3fn x4 and 4 × 2 scales.
    let src = tile(32, 8, 0, DType::BF16);
    let mut vals = values(256, 9);
    for v in &mut vals[0..4] {
        *v = 0.0; // group (partitions 0..8, elements 0..4) is not all zero: other partitions differ
    }
    let vals: Vec<f32> = vals.into_iter().map(|x| q(DType::BF16, x)).collect();
    b.put(&src, &vals);
    let dst = tile(32, 2, 64, DType::F8E4M3FNx4);
    let scale = sb(0, 4, 128, &[(1, 2)], DType::F8E8M0);
    b.ok(
        Queue::Vector,
        &Op::QuantizeMx(insn::QuantizeMx {
            dst: dst.clone(),
            src,
            dst_scale: scale.clone(),
        }),
    );
    let codes = b.get_bits(&scale);
    let lanes = b.get(&dst);
    for g in 0..4 {
        for j in 0..2 {
            let mut amax = 0f32;
            for p in 8 * g..8 * g + 8 {
                for e in 4 * j..4 * j + 4 {
                    amax = amax.max(vals[p * 8 + e].abs());
                }
            }
            let e = (f64::from(amax).log2().floor() as i32) - 7;
            assert_eq!(codes[g * 2 + j], (e + 127) as u32, "group {g} {j}");
            for p in 8 * g..8 * g + 8 {
                for k in 0..4 {
                    let v = f64::from(vals[p * 8 + 4 * j + k]) * (-f64::from(e)).exp2();
                    let want = nkic_isa::numerics::quantize(
                        DType::F8E4M3FN,
                        (v as f32).clamp(-448.0, 448.0),
                    );
                    assert_eq!(lanes[(p * 2 + j) * 4 + k], want);
                }
            }
        }
    }
}

#[test]
fn quantize_mx_non_finite_groups_get_the_positive_nan_code() {
    let mut b = Bench::new();
    // A negative quiet NaN built at run time (read from a vector), so that
    // nothing can fold the sign away before the interpreter sees it.
    let nan_bits: Vec<u32> = std::hint::black_box([0xffc0_0000, 0x7f80_0000, 0xff80_0000].to_vec());
    let neg_nan = f32::from_bits(nan_bits[0]);
    let (pos_inf, neg_inf) = (f32::from_bits(nan_bits[1]), f32::from_bits(nan_bits[2]));
    assert!(neg_nan.is_nan() && neg_nan.is_sign_negative());
    // 32 partitions × 8 elements: 4 × 2 groups, all ones but for a −NaN in
    // group (0, 0), a +inf in group (1, 1) and a −inf in group (3, 0).
    let src = tile(32, 8, 0, DType::BF16);
    let mut vals = vec![1.0f32; 256];
    vals[3 * 8 + 2] = neg_nan;
    vals[9 * 8 + 5] = pos_inf;
    vals[30 * 8] = neg_inf;
    b.put(&src, &vals);
    // The sign of the NaN survives the bf16 store.
    assert_eq!(b.get_bits(&tile(32, 8, 0, DType::BF16))[3 * 8 + 2], 0xffc0);
    let nan_groups = [(0, 0), (1, 1), (3, 0)];
    for (dt, nan_lanes, one_lanes, one_code) in [
        // 1.0 in a group of ones: e = 0 − 7, so lanes 2^7 = 128 (0x70 in
        // e4m3fn, 0x58 in e5m2) and scale code 120; e5m2: e = −14, 2^14.
        (DType::F8E4M3FNx4, 0x7f7f_7f7fu32, 0x7070_7070u32, 120u32),
        (DType::F8E5M2x4, 0x7e7e_7e7e, 0x7474_7474, 113),
    ] {
        let dst = tile(32, 2, 64, dt);
        let scale = sb(0, 4, 128, &[(1, 2)], DType::F8E8M0);
        b.ok(
            Queue::Vector,
            &Op::QuantizeMx(insn::QuantizeMx {
                dst: dst.clone(),
                src: src.clone(),
                dst_scale: scale.clone(),
            }),
        );
        let codes = b.get_bits(&scale);
        let lanes = b.get_bits(&dst);
        for g in 0..4 {
            for j in 0..2 {
                let bad = nan_groups.contains(&(g, j));
                let (code, word) = if bad {
                    (255, nan_lanes)
                } else {
                    (one_code, one_lanes)
                };
                assert_eq!(codes[g * 2 + j], code, "{dt} scale of group ({g}, {j})");
                for p in 8 * g..8 * g + 8 {
                    assert_eq!(
                        lanes[p * 2 + j],
                        word,
                        "{dt} lanes of partition {p}, group ({g}, {j})"
                    );
                }
            }
        }
    }
}

#[test]
fn stream_shuffle_within_quadrants() {
    let mut b = Bench::new();
    let src = sb(0, 64, 0, &[(1, 1)], DType::F32);
    b.put_counting(&src);
    let dst = sb(0, 64, 64, &[(1, 1)], DType::F32);
    b.put(&dst, &[-1.0; 64]);
    let mut mask: Vec<u8> = (0..32).rev().collect();
    mask[5] = 255;
    b.ok(
        Queue::Vector,
        &Op::StreamShuffle(insn::StreamShuffle {
            dst: dst.clone(),
            src,
            mask,
        }),
    );
    let got = b.get(&dst);
    assert_eq!(got[0], 31.0);
    assert_eq!(got[5], -1.0);
    assert_eq!(got[32], 63.0);
    assert_eq!(got[63], 32.0);
}

#[test]
fn random_instructions_are_deterministic_per_lane() {
    let mut b = Bench::new();
    let r = tile(2, 3, 0, DType::U32);
    b.ok(Queue::Vector, &Op::Rng(insn::Rng { dst: r.clone() }));
    let first = b.get_bits(&r);
    let mut lane0 = crate::rng::Xorwow::seeded(0, 0);
    let mut lane1 = crate::rng::Xorwow::seeded(0, 1);
    let want: Vec<u32> = (0..3)
        .map(|_| lane0.next())
        .chain((0..3).map(|_| lane1.next()))
        .collect();
    assert_eq!(first, want);
    // GpSimd has its own generators, still at their start.
    b.ok(Queue::GpSimd, &Op::Rng(insn::Rng { dst: r.clone() }));
    assert_eq!(b.get_bits(&r), want);
    // Reseeding the Vector generators restarts their streams.
    let seed = tile(1, 1, 64, DType::U32);
    b.put_bits(&seed, &[0]);
    b.ok(
        Queue::Vector,
        &Op::SetRngSeed(insn::SetRngSeed { src: seed }),
    );
    let u = tile(2, 3, 128, DType::F32);
    b.ok(
        Queue::Vector,
        &Op::Rand2(insn::Rand2 {
            dst: u.clone(),
            min: Scalar::imm(-1.0),
            max: Scalar::imm(3.0),
        }),
    );
    let got = b.get(&u);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(*g, -1.0 + ((w >> 8) as f32 / 16_777_216.0) * 4.0);
    }
    let src = tile(2, 3, 192, DType::BF16);
    b.put(&src, &[1.0; 6]);
    let dst = tile(2, 3, 256, DType::BF16);
    b.ok(
        Queue::Vector,
        &Op::Dropout(insn::Dropout {
            dst: dst.clone(),
            src: src.clone(),
            prob: Scalar::imm(1.0),
        }),
    );
    assert_bits(&b.get(&dst), &[0.0; 6]);
    b.ok(
        Queue::Vector,
        &Op::Dropout(insn::Dropout {
            dst: dst.clone(),
            src,
            prob: Scalar::imm(0.0),
        }),
    );
    assert_bits(&b.get(&dst), &[1.0; 6]);
}

#[test]
fn affine_select_builds_a_causal_mask() {
    let mut b = Bench::new();
    let src = tile(3, 3, 0, DType::F32);
    b.put(&src, &[1.0; 9]);
    let dst = tile(3, 3, 64, DType::BF16);
    let op = Op::AffineSelect(insn::AffineSelect {
        dst: dst.clone(),
        src,
        pattern: vec![Dim::new(-1, 3)],
        offset: 0,
        channel_multiplier: 1,
        cmp: AluOp::GreaterEqual,
        on_false: Fp32::new(f32::NEG_INFINITY),
    });
    b.ok(Queue::GpSimd, &op);
    let n = f32::NEG_INFINITY;
    assert_bits(&b.get(&dst), &[1.0, n, n, 1.0, 1.0, n, 1.0, 1.0, 1.0]);
}

#[test]
fn local_gather_and_n_gather() {
    let mut b = Bench::new();
    let src = tile(16, 8, 0, DType::F32);
    b.put_counting(&src);
    // Index [16, 1]: partition-first flattening gives idx_j = index[j, 0].
    let index = tile(16, 1, 64, DType::U16);
    let idx: Vec<u32> = (0..16).map(|i| (i * 3) % 7).collect();
    b.put_bits(&index, &idx);
    let dst = tile(16, 6, 96, DType::F32);
    let op = Op::LocalGather(insn::LocalGather {
        dst: dst.clone(),
        src: src.clone(),
        index: index.clone(),
        elem_per_idx: 2,
        valid_indices: Some(3),
    });
    b.ok(Queue::GpSimd, &op);
    let got = b.get(&dst);
    for p in 0..16 {
        for j in 0..3 {
            for e in 0..2 {
                assert_eq!(got[p * 6 + j * 2 + e], (p * 8 + idx[j] as usize + e) as f32);
            }
        }
    }
    let ind = tile(16, 2, 160, DType::U32);
    let ib: Vec<u32> = (0..32).map(|i| (i * 5) % 8).collect();
    b.put_bits(&ind, &ib);
    let nd = tile(16, 2, 192, DType::F32);
    b.ok(
        Queue::GpSimd,
        &Op::NGather(insn::NGather {
            dst: nd.clone(),
            src: src.clone(),
            indices: ind.clone(),
        }),
    );
    let got = b.get(&nd);
    for e in 0..32 {
        assert_eq!(got[e], ((e / 2) * 8 + ib[e] as usize) as f32);
    }
    b.put_bits(&ind, &[8; 32]);
    let f = b
        .exec(
            Queue::GpSimd,
            &Op::NGather(insn::NGather {
                dst: nd,
                src,
                indices: ind,
            }),
        )
        .unwrap_err();
    assert_eq!(f.kind, SimErrorKind::OutOfBounds);
}

#[test]
fn sequence_bounds_and_nonzero_with_count() {
    let mut b = Bench::new();
    let src = tile(1, 9, 0, DType::I32);
    let ids = [0i32, 1, 1, 2, 2, 2, 0, 3, 3];
    b.put_bits(&src, &ids.map(|x| x as u32));
    let dst = tile(1, 18, 64, DType::I32);
    b.ok(
        Queue::GpSimd,
        &Op::SequenceBounds(insn::SequenceBounds {
            dst: dst.clone(),
            src,
        }),
    );
    let want = [9, 1, 1, 3, 3, 3, 9, 7, 7, -1, 3, 3, 6, 6, 6, -1, 9, 9];
    assert_eq!(b.get_bits(&dst), want.map(|x: i32| x as u32).to_vec());

    let src = tile(32, 4, 256, DType::F32);
    let mut vals = vec![0.0f32; 128];
    vals[1] = 2.0;
    vals[3] = f32::NAN;
    vals[16 * 4 + 2] = -1.0;
    b.put(&src, &vals);
    let out = tile(32, 5, 512, DType::I32);
    b.put_bits(&out, &[7; 160]);
    b.ok(
        Queue::GpSimd,
        &Op::NonzeroWithCount(insn::NonzeroWithCount {
            dst: out.clone(),
            src,
            index_offset: 10,
            padding: -1,
        }),
    );
    let got = b.get_bits(&out);
    let m1 = u32::MAX;
    assert_eq!(got[0..5], [11, 13, m1, m1, 2]);
    assert_eq!(got[5..10], [7; 5]);
    assert_eq!(got[80..85], [12, m1, m1, m1, 1]);
}

#[test]
fn bool_predicates_select() {
    // `bool_` is a byte holding 0 or 1; both predicated instructions take it.
    let mut b = Bench::new();
    let src = tile(1, 4, 0, DType::F32);
    b.put(&src, &[1.0, 2.0, 3.0, 4.0]);
    let pred = tile(1, 4, 32, DType::Bool);
    b.put_bits(&pred, &[1, 0, 0, 1]);
    let dst = tile(1, 4, 64, DType::F32);
    b.put(&dst, &[-1.0; 4]);
    b.ok(Queue::Vector, &copy_predicated(&dst, &src, &pred, false));
    assert_bits(&b.get(&dst), &[1.0, -1.0, -1.0, 4.0]);
    b.ok(
        Queue::Vector,
        &Op::SelectReduce(insn::SelectReduce {
            dst: dst.clone(),
            predicate: pred,
            on_true: src,
            on_false: Scalar::imm(-100.0),
            reverse_pred: true,
            reduce_cmd: ReduceCmd::Idle,
            reduce_res: None,
        }),
    );
    assert_bits(&b.get(&dst), &[-100.0, 2.0, 3.0, -100.0]);
}
