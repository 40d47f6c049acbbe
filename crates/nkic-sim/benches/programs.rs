//! Benchmark programs built directly as `Program`s: a tiled bf16 matmul
//! and an elementwise pipeline. Shared by the criterion bench and the
//! `matmul_nkasm` example (which prints the matmul as `.nkasm`).

use nkic_isa::insn;
use nkic_isa::{
    AccessPattern, AluOp, DType, Dim, Instruction, Op, Program, Queue, Scalar, Target, TensorKind,
};

/// `c[M, N] = at[K, M]ᵀ · b[K, N]` with bf16 inputs and an f32 result.
///
/// Both inputs are loaded whole into SBUF (K/128 tiles of `[128, M]` and
/// `[128, N]`, spread over DMA queues 0..12), then for every 128 × 512
/// output block the Tensor engine accumulates K/128 matmuls into one of two
/// PSUM banks, the Vector engine evacuates the bank into one of two SBUF
/// slots, and DMA queue 14 or 15 (one per slot) stores it. Requires
/// M % 128 == 0, N % 512 == 0, K % 128 == 0 and both inputs within 96 KiB
/// per partition.
pub fn matmul(m: u64, k: u64, n: u64) -> Program {
    let mut p = Program::new(Target::Trn3);
    let at = p.add_tensor("at", DType::BF16, &[k, m], TensorKind::Input);
    let b = p.add_tensor("b", DType::BF16, &[k, n], TensorKind::Input);
    let c = p.add_tensor("c", DType::F32, &[m, n], TensorKind::Output);
    let kt_n = k / 128;
    let a_off = 0u64;
    let b_off = kt_n * m * 2;
    let out_off = b_off + kt_n * n * 2;
    let loaded: Vec<_> = (0..kt_n)
        .map(|i| p.add_semaphore(&format!("loaded{i}")))
        .collect();
    let mm = p.add_semaphore("mm");
    let evac = p.add_semaphore("evac");
    let stored = [p.add_semaphore("stored0"), p.add_semaphore("stored1")];
    let dma = Op::dma_copy;
    // `at` on DMA queues 0..7, `b` on 7..14, one K tile per load.
    for kt in 0..kt_n {
        for (tensor, cols, off, first_queue) in [(at, m, a_off, 0), (b, n, b_off, 7)] {
            let q = Queue::Dma((first_queue + kt % 7) as u8);
            let row = [Dim::new(1, cols as u32)];
            let src = AccessPattern::hbm(
                tensor,
                128,
                cols as i64,
                kt * 128 * cols * 2,
                &row,
                DType::BF16,
            );
            let dst = AccessPattern::sbuf(0, 128, off + kt * cols * 2, &row, DType::BF16);
            p.stream_mut(q)
                .push(Instruction::new(dma(dst, src)).signal(loaded[kt as usize]));
        }
    }
    let mut group = 0u32;
    for mt in 0..m / 128 {
        for nt in 0..n / 512 {
            let bank = u64::from(group % 2);
            let psum = AccessPattern::psum(0, 128, bank * 2048, &[Dim::new(1, 512)], DType::F32);
            for kt in 0..kt_n {
                let stationary = AccessPattern::sbuf(
                    0,
                    128,
                    a_off + kt * m * 2 + mt * 256,
                    &[Dim::new(1, 128)],
                    DType::BF16,
                );
                let moving = AccessPattern::sbuf(
                    0,
                    128,
                    b_off + kt * n * 2 + nt * 1024,
                    &[Dim::new(1, 512)],
                    DType::BF16,
                );
                let mut inst =
                    Instruction::new(Op::matmul(psum.clone(), stationary, moving, kt > 0));
                if mt == 0 && nt == 0 {
                    inst = inst.wait(loaded[kt as usize], 2);
                }
                if kt == 0 && group >= 2 {
                    // The bank is free once group − 2 has been evacuated.
                    inst = inst.wait(evac, group - 1);
                }
                if kt == kt_n - 1 {
                    inst = inst.signal(mm);
                }
                p.stream_mut(Queue::Tensor).push(inst);
            }
            let slot = group % 2;
            let out = AccessPattern::sbuf(
                0,
                128,
                out_off + u64::from(slot) * 2048,
                &[Dim::new(1, 512)],
                DType::F32,
            );
            let mut evict = Instruction::new(Op::TensorCopy(insn::TensorCopy {
                dst: out.clone(),
                src: psum,
            }))
            .wait(mm, group + 1)
            .signal(evac);
            if group >= 2 {
                evict = evict.wait(stored[slot as usize], group / 2);
            }
            p.stream_mut(Queue::Vector).push(evict);
            let dst = AccessPattern::hbm(
                c,
                128,
                n as i64,
                (mt * 128 * n + nt * 512) * 4,
                &[Dim::new(1, 512)],
                DType::F32,
            );
            p.stream_mut(Queue::Dma(14 + slot as u8)).push(
                Instruction::new(dma(dst, out))
                    .wait(evac, group + 1)
                    .signal(stored[slot as usize]),
            );
            group += 1;
        }
    }
    p
}

/// `tiles` independent `[128, 2048]` bf16 tiles through load → scale →
/// exp → store, to measure elementwise throughput.
pub fn elementwise(tiles: u64) -> Program {
    let mut p = Program::new(Target::Trn3);
    let x = p.add_tensor("x", DType::BF16, &[tiles * 128, 2048], TensorKind::Input);
    let y = p.add_tensor("y", DType::BF16, &[tiles * 128, 2048], TensorKind::Output);
    let loaded = p.add_semaphore("loaded");
    let scaled = p.add_semaphore("scaled");
    let acted = p.add_semaphore("acted");
    let stored = p.add_semaphore("stored");
    let row = |off: u64| AccessPattern::sbuf(0, 128, off, &[Dim::new(1, 2048)], DType::BF16);
    // Tile `t` (rows `t·128..`) of HBM tensor `tensor`.
    let hbm_tile = |tensor, t: u64| {
        let offset = t * 128 * 2048 * 2;
        AccessPattern::hbm(tensor, 128, 2048, offset, &[Dim::new(1, 2048)], DType::BF16)
    };
    for t in 0..tiles {
        let t32 = t as u32;
        let slot = (t % 2) * 8192;
        let mut load = Instruction::new(Op::dma_copy(row(slot), hbm_tile(x, t))).signal(loaded);
        if t >= 2 {
            load = load.wait(stored, t32 - 1);
        }
        p.stream_mut(Queue::Dma(0)).push(load);
        p.stream_mut(Queue::Vector).push(
            Instruction::new(Op::tensor_scalar2(
                row(slot + 4096),
                row(slot),
                AluOp::Multiply,
                Scalar::imm(0.5),
                AluOp::Add,
                Scalar::imm(1.0),
            ))
            .wait(loaded, t32 + 1)
            .signal(scaled),
        );
        p.stream_mut(Queue::Scalar).push(
            Instruction::new(Op::activation(
                row(slot),
                row(slot + 4096),
                nkic_isa::ActFunc::Exp,
            ))
            .wait(scaled, t32 + 1)
            .signal(acted),
        );
        p.stream_mut(Queue::Dma(1)).push(
            Instruction::new(Op::dma_copy(hbm_tile(y, t), row(slot)))
                .wait(acted, t32 + 1)
                .signal(stored),
        );
    }
    p
}

/// `out = (a + b) · 0.5 − 1` on `[rows, cols]` f32 tensors in `[128, 512]`
/// tiles: per tile DMA queues 0 and 1 load `a` and `b` into one of two
/// SBUF slots, the Vector engine adds them and scales the sum in place
/// (`tensor_tensor`, then one two-stage `tensor_scalar`), and DMA queue 2
/// stores it. Requires rows % 128 == 0 and cols % 512 == 0.
pub fn add_scale(rows: u64, cols: u64) -> Program {
    let mut p = Program::new(Target::Trn3);
    let shape = [rows, cols];
    let a = p.add_tensor("a", DType::F32, &shape, TensorKind::Input);
    let b = p.add_tensor("b", DType::F32, &shape, TensorKind::Input);
    let out = p.add_tensor("out", DType::F32, &shape, TensorKind::Output);
    let loaded = p.add_semaphore("loaded");
    let computed = p.add_semaphore("computed");
    let stored = p.add_semaphore("stored");
    let tile = |off: u64| AccessPattern::sbuf(0, 128, off, &[Dim::new(1, 512)], DType::F32);
    let hbm = |t, offset| {
        AccessPattern::hbm(t, 128, cols as i64, offset, &[Dim::new(1, 512)], DType::F32)
    };
    let copy = Op::dma_copy;
    let tiles = (0..rows / 128).flat_map(|r| (0..cols / 512).map(move |c| (r, c)));
    for (t, (r, c)) in tiles.enumerate() {
        let t32 = t as u32;
        let slot = (t as u64 % 2) * 8192;
        let offset = (r * 128 * cols + c * 512) * 4;
        for (queue, tensor, at) in [(0u8, a, slot), (1, b, slot + 2048)] {
            let mut load = Instruction::new(copy(tile(at), hbm(tensor, offset))).signal(loaded);
            if t >= 2 {
                load = load.wait(stored, t32 - 1);
            }
            p.stream_mut(Queue::Dma(queue)).push(load);
        }
        p.stream_mut(Queue::Vector).push(
            Instruction::new(Op::TensorTensor(insn::TensorTensor {
                dst: tile(slot + 4096),
                src0: tile(slot),
                src1: tile(slot + 2048),
                op: AluOp::Add,
            }))
            .wait(loaded, 2 * (t32 + 1)),
        );
        p.stream_mut(Queue::Vector).push(
            Instruction::new(Op::tensor_scalar2(
                tile(slot + 4096),
                tile(slot + 4096),
                AluOp::Multiply,
                Scalar::imm(0.5),
                AluOp::Subtract,
                Scalar::imm(1.0),
            ))
            .signal(computed),
        );
        p.stream_mut(Queue::Dma(2)).push(
            Instruction::new(copy(hbm(out, offset), tile(slot + 4096)))
                .wait(computed, t32 + 1)
                .signal(stored),
        );
    }
    p
}

/// Deterministic values in [-0.5, 0.5): `n` of them from `seed`.
fn halves(n: usize, seed: u32) -> impl Iterator<Item = f32> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (x >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    })
}

/// Deterministic f32 bytes for `n` elements in [-0.5, 0.5).
pub fn f32_bytes(n: usize, seed: u32) -> Vec<u8> {
    halves(n, seed).flat_map(f32::to_le_bytes).collect()
}

/// Deterministic bf16 bytes for `n` elements.
pub fn bf16_bytes(n: usize, seed: u32) -> Vec<u8> {
    halves(n, seed)
        .flat_map(|v| (nkic_isa::numerics::from_f32(DType::BF16, v) as u16).to_le_bytes())
        .collect()
}

/// The end of a counted loop: `r1 += 1`, then back to label 0 while
/// `r1 < r0`.
pub fn loop_back() -> [Instruction; 2] {
    use nkic_isa::{BranchCond, Label, Reg, RegAluOp, RegOrImm};
    [
        Instruction::new(Op::RegAlu(insn::RegAlu {
            dst: Reg(1),
            op: RegAluOp::Add,
            a: Reg(1),
            b: RegOrImm::Imm(1),
        })),
        Instruction::new(Op::Branch(insn::Branch {
            cond: BranchCond::Lt,
            a: Reg(1),
            b: RegOrImm::Reg(Reg(0)),
            target: Label(0),
        })),
    ]
}

/// `iters` iterations of dynamic loops on three queues with small
/// `[128, 16]` instructions, the Scalar loop waiting for the Vector loop's
/// semaphore each iteration: measures the interpreter's per-instruction
/// overhead (scheduling, semaphores, registers).
pub fn small_ops(iters: i32) -> Program {
    use nkic_isa::{Imm, Label, Reg, SemWait};
    let mut p = Program::new(Target::Trn3);
    let tick = p.add_semaphore("tick");
    let tile = |off: u64, dt| AccessPattern::sbuf(0, 128, off, &[Dim::new(1, 16)], dt);
    let loop_of = |body: Vec<Instruction>, init: Vec<Instruction>| {
        let mut s = init;
        s.push(Instruction::new(Op::RegSet(insn::RegSet {
            dst: Reg(0),
            value: iters,
        })));
        s.push(Instruction::new(Op::RegSet(insn::RegSet {
            dst: Reg(1),
            value: 0,
        })));
        s.push(Instruction::new(Op::Label(insn::Label { label: Label(0) })));
        s.extend(body);
        s.extend(loop_back());
        s
    };
    let scale = |dst, src| Op::tensor_scalar(dst, src, AluOp::Multiply, Scalar::imm(1.0001));
    let vector = loop_of(
        vec![Instruction::new(scale(tile(0, DType::F32), tile(0, DType::F32))).signal(tick)],
        vec![Instruction::new(Op::Memset(insn::Memset {
            dst: tile(0, DType::F32),
            value: Imm::Float(1.0.into()),
        }))],
    );
    let mut wait = Instruction::new(scale(tile(64, DType::F32), tile(64, DType::F32)));
    wait.waits.push(SemWait {
        sem: tick,
        value: 1,
        reg: Some(Reg(1)),
    });
    let scalar = loop_of(
        vec![wait],
        vec![Instruction::new(Op::TensorCopy(insn::TensorCopy {
            dst: tile(64, DType::F32),
            src: tile(128, DType::F32),
        }))],
    );
    let gpsimd = loop_of(
        vec![Instruction::new(Op::Iota(insn::Iota {
            dst: tile(256, DType::I32),
            pattern: vec![Dim::new(1, 16)],
            offset: 0,
            channel_multiplier: 16,
        }))],
        vec![Instruction::new(Op::Memset(insn::Memset {
            dst: tile(128, DType::F32),
            value: Imm::Float(2.0.into()),
        }))],
    );
    // The Scalar stream's first copy reads what GpSimd's memset writes.
    let ready = p.add_semaphore("ready");
    let mut gpsimd = gpsimd;
    gpsimd[0] = gpsimd[0].clone().signal(ready);
    let mut scalar = scalar;
    scalar[0] = scalar[0].clone().wait(ready, 1);
    *p.stream_mut(Queue::Vector) = vector;
    *p.stream_mut(Queue::Scalar) = scalar;
    *p.stream_mut(Queue::GpSimd) = gpsimd;
    p
}
