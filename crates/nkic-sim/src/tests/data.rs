//! Data movement: `dma_copy`, `dma_transpose`, `dma_gather`,
//! `dma_scatter`, `tensor_copy`, `memset`, `iota`.

use nkic_isa::insn;
use nkic_isa::{DType, DgeMode, Dim, Fp32, Imm, OobMode, Op, Queue, Reg, TensorKind};

use super::*;
use crate::error::SimErrorKind;

#[test]
fn dma_copy_moves_bf16_bits_into_128_partitions() {
    let p = program(&[("a", DType::BF16, &[128, 64], TensorKind::Input)]);
    let mut b = Bench::with_program(&p);
    let bits: Vec<u16> = (0..128 * 64).map(|i| (i * 7 + 3) as u16).collect();
    b.mem
        .load_tensor(0, bits.iter().flat_map(|x| x.to_le_bytes()).collect());
    let dst = tile(128, 64, 256, DType::BF16);
    b.ok(
        Queue::Dma(0),
        &Op::dma_copy(
            dst.clone(),
            hbm(TensorId(0), 128, 64, 0, &[(1, 64)], DType::BF16),
        ),
    );
    let got = b.get_bits(&dst);
    let want: Vec<u32> = bits.iter().map(|&x| u32::from(x)).collect();
    assert_eq!(got, want);
    assert_eq!(b.mem.hbm_read, 128 * 64 * 2);
}

#[test]
fn dma_copy_casts_through_f32_with_a_strided_source() {
    // One partition; the source takes every other f32 of HBM row 0.
    let p = program(&[("a", DType::F32, &[1, 8], TensorKind::Input)]);
    let mut b = Bench::with_program(&p);
    let src_vals = [
        1.0f32,
        100.0,
        1.0 + 1.0 / 256.0,
        100.0,
        -2.5,
        100.0,
        3.0e38,
        100.0,
    ];
    b.mem.load_tensor(0, f32_bytes(&src_vals));
    let dst = tile(1, 4, 0, DType::BF16);
    b.ok(
        Queue::Dma(3),
        &Op::dma_copy(
            dst.clone(),
            hbm(TensorId(0), 1, 8, 0, &[(2, 4)], DType::F32),
        ),
    );
    // 1.00390625 = 1 + 2^-8 is a tie between bf16 neighbours 1 and 1 + 2^-7;
    // RNE keeps 1.0. 3e38 rounds to the nearest bf16, 2.9980e38.
    assert_bits(&b.get(&dst), &[1.0, 1.0, -2.5, q(DType::BF16, 3.0e38)]);
}

#[test]
fn dma_copy_accumulates_in_f32() {
    let mut b = Bench::new();
    let dst = tile(2, 3, 0, DType::F32);
    let src = tile(2, 3, 64, DType::BF16);
    b.put(&dst, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    b.put(&src, &[0.5, -2.0, 1e-8, 0.25, 0.0, -6.0]);
    let op = Op::DmaCopy(insn::DmaCopy {
        dst: dst.clone(),
        src,
        accumulate: true,
        dge: DgeMode::Hwdge,
        oob: OobMode::Error,
        priority: Some(1),
    });
    b.ok(Queue::Dma(0), &op);
    // 3 + bf16(1e-8) rounds back to 3 in f32.
    assert_bits(&b.get(&dst), &[1.5, 0.0, 3.0, 4.25, 5.0, 0.0]);
}

#[test]
fn dma_copy_skip_drops_out_of_bounds_elements() {
    let p = program(&[("a", DType::I32, &[6], TensorKind::Input)]);
    let mut b = Bench::with_program(&p);
    b.mem
        .load_tensor(0, (10..16).flat_map(|x: i32| x.to_le_bytes()).collect());
    let dst = tile(1, 4, 0, DType::I32);
    b.put_bits(&dst, &[0, 0, 0, 0]);
    // r5 = 3: the source starts at element 3, so elements 6 and 7 are outside.
    b.regs[5] = 3;
    let src = hbm(TensorId(0), 1, 0, 0, &[(1, 4)], DType::I32).with_dyn_offset(Reg(5), 4);
    let mut op = Op::dma_copy(dst.clone(), src);
    assert_eq!(
        b.exec(Queue::Dma(0), &op).map_err(|f| f.kind),
        Err(SimErrorKind::OutOfBounds)
    );
    if let Op::DmaCopy(insn::DmaCopy { oob, .. }) = &mut op {
        *oob = OobMode::Skip;
    }
    b.ok(Queue::Dma(0), &op);
    assert_eq!(b.get_bits(&dst), vec![13, 14, 15, 0]);
}

#[test]
fn dma_copy_of_never_written_memory_faults() {
    let mut b = Bench::new();
    let f = b
        .exec(
            Queue::Dma(0),
            &Op::dma_copy(tile(4, 4, 0, DType::F32), tile(4, 4, 1024, DType::F32)),
        )
        .unwrap_err();
    assert_eq!(f.kind, SimErrorKind::UninitialisedRead);
    assert_eq!(
        f.message,
        "read of uninitialised memory through `src`: sbuf partition 0 byte 1024 was never written"
    );
}

#[test]
fn dma_transpose_2d_and_4d() {
    let mut b = Bench::new();
    let src = tile(4, 3, 0, DType::F32);
    b.put_counting(&src);
    let dst = tile(3, 4, 256, DType::F32);
    b.ok(
        Queue::Dma(0),
        &Op::DmaTranspose(insn::DmaTranspose {
            dst: dst.clone(),
            src,
            dge: DgeMode::None,
        }),
    );
    // dst[j, i] = src[i, j] = 3i + j.
    let want: Vec<f32> = (0..12).map(|e| ((e % 4) * 3 + e / 4) as f32).collect();
    assert_bits(&b.get(&dst), &want);

    // 4-D [2, 1, 3, 2] → [2, 1, 3, 2] with dst[w, y, z, x] = src[x, y, z, w].
    let src4 = sb(0, 2, 512, &[(6, 1), (2, 3), (1, 2)], DType::BF16);
    b.put_counting(&src4);
    let dst4 = sb(0, 2, 1024, &[(6, 1), (2, 3), (1, 2)], DType::BF16);
    b.ok(
        Queue::Dma(0),
        &Op::DmaTranspose(insn::DmaTranspose {
            dst: dst4.clone(),
            src: src4,
            dge: DgeMode::Hwdge,
        }),
    );
    let mut want4 = Vec::new();
    for w in 0..2 {
        for z in 0..3 {
            for x in 0..2 {
                want4.push((x * 6 + z * 2 + w) as f32);
            }
        }
    }
    assert_bits(&b.get(&dst4), &want4);
}

#[test]
fn dma_gather_and_scatter_follow_the_index() {
    let p = program(&[
        ("table", DType::F32, &[5, 2], TensorKind::Input),
        ("out", DType::F32, &[5, 2], TensorKind::Output),
    ]);
    let mut b = Bench::with_program(&p);
    b.mem.load_tensor(
        0,
        f32_bytes(&[0.0, 1.0, 10.0, 11.0, 20.0, 21.0, 30.0, 31.0, 40.0, 41.0]),
    );
    let index = tile(3, 1, 64, DType::I32);
    b.put_bits(&index, &[4, 0, 7]);
    let dst = tile(3, 2, 0, DType::F32);
    b.put(&dst, &[-1.0; 6]);
    let gather = |oob, accumulate| {
        Op::DmaGather(insn::DmaGather {
            dst: dst.clone(),
            src: hbm(TensorId(0), 3, 2, 0, &[(1, 2)], DType::F32),
            index: index.clone(),
            accumulate,
            oob,
        })
    };
    let f = b
        .exec(Queue::Dma(0), &gather(OobMode::Error, false))
        .unwrap_err();
    assert_eq!(f.kind, SimErrorKind::OutOfBounds);
    b.ok(Queue::Dma(0), &gather(OobMode::Skip, false));
    assert_bits(&b.get(&dst), &[40.0, 41.0, 0.0, 1.0, -1.0, -1.0]);
    // Gather-add (`dma_compute` of gathered rows into `dst`): the skipped
    // row keeps its value.
    b.ok(Queue::Dma(0), &gather(OobMode::Skip, true));
    assert_bits(&b.get(&dst), &[80.0, 82.0, 0.0, 2.0, -1.0, -1.0]);
    // A skipped row first, then a stretch of two rows in bounds.
    b.put_bits(&index, &[7, 1, 2]);
    b.ok(Queue::Dma(0), &gather(OobMode::Skip, false));
    assert_bits(&b.get(&dst), &[80.0, 82.0, 10.0, 11.0, 20.0, 21.0]);

    // Scatter-add with a repeated index: rows add up in ascending order.
    let out = hbm(TensorId(1), 5, 2, 0, &[(1, 2)], DType::F32);
    b.ok(
        Queue::Dma(0),
        &Op::dma_copy(
            out.clone(),
            hbm(TensorId(0), 5, 2, 0, &[(1, 2)], DType::F32),
        ),
    );
    b.put_bits(&index, &[1, 1, 3]);
    b.put(&dst, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let scatter = Op::DmaScatter(insn::DmaScatter {
        dst: hbm(TensorId(1), 3, 2, 0, &[(1, 2)], DType::F32),
        src: dst.clone(),
        index: index.clone(),
        accumulate: true,
        oob: OobMode::Error,
    });
    b.ok(Queue::Dma(0), &scatter);
    assert_bits(
        &b.get(&out),
        &[0.0, 1.0, 14.0, 17.0, 20.0, 21.0, 35.0, 37.0, 40.0, 41.0],
    );
}

/// A scatter whose source tile has a never-written element: under
/// precise poison only the element read from never-written bytes is
/// undefined (with the scatter as its origin), and the rows no index
/// names stay never written.
#[test]
fn a_scatter_from_a_partly_written_tile_marks_only_the_unwritten_element() {
    let p = program(&[("out", DType::F32, &[5, 2], TensorKind::Output)]);
    let mut b = Bench::with_program(&p);
    b.mem.set_poison(Poison::Precise);
    b.put(&sb(0, 1, 0, &[(1, 2)], DType::F32), &[1.0, 2.0]);
    b.put(&sb(1, 1, 0, &[(1, 1)], DType::F32), &[3.0]);
    b.put(&sb(2, 1, 0, &[(1, 2)], DType::F32), &[5.0, 6.0]);
    let index = tile(3, 1, 64, DType::I32);
    b.put_bits(&index, &[2, 0, 4]);
    let scatter = Op::DmaScatter(insn::DmaScatter {
        dst: hbm(TensorId(0), 3, 2, 0, &[(1, 2)], DType::F32),
        src: tile(3, 2, 0, DType::F32),
        index,
        accumulate: false,
        oob: OobMode::Error,
    });
    b.ok(Queue::Dma(0), &scatter);
    let states: Vec<(usize, bool)> = b
        .mem
        .undefined_elements(0, 4)
        .iter()
        .map(|&(e, origin)| (e, origin.is_some()))
        .collect();
    // Element 1 (source row 1's second element) is undefined, with the
    // scatter as its origin; out rows 1 and 3 were never written.
    assert_eq!(
        states,
        [(1, true), (2, false), (3, false), (6, false), (7, false)]
    );
    assert_summary_matches(&b.mem, 0, 4);
    let out = b.mem.take_output(0, DType::F32).into_vec();
    let value = |e: usize| f32::from_le_bytes(out[4 * e..4 * e + 4].try_into().expect("4 bytes"));
    assert_eq!([0, 4, 5, 8, 9].map(value), [3.0, 1.0, 2.0, 5.0, 6.0]);
}

#[test]
fn tensor_copy_broadcast_negative_stride_and_int_cast() {
    let mut b = Bench::new();
    // Broadcast: stride 0 repeats element 0 of each partition.
    let src = tile(2, 4, 0, DType::F32);
    b.put(&src, &[1.5, 2.5, -3.5, 300.0, -1.0, 0.5, 127.5, -200.0]);
    let bcast = sb(0, 2, 0, &[(0, 4)], DType::F32);
    let dst = tile(2, 4, 64, DType::F32);
    b.ok(
        Queue::Vector,
        &Op::TensorCopy(insn::TensorCopy {
            dst: dst.clone(),
            src: bcast,
        }),
    );
    assert_bits(&b.get(&dst), &[1.5, 1.5, 1.5, 1.5, -1.0, -1.0, -1.0, -1.0]);
    // Reversed: start at the last element with stride -1.
    let rev = sb(0, 2, 12, &[(-1, 4)], DType::F32);
    b.ok(
        Queue::GpSimd,
        &Op::TensorCopy(insn::TensorCopy {
            dst: dst.clone(),
            src: rev,
        }),
    );
    assert_bits(
        &b.get(&dst),
        &[300.0, -3.5, 2.5, 1.5, -200.0, 127.5, 0.5, -1.0],
    );
    // f32 → int8: RNE then saturation.
    let i8dst = tile(2, 4, 128, DType::I8);
    b.ok(
        Queue::Scalar,
        &Op::TensorCopy(insn::TensorCopy {
            dst: i8dst.clone(),
            src,
        }),
    );
    assert_eq!(
        b.get_bits(&i8dst),
        vec![2, 2, (-4i8) as u8 as u32, 127, 0xff, 0, 127, 0x80]
    );
}

#[test]
fn tensor_copy_between_equal_dtypes_keeps_nan_payloads() {
    let mut b = Bench::new();
    let src = sb(96, 32, 0, &[(1, 2)], DType::BF16);
    let bits: Vec<u32> = (0..64)
        .map(|i| if i % 2 == 0 { 0x7f81 } else { 0xffc3 })
        .collect();
    b.put_bits(&src, &bits);
    let dst = sb(0, 32, 4, &[(1, 2)], DType::BF16);
    b.ok(
        Queue::Vector,
        &Op::TensorCopy(insn::TensorCopy {
            dst: dst.clone(),
            src,
        }),
    );
    assert_eq!(b.get_bits(&dst), bits);
}

#[test]
fn memset_fills_every_dtype() {
    let mut b = Bench::new();
    let memset = |b: &mut Bench, queue, dst: &AccessPattern, value| {
        let dst = dst.clone();
        b.ok(queue, &Op::Memset(insn::Memset { dst, value }));
    };
    let i = tile(3, 5, 0, DType::I32);
    memset(&mut b, Queue::Vector, &i, Imm::Int(-7));
    assert_eq!(b.get_bits(&i), vec![(-7i32) as u32; 15]);
    let h = sb(0, 128, 64, &[(2, 3)], DType::BF16);
    memset(&mut b, Queue::GpSimd, &h, Imm::Float(Fp32::new(1.1)));
    assert_bits(&b.get(&h), &vec![q(DType::BF16, 1.1); 128 * 3]);
    let u = tile(1, 2, 128, DType::U8);
    memset(&mut b, Queue::Vector, &u, Imm::Int(0x1ff));
    assert_eq!(b.get_bits(&u), vec![0xff, 0xff]);
    let x4 = tile(1, 2, 192, DType::F8E4M3FNx4);
    memset(&mut b, Queue::Vector, &x4, Imm::Int(0));
    assert_eq!(b.get_bits(&x4), vec![0, 0]);
    let bo = tile(1, 2, 256, DType::Bool);
    memset(&mut b, Queue::Vector, &bo, Imm::Int(5));
    assert_eq!(b.get_bits(&bo), vec![1, 1]);
}

#[test]
fn iota_with_pattern_and_channel_multiplier() {
    let mut b = Bench::new();
    // The same iota into int32, int8 and f32.
    let iota = |dst: &AccessPattern| {
        Op::Iota(insn::Iota {
            dst: dst.clone(),
            pattern: vec![Dim::new(10, 2), Dim::new(-1, 3)],
            offset: 5,
            channel_multiplier: 100,
        })
    };
    let dst = tile(3, 6, 0, DType::I32);
    b.ok(Queue::GpSimd, &iota(&dst));
    let mut want = Vec::new();
    for p in 0..3i32 {
        for y in 0..2i32 {
            for x in 0..3i32 {
                want.push((5 + 100 * p + 10 * y - x) as u32);
            }
        }
    }
    assert_eq!(b.get_bits(&dst), want);
    // Into int8 the values saturate; into f32 they convert exactly.
    let small = tile(3, 6, 64, DType::I8);
    b.ok(Queue::GpSimd, &iota(&small));
    assert_eq!(b.get_bits(&small)[3..9], [15, 14, 13, 105, 104, 103]);
    assert_eq!(b.get_bits(&small)[12..15], [127, 127, 127]);
    let fl = tile(3, 6, 128, DType::F32);
    b.ok(Queue::GpSimd, &iota(&fl));
    let wf: Vec<f32> = want.iter().map(|&v| v as i32 as f32).collect();
    assert_bits(&b.get(&fl), &wf);
}

#[test]
fn a_kernel_writing_a_shared_input_writes_its_own_copy() {
    let p = program(&[("a", DType::F32, &[128, 4], TensorKind::InOut)]);
    let mut b = Bench::with_program(&p);
    let given = crate::Bytes::from(f32_bytes(&[1.0; 128 * 4]));
    b.mem.load_shared(0, given.clone());
    let src = tile(128, 4, 0, DType::F32);
    b.ok(
        Queue::Vector,
        &Op::Memset(insn::Memset {
            dst: src.clone(),
            value: Imm::Float(Fp32::new(2.0)),
        }),
    );
    b.ok(
        Queue::Dma(0),
        &Op::dma_copy(hbm(TensorId(0), 128, 4, 0, &[(1, 4)], DType::F32), src),
    );
    // The run's copy holds the kernel's write; the caller's bytes do not.
    assert_eq!(
        b.mem.take_output(0, DType::F32).into_vec(),
        f32_bytes(&[2.0; 128 * 4])
    );
    assert_eq!(given[..], f32_bytes(&[1.0; 128 * 4]));
}

/// Scatters and gathers of rows holding never-written and undefined
/// elements copy a row at a time (`MemoryState::copy_row`) exactly as the
/// element loop does: the same bytes, shadow and origins, counters and
/// faults, under every poison policy.
#[test]
fn indirect_rows_with_unclean_bytes_copy_as_the_element_loop_does() {
    let f32 = DType::F32;
    let run = |poison: Poison, element_copies: bool| {
        let p = program(&[
            ("out", f32, &[6, 6], TensorKind::Output),
            ("back", f32, &[4, 6], TensorKind::Output),
        ]);
        let mut b = Bench::with_program(&p);
        b.mem.set_poison(Poison::Precise);
        // `t` rows 0 and 2 whole, row 1 in columns 0..3, row 3 not at all;
        // `src` columns 0..4 copied from it (undefined where `t` was never
        // written), columns 4..6 written in rows 0 and 3 only. (Test
        // writes come first: they count as part of the last instruction.)
        b.put(&sb(0, 1, 0, &[(1, 4)], f32), &values(4, 1));
        b.put(&sb(1, 1, 0, &[(1, 3)], f32), &values(3, 2));
        b.put(&sb(2, 1, 0, &[(1, 4)], f32), &values(4, 3));
        b.put(&sb(0, 1, 272, &[(1, 2)], f32), &values(2, 4));
        b.put(&sb(3, 1, 272, &[(1, 2)], f32), &values(2, 5));
        let (to, from) = (tile(4, 1, 512, DType::I32), tile(4, 1, 520, DType::I32));
        b.put_bits(&to, &[3, 0, 5, 1]);
        b.put_bits(&from, &[0, 2, 3, 4]);
        let copy = Op::TensorCopy(insn::TensorCopy {
            dst: tile(4, 4, 256, f32),
            src: tile(4, 4, 0, f32),
        });
        b.ok(Queue::Vector, &copy);
        b.mem.set_poison(poison);
        b.mem.element_copies = element_copies;
        let rows = |t| hbm(TensorId(t), 4, 6, 0, &[(1, 6)], f32);
        let scatter = Op::DmaScatter(insn::DmaScatter {
            dst: rows(0),
            src: tile(4, 6, 256, f32),
            index: to,
            accumulate: false,
            oob: OobMode::Error,
        });
        let scattered = b.exec(Queue::Dma(0), &scatter).map_err(|f| f.message);
        // Back from `out`: rows written clean, unclean and never.
        let gather = Op::DmaGather(insn::DmaGather {
            dst: tile(4, 6, 1024, f32),
            src: rows(0),
            index: from,
            accumulate: false,
            oob: OobMode::Error,
        });
        let gathered = b.exec(Queue::Dma(1), &gather).map_err(|f| f.message);
        let counters = (b.mem.hbm_read, b.mem.hbm_written);
        b.mem.set_poison(Poison::Precise);
        let store = Op::dma_copy(rows(1), tile(4, 6, 1024, f32));
        b.ok(Queue::Dma(2), &store);
        let tensors = [0, 1].map(|t| {
            assert_summary_matches(&b.mem, t, 4);
            let undefined = b.mem.undefined_elements(t, 4);
            (undefined, b.mem.take_output(t, f32).into_vec())
        });
        (scattered, gathered, counters, tensors)
    };
    for poison in [Poison::Precise, Poison::Nan, Poison::Zero, Poison::Error] {
        let rows = run(poison, false);
        assert_eq!(rows, run(poison, true), "{poison:?}");
        let (scattered, _, _, [(out_undefined, _), _]) = &rows;
        match poison {
            Poison::Error => assert!(scattered.is_err(), "row 1 reads never-written bytes"),
            Poison::Precise => assert!(
                out_undefined.iter().any(|(_, origin)| origin.is_some()),
                "undefined rows were copied"
            ),
            _ => {}
        }
    }
}

/// A strided matmul operand read into padded rows (`read_f32_padded`) is
/// `read_f32`'s values, each row padded with zeros to the stride: when
/// the bytes between its elements were never written (each element is
/// checked) and when the whole hull is clean; a row with a never-written
/// element is left to `read_f32` (`false`, the buffer untouched).
#[test]
fn strided_rows_read_padded_are_the_values_read_f32_gives() {
    let bf16 = DType::BF16;
    let mut b = Bench::new();
    // 4 partitions × 8 elements 3 apart (bytes 0..44 of each row), only
    // the elements written; then a tile written whole at byte 256.
    let strided = |offset| sb(0, 4, offset, &[(3, 8)], bf16);
    b.put(&strided(0), &values(32, 1));
    b.put(&sb(0, 4, 256, &[(1, 24)], bf16), &values(96, 2));
    let stride = 11;
    for offset in [0, 256] {
        let v = b.view(&strided(offset), false);
        let want: Vec<f32> = b
            .mem
            .read_f32(&v)
            .unwrap()
            .chunks(8)
            .flat_map(|row| row.iter().copied().chain([0.0; 3]))
            .collect();
        let mut got = vec![7.0];
        assert!(
            b.mem.read_f32_padded(&v, stride, &mut got),
            "offset {offset}"
        );
        assert_eq!(got, want, "offset {offset}");
    }
    // Element 7 of partition 3 never written.
    let v = b.view(&sb(0, 4, 2, &[(3, 8)], bf16), false);
    b.put(&sb(0, 4, 2, &[(3, 7)], bf16), &values(28, 3));
    let mut untouched = vec![7.0];
    assert!(!b.mem.read_f32_padded(&v, stride, &mut untouched));
    assert_eq!(untouched, vec![7.0]);
}

/// A program that loads the constant `c` (`values`, f32[4, 2]) into SBUF
/// and, with `double`, doubles it on VectorE and stores it back over `c`,
/// then copies `c` to the output.
fn constant_program(values: &[f32], double: bool) -> Program {
    let mut hex = String::new();
    nkic_isa::field::write_hex(&f32_bytes(values), &mut hex);
    let store = if double {
        "  dma_copy dst=hbm.c[0:4*2]:f32[1,2] src=sbuf[0:4]+8:f32[1,2] wait(doubled>=1) signal(stored)
  dma_copy dst=hbm.out[0:4*2]:f32[1,2] src=hbm.c[0:4*2]:f32[1,2] wait(stored>=1)
.queue vector
  tensor_scalar dst=sbuf[0:4]+8:f32[1,2] src=sbuf[0:4]:f32[1,2] op0=multiply operand0=2.0 wait(loaded>=1) signal(doubled)
"
    } else {
        "  dma_copy dst=hbm.out[0:4*2]:f32[1,2] src=sbuf[0:4]:f32[1,2] wait(loaded>=1)\n"
    };
    let text = format!(
        ".target trn3
.arg out f32[4,2] output
.hbm c f32[4,2]
.data c {hex}
.sem loaded
.sem doubled
.sem stored

.queue dma0
  dma_copy dst=sbuf[0:4]:f32[1,2] src=hbm.c[0:4*2]:f32[1,2] signal(loaded)
{store}"
    );
    nkic_isa::assemble(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"))
}

#[test]
fn a_constant_tensor_holds_its_data_on_entry() {
    let values = [1.0f32, -2.5, 0.0, 3.0e38, f32::INFINITY, -0.0, 1e-45, 7.0];
    let p = constant_program(&values, false);
    // The default poison policy is precise: a never-written or undefined
    // byte in the output would be poison and a warning, not these bytes.
    let r = run(&p, &crate::Inputs::new(), &crate::SimConfig::default()).expect("runs");
    assert_eq!(
        r.outputs,
        vec![("out".to_owned(), f32_bytes(&values).into())]
    );
}

#[test]
fn writing_a_constant_tensor_leaves_the_program_s_bytes() {
    let values = [1.0f32, -2.5, 0.0, 0.5, 4.0, -0.0, 1e-45, 7.0];
    let p = constant_program(&values, true);
    let doubled: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
    for _ in 0..2 {
        let r = run(&p, &crate::Inputs::new(), &crate::SimConfig::default()).expect("runs");
        assert_eq!(
            r.outputs,
            vec![("out".to_owned(), f32_bytes(&doubled).into())]
        );
    }
    assert_eq!(p.hbm[1].data.as_deref(), Some(&f32_bytes(&values)[..]));
}

/// `MemoryState::undefined_summary` of HBM tensor `t` is the count, first
/// element and first origin of each kind in `undefined_elements`' list,
/// also for element sizes that split the runs of bits differently.
fn assert_summary_matches(mem: &crate::memory::MemoryState, t: usize, size: usize) {
    for size in [size, 1, 2, 3, 8, 64, 100] {
        let list = mem.undefined_elements(t, size);
        let kind = |never: bool| {
            let mut these = list.iter().filter(|(_, o)| o.is_none() == never);
            these
                .next()
                .map(|&(first, origin)| (1 + these.count() as u64, first, origin))
        };
        let want = crate::memory::UndefinedSummary {
            never: kind(true).map(|(count, first, _)| (count, first)),
            undefined: kind(false),
        };
        assert_eq!(
            mem.undefined_summary(t, size),
            want,
            "tensor {t}, {size}-byte elements"
        );
    }
}
