//! Whole programs through `run`: timing from the cost model, semaphores,
//! dynamic loops, step orders, faults and their messages.

use nkic_isa::insn;
use nkic_isa::{
    ActFunc, AluOp, BranchCond, DType, Imm, Instruction, Label, Op, Program, Queue, ReduceCmd, Reg,
    RegOrImm, Scalar, SemId, SemWait, Target, TensorKind,
};

use super::*;
use crate::{Cause, Inputs, Poison, SimConfig, SimErrorKind, StepOrder};

fn scale(dst: AccessPattern, src: AccessPattern, by: f32) -> Op {
    Op::tensor_scalar(dst, src, AluOp::Multiply, Scalar::imm(by))
}

/// load → scale by 2 → store, across three queues.
fn pipeline() -> Program {
    let mut p = program(&[
        ("a", DType::F32, &[128, 512], TensorKind::Input),
        ("out", DType::F32, &[128, 512], TensorKind::Output),
    ]);
    let loaded = p.add_semaphore("loaded");
    let computed = p.add_semaphore("computed");
    let a = hbm(TensorId(0), 128, 512, 0, &[(1, 512)], DType::F32);
    let out = hbm(TensorId(1), 128, 512, 0, &[(1, 512)], DType::F32);
    let t0 = tile(128, 512, 0, DType::F32);
    let t1 = tile(128, 512, 2048, DType::F32);
    p.stream_mut(Queue::Dma(0))
        .push(Instruction::new(Op::dma_copy(t0.clone(), a)).signal(loaded));
    p.stream_mut(Queue::Vector).push(
        Instruction::new(scale(t1.clone(), t0, 2.0))
            .wait(loaded, 1)
            .signal(computed),
    );
    p.stream_mut(Queue::Dma(1))
        .push(Instruction::new(Op::dma_copy(out, t1)).wait(computed, 1));
    p
}

#[test]
fn pipeline_result_and_times_follow_the_cost_model() {
    let p = pipeline();
    let a = values(128 * 512, 11);
    let res = run(
        &p,
        &Inputs::new().with("a", f32_bytes(&a)),
        &SimConfig::default(),
    )
    .expect("runs");
    let want: Vec<f32> = a.iter().map(|x| x * 2.0).collect();
    assert_eq!(
        res.outputs,
        vec![("out".to_owned(), f32_bytes(&want).into())]
    );
    let cost = |q: Queue, i: usize| Target::Trn3.cost(q, &p.stream(q).unwrap_or_default()[i].op);
    let (c0, c1, c2) = (
        cost(Queue::Dma(0), 0),
        cost(Queue::Vector, 0),
        cost(Queue::Dma(1), 0),
    );
    assert_eq!(res.trace[0].start_ps, 0);
    assert_eq!(res.total_ps, c0.latency_ps + c1.latency_ps + c2.latency_ps);
    let starts: Vec<(Queue, u64)> = res.trace.iter().map(|e| (e.queue, e.start_ps)).collect();
    assert!(starts.contains(&(Queue::Vector, c0.latency_ps)));
    assert!(starts.contains(&(Queue::Dma(1), c0.latency_ps + c1.latency_ps)));
    let busy: Vec<u64> = res.per_queue.iter().map(|s| s.busy_ps).collect();
    assert_eq!(busy, vec![c0.busy_ps, c1.busy_ps, c2.busy_ps]);
    assert_eq!(res.hbm_bytes_read, 128 * 512 * 4);
    assert_eq!(res.hbm_bytes_written, 128 * 512 * 4);
    assert_eq!(res.instructions, 3);
    assert_eq!(res.elements, 3 * 128 * 512);
}

#[test]
fn dependent_instructions_pay_the_issue_overhead() {
    let mut p = program(&[]);
    let t0 = tile(128, 64, 0, DType::F32);
    let t1 = tile(128, 64, 512, DType::F32);
    let t2 = tile(128, 64, 1024, DType::F32);
    let v = p.stream_mut(Queue::Vector);
    v.push(Instruction::new(Op::Memset(insn::Memset {
        dst: t0.clone(),
        value: Imm::Float(1.0.into()),
    })));
    v.push(Instruction::new(Op::Memset(insn::Memset {
        dst: t1.clone(),
        value: Imm::Float(2.0.into()),
    })));
    v.push(Instruction::new(scale(t2, t1, 3.0)));
    let res = run(&p, &Inputs::new(), &SimConfig::default()).expect("runs");
    let c = |i: usize| {
        Target::Trn3.cost(
            Queue::Vector,
            &p.stream(Queue::Vector).unwrap_or_default()[i].op,
        )
    };
    // The second memset is independent: it issues when the queue is free.
    assert_eq!(res.trace[1].start_ps, c(0).busy_ps);
    // The multiply reads what the second memset wrote: it waits for its
    // completion, then the dependent-issue overhead.
    let overhead = Target::Trn3.dependent_overhead_ps(nkic_isa::Engine::Vector);
    assert_eq!(
        res.trace[2].start_ps,
        c(0).busy_ps + c(1).latency_ps + overhead
    );
}

/// On trn1 VectorE and GpSimd cannot access SBUF in parallel: of two
/// independent memsets the later queue's waits for the earlier's interval
/// and names it as the cause, whatever the step order; on trn2 they
/// overlap.
#[test]
fn vector_and_gpsimd_share_the_sbuf_port_on_trn1() {
    let mut p = program(&[]);
    for (queue, offset) in [(Queue::Vector, 0), (Queue::GpSimd, 2048)] {
        p.stream_mut(queue)
            .push(Instruction::new(Op::Memset(insn::Memset {
                dst: tile(128, 512, offset, DType::F32),
                value: Imm::Float(1.0.into()),
            })));
    }
    for target in [Target::Trn1, Target::Trn2] {
        p.target = target;
        let busy = |q: Queue| {
            let op = &p.stream(q).unwrap_or_default()[0].op;
            target.cost(q, op).busy_ps
        };
        for order in [
            StepOrder::RoundRobin,
            StepOrder::Reverse,
            StepOrder::Seeded(7),
        ] {
            let res = run(&p, &Inputs::new(), &SimConfig::stepping(order)).expect("runs");
            let at = |q: Queue| {
                let e = res.trace.iter().find(|e| e.queue == q).expect("traced");
                (e.start_ps, e.cause)
            };
            let (first, second) = (p.queues[0].queue, p.queues[1].queue);
            assert_eq!(at(first), (0, Cause::Start), "{target} {order:?}");
            let expected = if target == Target::Trn1 {
                (
                    busy(first),
                    Cause::Port {
                        queue: first,
                        seq: 0,
                    },
                )
            } else {
                (0, Cause::Start)
            };
            assert_eq!(at(second), expected, "{target} {order:?}");
        }
    }
}

/// A program with many queues working on disjoint data, synchronised only
/// through semaphores, with a matmul, a dynamic loop and accumulators.
fn busy_program() -> Program {
    let mut p = program(&[
        ("x", DType::BF16, &[4, 128, 128], TensorKind::Input),
        ("n", DType::I32, &[1], TensorKind::Input),
        ("mm", DType::F32, &[128, 128], TensorKind::Output),
        ("acts", DType::BF16, &[4, 128, 128], TensorKind::Output),
        ("sums", DType::F32, &[128, 4], TensorKind::Output),
    ]);
    let loaded = p.add_semaphore("loaded");
    let acted = p.add_semaphore("acted");
    let mm_done = p.add_semaphore("mm_done");
    let stored = p.add_semaphore("stored");
    let slot = |i: u64| tile(128, 128, i * 256, DType::BF16);
    // Block `i` of 128 rows of HBM tensor `t`.
    let block = |t: u32, i: u64| {
        let offset = i * 128 * 128 * 2;
        hbm(TensorId(t), 128, 128, offset, &[(1, 128)], DType::BF16)
    };
    // Four loads on four DMA queues.
    for i in 0..4u64 {
        let src = block(0, i);
        p.stream_mut(Queue::Dma(i as u8))
            .push(Instruction::new(Op::dma_copy(slot(i), src)).signal(loaded));
    }
    // Scalar: a dynamic loop over n tiles: activation with a running sum.
    let sums = tile(128, 4, 4096, DType::F32);
    {
        let s = p.stream_mut(Queue::Scalar);
        s.push(Instruction::new(Op::RegSet(insn::RegSet {
            dst: Reg(1),
            value: 0,
        })));
        s.push(Instruction::new(Op::RegSet(insn::RegSet {
            dst: Reg(0),
            value: 4,
        })));
        s.push(Instruction::new(Op::Label(insn::Label { label: Label(0) })));
        let src = tile(128, 128, 0, DType::BF16).with_dyn_offset(Reg(1), 256);
        let dst = tile(128, 128, 8192, DType::BF16).with_dyn_offset(Reg(1), 256);
        let res = tile(128, 1, 4096, DType::F32).with_dyn_offset(Reg(1), 4);
        let mut inst = Instruction::new(Op::Activation(insn::Activation {
            dst,
            src,
            func: ActFunc::Gelu,
            scale: Scalar::imm(0.5),
            bias: None,
            reduce_op: Some(AluOp::Add),
            reduce_cmd: ReduceCmd::ResetReduce,
            reduce_res: Some(res),
        }))
        .signal(acted);
        // Tile i arrives with the (i+1)-th load in time order; waiting for
        // all four keeps the loop race-free whatever the DMA order.
        inst.waits.push(SemWait {
            sem: loaded,
            value: 4,
            reg: None,
        });
        inst.waits.push(SemWait {
            sem: loaded,
            value: 1,
            reg: Some(Reg(1)),
        });
        s.push(inst);
        s.extend(programs::loop_back());
    }
    // Tensor: slot 0 × slot 1 into PSUM, then Vector evacuates it.
    let dst = ps(sb(0, 128, 0, &[(1, 128)], DType::F32));
    p.stream_mut(Queue::Tensor).push(
        Instruction::new(Op::matmul(dst.clone(), slot(0), slot(1), false))
            .wait(loaded, 4)
            .signal(mm_done),
    );
    let mm_sb = tile(128, 128, 16384, DType::F32);
    p.stream_mut(Queue::Vector).push(
        Instruction::new(Op::TensorCopy(insn::TensorCopy {
            dst: mm_sb.clone(),
            src: dst,
        }))
        .wait(mm_done, 1)
        .signal(stored),
    );
    // GpSimd: an iota nobody reads, to add an independent queue.
    p.stream_mut(Queue::GpSimd)
        .push(Instruction::new(Op::Iota(insn::Iota {
            dst: tile(128, 64, 32768, DType::I32),
            pattern: vec![nkic_isa::Dim::new(1, 64)],
            offset: 0,
            channel_multiplier: 64,
        })));
    // Stores on other DMA queues.
    p.stream_mut(Queue::Dma(5)).push(
        Instruction::new(Op::dma_copy(
            hbm(TensorId(2), 128, 128, 0, &[(1, 128)], DType::F32),
            mm_sb,
        ))
        .wait(stored, 1),
    );
    for i in 0..4u64 {
        let dst = block(3, i);
        p.stream_mut(Queue::Dma(6 + i as u8)).push(
            Instruction::new(Op::dma_copy(
                dst,
                tile(128, 128, 8192 + i * 256, DType::BF16),
            ))
            .wait(acted, i as u32 + 1),
        );
    }
    p.stream_mut(Queue::Sync)
        .push(Instruction::new(dma_sums_placeholder()).wait(acted, 4));
    p.stream_mut(Queue::Dma(10)).push(
        Instruction::new(Op::dma_copy(
            hbm(TensorId(4), 128, 4, 0, &[(1, 4)], DType::F32),
            sums,
        ))
        .wait(acted, 4),
    );
    p
}

/// The Sync queue just waits (a `nop`).
fn dma_sums_placeholder() -> Op {
    Op::Nop(insn::Nop {})
}

fn busy_inputs() -> Inputs {
    let x: Vec<u8> = values(4 * 128 * 128, 12)
        .into_iter()
        .flat_map(|v| (nkic_isa::numerics::from_f32(DType::BF16, v) as u16).to_le_bytes())
        .collect();
    Inputs::new()
        .with("x", x)
        .with("n", 4i32.to_le_bytes().to_vec())
}

#[test]
fn step_order_changes_neither_bytes_nor_times() {
    let p = busy_program();
    let inputs = busy_inputs();
    let orders = [
        StepOrder::RoundRobin,
        StepOrder::Reverse,
        StepOrder::Earliest,
        StepOrder::Seeded(1),
        StepOrder::Seeded(2),
        StepOrder::Seeded(0xdead_beef),
    ];
    let mut results = Vec::new();
    for order in orders {
        let config = SimConfig::stepping(order);
        let r = run(&p, &inputs, &config).unwrap_or_else(|e| panic!("{order:?}: {e}"));
        results.push((order, r));
    }
    let (_, first) = &results[0];
    for (order, r) in &results[1..] {
        assert_eq!(r.outputs, first.outputs, "{order:?}");
        assert_eq!(r.total_ps, first.total_ps, "{order:?}");
        assert_eq!(r.per_queue, first.per_queue, "{order:?}");
        assert_eq!(r.trace, first.trace, "{order:?}");
    }
    assert_eq!(
        first.instructions,
        4 + 2 + 4 * 4 + 1 + 1 + 1 + 1 + 4 + 1 + 1
    );
}

/// Runs `p` with `config`, which must fail with `kind` and exactly
/// `message`; the error.
fn fails(p: &Program, config: &SimConfig, kind: SimErrorKind, message: &str) -> crate::SimError {
    let e = run(p, &Inputs::new(), config).unwrap_err();
    assert_eq!(e.kind, kind);
    assert_eq!(e.to_string(), message);
    e
}

/// Vector and GpSimd memset the same tile to 1 and 2 without ordering
/// each other, then a DMA stores the tile to `out`; and the semaphore
/// Vector signals.
fn racy_program() -> (Program, SemId) {
    let mut p = program(&[("out", DType::F32, &[1, 4], TensorKind::Output)]);
    let (a, b) = (p.add_semaphore("a"), p.add_semaphore("b"));
    let t = tile(1, 4, 0, DType::F32);
    let set = |v: f32| {
        Op::Memset(insn::Memset {
            dst: t.clone(),
            value: Imm::Float(v.into()),
        })
    };
    p.stream_mut(Queue::Vector)
        .push(Instruction::new(set(1.0)).signal(a));
    p.stream_mut(Queue::GpSimd)
        .push(Instruction::new(set(2.0)).signal(b));
    p.stream_mut(Queue::Dma(0)).push(
        Instruction::new(Op::dma_copy(
            hbm(TensorId(0), 1, 4, 0, &[(1, 4)], DType::F32),
            t.clone(),
        ))
        .wait(a, 1)
        .wait(b, 1),
    );
    (p, a)
}

#[test]
fn a_racy_program_depends_on_the_step_order() {
    // Vector and GpSimd write the same tile at the same time without
    // ordering: the last one stepped wins, so the step order shows.
    let (p, _) = racy_program();
    let out = |order| {
        let config = SimConfig {
            step_order: order,
            race_check: false,
            ..SimConfig::default()
        };
        run(&p, &Inputs::new(), &config).expect("runs").outputs[0]
            .1
            .clone()
    };
    assert_eq!(out(StepOrder::RoundRobin), f32_bytes(&[2.0; 4]));
    assert_eq!(out(StepOrder::Reverse), f32_bytes(&[1.0; 4]));
    // By default the race detector stops the run instead.
    let e = run(&p, &Inputs::new(), &SimConfig::default()).unwrap_err();
    assert_eq!(e.kind, SimErrorKind::Race);
}

#[test]
fn deadlock_names_the_waiting_instructions() {
    let mut p = program(&[]);
    let s = p.add_semaphore("ready");
    let line = p.add_line("kernel.py", 7, 3, 10..20);
    p.stream_mut(Queue::Vector)
        .push(Instruction::new(Op::Nop(insn::Nop {})).signal(s));
    // A loop (never taken) makes the wait one the verifier cannot judge
    // statically; only the run finds the deadlock.
    let scalar = p.stream_mut(Queue::Scalar);
    scalar.push(Instruction::new(Op::Nop(insn::Nop {})).wait(s, 2).at(line));
    scalar.push(Instruction::new(Op::Label(insn::Label { label: Label(0) })));
    scalar.push(Instruction::new(Op::Branch(insn::Branch {
        cond: BranchCond::Lt,
        a: Reg(0),
        b: RegOrImm::Imm(0),
        target: Label(0),
    })));
    fails(
        &p,
        &SimConfig::default(),
        SimErrorKind::Deadlock,
        "deadlock: scalar[0] `nop` waits for `ready` >= 2 but it is 1 and nothing left can signal it at scalar[0] (kernel.py:7:3)",
    );
}

#[test]
fn out_of_bounds_fault_names_instruction_and_source_line() {
    let mut p = program(&[]);
    let line = p.add_line("kernel.py", 14, 5, 100..120);
    let src = tile(4, 64, 0, DType::F32).with_dyn_offset(Reg(3), 4096);
    let v = p.stream_mut(Queue::Vector);
    v.push(Instruction::new(Op::RegSet(insn::RegSet {
        dst: Reg(3),
        value: 60,
    })));
    v.push(
        Instruction::new(Op::TensorCopy(insn::TensorCopy {
            dst: tile(4, 64, 0, DType::F32),
            src,
        }))
        .at(line),
    );
    let e = run(&p, &Inputs::new(), &SimConfig::default()).unwrap_err();
    assert_eq!(e.kind, SimErrorKind::OutOfBounds);
    assert_eq!((e.queue, e.index), (Some(Queue::Vector), Some(1)));
    assert_eq!(
        e.to_string(),
        "out-of-bounds read of sbuf bytes 245760..246016 of each partition (limit 245752) through `src`: index 61440 is out of bounds for axis 1 with size 61438 by tensor_copy at vector[1] (kernel.py:14:5)"
    );
    // The elements of an SBUF partition are the second axis.
    let facts = e.oob.expect("structured facts");
    assert_eq!((facts.tensor.as_str(), facts.axis), ("sbuf", 1));
    assert_eq!(
        (facts.index, facts.flat_offset, facts.row),
        (61_440, 61_440, 0)
    );
    assert_eq!(facts.shape, vec![128, 61_438]);
}

#[test]
fn uninitialised_reads_fault_or_read_poison() {
    let mut p = program(&[("out", DType::F32, &[1, 4], TensorKind::Output)]);
    let t = tile(1, 4, 0, DType::F32);
    p.stream_mut(Queue::Vector)
        .push(Instruction::new(scale(tile(1, 4, 64, DType::F32), t, 2.0)));
    p.stream_mut(Queue::Vector)
        .push(Instruction::new(Op::dma_copy(
            hbm(TensorId(0), 1, 4, 0, &[(1, 4)], DType::F32),
            tile(1, 4, 64, DType::F32),
        )));
    // The store belongs on a DMA queue; move it there after the compute.
    let store = p.stream_mut(Queue::Vector).pop().map(|i| i.op);
    let sem = p.add_semaphore("done");
    if let Some(first) = p.stream_mut(Queue::Vector).first_mut() {
        first.signals.push(sem);
    }
    if let Some(op) = store {
        p.stream_mut(Queue::Dma(0))
            .push(Instruction::new(op).wait(sem, 1));
    }
    let strict = SimConfig {
        poison: Poison::Error,
        ..SimConfig::default()
    };
    fails(
        &p,
        &strict,
        SimErrorKind::UninitialisedRead,
        "read of uninitialised memory through `src`: sbuf partition 0 byte 0 was never written by tensor_scalar at vector[0]",
    );
    // With the compiler's operand names and a line table, the message names
    // the kernel's tensor and the source line.
    let mut named = p.clone();
    named.operand_names.push(nkic_isa::OperandName {
        queue: Queue::Vector,
        index: 0,
        field: "src",
        name: "x_tile".into(),
    });
    let line = named.add_line("k.py", 12, 9, 100..120);
    named.stream_mut(Queue::Vector)[0].line = Some(line);
    let e = run(&named, &Inputs::new(), &strict).unwrap_err();
    assert_eq!(
        e.to_string(),
        "read of uninitialised memory through `src` (tensor `x_tile`): sbuf partition 0 byte 0 was never written by tensor_scalar at vector[0] (k.py:12:9)"
    );
    assert_eq!(e.line, Some(line));
    // By default the run goes on: the output is computed from undefined
    // memory (NaN × 2), a warning naming the first bad read.
    let r = run(&named, &Inputs::new(), &SimConfig::default()).expect("runs by default");
    assert_eq!(r.undefined.len(), 1);
    let u = &r.undefined[0];
    assert_eq!((u.output.as_str(), u.elements), ("out", 4));
    assert_eq!(u.first_index, vec![0, 0]);
    let origin = u.origin.as_ref().expect("computed from undefined data");
    assert_eq!(origin.to_string(), "tensor_scalar at vector[0] (k.py:12:9)");
    assert!(
        r.outputs[0]
            .1
            .bytes()
            .chunks(4)
            .all(|c| c == f32::NAN.to_le_bytes())
    );
    let zero = SimConfig {
        poison: Poison::Zero,
        ..SimConfig::default()
    };
    let r = run(&p, &Inputs::new(), &zero).expect("runs with poison");
    assert_eq!(r.outputs[0].1, f32_bytes(&[0.0; 4]));
    let nan = SimConfig {
        poison: Poison::Nan,
        ..SimConfig::default()
    };
    let r = run(&p, &Inputs::new(), &nan).expect("runs with poison");
    assert!(
        r.outputs[0]
            .1
            .bytes()
            .chunks(4)
            .all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_nan())
    );
}

#[test]
fn outputs_must_be_fully_written() {
    let p = program(&[("out", DType::F32, &[2], TensorKind::Output)]);
    let strict = SimConfig {
        poison: Poison::Error,
        ..SimConfig::default()
    };
    let e = run(&p, &Inputs::new(), &strict).unwrap_err();
    assert_eq!(
        e.to_string(),
        "output `out` is not fully written: byte 0 (element 0) was never written (2 of 2 elements never written)"
    );
    assert_eq!(e.tensor.as_deref(), Some("out"));
    // By default: a warning, and the elements hold NaN (4 for integers),
    // as the NKI simulator fills new tensors.
    let r = run(&p, &Inputs::new(), &SimConfig::default()).expect("runs by default");
    assert_eq!(r.outputs[0].1, f32_bytes(&[f32::NAN; 2]));
    assert_eq!(
        r.undefined,
        vec![crate::UndefinedOutput {
            output: "out".to_owned(),
            shape: vec![2],
            elements: 2,
            first_index: vec![0],
            origin: None,
        }]
    );
    let p = program(&[("ints", DType::I16, &[2, 3], TensorKind::Output)]);
    let r = run(&p, &Inputs::new(), &SimConfig::default()).expect("runs by default");
    assert_eq!(r.outputs[0].1, [4, 0].repeat(6));
    assert_eq!(r.undefined[0].elements, 6);
}

/// A loop that never ends stops at the simulated-time limit, naming the
/// instruction that would start after it.
#[test]
fn runs_stop_at_the_simulated_time_limit() {
    let p = nkic_isa::assemble(
        ".target trn3
.queue vector
L0:
  nop
  jump target=L0
",
    )
    .expect("assembles");
    let config = SimConfig {
        max_simulated_ps: 1_000_000,
        trace: false,
        ..SimConfig::default()
    };
    let e = run(&p, &Inputs::new(), &config).unwrap_err();
    assert_eq!(e.kind, SimErrorKind::InstructionLimit);
    assert!(
        e.message
            .starts_with("the run passed 1 us of simulated time after "),
        "{}",
        e.message
    );
    assert_eq!(e.queue, Some(Queue::Vector));
}

#[test]
fn inputs_are_checked() {
    let p = pipeline();
    let err = |inputs: Inputs| {
        run(&p, &inputs, &SimConfig::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(err(Inputs::new()), "missing input `a`");
    assert_eq!(
        err(Inputs::new().with("a", vec![0; 3])),
        "`a` is float32[128, 512] (262144 bytes) but the input has 3 bytes"
    );
    assert_eq!(
        err(Inputs::new().with("b", vec![])),
        "the kernel has no argument `b`"
    );
    assert_eq!(
        err(Inputs::new().with(TensorId(1), vec![0; 262_144])),
        "`out` is an output argument, not an input"
    );
}

#[test]
fn runaway_loops_hit_the_instruction_limit() {
    let mut p = program(&[]);
    let s = p.stream_mut(Queue::Sync);
    s.push(Instruction::new(Op::Label(insn::Label { label: Label(0) })));
    s.push(Instruction::new(Op::Jump(insn::Jump { target: Label(0) })));
    let config = SimConfig {
        max_instructions: 1000,
        ..SimConfig::default()
    };
    let e = run(&p, &Inputs::new(), &config).unwrap_err();
    assert_eq!(e.kind, SimErrorKind::InstructionLimit);
}

#[path = "../../benches/programs.rs"]
#[allow(dead_code)]
mod programs;

#[test]
fn tiled_matmul_program_verifies_and_matches_a_reference() {
    let (m, k, n) = (256u64, 256u64, 1024u64);
    let p = programs::matmul(m, k, n);
    let at = programs::bf16_bytes((k * m) as usize, 1);
    let b = programs::bf16_bytes((k * n) as usize, 2);
    let dec = |bytes: &[u8]| {
        let mut v = Vec::new();
        nkic_isa::numerics::decode(DType::BF16, bytes, &mut v);
        v
    };
    let (av, bv) = (dec(&at), dec(&b));
    for order in [StepOrder::RoundRobin, StepOrder::Seeded(7)] {
        let config = SimConfig {
            step_order: order,
            race_check: true,
            ..SimConfig::default()
        };
        let res = run(
            &p,
            &Inputs::new().with("at", at.clone()).with("b", b.clone()),
            &config,
        )
        .expect("runs");
        let out = res.output("c").expect("c is an output").bytes();
        // Row i, column j: the K/128 partial products accumulate tile by
        // tile in ascending k, exactly as the definition sums them.
        for (i, j) in [(0usize, 0usize), (5, 700), (255, 1023), (130, 511)] {
            let mut acc = 0f32;
            for kk in 0..k as usize {
                acc += av[kk * m as usize + i] * bv[kk * n as usize + j];
            }
            let at4 = (i * n as usize + j) * 4;
            let got = f32::from_le_bytes([out[at4], out[at4 + 1], out[at4 + 2], out[at4 + 3]]);
            assert_eq!(got.to_bits(), acc.to_bits(), "c[{i}, {j}]");
        }
        assert_eq!(res.flops, 2 * m * k * n);
        // The Tensor queue is busy for every matmul and the loads, copies
        // and stores overlap with it: the run is TensorE-bound.
        let mm = p.stream(Queue::Tensor).unwrap_or_default();
        let busy: u64 = mm
            .iter()
            .map(|i| Target::Trn3.cost(Queue::Tensor, &i.op).busy_ps)
            .sum();
        let tensor = res
            .per_queue
            .iter()
            .find(|s| s.queue == Queue::Tensor)
            .expect("tensor stream");
        assert_eq!(tensor.busy_ps, busy);
        assert_eq!(tensor.instructions, mm.len() as u64);
        assert!(
            res.total_ps < busy + busy / 2 + 10_000_000,
            "{} vs {busy}",
            res.total_ps
        );
    }
}

#[test]
fn small_ops_benchmark_program_runs_its_loops() {
    let p = programs::small_ops(50);
    let a = run(&p, &Inputs::new(), &SimConfig::default()).expect("runs");
    let b = run(
        &p,
        &Inputs::new(),
        &SimConfig {
            step_order: StepOrder::Seeded(9),
            ..SimConfig::default()
        },
    )
    .expect("runs");
    // Per queue: init, 2 reg_set, then 50 × (label, body, reg_alu, branch).
    assert_eq!(a.instructions, 3 * (3 + 50 * 4));
    assert_eq!(a.total_ps, b.total_ps);
    assert_eq!(a.per_queue, b.per_queue);
}

#[test]
fn oversized_tensors_are_rejected_before_allocation() {
    let p = program(&[(
        "huge",
        DType::F32,
        &[1 << 40, 1 << 30],
        TensorKind::Internal,
    )]);
    fails(
        &p,
        &SimConfig::default(),
        SimErrorKind::BadProgram,
        "HBM tensor `huge` makes the program's tensors larger than the simulator's 64 GiB",
    );
}

#[test]
fn extreme_offsets_fault_instead_of_overflowing() {
    // The static pattern is in bounds (what the verifier checks); the
    // dynamic offset 2 · i64::MAX overflows when applied.
    let mut p = program(&[("a", DType::F32, &[4], TensorKind::Input)]);
    let mut src = hbm(TensorId(0), 1, 0, 0, &[(1, 1)], DType::F32);
    src.dyn_offset = Some(nkic_isa::DynOffset {
        reg: Reg(0),
        scale: i64::MAX,
    });
    let dma0 = p.stream_mut(Queue::Dma(0));
    dma0.push(Instruction::new(Op::RegSet(insn::RegSet {
        dst: Reg(0),
        value: 2,
    })));
    dma0.push(Instruction::new(Op::dma_copy(
        tile(1, 1, 0, DType::F32),
        src,
    )));
    let e = run(
        &p,
        &Inputs::new().with("a", vec![0; 16]),
        &SimConfig::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind, SimErrorKind::OutOfBounds);
}

#[test]
fn the_race_sanitizer_flags_unordered_accesses_only() {
    let check = SimConfig {
        race_check: true,
        ..SimConfig::default()
    };
    let (mut p, a) = racy_program();
    let e = fails(
        &p,
        &check,
        SimErrorKind::Race,
        "data race: `dst` overwrites bytes that memset at vector[0] writes through `dst`, and no semaphore orders the two by memset at gpsimd[0]",
    );
    let other = e.related.as_ref().expect("the earlier access is named");
    assert_eq!((other.queue, other.index), (Queue::Vector, 0));
    assert_eq!((e.queue, e.index), (Some(Queue::GpSimd), Some(0)));
    // With a line table both source lines appear in the message.
    let mut lined = p.clone();
    let l4 = lined.add_line("k.py", 4, 5, 40..50);
    let l7 = lined.add_line("k.py", 7, 9, 90..99);
    lined.stream_mut(Queue::Vector)[0].line = Some(l4);
    lined.stream_mut(Queue::GpSimd)[0].line = Some(l7);
    let e = run(&lined, &Inputs::new(), &check).unwrap_err();
    assert_eq!(
        e.to_string(),
        "data race: `dst` overwrites bytes that memset at vector[0] (k.py:4:5) writes through `dst`, and no semaphore orders the two by memset at gpsimd[0] (k.py:7:9)"
    );
    assert_eq!(e.related.and_then(|s| s.line), Some(l4));
    // Ordering GpSimd after Vector removes the race.
    if let Some(first) = p.stream_mut(Queue::GpSimd).first_mut() {
        first.waits.push(SemWait {
            sem: a,
            value: 1,
            reg: None,
        });
    }
    let r = run(&p, &Inputs::new(), &check).expect("race-free");
    assert_eq!(r.outputs[0].1, f32_bytes(&[2.0; 4]));
    // Neighbouring bytes written by two queues do not race.
    let mut p = program(&[]);
    let left = sb(0, 4, 0, &[(2, 4)], DType::F32);
    let right = sb(0, 4, 4, &[(2, 4)], DType::F32);
    p.stream_mut(Queue::Vector)
        .push(Instruction::new(Op::Memset(insn::Memset {
            dst: left,
            value: Imm::Float(1.0.into()),
        })));
    p.stream_mut(Queue::GpSimd)
        .push(Instruction::new(Op::Memset(insn::Memset {
            dst: right,
            value: Imm::Float(2.0.into()),
        })));
    run(&p, &Inputs::new(), &check).expect("interleaved columns do not overlap");
    // The big race-free programs pass the sanitizer.
    run(&busy_program(), &busy_inputs(), &check).expect("busy program is race-free");
    let lp = programs::small_ops(20);
    run(&lp, &Inputs::new(), &check).expect("loop program is race-free");
}

/// Two DMA queues loading full-width tiles at the same time share the 16
/// DMA engines: the second transfer's data moves after the first's, so the
/// core's aggregate DMA bandwidth is that of the engines, not 16 × per
/// queue.
#[test]
fn dma_queues_share_the_dma_engines() {
    let mut p = program(&[
        ("a", DType::F32, &[128, 2048], TensorKind::Input),
        ("b", DType::F32, &[128, 2048], TensorKind::Input),
    ]);
    let a = hbm(TensorId(0), 128, 2048, 0, &[(1, 2048)], DType::F32);
    let b = hbm(TensorId(1), 128, 2048, 0, &[(1, 2048)], DType::F32);
    let op_a = Op::dma_copy(tile(128, 2048, 0, DType::F32), a);
    let op_b = Op::dma_copy(tile(128, 2048, 8192, DType::F32), b);
    p.stream_mut(Queue::Dma(0))
        .push(Instruction::new(op_a.clone()));
    p.stream_mut(Queue::Dma(1))
        .push(Instruction::new(op_b.clone()));
    let t = Target::Trn3.dma_transfer(&op_a).expect("a transfer");
    assert_eq!((t.first_engine, t.engines), (0, 16));
    // 8 rows of 8 KiB per engine at 33 B/ns, plus 11 ns per row.
    assert_eq!(t.engine_ps, 8 * 259_243);
    assert_eq!(t.engine_busy_ps, t.engine_ps);
    let inputs = Inputs::new()
        .with("a", f32_bytes(&[1.0; 128 * 2048]))
        .with("b", f32_bytes(&[2.0; 128 * 2048]));
    for order in [
        StepOrder::RoundRobin,
        StepOrder::Reverse,
        StepOrder::Seeded(3),
    ] {
        let config = SimConfig::stepping(order);
        let res = run(&p, &inputs, &config).expect("runs");
        // dma0 (first in program order) moves first; dma1 waits for the
        // engines and is reported as delayed by dma0's transfer.
        assert_eq!(
            res.total_ps,
            2 * t.engine_ps + t.start_latency_ps,
            "{order:?}"
        );
        let second = res
            .trace
            .iter()
            .find(|e| e.queue == Queue::Dma(1))
            .and_then(|e| e.dma.clone())
            .expect("dma1's transfer");
        assert_eq!(second.data_start_ps, t.engine_ps);
        assert_eq!(second.delayed_by, Some((Queue::Dma(0), 0)));
        // dma1 is busy while its data moves, and waits for the engines
        // while dma0's data moves.
        assert_eq!(second.data_ready_ps, t.issue_ps);
        let busy: Vec<u64> = res.per_queue.iter().map(|s| s.busy_ps).collect();
        assert_eq!(busy, vec![t.engine_ps, t.engine_ps + t.issue_ps]);
        let wait: Vec<u64> = res.per_queue.iter().map(|s| s.dma_wait_ps).collect();
        assert_eq!(wait, vec![0, t.engine_ps - t.issue_ps]);
    }
    // The time of `p` copying ones from its input `a`.
    let ones_ps = |p: &Program, n: usize| {
        let inputs = Inputs::new().with("a", f32_bytes(&vec![1.0; n]));
        run(p, &inputs, &SimConfig::default())
            .expect("runs")
            .total_ps
    };
    // Transfers on disjoint partition groups use disjoint engines and
    // overlap completely.
    let mut p = program(&[("a", DType::F32, &[128, 2048], TensorKind::Input)]);
    for (i, part) in [0u32, 64].into_iter().enumerate() {
        let src = hbm(
            TensorId(0),
            64,
            2048,
            u64::from(part) * 2048 * 4,
            &[(1, 2048)],
            DType::F32,
        );
        let dst = sb(part, 64, 0, &[(1, 2048)], DType::F32);
        p.stream_mut(Queue::Dma(i as u8))
            .push(Instruction::new(Op::dma_copy(dst, src)));
    }
    assert_eq!(ones_ps(&p, 128 * 2048), 8 * 259_243 + 1_300_000);
    // Rows below the chunk minimum: each transfer takes 8 × 105 ns, but
    // occupies its engines for 8 × (2048 / 33 + 11) ns only, so a second
    // queue's transfer starts moving data that much later and the two
    // overlap.
    let mut p = program(&[("a", DType::F32, &[128, 512], TensorKind::Input)]);
    for q in 0..2u8 {
        let src = hbm(TensorId(0), 128, 512, 0, &[(1, 512)], DType::F32);
        let dst = tile(128, 512, u64::from(q) * 2048, DType::F32);
        p.stream_mut(Queue::Dma(q))
            .push(Instruction::new(Op::dma_copy(dst, src)));
    }
    assert_eq!(ones_ps(&p, 128 * 512), 8 * 73_061 + 8 * 105_000 + 1_300_000);
}

/// On Trn2 the HBM share of an engine (363 GB/s / 16 = 22.7 B/ns) is
/// about what the engine moves (23 B/ns less 16 ns per row: 22.5 B/ns for
/// 16 KiB rows), so an HBM → HBM copy, which counts twice against HBM, is
/// HBM-bound; on Trn3 the engines bind (33 B/ns against 36.75) unless both
/// sides are in HBM.
#[test]
fn dma_engines_get_a_share_of_the_hbm_bandwidth() {
    let op = Op::dma_copy(
        tile(128, 4096, 0, DType::F32),
        hbm(TensorId(0), 128, 4096, 0, &[(1, 4096)], DType::F32),
    );
    let t2 = Target::Trn2.dma_transfer(&op).expect("a transfer");
    // 8 rows × (16 KiB at 23 B/ns + 16 ns).
    assert_eq!(t2.engine_ps, 8 * ((16384u64 * 1000).div_ceil(23) + 16_000));
    assert_eq!(t2.hbm_bytes, 128 * 16384);
    let t3 = Target::Trn3.dma_transfer(&op).expect("a transfer");
    assert_eq!(t3.engine_ps, 8 * ((16384u64 * 1000).div_ceil(33) + 11_000));
    // HBM → HBM counts both sides against HBM.
    let copy = Op::dma_copy(
        hbm(TensorId(1), 128, 4096, 0, &[(1, 4096)], DType::F32),
        hbm(TensorId(0), 128, 4096, 0, &[(1, 4096)], DType::F32),
    );
    let t = Target::Trn3.dma_transfer(&copy).expect("a transfer");
    assert_eq!(t.hbm_bytes, 2 * 128 * 16384);
    assert_eq!(t.engine_ps, (8u64 * 2 * 16384 * 16 * 1000).div_ceil(588));
    let t = Target::Trn2.dma_transfer(&copy).expect("a transfer");
    assert_eq!(t.engine_ps, (8u64 * 2 * 16384 * 16 * 1000).div_ceil(363));
}

/// A loop of stores on `dma0` while `dma1` and `dma2` count through the
/// same loop with nothing to do (the dynamic emitter's shape: every
/// participating queue runs every loop's control), `dma2` then storing
/// once more after the loop; a vector loop beside an idle queue that
/// counts down with `sub` and tests `ne`, `ge` and `le`; and an idle
/// nested loop (its first iteration is stepped: the inner counter is then
/// still at 0).
const COUNTING_LOOPS: &str = "\
.target trn3
.arg a f32[128,8] input
.arg out f32[128,8] output
.sem loaded
.sem stored
.sem top

.queue dma0
  reg_set dst=r0 value=0
  jump target=L1
L0:
  dma_copy dst=hbm.out[0:128*8]:f32[1,8] src=sbuf[0:128]:f32[1,8] wait(loaded>=1) signal(stored)
  reg_alu dst=r2 op=add a=r2 b=1
  reg_alu dst=r0 op=add a=r0 b=1
L1:
  branch cond=lt a=r0 b=300 target=L0

.queue dma1
  dma_copy dst=sbuf[0:128]:f32[1,8] src=hbm.a[0:128*8]:f32[1,8] signal(loaded)
  reg_set dst=r0 value=0
  jump target=L1
L0:
  reg_alu dst=r2 op=add a=r2 b=1
  nop
  reg_alu dst=r0 op=add a=r0 b=1
L1:
  branch cond=lt a=r0 b=300 target=L0

.queue dma2
  reg_set dst=r0 value=0
  jump target=L1
L0:
  reg_alu dst=r2 op=add a=r2 b=1
  reg_alu dst=r0 op=add a=r0 b=1
L1:
  branch cond=lt a=r0 b=300 target=L0
  dma_copy dst=hbm.out[0:128*8]:f32[1,8] src=sbuf[0:128]:f32[1,8] wait(loaded>=1) wait(stored>=r2+0) signal(top)

.queue vector
  reg_set dst=r0 value=0
  jump target=L1
L0:
  tensor_scalar dst=sbuf[0:128]:f32[1,8] src=sbuf[0:128]:f32[1,8] op0=multiply operand0=1.0 wait(loaded>=1) wait(top>=1)
  reg_alu dst=r0 op=add a=r0 b=1
L1:
  branch cond=lt a=r0 b=50 target=L0

.queue gpsimd
  reg_set dst=r0 value=999
  jump target=L1
L0:
  reg_alu dst=r0 op=sub a=r0 b=3
  reg_alu dst=r1 op=add a=r1 b=7
L1:
  branch cond=ne a=r0 b=0 target=L0
  reg_set dst=r0 value=40
L2:
  reg_alu dst=r0 op=sub a=r0 b=1
  branch cond=ge a=r0 b=-5 target=L2
L3:
  reg_alu dst=r3 op=add a=r3 b=2
  branch cond=le a=r3 b=r1 target=L3

.queue scalar
  jump target=L1
L0:
  reg_set dst=r1 value=0
  jump target=L3
L2:
  reg_alu dst=r3 op=add a=r3 b=1
  reg_alu dst=r1 op=add a=r1 b=1
L3:
  branch cond=lt a=r1 b=3 target=L2
  reg_alu dst=r0 op=add a=r0 b=1
L1:
  branch cond=lt a=r0 b=400 target=L0
";

/// Counting loops taken many iterations at once (`machine::take_counting`)
/// give every byte, time, statistic, trace event and race clock that
/// stepping through them gives, in every step order; and a loop that
/// never ends stops at the limit either way.
#[test]
fn counting_loops_taken_at_once_are_what_stepping_gives() {
    use crate::machine::counting::{STEP_ALL, TAKEN};
    use std::sync::atomic::Ordering;
    let p = nkic_isa::assemble(COUNTING_LOOPS).expect("the program assembles");
    let a = values(128 * 8, 5);
    let inputs = Inputs::new().with("a", f32_bytes(&a));
    for order in [
        StepOrder::RoundRobin,
        StepOrder::Reverse,
        StepOrder::Earliest,
        StepOrder::Seeded(7),
    ] {
        for race_check in [false, true] {
            let config = SimConfig {
                step_order: order,
                race_check,
                trace: true,
                ..SimConfig::default()
            };
            let taken = TAKEN.load(Ordering::Relaxed);
            let at_once = run(&p, &inputs, &config).expect("runs");
            assert!(
                TAKEN.load(Ordering::Relaxed) > taken + 1000,
                "{order:?}: the idle loops were taken at once"
            );
            STEP_ALL.store(true, Ordering::Relaxed);
            let stepped = run(&p, &inputs, &config);
            STEP_ALL.store(false, Ordering::Relaxed);
            let stepped = stepped.expect("runs");
            assert_eq!(at_once, stepped, "{order:?}, race check {race_check}");
            assert_eq!(
                at_once.output("out").map(|o| o.to_vec()),
                Some(f32_bytes(&a))
            );
        }
    }
    // A jump to itself beside a working loop: E2007 at the time limit
    // either way, after every instruction that starts before it.
    let runaway = COUNTING_LOOPS.replace(
        "  reg_set dst=r0 value=40\n",
        "  reg_set dst=r0 value=40\nL9:\n  jump target=L9\n",
    );
    let p = nkic_isa::assemble(&runaway).expect("the program assembles");
    let config = SimConfig {
        max_simulated_ps: 2_000_000_000,
        ..SimConfig::default()
    };
    let at_once = run(&p, &inputs, &config).expect_err("never ends");
    STEP_ALL.store(true, Ordering::Relaxed);
    let stepped = run(&p, &inputs, &config);
    STEP_ALL.store(false, Ordering::Relaxed);
    let stepped = stepped.expect_err("never ends");
    assert_eq!(at_once.kind, SimErrorKind::InstructionLimit);
    assert_eq!(stepped.kind, SimErrorKind::InstructionLimit);
}
