//! Scalar engine: `activation`, `activation_reduce`, `activate2`, and the
//! accumulator commands.

use nkic_isa::insn;
use nkic_isa::{ActFunc, AluOp, DType, Op, Queue, ReduceCmd, Scalar};

use super::*;

#[allow(clippy::too_many_arguments)]
fn act(
    dst: &AccessPattern,
    src: &AccessPattern,
    func: ActFunc,
    scale: Scalar,
    bias: Option<Scalar>,
    cmd: ReduceCmd,
    res: Option<AccessPattern>,
) -> Op {
    Op::Activation(insn::Activation {
        dst: dst.clone(),
        src: src.clone(),
        func,
        scale,
        bias,
        reduce_op: Some(AluOp::Add),
        reduce_cmd: cmd,
        reduce_res: res,
    })
}

#[test]
fn activation_with_vector_scale_and_bias_and_a_row_sum() {
    let mut b = Bench::new();
    let src = tile(2, 3, 0, DType::F32);
    b.put(&src, &[0.0, 1.0, -1.0, 2.0, 0.5, -3.0]);
    let scale = tile(2, 1, 64, DType::F32);
    b.put(&scale, &[1.0, 2.0]);
    let bias = tile(2, 1, 68, DType::BF16);
    b.put(&bias, &[0.5, -1.0]);
    let dst = tile(2, 3, 128, DType::BF16);
    let res = tile(2, 1, 192, DType::F32);
    let op = act(
        &dst,
        &src,
        ActFunc::Exp,
        Scalar::Vector(scale),
        Some(Scalar::Vector(bias)),
        ReduceCmd::ResetReduce,
        Some(res.clone()),
    );
    b.ok(Queue::Scalar, &op);
    let t = [0.5f32, 1.5, -0.5, 3.0, 0.0, -7.0];
    let y: Vec<f32> = t.iter().map(|&x| f64::from(x).exp() as f32).collect();
    let want: Vec<f32> = y.iter().map(|&v| q(DType::BF16, v)).collect();
    assert_bits(&b.get(&dst), &want);
    // The row sums use the f32 results, before rounding to bf16.
    let sums = [y[0] + y[1] + y[2], y[3] + y[4] + y[5]];
    assert_bits(&b.get(&res), &sums);
    // `reduce` adds onto the accumulators; `idle` leaves them alone;
    // `reset` sets them to the identity of `add`.
    let then = [
        (ReduceCmd::Reduce, [sums[0] + 0.0, sums[1] + -0.5]),
        (ReduceCmd::Idle, [sums[0] + 0.0, sums[1] + -0.5]),
        (ReduceCmd::Reset, [0.0, 0.0]),
    ];
    for (cmd, want) in then {
        let op = act(
            &dst,
            &src,
            ActFunc::Copy,
            Scalar::imm(1.0),
            None,
            cmd,
            Some(res.clone()),
        );
        b.ok(Queue::Scalar, &op);
        assert_bits(&b.get(&res), &want);
    }
}

#[test]
fn activation_uses_the_lanes_of_absolute_partitions() {
    let mut b = Bench::new();
    // Two chains on partitions 0..32 and 32..64 do not disturb each other.
    let lo = sb(0, 32, 0, &[(1, 2)], DType::F32);
    let hi = sb(32, 32, 0, &[(1, 2)], DType::F32);
    b.put(&lo, &vec![1.0; 64]);
    b.put(&hi, &vec![2.0; 64]);
    let dl = sb(0, 32, 64, &[(1, 2)], DType::F32);
    let dh = sb(32, 32, 64, &[(1, 2)], DType::F32);
    let rl = sb(0, 32, 128, &[(1, 1)], DType::F32);
    let rh = sb(32, 32, 128, &[(1, 1)], DType::F32);
    b.ok(
        Queue::Scalar,
        &act(
            &dl,
            &lo,
            ActFunc::Square,
            Scalar::imm(3.0),
            None,
            ReduceCmd::ResetReduce,
            None,
        ),
    );
    b.ok(
        Queue::Scalar,
        &act(
            &dh,
            &hi,
            ActFunc::Relu,
            Scalar::imm(-1.0),
            None,
            ReduceCmd::ResetReduce,
            Some(rh.clone()),
        ),
    );
    b.ok(
        Queue::Scalar,
        &act(
            &dl,
            &lo,
            ActFunc::Copy,
            Scalar::imm(1.0),
            None,
            ReduceCmd::Reduce,
            Some(rl.clone()),
        ),
    );
    assert_bits(&b.get(&rl), &[20.0; 32]);
    assert_bits(&b.get(&rh), &[0.0; 32]);
}

#[test]
fn activation_reduce_with_maximum() {
    let mut b = Bench::new();
    let src = tile(1, 4, 0, DType::F32);
    b.put(&src, &[-1.0, 4.0, -9.0, 2.0]);
    let dst = tile(1, 4, 64, DType::F32);
    let res = tile(1, 1, 128, DType::BF16);
    let op = Op::ActivationReduce(insn::ActivationReduce {
        dst: dst.clone(),
        src,
        func: ActFunc::Abs,
        scale: Scalar::imm(0.5),
        bias: Some(Scalar::imm(0.25)),
        reduce_op: AluOp::Maximum,
        reduce_res: res.clone(),
    });
    b.ok(Queue::Scalar, &op);
    assert_bits(&b.get(&dst), &[0.25, 2.25, 4.25, 1.25]);
    assert_bits(&b.get(&res), &[4.25]);
}

#[test]
fn activate2_pipeline_with_reversed_subtract_prelu_and_abs_max() {
    let mut b = Bench::new();
    let src = tile(2, 3, 0, DType::F32);
    b.put(&src, &[1.0, 2.0, 3.0, -1.0, 0.0, 1.0]);
    let imm1 = tile(2, 1, 64, DType::F32);
    b.put(&imm1, &[4.0, -2.0]);
    let dst = tile(2, 3, 128, DType::F32);
    let res = tile(2, 1, 192, DType::F32);
    let op = Op::Activate2(insn::Activate2 {
        dst: dst.clone(),
        src,
        func: ActFunc::Prelu,
        op0: AluOp::Multiply,
        imm0: Some(Scalar::imm(2.0)),
        reverse0: false,
        op1: AluOp::Subtract,
        imm1: Some(Scalar::Vector(imm1)),
        reverse1: true,
        relu_param: Some(Scalar::imm(0.5)),
        reduce_op: Some(AluOp::AbsMax),
        reduce_cmd: ReduceCmd::ResetReduce,
        reduce_res: Some(res.clone()),
    });
    b.ok(Queue::Scalar, &op);
    // v = imm1 − 2x: row 0: 2, 0, −2 → prelu 2, 0, −1; row 1: 0, −2, −4 → 0, −1, −2.
    assert_bits(&b.get(&dst), &[2.0, 0.0, -1.0, 0.0, -1.0, -2.0]);
    assert_bits(&b.get(&res), &[2.0, -2.0]);
}

#[test]
fn activate2_unary_operators_ignore_the_reverse_flags() {
    let mut b = Bench::new();
    let src = tile(1, 4, 0, DType::F32);
    b.put(&src, &[-3.0, -0.5, 2.0, 0.0]);
    let dst = tile(1, 4, 64, DType::F32);
    let op = Op::Activate2(insn::Activate2 {
        dst: dst.clone(),
        src,
        func: ActFunc::Copy,
        op0: AluOp::Abs,
        imm0: Some(Scalar::imm(10.0)),
        reverse0: true,
        op1: AluOp::Square,
        imm1: None,
        reverse1: true,
        relu_param: None,
        reduce_op: None,
        reduce_cmd: ReduceCmd::Idle,
        reduce_res: None,
    });
    b.ok(Queue::Scalar, &op);
    // abs(x)², not abs(10)² nor 0² (the missing imm1).
    assert_bits(&b.get(&dst), &[9.0, 0.25, 4.0, 0.0]);
}
