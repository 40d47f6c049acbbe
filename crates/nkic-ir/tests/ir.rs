//! Tests of the tile IR through its public API: a representative kernel
//! built with `KernelBuilder`, its printed form (an insta snapshot), the
//! print → read → print round trip, every verifier rule on a broken copy,
//! reader errors, overlap and read/write sets.

use nkic_diag::{FileId, SourceMap, Span};
use nkic_ir::{
    Address, ArgKind, Buffer, DynLoopKind, EngineState, Handle, Indirection, Item, Kernel,
    KernelBuilder, LoopCtx, LoopIter, Op, OpKind, Overlap, PrintOptions, RegOrImm, Scalar, SrcLoc,
    StaticLoopKind, Storage, View, ViewDim, overlap, print, print_with, read, verify,
};
use nkic_isa::{ActFunc, AluOp, DType, Engine, Fp32, Imm, ReduceCmd, Target};

fn loc(start: u32, end: u32) -> SrcLoc {
    SrcLoc::new(FileId(0), Span::new(start, end))
}

fn helper_loc(start: u32, end: u32) -> SrcLoc {
    SrcLoc::new(FileId(1), Span::new(start, end))
}

fn dma(dst: View, src: View) -> OpKind {
    OpKind::dma_copy(dst, src)
}

fn full(b: &KernelBuilder, t: Handle<Storage>) -> View {
    View::full(t, b.storage(t))
}

/// Rows `[start, start + n)` of a row-major 2-D storage with `cols` columns.
fn rows(t: Handle<Storage>, dtype: DType, start: u64, n: u64, cols: u64) -> View {
    View::new(
        t,
        dtype,
        (start * cols) as i64,
        &[ViewDim::new(cols as i64, n), ViewDim::new(1, cols)],
    )
}

fn memset(dst: View, value: Imm) -> OpKind {
    OpKind::Memset { dst, value }
}

/// A kernel that uses every feature of the IR once.
fn sample() -> Kernel {
    let mut b = KernelBuilder::new("sample", Target::Trn3);
    b.add_file(FileId(0), "kernel.py");
    b.add_file(FileId(1), "helpers/util.py");
    b.set_program_id(&[0], &[1]);
    let a = b.add_arg(
        "a",
        Buffer::SharedHbm,
        DType::F32,
        &[256, 512],
        ArgKind::Input,
        loc(10, 11),
    );
    let w = b.add_arg(
        "w",
        Buffer::SharedHbm,
        DType::BF16,
        &[128, 128],
        ArgKind::Input,
        loc(13, 14),
    );
    let out = b.alloc_storage(
        "out",
        Buffer::SharedHbm,
        DType::F32,
        &[256, 512],
        loc(30, 60),
    );

    // An unrolled affine loop with a tile per iteration.
    let lp = b.begin_static_loop(StaticLoopKind::AffineRange, 2, loc(70, 100));
    for i in 0..2u32 {
        b.enter_iteration(lp, i);
        let tile = b.alloc_storage(
            "a_tile",
            Buffer::Sbuf,
            DType::F32,
            &[128, 512],
            loc(110, 140),
        );
        let scale = b.alloc_storage("scale", Buffer::Sbuf, DType::F32, &[128, 1], loc(145, 170));
        b.push_op(
            Op::new(dma(
                full(&b, tile),
                rows(a, DType::F32, u64::from(i) * 128, 128, 512),
            )),
            loc(110, 140),
        );
        let mut set = Op::new(memset(full(&b, scale), Imm::Float(Fp32::new(2.0))));
        set.engine = Some(Engine::Vector);
        b.push_op(set, loc(175, 190));
        b.push_op(
            Op::new(OpKind::Activation {
                dst: full(&b, tile),
                src: full(&b, tile),
                func: ActFunc::Exp,
                scale: Scalar::Vector(full(&b, scale)),
                bias: Some(Scalar::imm(-0.5)),
                reduce_op: None,
                reduce_cmd: ReduceCmd::Idle,
                reduce_res: None,
            }),
            loc(200, 240),
        );
        b.push_op(
            Op::new(dma(
                rows(out, DType::F32, u64::from(i) * 128, 128, 512),
                full(&b, tile),
            )),
            loc(250, 280),
        );
        b.exit_iteration();
    }
    b.end_static_loop(lp);

    // A matmul through a helper function, and an explicit dependency.
    let wt = b.alloc_storage(
        "w_sb",
        Buffer::Sbuf,
        DType::BF16,
        &[128, 128],
        loc(300, 320),
    );
    let acc = b.alloc_storage("acc", Buffer::Psum, DType::F32, &[128, 128], loc(325, 340));
    b.set_address(
        acc,
        Address {
            partition: 0,
            byte: 2048,
        },
    );
    let load = b.push_op(Op::new(dma(full(&b, wt), full(&b, w))), loc(345, 360));
    b.enter_call(loc(400, 420));
    let mut mm = Op::new(OpKind::NcMatmul {
        dst: full(&b, acc),
        stationary: full(&b, wt),
        moving: full(&b, wt),
        accumulate: None,
        transpose: false,
        perf_mode: nkic_isa::MatmulPerfMode::None,
        stationary_onezero: false,
        moving_onezero: false,
        tile_position: None,
        tile_size: None,
    });
    mm.name = Some("mm \"main\"".to_owned());
    let mm = b.push_op(mm, helper_loc(5, 40));
    b.exit_call();
    let res = b.alloc_storage("res", Buffer::Sbuf, DType::F32, &[128, 128], loc(430, 450));
    let mut copy = Op::new(OpKind::TensorCopy {
        dst: full(&b, res),
        src: full(&b, acc),
    });
    copy.depends_on = vec![mm];
    let copy = b.push_op(copy, loc(455, 470));
    b.add_dependency(copy, load);

    // A reinterpreting view: the f32 result seen as bf16 pairs.
    let halves = b.alloc_storage(
        "halves",
        Buffer::Sbuf,
        DType::BF16,
        &[128, 256],
        loc(480, 500),
    );
    let as_bf16 = View::new(
        res,
        DType::BF16,
        0,
        &[ViewDim::new(256, 128), ViewDim::new(1, 256)],
    );
    b.push_op(
        Op::new(OpKind::TensorCopy {
            dst: full(&b, halves),
            src: as_bf16,
        }),
        loc(505, 520),
    );

    // A gather of HBM rows through an index tile.
    let index = b.alloc_storage("index", Buffer::Sbuf, DType::I32, &[128, 1], loc(530, 545));
    b.push_op(
        Op::new(OpKind::Iota {
            dst: full(&b, index),
            pattern: vec![nkic_isa::Dim::new(1, 1)],
            offset: 0,
            channel_multiplier: 2,
        }),
        loc(550, 570),
    );
    let gathered = b.alloc_storage(
        "gathered",
        Buffer::Sbuf,
        DType::F32,
        &[128, 512],
        loc(575, 590),
    );
    let mut src = rows(a, DType::F32, 0, 128, 512);
    src.indirect = Some(Indirection::Rows {
        index: Box::new(full(&b, index)),
    });
    b.push_op(Op::new(dma(full(&b, gathered), src)), loc(595, 620));

    // A dynamic range loop whose induction register moves a window.
    let n = b.alloc_register("n", Some(4), loc(630, 650));
    let window = b.alloc_storage(
        "window",
        Buffer::Sbuf,
        DType::F32,
        &[128, 16],
        loc(655, 670),
    );
    b.push_op(
        Op::new(memset(full(&b, window), Imm::Int(0))),
        loc(672, 690),
    );
    let (dl, iv) = b.begin_dynamic_loop(
        DynLoopKind::Range {
            start: RegOrImm::Imm(0),
            stop: RegOrImm::Reg(n),
            step: 1,
        },
        "i",
        loc(700, 730),
    );
    let Some(iv) = iv else {
        panic!("a counted loop has an induction register")
    };
    let part = b.alloc_storage("part", Buffer::Sbuf, DType::F32, &[128, 4], loc(735, 750));
    let moving = View::new(
        window,
        DType::F32,
        0,
        &[ViewDim::new(16, 128), ViewDim::new(1, 4)],
    )
    .with_dyn_offset(iv, 4);
    let mut tc = Op::new(OpKind::TensorCopy {
        dst: full(&b, part),
        src: moving,
    });
    tc.engine = Some(Engine::Scalar);
    b.push_op(tc, loc(755, 780));
    b.end_dynamic_loop(dl);

    // A while loop on a flag loaded from SBUF.
    let flag = b.alloc_storage("flag", Buffer::Sbuf, DType::I32, &[1, 1], loc(800, 810));
    b.push_op(Op::new(memset(full(&b, flag), Imm::Int(0))), loc(812, 830));
    let cond = b.alloc_register("c", Some(1), loc(835, 850));
    let (wl, none) = b.begin_dynamic_loop(DynLoopKind::While { cond }, "", loc(855, 870));
    assert_eq!(none, None);
    b.push_op(
        Op::new(OpKind::RegLoad {
            dst: cond,
            src: full(&b, flag),
        }),
        loc(875, 900),
    );
    b.end_dynamic_loop(wl);

    // A no_reorder block with a strided (every other column) view.
    let odd = b.alloc_storage(
        "we\"ird name",
        Buffer::Sbuf,
        DType::F32,
        &[64, 8],
        loc(910, 930),
    );
    b.begin_no_reorder();
    b.push_op(
        Op::new(memset(
            View::new(
                odd,
                DType::F32,
                0,
                &[ViewDim::new(8, 64), ViewDim::new(2, 4)],
            ),
            Imm::Float(Fp32::new(1.0)),
        )),
        loc(940, 960),
    );
    b.push_op(
        Op::new(memset(
            View::new(
                odd,
                DType::F32,
                1,
                &[ViewDim::new(8, 64), ViewDim::new(2, 4)],
            ),
            Imm::Float(Fp32::new(f32::NEG_INFINITY)),
        )),
        loc(965, 985),
    );
    b.end_no_reorder();
    let mut tt = Op::new(OpKind::TensorTensor {
        dst: full(&b, odd),
        src0: full(&b, odd),
        src1: full(&b, odd),
        op: AluOp::Add,
    });
    tt.engine = Some(Engine::GpSimd);
    b.push_op(tt, loc(990, 1010));

    // A constant (`nl.shared_constant`): HBM that holds 1.0, 2.0, 3.0 and
    // 4.0 on entry.
    let table = b.alloc_storage(
        "table",
        Buffer::SharedHbm,
        DType::F32,
        &[2, 2],
        loc(1020, 1040),
    );
    let bytes: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    b.set_data(table, bytes.into());

    b.add_output(out);
    b.finish()
}

#[test]
fn sample_verifies() {
    let k = sample();
    assert_eq!(verify(&k), Ok(()));
    assert_eq!(k.ops.len(), 23);
    assert_eq!(k.dyn_loops.len(), 2);
    assert_eq!(k.storages.len(), 18);
}

#[test]
fn sample_prints() {
    insta::assert_snapshot!(print(&sample()));
}

#[test]
fn sample_round_trips() {
    let k = sample();
    let text = print(&k);
    let back = match read(&text) {
        Ok(back) => back,
        Err(e) => panic!("{e}\n{text}"),
    };
    assert_eq!(print(&back), text);
    assert_eq!(verify(&back), Ok(()));
    assert_eq!(back, k);
}

#[test]
fn source_comments_are_ignored_by_the_reader() {
    let k = sample();
    let mut sources = SourceMap::new();
    let text: String = (0..40)
        .map(|i| format!("line {i} of the kernel source\n"))
        .collect();
    sources.add("kernel.py", text.clone());
    sources.add("helpers/util.py", text);
    let printed = print_with(
        &k,
        PrintOptions {
            sources: Some(&sources),
        },
    );
    assert!(
        printed.contains("@ kernel.py:110..140  # kernel.py:4:27\n"),
        "{printed}"
    );
    let back = read(&printed).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(print(&back), print(&k));
}

#[test]
fn loop_stacks_and_program_order() {
    let k = sample();
    let order = k.ops_in_order();
    assert_eq!(order.len(), k.ops.len());
    // The first op comes from iteration 0 of the affine loop.
    let first = &k.ops[order[0]];
    let stack = k.loop_stack(first.loop_ctx);
    assert_eq!(stack.len(), 1);
    assert_eq!(stack[0].index, 0);
    assert_eq!(
        k.static_loops[stack[0].lp].kind,
        StaticLoopKind::AffineRange
    );
    // Tiles of different iterations are different storages.
    let tiles: Vec<_> = k
        .storages
        .iter()
        .filter(|(_, s)| s.name == "a_tile")
        .collect();
    assert_eq!(tiles.len(), 2);
    assert_ne!(tiles[0].1.loop_ctx, tiles[1].1.loop_ctx);
    // The storage allocated in the dynamic loop is scoped to it.
    let part = k
        .storages
        .iter()
        .find(|(_, s)| s.name == "part")
        .map(|(_, s)| s.scope);
    assert_eq!(part, Some(k.dyn_loops.handles().next()));
    // The matmul has its helper's call chain.
    let mm = order
        .iter()
        .copied()
        .find(|&h| matches!(k.ops[h].kind, OpKind::NcMatmul { .. }));
    let Some(mm) = mm else { panic!("no matmul") };
    assert_eq!(k.call_chain(mm), vec![loc(400, 420)]);
}

// ------------------------------------------------------------------ read/write sets

#[test]
fn read_and_write_sets() {
    let k = sample();
    let gather = k
        .ops
        .iter()
        .find(|(_, op)| matches!(&op.kind, OpKind::DmaCopy { src, .. } if src.indirect.is_some()))
        .map(|(_, op)| op);
    let Some(gather) = gather else {
        panic!("no gather")
    };
    let reads: Vec<_> = gather
        .read_set()
        .iter()
        .map(|v| k.storages[v.storage].name.clone())
        .collect();
    assert_eq!(reads, vec!["a", "index"]);
    let writes: Vec<_> = gather
        .write_set()
        .iter()
        .map(|v| k.storages[v.storage].name.clone())
        .collect();
    assert_eq!(writes, vec!["gathered"]);
    let accesses = gather.accesses();
    assert_eq!(
        accesses.iter().map(|a| a.is_index).collect::<Vec<_>>(),
        vec![false, false, true]
    );

    let act = k
        .ops
        .iter()
        .find(|(_, op)| matches!(op.kind, OpKind::Activation { .. }))
        .map(|(_, op)| op);
    let Some(act) = act else {
        panic!("no activation")
    };
    let fields: Vec<_> = act.accesses().iter().map(|a| a.field).collect();
    assert_eq!(fields, vec!["dst", "src", "scale"]);

    let tc = k
        .ops
        .iter()
        .find(|(_, op)| op.engine == Some(Engine::Scalar))
        .map(|(_, op)| op);
    let Some(tc) = tc else {
        panic!("no scalar copy")
    };
    assert_eq!(tc.reg_reads().len(), 1);
    assert!(tc.reg_writes().is_empty());

    let load = k
        .ops
        .iter()
        .find(|(_, op)| matches!(op.kind, OpKind::RegLoad { .. }))
        .map(|(_, op)| op);
    let Some(load) = load else {
        panic!("no reg_load")
    };
    assert_eq!(load.reg_writes().len(), 1);
    assert_eq!(load.read_set().len(), 1);
}

#[test]
fn engine_state() {
    let v = |h| View::new(h, DType::F32, 0, &[ViewDim::new(1, 1), ViewDim::new(1, 1)]);
    let t = Handle::from_index(0).unwrap_or_else(|| unreachable!());
    let rng = OpKind::Rng { dst: v(t) };
    assert_eq!(
        rng.engine_state(None),
        vec![EngineState::VectorRng, EngineState::GpSimdRng]
    );
    assert_eq!(
        rng.engine_state(Some(Engine::GpSimd)),
        vec![EngineState::GpSimdRng]
    );
    let act = |cmd| OpKind::Activation {
        dst: v(t),
        src: v(t),
        func: ActFunc::Copy,
        scale: Scalar::imm(1.0),
        bias: None,
        reduce_op: Some(AluOp::Add),
        reduce_cmd: cmd,
        reduce_res: None,
    };
    assert!(act(ReduceCmd::Idle).engine_state(None).is_empty());
    assert_eq!(
        act(ReduceCmd::Reduce).engine_state(None),
        vec![EngineState::ScalarAccumulators]
    );
    assert!(
        OpKind::TensorCopy {
            dst: v(t),
            src: v(t)
        }
        .engine_state(None)
        .is_empty()
    );
    // Core barriers pair with the other core's by program order.
    assert_eq!(
        OpKind::CoreBarrier { data: Some(v(t)) }.engine_state(None),
        vec![EngineState::CoreSync]
    );
}

// ------------------------------------------------------------------ overlap

/// A kernel with one SBUF storage `[128, 64]` f32 (t0) and one HBM storage
/// `[64, 64]` f32 (t1).
fn two_storages() -> (Kernel, Handle<Storage>, Handle<Storage>) {
    let mut b = KernelBuilder::new("o", Target::Trn3);
    b.add_file(FileId(0), "k.py");
    let s = b.alloc_storage("s", Buffer::Sbuf, DType::F32, &[128, 64], loc(0, 1));
    let h = b.alloc_storage("h", Buffer::PrivateHbm, DType::F32, &[64, 64], loc(0, 1));
    (b.finish(), s, h)
}

fn sb(t: Handle<Storage>, p0: u64, np: u64, offset: i64, free: &[(i64, u64)]) -> View {
    let mut dims = vec![ViewDim::new(64, np)];
    dims.extend(free.iter().map(|&(s, c)| ViewDim::new(s, c)));
    View::new(t, DType::F32, (p0 as i64) * 64 + offset, &dims)
}

#[test]
fn overlap_of_partition_ranges() {
    let (k, s, _) = two_storages();
    let top = sb(s, 0, 64, 0, &[(1, 64)]);
    let bottom = sb(s, 64, 64, 0, &[(1, 64)]);
    let middle = sb(s, 32, 64, 0, &[(1, 64)]);
    assert_eq!(overlap(&k, &top, &bottom), Overlap::Disjoint);
    assert_eq!(overlap(&k, &top, &middle), Overlap::Overlapping);
    assert_eq!(overlap(&k, &middle, &bottom), Overlap::Overlapping);
    assert_eq!(top.partition_range(&k), Some(0..64));
    assert_eq!(bottom.partition_range(&k), Some(64..128));
}

#[test]
fn overlap_of_free_ranges_is_exact() {
    let (k, s, _) = two_storages();
    let left = sb(s, 0, 128, 0, &[(1, 32)]);
    let right = sb(s, 0, 128, 32, &[(1, 32)]);
    let even = sb(s, 0, 128, 0, &[(2, 32)]);
    let odd = sb(s, 0, 128, 1, &[(2, 32)]);
    let last = sb(s, 0, 128, 63, &[(1, 1)]);
    assert_eq!(overlap(&k, &left, &right), Overlap::Disjoint);
    // Interleaved columns share a bounding box but no byte.
    assert_eq!(overlap(&k, &even, &odd), Overlap::Disjoint);
    assert_eq!(overlap(&k, &even, &left), Overlap::Overlapping);
    assert_eq!(overlap(&k, &odd, &last), Overlap::Overlapping);
    assert_eq!(overlap(&k, &even, &last), Overlap::Disjoint);
    assert_eq!(left.bytes_per_partition(), 128);
}

#[test]
fn overlap_of_reinterpreting_views_is_byte_precise() {
    let (k, s, _) = two_storages();
    // Element 10 of every row as f32, and bytes 40..42 / 42..44 as bf16.
    let f = sb(s, 0, 128, 10, &[(1, 1)]);
    let lo = View::new(
        s,
        DType::BF16,
        20,
        &[ViewDim::new(128, 128), ViewDim::new(1, 1)],
    );
    let hi = View::new(
        s,
        DType::BF16,
        21,
        &[ViewDim::new(128, 128), ViewDim::new(1, 1)],
    );
    let next = View::new(
        s,
        DType::BF16,
        22,
        &[ViewDim::new(128, 128), ViewDim::new(1, 1)],
    );
    assert_eq!(overlap(&k, &f, &lo), Overlap::Overlapping);
    assert_eq!(overlap(&k, &f, &hi), Overlap::Overlapping);
    assert_eq!(overlap(&k, &f, &next), Overlap::Disjoint);
}

#[test]
fn overlap_in_hbm_and_across_storages() {
    let (k, s, h) = two_storages();
    let row = |r: i64| View::new(h, DType::F32, r * 64, &[ViewDim::new(1, 64)]);
    let col = |c: i64| View::new(h, DType::F32, c, &[ViewDim::new(64, 64)]);
    assert_eq!(overlap(&k, &row(3), &row(4)), Overlap::Disjoint);
    assert_eq!(overlap(&k, &row(3), &col(5)), Overlap::Overlapping);
    assert_eq!(overlap(&k, &col(4), &col(5)), Overlap::Disjoint);
    // Negative strides walk backwards.
    let backwards = View::new(h, DType::F32, 63, &[ViewDim::new(-1, 64)]);
    assert_eq!(overlap(&k, &backwards, &row(0)), Overlap::Overlapping);
    assert_eq!(overlap(&k, &backwards, &row(1)), Overlap::Disjoint);
    // Different storages never overlap.
    assert_eq!(
        overlap(&k, &row(0), &sb(s, 0, 1, 0, &[(1, 64)])),
        Overlap::Disjoint
    );
}

#[test]
fn overlap_is_conservative_for_dynamic_views() {
    let (mut k, s, h) = two_storages();
    let r = k.registers.append(nkic_ir::Register { name: "i".into() });
    let dynamic = sb(s, 0, 64, 0, &[(1, 4)]).with_dyn_offset(r, 4);
    assert_eq!(
        overlap(&k, &dynamic, &sb(s, 0, 64, 60, &[(1, 4)])),
        Overlap::MayOverlap
    );
    // A dynamic offset never crosses partitions.
    assert_eq!(
        overlap(&k, &dynamic, &sb(s, 64, 64, 0, &[(1, 64)])),
        Overlap::Disjoint
    );
    let mut gathered = View::new(
        h,
        DType::F32,
        0,
        &[ViewDim::new(64, 2), ViewDim::new(1, 64)],
    );
    gathered.indirect = Some(Indirection::Rows {
        index: Box::new(sb(s, 0, 2, 0, &[(1, 1)])),
    });
    let far_row = View::new(h, DType::F32, 63 * 64, &[ViewDim::new(1, 64)]);
    assert_eq!(overlap(&k, &gathered, &far_row), Overlap::MayOverlap);
    assert!(Overlap::MayOverlap.may_touch());
    assert!(!Overlap::Disjoint.may_touch());
}

// ------------------------------------------------------------------ verifier

/// Applies `mutate` to the sample kernel and checks that the verifier
/// reports exactly one error whose text contains `expected`.
fn check_invalid(mutate: impl FnOnce(&mut Kernel), expected: &str) {
    let mut k = sample();
    mutate(&mut k);
    let errors = match verify(&k) {
        Ok(()) => panic!("expected an error containing {expected:?}"),
        Err(errors) => errors,
    };
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        texts.iter().any(|t| t.contains(expected)),
        "expected {expected:?} in {texts:#?}"
    );
}

fn find_storage(k: &Kernel, name: &str) -> Handle<Storage> {
    k.storages
        .iter()
        .find(|(_, s)| s.name == name)
        .map(|(h, _)| h)
        .unwrap_or_else(|| panic!("no storage {name}"))
}

fn find_op(k: &Kernel, pred: impl Fn(&Op) -> bool) -> Handle<Op> {
    k.ops_in_order()
        .into_iter()
        .find(|&h| pred(&k.ops[h]))
        .unwrap_or_else(|| panic!("no such op"))
}

fn first_dst(op: &mut Op) -> &mut View {
    match &mut op.kind {
        OpKind::DmaCopy { dst, .. }
        | OpKind::Memset { dst, .. }
        | OpKind::TensorCopy { dst, .. }
        | OpKind::Activation { dst, .. }
        | OpKind::NcMatmul { dst, .. }
        | OpKind::TensorTensor { dst, .. }
        | OpKind::Iota { dst, .. } => dst,
        other => panic!("no dst in {other:?}"),
    }
}

fn is_memset(op: &Op) -> bool {
    matches!(op.kind, OpKind::Memset { .. })
}

#[test]
fn verifier_rejects_bad_handles() {
    check_invalid(
        |k| {
            k.outputs
                .push(Handle::from_index(99).unwrap_or_else(|| unreachable!()))
        },
        "output t99 out of range",
    );
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            first_dst(&mut k.ops[h]).storage =
                Handle::from_index(99).unwrap_or_else(|| unreachable!());
        },
        "`dst`: unknown t99",
    );
    check_invalid(
        |k| {
            k.body.push(Item::Op(
                Handle::from_index(77).unwrap_or_else(|| unreachable!()),
            ))
        },
        "body names unknown op77",
    );
}

#[test]
fn verifier_rejects_broken_structure() {
    check_invalid(
        |k| {
            k.body.pop();
        },
        "not in the body",
    );
    check_invalid(
        |k| {
            let first = k.body[0];
            k.body.push(first);
        },
        "appears twice in the body",
    );
    check_invalid(
        |k| {
            let l = k
                .dyn_loops
                .handles()
                .next()
                .unwrap_or_else(|| unreachable!());
            k.body.push(Item::Loop(l));
        },
        "appears twice in the body",
    );
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            k.ops[h].loop_ctx = LoopCtx(Some(LoopIter {
                lp: k
                    .static_loops
                    .handles()
                    .next()
                    .unwrap_or_else(|| unreachable!()),
                index: 2,
            }));
        },
        "iteration 2 of L0 which has 2 trips",
    );
}

#[test]
fn verifier_rejects_bad_storages() {
    check_invalid(
        |k| {
            let h = find_storage(k, "a_tile");
            k.storages[h].shape = vec![256, 512];
        },
        "256 partitions, more than 128",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "scale");
            k.storages[h].shape = vec![128];
        },
        "needs a partition dim and a free dim",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "scale");
            k.storages[h].shape = vec![128, 0];
        },
        "bad shape",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "acc");
            k.storages[h].shape = vec![128, 8192];
        },
        "bytes per partition exceed the 16384 of psum",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "acc");
            k.storages[h].address = Some(Address {
                partition: 0,
                byte: 100,
            });
        },
        "not at a bank boundary",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "out");
            k.storages[h].buffer = Buffer::PrivateHbm;
        },
        "returned tensor not in shared_hbm",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "a");
            k.storages[h].buffer = Buffer::Sbuf;
        },
        "argument not in HBM",
    );
}

#[test]
fn verifier_rejects_misplaced_data() {
    // Each storage given `len` zero bytes of data (`None`: its size).
    for (name, len, expected) in [
        (
            "table",
            Some(15),
            "t17: 15 bytes of data for a storage of 16 bytes",
        ),
        (
            "w_sb",
            None,
            "t7: data on a sbuf storage; only HBM holds constants",
        ),
        ("a", None, "t0: data on an argument"),
        ("out", None, "t2: data on a returned tensor"),
    ] {
        check_invalid(
            |k| {
                let h = find_storage(k, name);
                let len = len.unwrap_or(k.storages[h].bytes() as usize);
                k.storages[h].data = Some(vec![0u8; len].into());
            },
            expected,
        );
    }
}

#[test]
fn verifier_rejects_bad_views() {
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            first_dst(&mut k.ops[h]).dims[0].count = 129;
        },
        "outside the 128 of",
    );
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            first_dst(&mut k.ops[h]).dims[0].stride = 2;
        },
        "the partition dim has stride 2",
    );
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::Activation { .. }));
            first_dst(&mut k.ops[h]).offset = 1;
        },
        "leave the 2048-byte partition row",
    );
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::DmaCopy { .. }));
            if let OpKind::DmaCopy { src, .. } = &mut k.ops[h].kind {
                src.offset = 255 * 512;
            }
        },
        "outside the 524288 bytes of",
    );
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            let v = first_dst(&mut k.ops[h]);
            v.dims = vec![ViewDim::new(1, 1); 6];
        },
        "6 dims (1 to 5 allowed)",
    );
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            first_dst(&mut k.ops[h]).dtype = DType::F8E5M2x4;
            let t = find_storage(k, "scale");
            k.storages[t].dtype = DType::BF16;
        },
        "do not tile the 2-byte rows",
    );
}

#[test]
fn verifier_rejects_operands_in_the_wrong_memory() {
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::NcMatmul { .. }));
            let acc = find_storage(k, "res");
            first_dst(&mut k.ops[h]).storage = acc;
        },
        "`dst`: the Tensor engine needs psum here, not sbuf",
    );
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::Activation { .. }));
            let v = View::new(
                find_storage(k, "a"),
                DType::F32,
                0,
                &[ViewDim::new(512, 128), ViewDim::new(1, 512)],
            );
            *first_dst(&mut k.ops[h]) = v;
        },
        "compute ops access only SBUF and PSUM",
    );
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::TensorTensor { .. }));
            let acc = find_storage(k, "acc");
            *first_dst(&mut k.ops[h]) = View::new(
                acc,
                DType::F32,
                0,
                &[ViewDim::new(128, 64), ViewDim::new(1, 8)],
            );
        },
        "GpSimd cannot access PSUM",
    );
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::DmaCopy { .. }));
            let acc = find_storage(k, "acc");
            *first_dst(&mut k.ops[h]) = View::new(
                acc,
                DType::F32,
                0,
                &[ViewDim::new(128, 128), ViewDim::new(1, 128)],
            );
        },
        "DMA cannot access PSUM",
    );
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            k.ops[h].engine = Some(Engine::Tensor);
        },
        "memset cannot run on tensor",
    );
}

#[test]
fn verifier_rejects_bad_scheduling_edges() {
    check_invalid(
        |k| {
            let order = k.ops_in_order();
            let (first, second) = (order[0], order[1]);
            k.ops[first].depends_on.push(second);
        },
        "which does not precede it",
    );
    check_invalid(
        |k| {
            let inside = find_op(k, |op| op.engine == Some(Engine::Scalar));
            let last = *k.ops_in_order().last().unwrap_or_else(|| unreachable!());
            k.ops[last].depends_on.push(inside);
        },
        "inside a dynamic loop this op is not in",
    );
    check_invalid(
        |k| {
            // Pull the first op into the group that ends the kernel: the
            // dynamic loops now lie between its members.
            let order = k.ops_in_order();
            let group = k.ops[order[order.len() - 2]].no_reorder;
            k.ops[order[0]].no_reorder = group;
        },
        "contains a dynamic loop",
    );
}

#[test]
fn verifier_rejects_bad_registers() {
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::RegLoad { .. }));
            let iv = k
                .dyn_loops
                .iter()
                .find_map(|(_, l)| l.induction)
                .unwrap_or_else(|| unreachable!());
            if let OpKind::RegLoad { dst, .. } = &mut k.ops[h].kind {
                *dst = iv;
            }
        },
        "op19: writes r1 before its definition",
    );
    check_invalid(
        |k| {
            let r = k.registers.append(nkic_ir::Register {
                name: "ghost".into(),
            });
            let h = find_op(k, |op| matches!(op.kind, OpKind::RegLoad { .. }));
            if let OpKind::RegLoad { dst, .. } = &mut k.ops[h].kind {
                *dst = r;
            }
        },
        "writes r3 before its definition",
    );
    check_invalid(
        |k| {
            let l0 = k
                .dyn_loops
                .handles()
                .next()
                .unwrap_or_else(|| unreachable!());
            let iv = k.dyn_loops[l0].induction.unwrap_or_else(|| unreachable!());
            let h = k.ops.append(Op::new(OpKind::RegMove {
                dst: iv,
                src: RegOrImm::Imm(3),
            }));
            k.dyn_loops[l0].body.push(Item::Op(h));
        },
        "writes the read-only induction register r1",
    );
    check_invalid(
        |k| {
            let l0 = k
                .dyn_loops
                .handles()
                .next()
                .unwrap_or_else(|| unreachable!());
            if let DynLoopKind::Range { step, .. } = &mut k.dyn_loops[l0].kind {
                *step = 0;
            }
        },
        "step 0",
    );
    check_invalid(
        |k| {
            k.registers.append(nkic_ir::Register {
                name: "unused".into(),
            });
        },
        "r3: never defined",
    );
}

// ------------------------------------------------------------------ reader

fn read_error(text: &str) -> String {
    match read(text) {
        Ok(_) => panic!("expected a read error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const HEADER: &str = "kernel \"k\" target=trn3 program_id=[] num_programs=[]\nfile 0 \"k.py\"\n";

#[test]
fn reader_reads_a_hand_written_kernel() {
    let text = format!(
        "{HEADER}t0 = sbuf float32[128, 8] \"x\" @ k.py:0..5\nop0 = memset dst=t0[0:128, 0:8:2] value=0.0 engine=vector @ k.py:6..9\nop1 = tensor_copy dst=t0.ap([[8, 128], [1, 4]], offset=4) src=t0[0:128, 0:8:2] engine=? deps=[op0]\n"
    );
    let k = read(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(verify(&k), Ok(()));
    let op1 = &k.ops[Handle::from_index(1).unwrap_or_else(|| unreachable!())];
    let OpKind::TensorCopy { dst, src } = &op1.kind else {
        panic!("not a copy")
    };
    assert_eq!(dst.offset, 4);
    assert_eq!(src.dims, vec![ViewDim::new(8, 128), ViewDim::new(2, 4)]);
    assert_eq!(op1.engine, None);
    // Printing normalises the pattern form of a plain slice to slice form.
    assert!(print(&k).contains("dst=t0[0:128, 4:8]"));
}

#[test]
fn reader_reports_errors_with_lines() {
    assert_eq!(
        read_error("file 0 \"k.py\"\n"),
        "line 1: the text must start with a `kernel` line"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}op0 = frobnicate dst=t0[0:1, 0:1] engine=?\n"
        )),
        "line 3: unknown op `frobnicate`"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}t0 = sbuf float32[1, 1] \"x\"\nop0 = memset dst=t0[0:1, 0:1] engine=?\n"
        )),
        "line 4: missing field `value`"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}t0 = sbuf float32[1, 1] \"x\"\nop0 = memset dst=t0[0:1, 0:1] value=1 colour=red engine=?\n"
        )),
        "line 4: `memset` has no field `colour`"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}t0 = sbuf float32[1, 1] \"x\"\nop0 = memset dst=t0[0:1, 0:2] value=1 engine=?\n"
        )),
        "line 4: bad `dst`: bad slice 0:2:1 of a dim of size 1"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}t0 = sbuf float32[1, 1] \"x\" @ other.py:0..1\n"
        )),
        "line 3: location in unknown file `other.py`"
    );
    assert_eq!(
        read_error(&format!("{HEADER}op1 = reg_alloc dst=r0 engine=?\n")),
        "line 3: op0 is never defined"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}t0 = shared_hbm float32[1] \"x\" data=0000803\n"
        )),
        "line 3: 7 hexadecimal digits, an odd number; a byte is two"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}t0 = shared_hbm float32[1] \"x\" data=0000803F\n"
        )),
        "line 3: `F` is not a lowercase hexadecimal digit"
    );
    assert_eq!(
        read_error(&format!("{HEADER}}}\n")),
        "line 3: `}` without an open dynamic loop"
    );
    assert_eq!(
        read_error(&format!("{HEADER}dyn0 = while cond=r0 {{\n")),
        "line 3: dyn0 is not closed"
    );
    assert_eq!(
        read_error(&format!(
            "{HEADER}t0 = sbuf float32[1, 1] \"x\"\nop0 = memset dst=t0[0:1, 0:1] value=1\n"
        )),
        "line 4: missing `engine=` (write `engine=?` to leave it open)"
    );
}

#[test]
fn reader_accepts_what_the_verifier_rejects() {
    // Structurally wrong but syntactically fine: the verifier names the problem.
    let text = format!(
        "{HEADER}t0 = psum float32[128, 8] \"x\"\nop0 = memset dst=t0[0:128, 0:8] value=0 engine=gpsimd\n"
    );
    let k = read(&text).unwrap_or_else(|e| panic!("{e}"));
    let errors = verify(&k).err().unwrap_or_default();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "op0: `dst`: GpSimd cannot access PSUM"
    );
}

#[test]
fn sendrecv_exchanges_sbuf_tiles_only() {
    let text = format!(
        "{HEADER}t0 = shared_hbm float32[128, 8] \"x\"\nt1 = sbuf float32[128, 8] \"y\"\n\
         t2 = psum float32[128, 8] \"z\"\n\
         op0 = sendrecv dst=t1[0:128, 0:8] src=t0[0:128, 0:8] pipe=0 engine=sync\n\
         op1 = sendrecv dst=t2[0:128, 0:8] src=t1[0:128, 0:8] pipe=1 engine=gpsimd\n\
         op2 = sendrecv dst=t1[0:128, 0:8] src=t1[0:128, 0:8] pipe=255 engine=vector\n"
    );
    let k = read(&text).unwrap_or_else(|e| panic!("{e}"));
    let errors: Vec<String> = verify(&k)
        .err()
        .unwrap_or_default()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            "op0: `src`: the cores exchange SBUF tiles, not shared_hbm",
            "op1: `dst`: the cores exchange SBUF tiles, not psum",
            "op1: `dst`: GpSimd cannot access PSUM",
        ]
    );
}

// ------------------------------------------------------------------ corpus

/// Every `tests/corpus/*.ir` file reads, verifies, and prints back to
/// exactly its own text (the files are in canonical form).
#[test]
fn corpus_round_trips() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ir"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty());
    for path in paths {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let k = read(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Err(errors) = verify(&k) {
            let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
            panic!("{}:\n{}", path.display(), texts.join("\n"));
        }
        let printed = print(&k);
        if printed != text {
            for (i, (a, b)) in printed.lines().zip(text.lines()).enumerate() {
                assert_eq!(a, b, "{} line {}", path.display(), i + 1);
            }
            assert_eq!(printed, text, "{}", path.display());
        }
    }
}

#[test]
fn every_mnemonic_is_in_the_corpus() {
    let text = include_str!("corpus/all_ops.ir");
    for m in OpKind::MNEMONICS {
        assert!(text.contains(&format!(" = {m} ")), "no `{m}` in all_ops.ir");
    }
}

// ------------------------------------------------------------------ overlap against brute force

/// A small deterministic generator (64-bit LCG) for the cross-check.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.next((hi - lo + 1) as u64) as i64
    }
}

/// Every byte a static view touches, as flat storage byte offsets.
fn brute_bytes(v: &View) -> std::collections::BTreeSet<i64> {
    let size = i64::from(v.dtype.size());
    let mut elems = vec![v.offset];
    for d in &v.dims {
        elems = elems
            .iter()
            .flat_map(|&e| (0..d.count as i64).map(move |i| e + i * d.stride))
            .collect();
    }
    elems
        .into_iter()
        .flat_map(|e| (e * size)..(e * size + size))
        .collect()
}

fn random_view(rng: &mut Lcg, k: &Kernel, t: Handle<Storage>) -> View {
    let st = &k.storages[t];
    let dtype = if rng.next(3) == 0 {
        DType::BF16
    } else {
        DType::F32
    };
    let ratio = i64::from(st.dtype.size() / dtype.size());
    let mut dims = Vec::new();
    let mut offset;
    if st.buffer.is_on_chip() {
        let row = st.elems_per_partition() as i64 * ratio;
        let p0 = rng.range(0, st.shape[0] as i64 - 1);
        let np = rng.range(1, st.shape[0] as i64 - p0);
        dims.push(ViewDim::new(row, np as u64));
        offset = p0 * row + rng.range(0, row - 1);
    } else {
        offset = rng.range(0, st.numel() as i64 * ratio - 1);
    }
    for _ in 0..rng.range(1, 3) {
        dims.push(ViewDim::new(rng.range(-4, 6), rng.range(1, 4) as u64));
    }
    // Shift the view so its lowest free element is at or after the row start.
    let lowest: i64 = dims
        .iter()
        .skip(usize::from(st.buffer.is_on_chip()))
        .map(|d| d.stride.min(0) * (d.count as i64 - 1))
        .sum();
    offset -= lowest.min(0);
    View::new(t, dtype, offset, &dims)
}

/// True when `v` stays within its storage (the verifier's bounds rule).
fn in_bounds(v: &View, st: &Storage) -> bool {
    let fp = v.footprint_in(st);
    let Some((lo, hi)) = fp.byte_bounds() else {
        return false;
    };
    if st.buffer.is_on_chip() {
        fp.partitions.end <= st.partitions() && lo >= 0 && hi <= st.bytes_per_partition() as i64
    } else {
        lo >= 0 && hi <= st.bytes() as i64
    }
}

#[test]
fn overlap_agrees_with_brute_force() {
    let mut b = KernelBuilder::new("o", Target::Trn3);
    b.add_file(FileId(0), "k.py");
    let s = b.alloc_storage("s", Buffer::Sbuf, DType::F32, &[8, 24], loc(0, 1));
    let h = b.alloc_storage("h", Buffer::PrivateHbm, DType::F32, &[6, 10], loc(0, 1));
    let k = b.finish();
    let mut rng = Lcg(7);
    let (mut disjoint, mut overlapping) = (0, 0);
    for round in 0..4000 {
        let t = if round % 2 == 0 { s } else { h };
        let a = random_view(&mut rng, &k, t);
        let c = random_view(&mut rng, &k, t);
        // Only in-bounds views have a defined meaning.
        let st = &k.storages[t];
        if !in_bounds(&a, st) || !in_bounds(&c, st) {
            continue;
        }
        let truth = !brute_bytes(&a).is_disjoint(&brute_bytes(&c));
        let got = overlap(&k, &a, &c);
        assert_eq!(
            got,
            if truth {
                Overlap::Overlapping
            } else {
                Overlap::Disjoint
            },
            "{a:?}\n{c:?}"
        );
        if truth {
            overlapping += 1;
        } else {
            disjoint += 1;
        }
    }
    // The generator exercises both outcomes substantially.
    assert!(
        disjoint > 300 && overlapping > 300,
        "{disjoint} {overlapping}"
    );
}

// ------------------------------------------------------------------ robustness

/// Randomly damaged IR text never makes the reader, the verifier or the
/// printer panic, and whatever reads and verifies round-trips.
#[test]
fn damaged_text_never_panics() {
    let originals = [
        print(&sample()),
        include_str!("corpus/all_ops.ir").to_owned(),
    ];
    let pieces = [
        "0",
        "9",
        "-",
        "[",
        "]",
        "(",
        ")",
        ",",
        ":",
        "=",
        "?",
        "@",
        "*",
        "{",
        "}",
        "\"",
        " ",
        "\n",
        "t99",
        "r99",
        "op99",
        "dyn9",
        "L9",
        "0:0",
        "18446744073709551615",
        ".ap(",
        "offset=",
    ];
    let mut rng = Lcg(11);
    let (mut read_ok, mut verified) = (0, 0);
    for round in 0..6000 {
        let mut text = originals[round % 2].clone().into_bytes();
        for _ in 0..=rng.next(2) {
            let at = rng.next(text.len() as u64) as usize;
            match rng.next(3) {
                0 => {
                    let end = (at + 1 + rng.next(8) as usize).min(text.len());
                    text.drain(at..end);
                }
                1 => {
                    let piece = pieces[rng.next(pieces.len() as u64) as usize];
                    text.splice(at..at, piece.bytes());
                }
                _ => {
                    let end = (at + rng.next(40) as usize).min(text.len());
                    let copy: Vec<u8> = text[at..end].to_vec();
                    text.splice(at..at, copy);
                }
            }
        }
        let Ok(text) = String::from_utf8(text) else {
            continue;
        };
        let Ok(k) = read(&text) else { continue };
        read_ok += 1;
        let printed = print(&k);
        if verify(&k).is_ok() {
            verified += 1;
            let back = read(&printed).unwrap_or_else(|e| panic!("{e}\n{printed}"));
            assert_eq!(print(&back), printed);
        }
    }
    assert!(read_ok > 60 && verified > 30, "{read_ok} {verified}");
}

// ------------------------------------------------------------------ analyses

#[test]
fn program_order_numbers_loops_around_their_bodies() {
    let k = sample();
    let order = nkic_ir::program_order(&k);
    let loops: Vec<_> = k.dyn_loops.handles().collect();
    // 15 ops precede dyn0 (positions 0..=15), then its header.
    assert_eq!(order.loop_span.get(loops[0]), Some(&(16, 18)));
    assert_eq!(order.loop_span.get(loops[1]), Some(&(21, 23)));
    assert_eq!(order.len, 27);
    let inside = find_op(&k, |op| op.engine == Some(Engine::Scalar));
    assert_eq!(order.op_position.get(inside), Some(&17));
    assert_eq!(order.op_loops.get(inside), Some(&vec![loops[0]]));
    let first = k.ops_in_order()[0];
    assert_eq!(order.op_position.get(first), Some(&0));
    assert_eq!(order.op_loops.get(first), None);
}

#[test]
fn live_ranges_follow_uses_loops_and_arguments() {
    let k = sample();
    let ranges = nkic_ir::live_ranges(&k);
    let range = |name: &str| {
        let t = find_storage(&k, name);
        ranges.get(t).map(|r| (r.first, r.last))
    };
    // The input lives from the start to its last read (the gather).
    assert_eq!(range("a"), Some((0, 13)));
    // The output lives from its first write to the end.
    assert_eq!(range("out"), Some((3, 26)));
    // The first iteration's tile dies before the second iteration's is born.
    let tiles: Vec<_> = k
        .storages
        .iter()
        .filter(|(_, s)| s.name == "a_tile")
        .filter_map(|(t, _)| ranges.get(t).copied())
        .collect();
    assert_eq!(tiles.len(), 2);
    assert_eq!((tiles[0].first, tiles[0].last), (0, 3));
    assert_eq!((tiles[1].first, tiles[1].last), (4, 7));
    assert!(!tiles[0].intersects(tiles[1]));
    // Read inside dyn0 but written before it: live through the whole loop.
    assert_eq!(range("window"), Some((15, 18)));
    // Allocated in dyn0's body and written whole by its one op there:
    // made anew by every iteration, so live at that op only.
    assert_eq!(range("part"), Some((17, 17)));
    // Read by reg_load in the while loop.
    assert_eq!(range("flag"), Some((19, 23)));
    assert_eq!(range("gathered"), Some((13, 13)));
}

/// A tile allocated in a dynamic loop body is live for the whole loop
/// unless the body writes every byte of it before reading any: in one
/// write or in pieces over all partitions, not in half of its partitions,
/// not adding into it (`accumulate`), not inside a nested loop.
#[test]
fn body_tiles_made_anew_each_iteration_live_only_from_their_writes() {
    let mut b = KernelBuilder::new("fresh", Target::Trn3);
    b.add_file(FileId(0), "kernel.py");
    let src = b.add_arg(
        "src",
        Buffer::SharedHbm,
        DType::F32,
        &[128, 8],
        ArgKind::Input,
        loc(0, 1),
    );
    let out = b.add_arg(
        "out",
        Buffer::SharedHbm,
        DType::F32,
        &[128, 8],
        ArgKind::Output,
        loc(2, 3),
    );
    let (dl, _) = b.begin_dynamic_loop(
        DynLoopKind::Range {
            start: RegOrImm::Imm(0),
            stop: RegOrImm::Imm(4),
            step: 1,
        },
        "i",
        loc(4, 5),
    );
    let tile = |b: &mut KernelBuilder, name: &str| {
        b.alloc_storage(name, Buffer::Sbuf, DType::F32, &[128, 8], loc(6, 7))
    };
    let half_cols = |t: Handle<Storage>, first: i64| {
        View::new(
            t,
            DType::F32,
            first,
            &[ViewDim::new(8, 128), ViewDim::new(1, 4)],
        )
    };
    // Written whole, then read: fresh.
    let whole = tile(&mut b, "whole");
    b.push_op(Op::new(dma(full(&b, whole), full(&b, src))), loc(10, 11));
    // Written in two column halves, then read: fresh.
    let pieces = tile(&mut b, "pieces");
    b.push_op(
        Op::new(memset(half_cols(pieces, 0), Imm::Int(0))),
        loc(12, 13),
    );
    b.push_op(
        Op::new(memset(half_cols(pieces, 4), Imm::Int(1))),
        loc(14, 15),
    );
    // Read before it is written: carries the previous iteration's bytes.
    let carried = tile(&mut b, "carried");
    b.push_op(Op::new(dma(full(&b, out), full(&b, carried))), loc(16, 17));
    b.push_op(Op::new(memset(full(&b, carried), Imm::Int(2))), loc(18, 19));
    // Only partitions 0..64 written before the read.
    let half = tile(&mut b, "half");
    b.push_op(
        Op::new(memset(rows(half, DType::F32, 0, 64, 8), Imm::Int(3))),
        loc(20, 21),
    );
    // Added into by its first write.
    let added = tile(&mut b, "added");
    let mut acc = dma(full(&b, added), full(&b, src));
    if let OpKind::DmaCopy { accumulate, .. } = &mut acc {
        *accumulate = true;
    }
    b.push_op(Op::new(acc), loc(22, 23));
    // Written whole only inside a nested loop (which may run no iteration).
    let nested = tile(&mut b, "nested");
    let (inner, _) = b.begin_dynamic_loop(
        DynLoopKind::Range {
            start: RegOrImm::Imm(0),
            stop: RegOrImm::Imm(2),
            step: 1,
        },
        "j",
        loc(24, 25),
    );
    b.push_op(Op::new(memset(full(&b, nested), Imm::Int(4))), loc(26, 27));
    b.end_dynamic_loop(inner);
    for t in [whole, pieces, half, added, nested] {
        b.push_op(Op::new(dma(full(&b, out), full(&b, t))), loc(30, 31));
    }
    b.end_dynamic_loop(dl);
    b.add_output(out);
    let k = b.finish();
    let ranges = nkic_ir::live_ranges(&k);
    let order = nkic_ir::program_order(&k);
    let loops: Vec<_> = k.dyn_loops.handles().collect();
    let span = *order.loop_span.get(loops[0]).unwrap();
    let range = |name: &str| {
        let r = ranges.get(find_storage(&k, name)).unwrap();
        (r.first, r.last)
    };
    // Positions: header 0, whole 1, pieces 2-3, carried 4-5, half 6,
    // added 7, inner header 8, nested 9, inner footer 10, reads 11-15.
    assert_eq!(span, (0, 16));
    assert_eq!(range("whole"), (1, 11));
    assert_eq!(range("pieces"), (2, 12));
    for name in ["carried", "half", "added", "nested"] {
        assert_eq!(range(name), span, "{name}");
    }
}

// ------------------------------------------------------------------ view transformations

#[test]
fn view_transformations() {
    let (k, s, h) = two_storages();
    let full = View::full(s, &k.storages[s]);
    // Columns 8, 10, …, 30 of partitions 32..64.
    let Some(v) = full.slice(0, 32, 64, 1).and_then(|v| v.slice(1, 8, 31, 2)) else {
        panic!("slices in range")
    };
    assert_eq!(v.offset, 32 * 64 + 8);
    assert_eq!(v.dims, vec![ViewDim::new(64, 32), ViewDim::new(2, 12)]);
    assert_eq!(v.partition_range(&k), Some(32..64));
    assert_eq!(full.slice(1, 0, 65, 1), None);
    assert_eq!(full.slice(1, 4, 4, 1), None);
    assert_eq!(full.slice(2, 0, 1, 1), None);

    let hbm = View::full(h, &k.storages[h]);
    let Some(row) = hbm.select(0, 3) else {
        panic!("row 3")
    };
    assert_eq!(
        (row.offset, row.dims.clone()),
        (192, vec![ViewDim::new(1, 64)])
    );
    assert_eq!(hbm.select(0, 64), None);

    let Some(t) = hbm.permute(&[1, 0]) else {
        panic!("a permutation")
    };
    assert_eq!(t.dims, vec![ViewDim::new(1, 64), ViewDim::new(64, 64)]);
    assert_eq!(hbm.permute(&[0, 0]), None);
    assert_eq!(hbm.permute(&[0]), None);

    let Some(col) = row.insert_dim(1).and_then(|v| v.broadcast(1, 5)) else {
        panic!("insert then broadcast")
    };
    assert_eq!(col.dims, vec![ViewDim::new(1, 64), ViewDim::new(0, 5)]);
    assert_eq!(col.num_elements(), 320);
    assert_eq!(row.broadcast(0, 5), None);

    // f32 rows seen as bytes and back.
    let Some(bytes) = v.slice(1, 0, 1, 1).and_then(|v| v.reinterpret(DType::U8)) else {
        panic!("reinterpret")
    };
    assert_eq!(bytes.offset, (32 * 64 + 8) * 4);
    assert_eq!(bytes.dims, vec![ViewDim::new(256, 32), ViewDim::new(1, 4)]);
    assert_eq!(
        bytes.reinterpret(DType::F32).map(|b| b.offset),
        Some(32 * 64 + 8)
    );
    // A strided last dim cannot be reinterpreted; nor can a partial word.
    assert_eq!(v.reinterpret(DType::U8), None);
    let Some(three) = bytes.slice(1, 0, 3, 1) else {
        panic!("three bytes")
    };
    assert_eq!(three.reinterpret(DType::F32), None);
}

#[test]
fn notes_place_an_op_in_loops_and_calls() {
    let k = sample();
    let order = k.ops_in_order();
    assert_eq!(
        k.op_notes(order[5], None),
        vec!["in iteration 1 of the affine_range loop at kernel.py:70..100"]
    );
    let mm = find_op(&k, |op| matches!(op.kind, OpKind::NcMatmul { .. }));
    let mut sources = SourceMap::new();
    sources.add("kernel.py", "x = 1\n".repeat(200));
    assert_eq!(
        k.op_notes(mm, Some(&sources)),
        vec!["inlined from the call at kernel.py:67:5"]
    );
    assert!(k.op_notes(order[22], None).is_empty());
}

#[test]
fn verifier_rejects_bad_kernel_tables() {
    check_invalid(
        |k| {
            k.files.push(nkic_ir::SourceFileName {
                id: FileId(0),
                name: "other.py".into(),
            })
        },
        "file0 listed twice",
    );
    check_invalid(
        |k| {
            k.files.push(nkic_ir::SourceFileName {
                id: FileId(7),
                name: "kernel.py".into(),
            })
        },
        "file name \"kernel.py\" listed twice",
    );
    check_invalid(|k| k.program_id = vec![1], "program id 1 not below 1");
    check_invalid(|k| k.num_programs = vec![1, 1], "differ in length");
    check_invalid(
        |k| {
            let a = k.args[0];
            k.args.push(a);
        },
        "argument listed twice",
    );
    check_invalid(
        |k| {
            let o = k.outputs[0];
            k.outputs.push(o);
        },
        "returned twice",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "a");
            k.storages[h].scope = k.dyn_loops.handles().next();
        },
        "argument created inside a loop",
    );
    check_invalid(
        |k| {
            let h = Handle::from_index(500).unwrap_or_else(|| unreachable!());
            k.spans.ops.insert(h, loc(0, 1));
        },
        "span of unknown op500",
    );
    check_invalid(
        |k| {
            let h = find_op(k, is_memset);
            k.spans
                .ops
                .insert(h, SrcLoc::new(FileId(9), Span::new(0, 1)));
        },
        "location in unknown file9",
    );
    check_invalid(
        |k| {
            let l0 = k
                .static_loops
                .handles()
                .next()
                .unwrap_or_else(|| unreachable!());
            k.static_loops[l0].parent = LoopCtx(Some(LoopIter { lp: l0, index: 0 }));
        },
        "L0: parent context names L0 which is not older",
    );
}

#[test]
fn verifier_rejects_bad_loops_and_groups() {
    check_invalid(
        |k| {
            let l = k
                .dyn_loops
                .handles()
                .nth(1)
                .unwrap_or_else(|| unreachable!());
            k.dyn_loops[l].induction =
                Some(Handle::from_index(0).unwrap_or_else(|| unreachable!()));
        },
        "while loop with an induction register",
    );
    check_invalid(
        |k| {
            let l = k
                .dyn_loops
                .handles()
                .next()
                .unwrap_or_else(|| unreachable!());
            k.dyn_loops[l].induction = None;
        },
        "counted loop without an induction register",
    );
    check_invalid(
        |k| {
            // The first dynamic loop claims iteration 0 of the affine loop,
            // but the storage it allocates does not.
            let l = k
                .dyn_loops
                .handles()
                .next()
                .unwrap_or_else(|| unreachable!());
            let l0 = k
                .static_loops
                .handles()
                .next()
                .unwrap_or_else(|| unreachable!());
            k.dyn_loops[l].loop_ctx = LoopCtx(Some(LoopIter { lp: l0, index: 0 }));
        },
        "loop context outside its dynamic loop's iteration",
    );
    check_invalid(
        |k| {
            // Group g0 holds two top-level memsets; add an op of dyn0's body.
            let inside = find_op(k, |op| op.engine == Some(Engine::Scalar));
            k.ops[inside].no_reorder = Some(nkic_ir::NoReorderGroup(0));
        },
        "spans more than one block",
    );
    check_invalid(
        |k| {
            let order = k.ops_in_order();
            k.ops[order[2]].depends_on = vec![order[0], order[0]];
        },
        "depends on op0 twice",
    );
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::RegLoad { .. }));
            let r = match &k.ops[h].kind {
                OpKind::RegLoad { dst, .. } => *dst,
                _ => unreachable!(),
            };
            let again = k
                .ops
                .append(Op::new(OpKind::RegAlloc { dst: r, init: None }));
            k.body.push(Item::Op(again));
        },
        "defines r2 a second time",
    );
}

#[test]
fn verifier_rejects_bad_indirection_and_register_views() {
    let index_of = |k: &Kernel| {
        View::full(
            find_storage(k, "index"),
            &k.storages[find_storage(k, "index")],
        )
    };
    check_invalid(
        |k| {
            let ix = index_of(k);
            let h = find_op(k, is_memset);
            first_dst(&mut k.ops[h]).indirect = Some(Indirection::Rows {
                index: Box::new(ix),
            });
        },
        "vector_offset on an on-chip view",
    );
    check_invalid(
        |k| {
            let ix = index_of(k);
            let h = find_op(k, |op| matches!(op.kind, OpKind::DmaCopy { .. }));
            if let OpKind::DmaCopy { src, .. } = &mut k.ops[h].kind {
                src.indirect = Some(Indirection::Columns {
                    index: Box::new(ix),
                });
            }
        },
        "indirect columns on an HBM view",
    );
    check_invalid(
        |k| {
            let mut ix = index_of(k);
            ix.indirect = Some(Indirection::Columns {
                index: Box::new(index_of(k)),
            });
            let h = find_op(k, is_memset);
            first_dst(&mut k.ops[h]).indirect = Some(Indirection::Columns {
                index: Box::new(ix),
            });
        },
        "an index view is itself indirect",
    );
    check_invalid(
        |k| {
            let acc = find_storage(k, "acc");
            let ix = View::new(
                acc,
                DType::F32,
                0,
                &[ViewDim::new(128, 128), ViewDim::new(1, 1)],
            );
            let h = find_op(k, is_memset);
            first_dst(&mut k.ops[h]).indirect = Some(Indirection::Columns {
                index: Box::new(ix),
            });
        },
        "index views live in SBUF",
    );
    check_invalid(
        |k| {
            let h = find_op(k, |op| matches!(op.kind, OpKind::RegLoad { .. }));
            let scale = find_storage(k, "res");
            if let OpKind::RegLoad { src, .. } = &mut k.ops[h].kind {
                *src = View::new(
                    scale,
                    DType::F32,
                    0,
                    &[ViewDim::new(128, 1), ViewDim::new(1, 2)],
                );
            }
        },
        "a register moves exactly one element",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "a");
            k.storages[h].address = Some(Address {
                partition: 0,
                byte: 0,
            });
        },
        "manual address on an HBM storage",
    );
    check_invalid(
        |k| {
            let h = find_storage(k, "acc");
            k.storages[h].address = Some(Address {
                partition: 64,
                byte: 0,
            });
        },
        "manual address runs past the last partition",
    );
}

// ------------------------------------------------------------------ lowering to access patterns

#[test]
fn views_lower_to_access_patterns() {
    use nkic_ir::{LowerError, Placement};
    use nkic_isa::{AccessPattern, Dim, Reg, TensorId};
    let (mut k, s, h) = two_storages();
    let r = k.registers.append(nkic_ir::Register { name: "i".into() });
    let on_chip = Placement::OnChip {
        partition: 32,
        byte: 1024,
    };
    // Partitions 16..48 of s, columns 8.. every other, 4 of them.
    let v = sb(s, 16, 32, 8, &[(2, 4)]);
    let ap = v.to_access_pattern(&k.storages[s], on_chip, None);
    assert_eq!(
        ap,
        Ok(AccessPattern::sbuf(
            48,
            32,
            1024 + 32,
            &[Dim::new(2, 4)],
            DType::F32
        ))
    );
    let dynamic = v.clone().with_dyn_offset(r, 3);
    assert_eq!(
        dynamic.to_access_pattern(&k.storages[s], on_chip, None),
        Err(LowerError::NoRegister)
    );
    let ap = dynamic.to_access_pattern(&k.storages[s], on_chip, Some(Reg(5)));
    assert_eq!(
        ap.map(|ap| ap.dyn_offset),
        Ok(Some(nkic_isa::DynOffset {
            reg: Reg(5),
            scale: 12
        }))
    );
    // Rows 2..6 of h, columns 1..5, placed 256 bytes into tensor 3.
    let rows = View::new(
        h,
        DType::F32,
        2 * 64 + 1,
        &[ViewDim::new(64, 4), ViewDim::new(1, 4)],
    );
    let hbm = Placement::Hbm {
        tensor: TensorId(3),
        byte: 256,
    };
    assert_eq!(
        rows.to_access_pattern(&k.storages[h], hbm, None),
        Ok(AccessPattern::hbm(
            TensorId(3),
            4,
            64,
            256 + 129 * 4,
            &[Dim::new(1, 4)],
            DType::F32
        ))
    );
    assert_eq!(
        rows.to_access_pattern(&k.storages[h], on_chip, None),
        Err(LowerError::WrongPlacement)
    );
    let mut gather = rows.clone();
    gather.indirect = Some(Indirection::Rows {
        index: Box::new(sb(s, 0, 4, 0, &[(1, 1)])),
    });
    assert_eq!(
        gather.to_access_pattern(&k.storages[h], hbm, None),
        Err(LowerError::Indirect)
    );
    assert_eq!(gather.without_indirection(), rows);
    let deep = View::new(h, DType::F32, 0, &[ViewDim::new(1, 1); 6]);
    assert_eq!(
        deep.to_access_pattern(&k.storages[h], hbm, None),
        Err(LowerError::TooManyDims(5))
    );
}

#[test]
fn reader_limits_loop_nesting() {
    let mut text = format!("{HEADER}reg r0 \"c\"\nop0 = reg_alloc dst=r0 engine=?\n");
    for i in 0..300 {
        text.push_str(&format!("dyn{i} = while cond=r0 {{\n"));
    }
    for _ in 0..300 {
        text.push_str("}\n");
    }
    assert_eq!(
        read_error(&text),
        "line 261: dynamic loops nested deeper than 256"
    );
}

/// `Footprint::runs` gives what enumerating every run, sorting and joining
/// gives: nested and interleaved strides, negative ones, repeated runs,
/// dims that join the inner run, an empty dim, and the run limit.
#[test]
fn footprint_runs_are_the_sorted_joined_runs() {
    fn naive(fp: &nkic_ir::Footprint) -> Vec<(i64, i64)> {
        let mut elems = vec![fp.base];
        for &(stride, count) in &fp.byte_dims {
            elems = elems
                .iter()
                .flat_map(|&s| (0..count).map(move |i| s + stride * i as i64))
                .collect();
        }
        let mut runs: Vec<(i64, i64)> = elems.iter().map(|&s| (s, s + fp.elem_bytes)).collect();
        runs.sort_unstable();
        nkic_isa::intervals::join_sorted(runs)
    }
    /// A footprint's base, byte dims and element size.
    type Case = (i64, &'static [(i64, u64)], i64);
    let cases: &[Case] = &[
        (0, &[], 4),
        (16, &[(4, 8)], 4),
        (0, &[(64, 3), (4, 4)], 4),
        (0, &[(4, 4), (64, 3)], 4),
        (8, &[(8, 5), (2, 2)], 2),
        (100, &[(-8, 5), (2, 3)], 2),
        (0, &[(0, 3), (4, 2)], 4),
        (0, &[(12, 3), (1, 2), (4, 3)], 1),
        (0, &[(64, 0), (4, 4)], 4),
        (4, &[(2048, 2), (1, 1), (512, 4), (4, 16)], 4),
    ];
    for &(base, dims, elem_bytes) in cases {
        let fp = nkic_ir::Footprint {
            partitions: 0..1,
            base,
            byte_dims: dims.to_vec(),
            elem_bytes,
            dynamic: false,
        };
        assert_eq!(
            fp.runs(1 << 20),
            Some(naive(&fp)),
            "{base} {dims:?} {elem_bytes}"
        );
    }
    let wide = nkic_ir::Footprint {
        partitions: 0..1,
        base: 0,
        byte_dims: vec![(64, 5), (8, 4)],
        elem_bytes: 4,
        dynamic: false,
    };
    assert_eq!(wide.runs(19), None);
    assert_eq!(wide.runs(20).map(|r| r.len()), Some(20));
}
