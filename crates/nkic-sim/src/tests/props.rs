//! Property tests: access patterns with arbitrary strides (negative, zero,
//! overlapping) read and write exactly the elements the addressing rule of
//! `nkic_isa::ap` names, in row-major order.

use nkic_isa::insn;
use nkic_isa::{DType, Op, Queue};
use proptest::prelude::*;

use super::*;

/// A pattern inside partition bytes 4096..8192 of SBUF: up to 3 dims with
/// strides in -3..=3 and counts in 1..=4, an offset chosen so the lowest
/// element is at or above byte 4096.
fn pattern() -> impl Strategy<Value = (u32, u32, Vec<(i64, u32)>, u64)> {
    (
        0u32..4,
        1u32..4,
        prop::collection::vec((-3i64..=3, 1u32..=4), 0..=3),
        0u64..64,
    )
}

/// The byte offsets of the elements of a pattern, by the definition.
fn offsets(dims: &[(i64, u32)], base: i64, size: i64) -> Vec<i64> {
    let mut out = vec![base];
    for &(stride, count) in dims {
        out = out
            .iter()
            .flat_map(|&o| (0..i64::from(count)).map(move |i| o + i * stride * size))
            .collect();
    }
    out
}

fn base_for(dims: &[(i64, u32)], extra: u64, size: i64) -> u64 {
    let low: i64 = dims
        .iter()
        .map(|&(s, c)| (s * (i64::from(c) - 1)).min(0))
        .sum();
    (4096 - low * size) as u64 + extra * size as u64
}

proptest! {
    #[test]
    fn strided_copies_follow_the_addressing_rule(
        (start, count, dims, extra) in pattern(),
        seed in 0u32..1000,
    ) {
        let mut b = Bench::new();
        let dt = DType::I32;
        let size = 4i64;
        // Fill partitions 0..8 bytes 0..16384 with known words.
        let all = tile(8, 4096, 0, dt);
        let words: Vec<u32> = (0..8 * 4096).map(|i| (i as u32).wrapping_mul(2_654_435_761) ^ seed).collect();
        b.put_bits(&all, &words);
        let base = base_for(&dims, extra, size);
        let src = sb(start, count, base, &dims, dt);
        let f: u32 = dims.iter().map(|&(_, c)| c).product();
        let dst = sb(start, count, 12288, &[(1, f)], dt);
        b.ok(Queue::Vector, &Op::TensorCopy(insn::TensorCopy { dst: dst.clone(), src: src.clone() }));
        let got = b.get_bits(&dst);
        let offs = offsets(&dims, base as i64, size);
        let mut want = Vec::new();
        for p in start..start + count {
            for &o in &offs {
                want.push(words[(p * 4096) as usize + (o / 4) as usize]);
            }
        }
        prop_assert_eq!(got, want);
        // Writing through the strided pattern then reading it back gives
        // the last value written to each address (row-major order).
        let vals: Vec<u32> = (0..count * f).map(|i| i + 1).collect();
        let mut expect = b.get_bits(&all);
        b.put_bits(&src, &vals);
        for (pi, p) in (start..start + count).enumerate() {
            for (i, &o) in offs.iter().enumerate() {
                expect[(p * 4096) as usize + (o / 4) as usize] = vals[pi * f as usize + i];
            }
        }
        prop_assert_eq!(b.get_bits(&all), expect);
    }
}

/// Any pattern, however wild: the instruction runs or faults, never panics.
fn wild_pattern(hbm_ok: bool) -> impl Strategy<Value = AccessPattern> {
    (
        0u32..140,
        0u32..140,
        prop::collection::vec(
            (
                any::<i64>(),
                prop::sample::select(vec![0u32, 1, 2, 3, 4, 65535]),
            ),
            0..=4,
        ),
        any::<u64>(),
        prop::sample::select(vec![DType::F32, DType::BF16, DType::U8, DType::F8E5M2x4]),
        0u8..3,
        any::<i64>(),
    )
        .prop_map(move |(start, count, dims, offset, dt, mem, stride)| {
            let dims: Vec<Dim> = dims
                .into_iter()
                .map(|(s, c)| Dim::new(s % 100_000, c))
                .collect();
            let offset = offset % 300_000;
            match mem {
                0 => AccessPattern::sbuf(start, count, offset, &dims, dt),
                1 => AccessPattern::psum(start, count, offset, &dims, dt),
                _ if hbm_ok => {
                    AccessPattern::hbm(TensorId(0), count, stride % 1000, offset % 5000, &dims, dt)
                }
                _ => AccessPattern::sbuf(0, count, offset, &dims, dt),
            }
        })
}

proptest! {
    #[test]
    fn wild_patterns_never_panic(dst in wild_pattern(true), src in wild_pattern(true), reg in any::<i32>()) {
        let p = program(&[("t", DType::F32, &[64, 16], nkic_isa::TensorKind::Input)]);
        let mut b = Bench::with_program(&p);
        b.mem.load_tensor(0, vec![0x3f; 64 * 16 * 4]);
        b.put(&tile(128, 64, 0, DType::F32), &[1.0; 128 * 64]);
        b.regs[0] = reg;
        let src = src.with_dyn_offset(nkic_isa::Reg(0), 3);
        for op in [
            Op::TensorCopy(insn::TensorCopy { dst: dst.clone(), src: src.clone() }),
            Op::DmaCopy(insn::DmaCopy {
                dst: dst.clone(),
                src: src.clone(),
                accumulate: false,
                dge: nkic_isa::DgeMode::None,
                oob: nkic_isa::OobMode::Skip,
                priority: None,
            }),
            Op::NcTranspose(insn::NcTranspose { dst: dst.clone(), src: src.clone() }),
            Op::TensorReduce(insn::TensorReduce { dst: dst.clone(), src: src.clone(), op: nkic_isa::AluOp::Add, last_dims: 1, negate: false }),
        ] {
            // The interpreter runs verified programs only: patterns the
            // verifier rejects are not its to handle, while the register
            // offset stays wild (what only the run can check).
            let queue = if op.is_dma() { Queue::Dma(0) } else { Queue::Vector };
            let inst = nkic_isa::Instruction::new(op);
            if nkic_isa::check_instruction(&p, queue, &inst).is_ok() {
                let _ = b.exec(queue, &inst.op);
            }
        }
    }
}
