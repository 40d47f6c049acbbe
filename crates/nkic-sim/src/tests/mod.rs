//! Unit tests of the interpreter: one module per instruction group, driven
//! through `Bench`, which runs single instructions against a prepared
//! memory state, and whole-program tests through `run`.

mod control;
mod corpus;
mod data;
mod dtypes;
mod machine;
mod props;
mod scalar;
mod shadow;
mod tensor;
#[cfg(feature = "jit")]
mod tiers;
mod vector;

use nkic_isa::numerics;
use nkic_isa::{
    AccessPattern, DType, Dim, Memory, Op, Program, Queue, Target, TensorId, TensorKind,
};

use crate::config::Poison;
use crate::error::Fault;
use crate::exec::{Accumulators, Exec};
use crate::memory::{MemoryState, View};

/// Verifies `program` and runs it: the entry of the whole-program tests.
pub(crate) fn run(
    program: &Program,
    inputs: &crate::Inputs,
    config: &crate::SimConfig,
) -> Result<crate::RunResult, crate::SimError> {
    let verified = nkic_isa::verify(program).unwrap_or_else(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        panic!("the test program does not verify:\n{}", lines.join("\n"))
    });
    crate::run(verified, inputs, config)
}

/// One instruction at a time against a memory state.
pub(crate) struct Bench {
    pub mem: MemoryState,
    pub acc: Accumulators,
    pub regs: Vec<i32>,
    pub flops: u64,
}

impl Bench {
    pub fn new() -> Bench {
        Bench::with_program(&Program::new(Target::Trn3))
    }

    pub fn with_program(p: &Program) -> Bench {
        Bench {
            mem: MemoryState::new(p, Poison::Error),
            acc: Accumulators::new(128),
            regs: vec![0; 64],
            flops: 0,
        }
    }

    /// The view of a test pattern, which must be in bounds.
    fn view(&self, ap: &AccessPattern, write: bool) -> View {
        self.mem
            .view(ap, &self.regs, "test", write)
            .expect("test pattern in bounds")
    }

    /// Writes `vals` (one per element, four per packed element) into `ap`.
    pub fn put(&mut self, ap: &AccessPattern, vals: &[f32]) {
        let v = self.view(ap, true);
        self.mem
            .write_f32(&v, vals)
            .expect("value count matches the pattern");
    }

    /// Writes 0, 1, 2, … (one per element of the unpacked `ap`) into `ap`.
    pub fn put_counting(&mut self, ap: &AccessPattern) {
        let vals: Vec<f32> = (0..ap.num_elements()).map(|i| i as f32).collect();
        self.put(ap, &vals);
    }

    /// Writes raw bits (one per element) into `ap`.
    pub fn put_bits(&mut self, ap: &AccessPattern, bits: &[u32]) {
        let v = self.view(ap, true);
        self.mem
            .write_bits(&v, bits)
            .expect("bit count matches the pattern");
    }

    pub fn get(&mut self, ap: &AccessPattern) -> Vec<f32> {
        let v = self.view(ap, false);
        self.mem
            .read_f32(&v)
            .expect("test reads initialised memory")
    }

    pub fn get_bits(&mut self, ap: &AccessPattern) -> Vec<u32> {
        let v = self.view(ap, false);
        self.mem
            .read_bits(&v)
            .expect("test reads initialised memory")
    }

    /// Executes `op` on `queue`.
    pub fn exec(&mut self, queue: Queue, op: &Op) -> Result<(), Fault> {
        self.context(queue, op).run(op).map(|_| ())
    }

    /// The execution context of `op` on `queue`, with the memory told
    /// that `op` begins (as the machine does before every instruction).
    pub fn context(&mut self, queue: Queue, op: &Op) -> Exec<'_> {
        self.mem.begin(0, queue, 0, crate::exec::shadow_rule(op));
        Exec {
            mem: &mut self.mem,
            regs: &mut self.regs,
            acc: &mut self.acc,
            engine: queue.engine(),
            flops: &mut self.flops,
        }
    }

    /// Executes `op` on `queue`, which must not fault.
    pub fn ok(&mut self, queue: Queue, op: &Op) {
        if let Err(f) = self.exec(queue, op) {
            panic!("{} faulted: {}", op.mnemonic(), f.message);
        }
    }
}

/// Free dims from `(stride, count)` pairs.
fn free_dims(dims: &[(i64, u32)]) -> Vec<Dim> {
    dims.iter().map(|&(s, c)| Dim::new(s, c)).collect()
}

/// An SBUF pattern with `(stride, count)` dims.
pub(crate) fn sb(
    start: u32,
    count: u32,
    offset: u64,
    dims: &[(i64, u32)],
    dt: DType,
) -> AccessPattern {
    AccessPattern::sbuf(start, count, offset, &free_dims(dims), dt)
}

/// The same pattern in PSUM (`ps(sb(…))`).
pub(crate) fn ps(ap: AccessPattern) -> AccessPattern {
    AccessPattern {
        mem: Memory::Psum,
        ..ap
    }
}

/// A contiguous `[p, f]` SBUF tile at partition 0.
pub(crate) fn tile(p: u32, f: u32, offset: u64, dt: DType) -> AccessPattern {
    sb(0, p, offset, &[(1, f)], dt)
}

/// An HBM pattern of `rows` rows `row_stride` apart.
pub(crate) fn hbm(
    t: TensorId,
    rows: u32,
    row_stride: i64,
    offset: u64,
    dims: &[(i64, u32)],
    dt: DType,
) -> AccessPattern {
    AccessPattern::hbm(t, rows, row_stride, offset, &free_dims(dims), dt)
}

/// A deterministic stream of varied floats in about [-4, 4).
pub(crate) fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((x >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 8.0
        })
        .collect()
}

/// `x` rounded to `dt`, as an engine write then read.
pub(crate) fn q(dt: DType, x: f32) -> f32 {
    numerics::quantize(dt, x)
}

/// Little-endian bytes of f32 values.
pub(crate) fn f32_bytes(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A program with the given HBM tensors.
pub(crate) fn program(tensors: &[(&str, DType, &[u64], TensorKind)]) -> Program {
    let mut p = Program::new(Target::Trn3);
    for (name, dt, shape, kind) in tensors {
        p.add_tensor(name, *dt, shape, *kind);
    }
    p
}

/// Asserts bitwise equality of two f32 slices (NaN-aware by bits).
#[track_caller]
pub(crate) fn assert_bits(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "element {i}: got {g:?}, want {w:?}"
        );
    }
}
