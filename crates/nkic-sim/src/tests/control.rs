//! Control instructions: registers, loads and stores, branches.

use nkic_isa::insn;
use nkic_isa::{BranchCond, DType, Label, Op, Queue, Reg, RegAluOp, RegOrImm, TensorKind};

use super::*;
use crate::error::SimErrorKind;
use crate::exec::Flow;

fn alu(b: &mut Bench, op: RegAluOp, a: i32, c: i32) -> Result<i32, SimErrorKind> {
    b.regs[1] = a;
    b.exec(
        Queue::Sync,
        &Op::RegAlu(insn::RegAlu {
            dst: Reg(2),
            op,
            a: Reg(1),
            b: RegOrImm::Imm(c),
        }),
    )
    .map_err(|f| f.kind)?;
    Ok(b.regs[2])
}

#[test]
fn reg_alu_operators() {
    let mut b = Bench::new();
    assert_eq!(alu(&mut b, RegAluOp::Add, i32::MAX, 1), Ok(i32::MIN));
    assert_eq!(alu(&mut b, RegAluOp::Sub, 3, 5), Ok(-2));
    assert_eq!(alu(&mut b, RegAluOp::Mul, 1 << 20, 1 << 12), Ok(0));
    assert_eq!(alu(&mut b, RegAluOp::Div, -7, 2), Ok(-3));
    assert_eq!(alu(&mut b, RegAluOp::Rem, -7, 2), Ok(-1));
    assert_eq!(
        alu(&mut b, RegAluOp::Div, 1, 0),
        Err(SimErrorKind::DivideByZero)
    );
    assert_eq!(alu(&mut b, RegAluOp::Shl, 1, 33), Ok(2));
    assert_eq!(alu(&mut b, RegAluOp::Shr, -1, 28), Ok(15));
    assert_eq!(alu(&mut b, RegAluOp::Sar, -16, 2), Ok(-4));
    assert_eq!(alu(&mut b, RegAluOp::Min, -3, 2), Ok(-3));
    assert_eq!(alu(&mut b, RegAluOp::Max, -3, 2), Ok(2));
    assert_eq!(alu(&mut b, RegAluOp::Xor, 0b1100, 0b1010), Ok(0b0110));
    b.ok(
        Queue::Dma(2),
        &Op::RegSet(insn::RegSet {
            dst: Reg(7),
            value: -5,
        }),
    );
    b.ok(
        Queue::Dma(2),
        &Op::RegMove(insn::RegMove {
            dst: Reg(8),
            src: Reg(7),
        }),
    );
    assert_eq!(b.regs[8], -5);
}

#[test]
fn reg_load_extends_and_reg_store_truncates() {
    let p = program(&[("n", DType::I16, &[2], TensorKind::Input)]);
    let mut b = Bench::with_program(&p);
    b.mem.load_tensor(0, vec![0xfe, 0xff, 0x05, 0x00]);
    let reg_load =
        |b: &mut Bench, dst, src| b.ok(Queue::Sync, &Op::RegLoad(insn::RegLoad { dst, src }));
    reg_load(&mut b, Reg(0), hbm(TensorId(0), 1, 0, 0, &[], DType::I16));
    assert_eq!(b.regs[0], -2);
    let f = tile(1, 1, 0, DType::F32);
    b.put(&f, &[1.0]);
    reg_load(&mut b, Reg(1), f);
    assert_eq!(b.regs[1], 0x3f80_0000);
    let u = tile(1, 1, 16, DType::U16);
    b.put_bits(&u, &[0xfffe]);
    reg_load(&mut b, Reg(2), u.clone());
    assert_eq!(b.regs[2], 0xfffe);
    b.regs[3] = 0x1234_5678;
    b.ok(
        Queue::Vector,
        &Op::RegStore(insn::RegStore {
            dst: u.clone(),
            src: Reg(3),
        }),
    );
    assert_eq!(b.get_bits(&u), vec![0x5678]);
}

#[test]
fn branches_compare_signed() {
    let mut b = Bench::new();
    b.regs[1] = -1;
    let mut e = crate::exec::Exec {
        mem: &mut b.mem,
        regs: &mut b.regs,
        acc: &mut b.acc,
        engine: nkic_isa::Engine::Sync,
        flops: &mut b.flops,
    };
    let br = |cond, imm| {
        Op::Branch(insn::Branch {
            cond,
            a: Reg(1),
            b: RegOrImm::Imm(imm),
            target: Label(3),
        })
    };
    assert!(matches!(
        e.run(&br(BranchCond::Lt, 0)),
        Ok(Flow::Jump(Label(3)))
    ));
    assert!(matches!(e.run(&br(BranchCond::Ge, 0)), Ok(Flow::Next)));
    assert!(matches!(
        e.run(&Op::Jump(insn::Jump { target: Label(1) })),
        Ok(Flow::Jump(Label(1)))
    ));
    assert!(matches!(e.run(&Op::Nop(insn::Nop {})), Ok(Flow::Next)));
}
