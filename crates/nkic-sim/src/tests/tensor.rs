//! Tensor engine: `nc_matmul` (plain, accumulate, bf16 PSUM, double row,
//! transpose mode), `nc_matmul_mx`, `nc_transpose`.

use nkic_isa::insn;
use nkic_isa::{DType, MatmulPerfMode, Op, Queue};

use super::*;

/// The definition: `acc = init; for k: acc += s[k, m] · v[k, n]` in f32.
fn reference(s: &[f32], v: &[f32], k: usize, m: usize, n: usize, init: Option<&[f32]>) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for mm in 0..m {
        for nn in 0..n {
            let mut acc = init.map_or(0.0, |i| i[mm * n + nn]);
            for kk in 0..k {
                acc += s[kk * m + mm] * v[kk * n + nn];
            }
            out[mm * n + nn] = acc;
        }
    }
    out
}

fn bf16s(n: usize, seed: u32) -> Vec<f32> {
    values(n, seed)
        .into_iter()
        .map(|x| q(DType::BF16, x))
        .collect()
}

#[test]
fn bf16_matmul_128x128x512_matches_the_reference_loop() {
    let mut b = Bench::new();
    let s = bf16s(128 * 128, 1);
    let v = bf16s(128 * 512, 2);
    let st = tile(128, 128, 0, DType::BF16);
    let mv = tile(128, 512, 4096, DType::BF16);
    let dst = ps(sb(0, 128, 0, &[(1, 512)], DType::F32));
    b.put(&st, &s);
    b.put(&mv, &v);
    b.ok(
        Queue::Tensor,
        &Op::matmul(dst.clone(), st.clone(), mv.clone(), false),
    );
    let first = reference(&s, &v, 128, 128, 512, None);
    assert_bits(&b.get(&dst), &first);
    assert_eq!(b.flops, 2 * 128 * 128 * 512);
    // Accumulating a second product starts from the PSUM contents.
    b.ok(Queue::Tensor, &Op::matmul(dst.clone(), st, mv, true));
    assert_bits(
        &b.get(&dst),
        &reference(&s, &v, 128, 128, 512, Some(&first)),
    );
}

#[test]
fn a_matmul_reads_operands_rewritten_since_the_last_one_anew() {
    // The second matmul reads the same views as the first; the decoded
    // operands kept from the first (`decoded`) must not stand in for bytes
    // written since, including one element of each operand, and a view of
    // the same bytes read as another layout is decoded on its own.
    let mut b = Bench::new();
    let s = bf16s(128 * 64, 3);
    let v = bf16s(128 * 96, 4);
    let st = tile(128, 64, 0, DType::BF16);
    let mv = tile(128, 96, 4096, DType::BF16);
    let dst = ps(sb(0, 64, 0, &[(1, 96)], DType::F32));
    b.put(&st, &s);
    b.put(&mv, &v);
    let matmul = Op::matmul(dst.clone(), st.clone(), mv.clone(), false);
    b.ok(Queue::Tensor, &matmul);
    assert_bits(&b.get(&dst), &reference(&s, &v, 128, 64, 96, None));
    b.ok(Queue::Tensor, &matmul);
    assert_bits(&b.get(&dst), &reference(&s, &v, 128, 64, 96, None));
    let (mut s2, mut v2) = (s.clone(), v.clone());
    s2[77 * 64 + 5] = 2.5;
    v2[127 * 96 + 95] = -3.0;
    b.put(&st, &s2);
    b.put(&mv, &v2);
    b.ok(Queue::Tensor, &matmul);
    assert_bits(&b.get(&dst), &reference(&s2, &v2, 128, 64, 96, None));
    // The first half of each moving row: the same bytes as another view.
    let half = tile(128, 48, 4096, DType::BF16);
    let dst_half = ps(sb(0, 64, 0, &[(1, 48)], DType::F32));
    b.ok(
        Queue::Tensor,
        &Op::matmul(dst_half.clone(), st, half.clone(), false),
    );
    let v_half = b.get(&half);
    assert_bits(
        &b.get(&dst_half),
        &reference(&s2, &v_half, 128, 64, 48, None),
    );
}

#[test]
fn matmul_one_partition_strided_moving_bf16_psum() {
    let mut b = Bench::new();
    // K = 1: dst[m, n] = s[0, m] · v[0, 2n] (moving takes every other element).
    let st = sb(0, 1, 0, &[(1, 3)], DType::BF16);
    let mv = sb(0, 1, 64, &[(2, 4)], DType::F8E4M3);
    b.put(&st, &[1.5, -2.0, 3.0]);
    b.put(
        &sb(0, 1, 64, &[(1, 8)], DType::F8E4M3),
        &[1.0, 9.0, 0.5, 9.0, -4.0, 9.0, 0.125, 9.0],
    );
    let dst = ps(sb(0, 3, 2048, &[(1, 4)], DType::BF16));
    b.ok(
        Queue::Tensor,
        &Op::matmul(dst.clone(), st.clone(), mv.clone(), false),
    );
    let want = [
        1.5, 0.75, -6.0, 0.1875, -2.0, -1.0, 8.0, -0.25, 3.0, 1.5, -12.0, 0.375,
    ];
    assert_bits(&b.get(&dst), &want);
    // bf16 accumulation rounds after the f32 add: 0.1875 + 1/1024 → bf16.
    let tiny = sb(0, 1, 128, &[(1, 4)], DType::F8E4M3);
    b.put(&tiny, &[0.0, 0.0, 0.0, 0.001953125]);
    b.ok(Queue::Tensor, &Op::matmul(dst.clone(), st, tiny, true));
    let got = b.get(&dst);
    assert_eq!(got[3], q(DType::BF16, 0.1875 + 1.5 * 0.001953125));
    assert_eq!(got[0], 1.5);
}

#[test]
fn double_row_contracts_over_partition_then_row() {
    let mut b = Bench::new();
    let (p, m, n) = (4usize, 3usize, 5usize);
    let s: Vec<f32> = values(p * 2 * m, 3)
        .into_iter()
        .map(|x| q(DType::F8E4M3, x))
        .collect();
    let v: Vec<f32> = values(p * 2 * n, 4)
        .into_iter()
        .map(|x| q(DType::F8E5M2, x))
        .collect();
    let st = sb(
        0,
        p as u32,
        0,
        &[(m as i64, 2), (1, m as u32)],
        DType::F8E4M3,
    );
    let mv = sb(
        0,
        p as u32,
        64,
        &[(n as i64, 2), (1, n as u32)],
        DType::F8E5M2,
    );
    b.put(&st, &s);
    b.put(&mv, &v);
    let dst = ps(sb(0, m as u32, 0, &[(1, n as u32)], DType::F32));
    let mut op = Op::matmul(dst.clone(), st, mv, false);
    if let Op::NcMatmul(insn::NcMatmul { perf_mode, .. }) = &mut op {
        *perf_mode = MatmulPerfMode::DoubleRow;
    }
    b.ok(Queue::Tensor, &op);
    let mut want = vec![0f32; m * n];
    for mm in 0..m {
        for nn in 0..n {
            let mut acc = 0f32;
            for k in 0..p {
                for j in 0..2 {
                    acc += s[(k * 2 + j) * m + mm] * v[(k * 2 + j) * n + nn];
                }
            }
            want[mm * n + nn] = acc;
        }
    }
    assert_bits(&b.get(&dst), &want);
}

#[test]
fn transpose_mode_is_bit_exact_for_an_identity() {
    let mut b = Bench::new();
    let st = tile(3, 2, 0, DType::BF16);
    // NaN with a payload, infinity, -0.
    b.put_bits(&st, &[0x7fc1, 0x3f80, 0xff80, 0x8000, 0x4040, 0xc000]);
    let id = tile(3, 3, 64, DType::BF16);
    b.put(&id, &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    let dst = ps(sb(0, 2, 0, &[(1, 3)], DType::BF16));
    let mut op = Op::matmul(dst.clone(), st.clone(), id.clone(), false);
    if let Op::NcMatmul(insn::NcMatmul { transpose, .. }) = &mut op {
        *transpose = true;
    }
    b.ok(Queue::Tensor, &op);
    // dst[m, n] = st[n, m].
    assert_eq!(
        b.get_bits(&dst),
        vec![0x7fc1, 0xff80, 0x4040, 0x3f80, 0x8000, 0xc000]
    );
    // Column 0 with two ones is an ordinary matmul: NaN + −inf + 3·0 = NaN
    // and 1 + (−0) + (−2)·0 = 1; column 1 still passes −inf and −0 through.
    b.put(&id, &[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    b.ok(Queue::Tensor, &op);
    let got = b.get_bits(&dst);
    assert!(f32::from_bits(got[0] << 16).is_nan());
    assert_eq!(got[3], 0x3f80);
    assert_eq!((got[1], got[4]), (0xff80, 0x8000));
}

#[test]
fn mx_matmul_scales_each_group_of_eight_partitions() {
    let mut b = Bench::new();
    // P = 32 partitions of packed fp8 e4m3fn x4; M = 2, N = 1.
    let (p, m, n) = (32usize, 2usize, 1usize);
    let s: Vec<f32> = values(p * m * 4, 5)
        .into_iter()
        .map(|x| q(DType::F8E4M3FN, x))
        .collect();
    let v: Vec<f32> = values(p * n * 4, 6)
        .into_iter()
        .map(|x| q(DType::F8E5M2, x))
        .collect();
    let st = tile(32, 2, 0, DType::F8E4M3FNx4);
    let mv = tile(32, 1, 64, DType::F8E5M2x4);
    b.put(&st, &s);
    b.put(&mv, &v);
    // Scales: 4 partitions (one per group of 8 data partitions).
    let s_codes = [127u32, 128, 126, 130, 127, 120, 127, 127];
    let v_codes = [127u32, 125, 129, 127];
    let ss = sb(0, 4, 128, &[(1, 2)], DType::F8E8M0);
    let vs = sb(4, 4, 192, &[(1, 1)], DType::U8);
    b.put_bits(&ss, &s_codes);
    b.put_bits(&vs, &v_codes);
    let dst = ps(sb(0, 2, 0, &[(1, 1)], DType::F32));
    let op = Op::NcMatmulMx(insn::NcMatmulMx {
        dst: dst.clone(),
        stationary: st,
        moving: mv,
        stationary_scale: ss,
        moving_scale: vs,
        accumulate: false,
        tile_position: None,
        tile_size: None,
    });
    b.ok(Queue::Tensor, &op);
    let mut want = vec![0f32; m * n];
    for mm in 0..m {
        let mut acc = 0f32;
        for k in 0..p {
            for lane in 0..4 {
                let sv = f64::from(s[(k * m + mm) * 4 + lane]);
                let vv = f64::from(v[k * 4 + lane]);
                let e = f64::from(s_codes[(k / 8) * 2 + mm]) + f64::from(v_codes[k / 8]) - 254.0;
                acc += (sv * vv * e.exp2()) as f32;
            }
        }
        want[mm] = acc;
    }
    assert_bits(&b.get(&dst), &want);
    assert_eq!(b.flops, 2 * 128 * 2);
}

#[test]
fn nc_transpose_on_tensor_and_vector() {
    let mut b = Bench::new();
    let src = tile(3, 5, 0, DType::F32);
    let vals: Vec<f32> = (0..15).map(|i| i as f32 * 0.5).collect();
    b.put(&src, &vals);
    let transpose = |b: &mut Bench, queue, dst: &AccessPattern, src: &AccessPattern| {
        let (dst, src) = (dst.clone(), src.clone());
        b.ok(queue, &Op::NcTranspose(insn::NcTranspose { dst, src }));
    };
    let dst = ps(sb(0, 5, 0, &[(1, 3)], DType::F32));
    transpose(&mut b, Queue::Tensor, &dst, &src);
    let want: Vec<f32> = (0..15).map(|e| vals[(e % 3) * 5 + e / 3]).collect();
    assert_bits(&b.get(&dst), &want);
    let big = tile(128, 128, 1024, DType::BF16);
    let bits: Vec<u32> = (0..128 * 128).map(|i| (i * 31 % 65521) as u32).collect();
    b.put_bits(&big, &bits);
    let bdst = tile(128, 128, 65536, DType::BF16);
    transpose(&mut b, Queue::Vector, &bdst, &big);
    let got = b.get_bits(&bdst);
    for f in 0..128 {
        for p in 0..128 {
            assert_eq!(got[f * 128 + p], bits[p * 128 + f]);
        }
    }
}
