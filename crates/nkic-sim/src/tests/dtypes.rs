//! Every pair of unpacked dtypes through the f32 pipeline: read, compute in
//! f32, round on write, checked against `numerics::quantize`.

use nkic_isa::insn;
use nkic_isa::{AluOp, DType, Op, Queue, Scalar};

use super::*;

/// The unpacked dtypes: all fourteen but the MX scale type (e8m0) and the
/// packed MX types.
fn dtypes() -> impl Iterator<Item = DType> {
    DType::ALL
        .into_iter()
        .filter(|&dt| dt != DType::F8E8M0 && !dt.is_packed_x4())
}

#[test]
fn tensor_scalar_between_every_pair_of_dtypes() {
    let raw = [0.0f32, 1.0, -2.5, 3.75, 100.0, -0.3, 7.0, 250.0];
    assert_eq!(dtypes().count(), 14);
    for src_dt in dtypes() {
        for dst_dt in dtypes() {
            let mut b = Bench::new();
            // 128 partitions, a broadcast-free strided source (every other element).
            let src = sb(0, 128, 0, &[(2, 4)], src_dt);
            let full = sb(0, 128, 0, &[(1, 8)], src_dt);
            let vals: Vec<f32> = (0..128 * 8).map(|i| raw[i % 8]).collect();
            b.put(&full, &vals);
            let stored: Vec<f32> = vals.iter().map(|&x| q(src_dt, x)).collect();
            let dst = sb(0, 128, 256, &[(1, 4)], dst_dt);
            let op = Op::tensor_scalar2(
                dst.clone(),
                src,
                AluOp::Multiply,
                Scalar::imm(1.5),
                AluOp::Add,
                Scalar::imm(0.25),
            );
            b.ok(Queue::Vector, &op);
            let want: Vec<f32> = (0..128 * 4)
                .map(|e| q(dst_dt, stored[(e / 4) * 8 + (e % 4) * 2] * 1.5 + 0.25))
                .collect();
            let got = b.get(&dst);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "{src_dt} -> {dst_dt} element {i}: got {g}, want {w}"
                );
            }
        }
    }
}

#[test]
fn activation_on_16_and_8_bit_data_in_psum_and_sbuf() {
    for dt in [DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2] {
        let mut b = Bench::new();
        let src = ps(sb(0, 128, 0, &[(1, 16)], DType::F32));
        let vals = values(128 * 16, 4);
        b.put(&src, &vals);
        let dst = tile(128, 16, 0, dt);
        let op = Op::Activation(insn::Activation {
            dst: dst.clone(),
            src,
            func: nkic_isa::ActFunc::Tanh,
            scale: Scalar::imm(0.5),
            bias: None,
            reduce_op: None,
            reduce_cmd: nkic_isa::ReduceCmd::Idle,
            reduce_res: None,
        });
        b.ok(Queue::Scalar, &op);
        let want: Vec<f32> = vals
            .iter()
            .map(|&x| q(dt, f64::from(x * 0.5).tanh() as f32))
            .collect();
        assert_bits(&b.get(&dst), &want);
    }
}
