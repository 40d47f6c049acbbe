//! Random programs for the round-trip property tests (compiled for tests
//! only).
//!
//! Every field type has a `RandomField` generator; `Op::random` (generated
//! by the instruction table) builds any instruction from them, so a new
//! instruction is covered by the property test without extra code. The
//! programs are well-formed for the text format (identifier names, unique
//! tensor and semaphore names, ids in range) but not necessarily valid for
//! the verifier, which the text format does not require.

use crate::ap::{
    AccessPattern, Dim, DynOffset, Fp32, Imm, Memory, Reg, RegOrImm, Scalar, TensorId,
};
use crate::dtype::DType;
use crate::engine::Queue;
use crate::enums::{
    ActFunc, AluOp, BranchCond, DgeMode, MatmulPerfMode, OobMode, ReduceCmd, RegAluOp,
};
use crate::inst::{Instruction, Label, Op, SemWait};
use crate::program::{
    HbmTensor, LineEntry, LineId, Program, QueueStream, SemId, Semaphore, TensorKind,
};
use crate::target::Target;

/// A small deterministic generator (xorshift64*), plus the number of HBM
/// tensors that access patterns may name.
pub(crate) struct Rng {
    state: u64,
    pub tensors: u32,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: seed | 1,
            tensors: 0,
        }
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// A signed value in `-r..r`.
    pub fn signed(&mut self, r: i64) -> i64 {
        self.below(2 * r as u64) as i64 - r
    }
}

pub(crate) trait RandomField {
    fn random(rng: &mut Rng) -> Self;
}

impl RandomField for AccessPattern {
    fn random(rng: &mut Rng) -> Self {
        let mem = match rng.below(3) {
            0 if rng.tensors > 0 => Memory::Hbm(TensorId(rng.below(u64::from(rng.tensors)) as u32)),
            1 => Memory::Psum,
            _ => Memory::Sbuf,
        };
        let n_dims = rng.below(5) as usize;
        // One pattern in 16 has extreme values, to exercise overflow paths.
        let extreme = rng.chance(16);
        let dims = (0..n_dims)
            .map(|_| {
                if extreme {
                    Dim {
                        stride: rng.pick(&[i64::MIN, i64::MAX, -1, 0]),
                        count: rng.pick(&[u32::MAX, 0, 1, 65_536]),
                    }
                } else {
                    Dim {
                        stride: rng.signed(3000),
                        count: rng.below(600) as u32,
                    }
                }
            })
            .collect();
        AccessPattern {
            mem,
            partition_start: if extreme {
                u32::MAX
            } else {
                rng.below(130) as u32
            },
            partition_count: if extreme {
                u32::MAX
            } else {
                rng.below(130) as u32
            },
            partition_stride: if rng.chance(2) {
                0
            } else {
                rng.signed(1 << 20)
            },
            offset: if extreme {
                u64::MAX
            } else if rng.chance(3) {
                0
            } else {
                rng.below(1 << 22)
            },
            dyn_offset: rng.chance(4).then(|| DynOffset {
                reg: Reg::random(rng),
                scale: rng.signed(1 << 16),
            }),
            dims,
            dtype: rng.pick(&DType::ALL),
        }
    }
}

impl<T: RandomField> RandomField for Option<T> {
    fn random(rng: &mut Rng) -> Self {
        if rng.chance(2) {
            None
        } else {
            Some(T::random(rng))
        }
    }
}

impl RandomField for Fp32 {
    fn random(rng: &mut Rng) -> Self {
        match rng.below(4) {
            // Any bit pattern, NaN payloads included.
            0 => Fp32(rng.next() as u32),
            1 => Fp32::new(rng.pick(&[
                0.0,
                -0.0,
                1.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::MIN,
                f32::MAX,
            ])),
            _ => Fp32::new(rng.signed(1000) as f32 / 8.0),
        }
    }
}

impl RandomField for Imm {
    fn random(rng: &mut Rng) -> Self {
        if rng.chance(2) {
            Imm::Int(rng.next() as i64 >> rng.below(64))
        } else {
            Imm::Float(Fp32::random(rng))
        }
    }
}

impl RandomField for bool {
    fn random(rng: &mut Rng) -> Self {
        rng.chance(2)
    }
}

impl RandomField for i32 {
    fn random(rng: &mut Rng) -> Self {
        rng.next() as i32 >> rng.below(32)
    }
}

impl RandomField for u32 {
    fn random(rng: &mut Rng) -> Self {
        rng.next() as u32 >> rng.below(32)
    }
}

impl RandomField for u8 {
    fn random(rng: &mut Rng) -> Self {
        rng.next() as u8
    }
}

macro_rules! random_enum {
    ($($ty:ident),*) => {$(
        impl RandomField for $ty {
            fn random(rng: &mut Rng) -> Self {
                rng.pick($ty::ALL)
            }
        }
    )*};
}

random_enum!(
    AluOp,
    ActFunc,
    ReduceCmd,
    DgeMode,
    OobMode,
    MatmulPerfMode,
    RegAluOp,
    BranchCond
);

impl RandomField for Vec<Dim> {
    fn random(rng: &mut Rng) -> Self {
        (0..rng.below(5))
            .map(|_| Dim {
                stride: rng.signed(100),
                count: rng.below(100) as u32,
            })
            .collect()
    }
}

impl RandomField for Vec<u8> {
    fn random(rng: &mut Rng) -> Self {
        (0..rng.below(40)).map(|_| rng.next() as u8).collect()
    }
}

impl RandomField for [u32; 2] {
    fn random(rng: &mut Rng) -> Self {
        [rng.below(200) as u32, rng.below(200) as u32]
    }
}

impl RandomField for Reg {
    fn random(rng: &mut Rng) -> Self {
        Reg(rng.next() as u8)
    }
}

/// An enum of two one-field variants: either, with a random field, half
/// the time each.
macro_rules! random_either {
    ($($ty:ident: $a:ident($fa:ty) | $b:ident($fb:ty);)*) => {$(
        impl RandomField for $ty {
            fn random(rng: &mut Rng) -> Self {
                if rng.chance(2) {
                    $ty::$a(<$fa>::random(rng))
                } else {
                    $ty::$b(<$fb>::random(rng))
                }
            }
        }
    )*};
}

random_either! {
    Scalar: Imm(Fp32) | Vector(AccessPattern);
    RegOrImm: Reg(Reg) | Imm(i32);
}

impl RandomField for Label {
    fn random(rng: &mut Rng) -> Self {
        Label(rng.below(20) as u32)
    }
}

/// A random identifier, made unique by the index suffix.
fn identifier(rng: &mut Rng, index: usize) -> String {
    let stems = ["a", "out", "x_t", "sbuf", "r1", "_tmp", "Weights", "s"];
    format!("{}{index}", rng.pick(&stems))
}

/// A random file name, with characters that need quoting.
fn file_name(rng: &mut Rng) -> String {
    let parts = [
        "kernel.py",
        "dir with space/",
        "#hash",
        "quote\"",
        "back\\slash",
        "tab\t",
        "nl\n",
        "ü.py",
        "\u{1}",
    ];
    (0..1 + rng.below(3)).map(|_| rng.pick(&parts)).collect()
}

/// A random program that the text format must round-trip.
pub(crate) fn random_program(seed: u64) -> Program {
    let mut rng = Rng::new(seed);
    let mut p = Program::new(rng.pick(&Target::ALL));
    p.files = (0..rng.below(3)).map(|_| file_name(&mut rng)).collect();
    p.line_table = (0..rng.below(5))
        .map(|_| {
            let start = rng.below(1000) as u32;
            LineEntry {
                file: rng.below(3) as u32,
                line: 1 + rng.below(200) as u32,
                col: 1 + rng.below(80) as u32,
                span: start..start + rng.below(100) as u32,
            }
        })
        .collect();
    p.hbm = (0..rng.below(4) as usize)
        .map(|i| {
            let name = identifier(&mut rng, i);
            let dtype = rng.pick(&DType::ALL);
            let shape = (0..rng.below(4)).map(|_| rng.below(300)).collect();
            let kind = rng.pick(&[
                TensorKind::Input,
                TensorKind::Output,
                TensorKind::InOut,
                TensorKind::Internal,
                TensorKind::Shared,
            ]);
            // Data of any length, empty and over one `.data` line included.
            let data = (!kind.is_arg() && rng.chance(2))
                .then(|| (0..rng.below(150)).map(|_| rng.below(256) as u8).collect());
            HbmTensor {
                name,
                dtype,
                shape,
                kind,
                data,
            }
        })
        .collect();
    rng.tensors = p.hbm.len() as u32;
    p.semaphores = (0..rng.below(4) as usize)
        .map(|i| Semaphore {
            name: identifier(&mut rng, i),
        })
        .collect();
    let n_sems = p.semaphores.len() as u64;
    let n_lines = p.line_table.len() as u64;
    let queues = Queue::samples();
    p.queues = (0..rng.below(5))
        .map(|_| QueueStream {
            queue: rng.pick(&queues),
            insts: (0..rng.below(12))
                .map(|_| {
                    let index = rng.below(Op::MNEMONICS.len() as u64) as usize;
                    let op = Op::random(index, &mut rng);
                    let waits = if n_sems == 0 {
                        Vec::new()
                    } else {
                        (0..rng.below(3))
                            .map(|_| SemWait {
                                sem: SemId(rng.below(n_sems) as u32),
                                value: rng.next() as u32 >> rng.below(32),
                                reg: rng.chance(3).then(|| Reg::random(&mut rng)),
                            })
                            .collect()
                    };
                    let signals = if n_sems == 0 {
                        Vec::new()
                    } else {
                        (0..rng.below(3))
                            .map(|_| SemId(rng.below(n_sems) as u32))
                            .collect()
                    };
                    let line =
                        (n_lines > 0 && rng.chance(2)).then(|| LineId(rng.below(n_lines) as u32));
                    Instruction {
                        op,
                        waits,
                        signals,
                        line,
                    }
                })
                .collect(),
        })
        .collect();
    p
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::random_program;
    use crate::inst::Op;
    use crate::text::{assemble, print};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// `assemble(print(p)) == p` and printing is a fixed point.
        #[test]
        fn text_round_trips(seed in any::<u64>()) {
            let program = random_program(seed);
            let text = print(&program);
            let back = assemble(&text);
            prop_assert_eq!(back.as_ref(), Ok(&program), "text:\n{}", text);
            if let Ok(back) = back {
                prop_assert_eq!(print(&back), text);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The assembler never panics: on printed programs with bytes
        /// deleted, duplicated or replaced, and on arbitrary text.
        #[test]
        fn assembler_never_panics(seed in any::<u64>(), edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8)) {
            let mut text = print(&random_program(seed)).into_bytes();
            for (at, byte, kind) in edits {
                if text.is_empty() {
                    break;
                }
                let at = at % text.len();
                match kind {
                    0 => { text.remove(at); }
                    1 => text.insert(at, text[at]),
                    _ => text[at] = byte,
                }
            }
            let text = String::from_utf8_lossy(&text);
            if let Ok(program) = assemble(&text) {
                // Whatever assembles prints and re-assembles to itself.
                prop_assert_eq!(assemble(&print(&program)), Ok(program));
            }
        }

        #[test]
        fn assembler_survives_arbitrary_text(text in "[ -~\n\t\u{e9}\u{1F600}]{0,300}") {
            let _ = assemble(&text);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The verifier and the cost model never panic, whatever the program.
        #[test]
        fn verify_and_cost_never_panic(seed in any::<u64>()) {
            let program = random_program(seed);
            let _ = crate::verify::verify(&program);
            for stream in &program.queues {
                for inst in &stream.insts {
                    for target in crate::target::Target::ALL {
                        let cost = target.cost(stream.queue, &inst.op);
                        prop_assert!(cost.latency_ps >= cost.busy_ps);
                    }
                }
            }
        }
    }

    /// The generator produces substantial programs (so the property test
    /// exercises something).
    #[test]
    fn random_programs_are_substantial() {
        let (mut insts, mut hbm_operands, mut waits) = (0, 0, 0);
        for seed in 0..50 {
            let p = random_program(seed);
            for s in &p.queues {
                for i in &s.insts {
                    insts += 1;
                    waits += i.waits.len();
                    hbm_operands +=
                        i.op.operands()
                            .iter()
                            .filter(|o| matches!(o.ap.mem, crate::ap::Memory::Hbm(_)))
                            .count();
                }
            }
        }
        assert!(insts > 300, "{insts} instructions");
        assert!(hbm_operands > 20, "{hbm_operands} HBM operands");
        assert!(waits > 20, "{waits} waits");
    }

    /// Every instruction of the table is generated and round-trips.
    #[test]
    fn every_instruction_round_trips() {
        let mut rng = super::Rng::new(7);
        for index in 0..Op::MNEMONICS.len() {
            for _ in 0..20 {
                let mut program = crate::program::Program::new(crate::target::Target::Trn3);
                let op = Op::random(index, &mut rng);
                assert_eq!(op.mnemonic(), Op::MNEMONICS[index]);
                program
                    .stream_mut(crate::engine::Queue::Vector)
                    .push(crate::inst::Instruction::new(op));
                let text = print(&program);
                assert_eq!(assemble(&text), Ok(program), "{text}");
            }
        }
    }
}
