//! The meaning of every instruction: one function per `Op` variant, run
//! against the memory state, the executing queue's registers and the
//! engines' accumulator registers.
//!
//! General rules (see also `alu.rs` and the crate doc):
//!
//! * An instruction reads all its inputs before it writes anything, so an
//!   output may alias an input.
//! * Operands are walked in row-major order of their free dims; only P and
//!   F must agree between operands.
//! * Arithmetic widens every input to f32, computes in f32 and rounds to
//!   the destination dtype on write (`numerics`, RNE). Copies between equal
//!   dtypes move raw bits. Bitwise operators work on raw bits.
//! * `tensor_reduce` and `tensor_partition_reduce` fold left starting from
//!   the first element. An accumulator instruction folds its row from the
//!   identity of `reduce_op` over the f32 values *before* their rounding to
//!   the destination dtype, then combines that row result into the
//!   accumulator (docs/isa.md §1.5).
//! * Accumulator registers (128 per engine, one per partition lane, indexed
//!   by absolute partition) start at 0.0. Instructions with
//!   `reduce_cmd=idle` leave them unchanged.
//! * Random instructions draw from the executing engine's per-lane XORWOW
//!   generators (`rng.rs`).
//!
//! Choices where docs/isa.md is silent (also sent to the ISA owner):
//!
//! * The interpreter runs verified programs only (`crate::run` takes
//!   `nkic_isa::Verified`): operand shapes, dtypes, memories and
//!   attributes that do not fit together are the verifier's to reject and
//!   are not checked again here. Packed x4 dtypes, which the verifier
//!   does not restrict, are accepted only by copies, `memset` and the MX
//!   instructions (`BadProgram` otherwise).
//! * `dma_copy oob=skip` skips single elements whose source or destination
//!   leaves its memory; `dma_gather`/`dma_scatter` skip whole rows.
//! * `tensor_copy_predicated` reads only the selected `src` elements.
//! * `nc_matmul transpose=true` passes a one-hot column through exactly
//!   whether or not `accumulate` is set.
//! * `iota` saturates values into narrow integer dtypes.
//! * Gather and shuffle indices outside their source fault `OutOfBounds`.

use nkic_isa::insn;
use nkic_isa::numerics::{self, Overflow};
use nkic_isa::{
    AccessPattern, ActFunc, AluOp, DType, Dim, Engine, Imm, Label, MatmulPerfMode, OobMode, Op,
    ReduceCmd, Reg, RegAluOp, RegOrImm, Scalar,
};

use crate::alu::{activation, alu, alu_bits, alu_i32, float_to_bits, identity};
use crate::decoded::products;
use crate::deferred::{Operands, Product};
use crate::error::{FResult, Fault, SimErrorKind};
use crate::footprint::mx_scale_rows;
use crate::matmul::{Moving, Rows, matmul_moving, matmul_rows, moving_stride};
use crate::memory::{MemoryState, ShadowRule, View, bits_of};
use crate::pages;
use crate::rng::{self, Xorwow};

/// Per-lane engine state shared by a queue's instructions: the Scalar and
/// Vector accumulator registers and the Vector and GpSimd generators.
pub(crate) struct Accumulators {
    pub scalar: Vec<f32>,
    pub vector: Vec<f32>,
    /// With `Poison::Precise`: per lane, the origin of undefined data
    /// folded into the lane (`None`: defined).
    pub scalar_undef: Vec<Option<u32>>,
    pub vector_undef: Vec<Option<u32>>,
    pub rng_vector: Vec<Xorwow>,
    pub rng_gpsimd: Vec<Xorwow>,
}

impl Accumulators {
    pub fn new(lanes: usize) -> Accumulators {
        Accumulators {
            scalar: vec![0.0; lanes],
            vector: vec![0.0; lanes],
            scalar_undef: vec![None; lanes],
            vector_undef: vec![None; lanes],
            rng_vector: rng::lanes(0, lanes),
            rng_gpsimd: rng::lanes(0, lanes),
        }
    }
}

/// Runs `op` on a queue's registers `regs` when it is a register or
/// control instruction that touches no memory (`reg_set`, `reg_move`,
/// `reg_alu`, `branch`, `jump`, `label`, `nop`): their whole meaning,
/// for `Exec::run` and for the machine's counting loops (`idle`). `None`
/// for any other instruction.
pub(crate) fn registers(op: &Op, regs: &mut [i32]) -> Option<FResult<Flow>> {
    let reg = |regs: &[i32], r: Reg| *regs.get(usize::from(r.0)).unwrap_or_else(|| no_register(r));
    let value = |regs: &[i32], x: RegOrImm| match x {
        RegOrImm::Reg(r) => reg(regs, r),
        RegOrImm::Imm(v) => v,
    };
    let set = |regs: &mut [i32], r: Reg, v: i32| {
        *regs
            .get_mut(usize::from(r.0))
            .unwrap_or_else(|| no_register(r)) = v;
    };
    let flow = match op {
        Op::RegSet(insn::RegSet { dst, value }) => {
            set(regs, *dst, *value);
            Flow::Next
        }
        Op::RegMove(insn::RegMove { dst, src }) => {
            set(regs, *dst, reg(regs, *src));
            Flow::Next
        }
        Op::RegAlu(insn::RegAlu { dst, op, a, b }) => {
            match reg_alu(*op, reg(regs, *a), value(regs, *b)) {
                Ok(v) => set(regs, *dst, v),
                Err(fault) => return Some(Err(fault)),
            }
            Flow::Next
        }
        Op::Branch(insn::Branch { cond, a, b, target }) => {
            match cond.holds(reg(regs, *a), value(regs, *b)) {
                true => Flow::Jump(*target),
                false => Flow::Next,
            }
        }
        Op::Jump(insn::Jump { target }) => Flow::Jump(*target),
        Op::Label(_) | Op::Nop(insn::Nop {}) => Flow::Next,
        _ => return None,
    };
    Some(Ok(flow))
}

/// Where a queue continues after an instruction.
pub(crate) enum Flow {
    Next,
    Jump(Label),
}

/// One instruction's execution context.
pub(crate) struct Exec<'a> {
    pub mem: &'a mut MemoryState,
    pub regs: &'a mut [i32],
    pub acc: &'a mut Accumulators,
    pub engine: Engine,
    pub flops: &'a mut u64,
}

/// Which accumulator file an instruction uses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum AccFile {
    Scalar,
    Vector,
}

/// What an accumulator instruction does with its values: the file, its
/// `reduce_cmd` and operator, and the read-out (negated if asked).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reduction<'a> {
    pub file: AccFile,
    pub cmd: ReduceCmd,
    pub op: AluOp,
    pub res: Option<&'a AccessPattern>,
    pub negate: bool,
}

impl<'a> Reduction<'a> {
    /// Into `file`, read out unnegated.
    pub(crate) fn new(
        file: AccFile,
        cmd: ReduceCmd,
        op: AluOp,
        res: Option<&'a AccessPattern>,
    ) -> Reduction<'a> {
        Reduction {
            file,
            cmd,
            op,
            res,
            negate: false,
        }
    }
}

/// How definedness flows through `op` (`memory::ShadowRule`; the table
/// is docs/isa.md's "Definedness").
pub(crate) fn shadow_rule(op: &Op) -> ShadowRule {
    match op {
        Op::NcMatmul(_) | Op::NcMatmulMx(_) => ShadowRule::Matmul,
        Op::NcTranspose(_) => ShadowRule::Transpose,
        // A rank-3 or rank-4 transpose whose middle dims are 1 moves
        // element (i, p) of `[F, P]` to (p, i), as a rank-2 one does.
        Op::DmaTranspose(insn::DmaTranspose { src, .. })
            if src
                .shape()
                .get(1..src.shape().len().saturating_sub(1))
                .is_some_and(|mid| mid.iter().all(|&d| d == 1)) =>
        {
            ShadowRule::Transpose
        }
        Op::DmaTranspose(_) | Op::LocalGather(_) | Op::QuantizeMx(_) => ShadowRule::All,
        Op::TensorTensorScan(_)
        | Op::TensorScalarCumulative(_)
        | Op::Max8(_)
        | Op::FindIndex8(_)
        | Op::MatchReplace8(_)
        | Op::NGather(_)
        | Op::SequenceBounds(_)
        | Op::NonzeroWithCount(_)
        | Op::BnStats(_)
        | Op::BnAggr(_) => ShadowRule::Row,
        Op::StreamShuffle(insn::StreamShuffle { mask, .. }) => {
            let mut rows = [255u8; 32];
            for (r, &m) in rows.iter_mut().zip(mask) {
                *r = m;
            }
            ShadowRule::Shuffle(rows)
        }
        Op::TensorPartitionReduce(_) => ShadowRule::Column,
        _ => ShadowRule::Elementwise,
    }
}

impl Exec<'_> {
    /// Executes `op`.
    pub fn run(&mut self, op: &Op) -> FResult<Flow> {
        match op {
            Op::DmaCopy(i) => self.dma_copy(i)?,
            Op::DmaTranspose(i) => self.dma_transpose(i)?,
            Op::DmaGather(insn::DmaGather {
                dst,
                src,
                index,
                accumulate,
                oob,
            }) => self.dma_indirect(dst, src, index, false, *accumulate, *oob)?,
            Op::DmaScatter(insn::DmaScatter {
                dst,
                src,
                index,
                accumulate,
                oob,
            }) => self.dma_indirect(dst, src, index, true, *accumulate, *oob)?,
            Op::Rng(i) => self.rng(i)?,
            Op::Rand2(i) => self.rand2(i)?,
            Op::Dropout(i) => self.dropout(i)?,
            Op::SetRngSeed(insn::SetRngSeed { src }) => {
                let v = self.view(src, "src")?;
                let mut raw = Vec::new();
                self.mem.read_defined(&v, &mut raw)?;
                let seed = bits_of(&raw);
                let lanes = self.acc.rng_vector.len();
                self.acc.rng_vector = rng::lanes(seed, lanes);
            }
            Op::TensorCopy(i) => self.tensor_copy(i)?,
            Op::Memset(i) => self.memset(i)?,
            Op::Iota(i) => self.iota(i)?,
            Op::NcMatmul(i) => self.matmul(i)?,
            Op::NcMatmulMx(i) => self.matmul_mx(i)?,
            Op::NcTranspose(i) => self.transpose(i)?,
            Op::Activation(i) => {
                let (sv, dv, y) =
                    self.activation(&i.dst, &i.src, i.func, &i.scale, i.bias.as_ref())?;
                let reduce_op = i.reduce_op.unwrap_or(AluOp::Add);
                let r = Reduction::new(
                    AccFile::Scalar,
                    i.reduce_cmd,
                    reduce_op,
                    i.reduce_res.as_ref(),
                );
                self.reduce_and_write(r, &sv, &dv, &y, None)?;
            }
            Op::ActivationReduce(i) => {
                let (sv, dv, y) =
                    self.activation(&i.dst, &i.src, i.func, &i.scale, i.bias.as_ref())?;
                let cmd = ReduceCmd::ResetReduce;
                let r = Reduction::new(AccFile::Scalar, cmd, i.reduce_op, Some(&i.reduce_res));
                self.reduce_and_write(r, &sv, &dv, &y, None)?;
            }
            Op::Activate2(i) => self.activate2(i)?,
            Op::TensorTensor(i) => self.tensor_tensor(i)?,
            Op::TensorScalar(i) => self.tensor_scalar(i)?,
            Op::ScalarTensorTensor(i) => self.scalar_tensor_tensor(i)?,
            Op::TensorScalarReduce(i) => self.tensor_scalar_reduce(i)?,
            Op::TensorScalarCumulative(i) => self.cumulative(i)?,
            Op::TensorReduce(i) => self.tensor_reduce(i)?,
            Op::TensorPartitionReduce(i) => self.partition_reduce(i)?,
            Op::TensorTensorScan(i) => self.scan(i)?,
            Op::TensorCopyPredicated(i) => self.copy_predicated(i)?,
            Op::Reciprocal(insn::Reciprocal { dst, src }) => self.map(dst, src, |x| 1.0 / x)?,
            Op::Exponential(i) => self.exponential(i)?,
            Op::RangeSelect(i) => self.range_select(i)?,
            Op::SelectReduce(i) => self.select_reduce(i)?,
            Op::Max8(i) => self.max8(i)?,
            Op::FindIndex8(i) => self.find_index8(i)?,
            Op::MatchReplace8(i) => self.match_replace8(i)?,
            Op::BnStats(i) => self.bn_stats(i)?,
            Op::BnAggr(i) => self.bn_aggr(i)?,
            Op::QuantizeMx(i) => self.quantize_mx(i)?,
            Op::StreamShuffle(i) => self.stream_shuffle(i)?,
            Op::AffineSelect(i) => self.affine_select(i)?,
            Op::LocalGather(i) => self.local_gather(i)?,
            Op::NGather(i) => self.n_gather(i)?,
            Op::SequenceBounds(i) => self.sequence_bounds(i)?,
            Op::NonzeroWithCount(i) => self.nonzero_with_count(i)?,
            Op::RegSet(_)
            | Op::RegMove(_)
            | Op::RegAlu(_)
            | Op::Branch(_)
            | Op::Jump(_)
            | Op::Label(_)
            | Op::Nop(_) => {
                return registers(op, self.regs)
                    .unwrap_or_else(|| unreachable!("`registers` runs {}", op.mnemonic()));
            }
            Op::RegLoad(insn::RegLoad { dst, src }) => {
                let v = self.view(src, "src")?;
                let mut raw = Vec::new();
                self.mem.read_defined(&v, &mut raw)?;
                let bits = bits_of(&raw);
                let value = match v.dtype {
                    DType::I8 => i32::from(bits as u8 as i8),
                    DType::I16 => i32::from(bits as u16 as i16),
                    _ => bits as i32,
                };
                *self.reg_mut(*dst) = value;
            }
            Op::RegStore(insn::RegStore { dst, src }) => {
                let value = self.reg(*src);
                let v = self.view_w(dst, "dst")?;
                self.mem.write_bits(&v, &[value as u32])?;
            }
            // A `sendrecv` moves its data in the machine, which pairs the cores.
            Op::CoreBarrier(_) | Op::SendRecv(_) => {}
        }
        Ok(Flow::Next)
    }

    // ------------------------------------------------------------ helpers

    /// Register `r`, which exists: the verifier's `Register` rule holds
    /// every register an instruction names below the target's
    /// `sequencer_registers`, the number a queue has.
    fn reg(&self, r: Reg) -> i32 {
        *self
            .regs
            .get(usize::from(r.0))
            .unwrap_or_else(|| no_register(r))
    }

    /// Register `r` to write (see `reg`).
    fn reg_mut(&mut self, r: Reg) -> &mut i32 {
        self.regs
            .get_mut(usize::from(r.0))
            .unwrap_or_else(|| no_register(r))
    }

    fn view(&self, ap: &AccessPattern, field: &'static str) -> FResult<View> {
        self.mem.view(ap, self.regs, field, false)
    }

    fn view_w(&self, ap: &AccessPattern, field: &'static str) -> FResult<View> {
        self.mem.view(ap, self.regs, field, true)
    }

    /// Reads an operand's values; it must not be a packed x4 dtype.
    fn values(&mut self, ap: &AccessPattern, field: &'static str) -> FResult<(View, Vec<f32>)> {
        let v = self.view(ap, field)?;
        plain(&v)?;
        let x = self.mem.read_f32(&v)?;
        Ok((v, x))
    }

    /// A destination that receives one computed value per element.
    fn dst(&self, ap: &AccessPattern, field: &'static str) -> FResult<View> {
        let v = self.view_w(ap, field)?;
        plain(&v)?;
        Ok(v)
    }

    /// A scalar operand's value per row.
    fn scalar(&mut self, s: &Scalar, rows: usize, field: &'static str) -> FResult<Vec<f32>> {
        match s {
            Scalar::Imm(x) => Ok(vec![x.get(); rows]),
            Scalar::Vector(ap) => {
                let (v, x) = self.values(ap, field)?;
                Ok(per_row(&v, &x))
            }
        }
    }

    fn opt_scalar(
        &mut self,
        s: Option<&Scalar>,
        rows: usize,
        default: f32,
        field: &'static str,
    ) -> FResult<Vec<f32>> {
        match s {
            Some(s) => self.scalar(s, rows, field),
            None => Ok(vec![default; rows]),
        }
    }

    /// A scalar operand's integer bits per row (bitwise operators): an
    /// immediate is rounded to an integer, a vector is read raw.
    fn scalar_bits(
        &mut self,
        s: Option<&Scalar>,
        rows: usize,
        field: &'static str,
    ) -> FResult<Vec<u32>> {
        match s {
            None => Ok(vec![0; rows]),
            Some(Scalar::Imm(x)) => Ok(vec![float_to_bits(x.get()); rows]),
            Some(Scalar::Vector(ap)) => {
                let v = self.view(ap, field)?;
                let bits = self.ext_bits(&v)?;
                Ok(bits.iter().step_by(v.free()).copied().collect())
            }
        }
    }

    /// Applies `f` element-wise from `src` to `dst`.
    fn map(
        &mut self,
        dst: &AccessPattern,
        src: &AccessPattern,
        f: impl Fn(f32) -> f32,
    ) -> FResult<()> {
        let (_, x) = self.values(src, "src")?;
        let dv = self.dst(dst, "dst")?;
        let y: Vec<f32> = x.into_iter().map(f).collect();
        self.mem.write_f32(&dv, &y)
    }

    /// Every element's bits as a 32-bit integer (sign-extended for signed
    /// dtypes), for the bitwise operators.
    fn ext_bits(&mut self, v: &View) -> FResult<Vec<u32>> {
        let bits = self.mem.read_bits(v)?;
        Ok(bits.into_iter().map(|b| extend(v.dtype, b)).collect())
    }

    /// True when GpSimd computes these operators exactly on 32-bit integers:
    /// every operand `int32`/`uint32` and every operator in the exact set.
    fn exact_int(&self, views: &[&View], ops: &[AluOp]) -> bool {
        self.engine == Engine::GpSimd
            && views
                .iter()
                .all(|v| matches!(v.dtype, DType::I32 | DType::U32))
            && ops.iter().all(|&op| alu_i32(op, 0, 0, true).is_some())
    }

    pub(crate) fn accs(&mut self, file: AccFile, v: &View) -> FResult<&mut [f32]> {
        let accs = match file {
            AccFile::Scalar => &mut self.acc.scalar,
            AccFile::Vector => &mut self.acc.vector,
        };
        let (lo, hi) = (v.part_start, v.part_start + v.rows);
        Ok(&mut accs[lo..hi])
    }

    /// The end of every accumulator instruction: its values `y` (the
    /// rows of `like`) reduce into the accumulators per `r` (each row
    /// folds left from the identity of the operator, then `accumulate`),
    /// are written to `dv`, and the accumulators are read out.
    fn reduce_and_write(
        &mut self,
        r: Reduction<'_>,
        like: &View,
        dv: &View,
        y: &[f32],
        init: Option<&[f32]>,
    ) -> FResult<()> {
        let free = like.free();
        let rows: Vec<f32> = (0..like.rows)
            .map(|p| {
                y[p * free..(p + 1) * free]
                    .iter()
                    .fold(identity(r.op), |a, &x| alu(r.op, a, x))
            })
            .collect();
        self.accumulate(r, like, &rows, init)?;
        self.mem.write_f32(dv, y)?;
        self.read_out(r, like)
    }

    /// Combines each row's result `rows[p]` (its values folded from the
    /// identity of the operator) into the accumulator of lane `p` of
    /// `like` per `r`, and the row's undefinedness into the lane's.
    pub(crate) fn accumulate(
        &mut self,
        r: Reduction<'_>,
        like: &View,
        rows: &[f32],
        init: Option<&[f32]>,
    ) -> FResult<()> {
        let Reduction { file, cmd, op, .. } = r;
        let taint = self.mem.row_taint(like.rows, like.free());
        let (lo, hi) = (like.part_start, like.part_start + like.rows);
        let undef = match file {
            AccFile::Scalar => &mut self.acc.scalar_undef,
            AccFile::Vector => &mut self.acc.vector_undef,
        };
        if let Some(lanes) = undef.get_mut(lo..hi) {
            for (lane, t) in lanes.iter_mut().zip(taint) {
                *lane = match cmd {
                    ReduceCmd::Idle => *lane,
                    ReduceCmd::Reset => None,
                    ReduceCmd::Reduce => lane.or(t),
                    ReduceCmd::ResetReduce | ReduceCmd::LoadReduce => t,
                };
            }
        }
        let accs = self.accs(file, like)?;
        for (p, a) in accs.iter_mut().enumerate() {
            match cmd {
                ReduceCmd::Idle => continue,
                ReduceCmd::Reset => {
                    *a = identity(op);
                    continue;
                }
                ReduceCmd::Reduce => {}
                ReduceCmd::ResetReduce => *a = identity(op),
                ReduceCmd::LoadReduce => *a = init.and_then(|i| i.get(p).copied()).unwrap_or(0.0),
            }
            *a = alu(op, *a, rows[p]);
        }
        Ok(())
    }

    /// Writes the accumulators of `like`'s lanes into `r`'s read-out
    /// (negated if asked).
    pub(crate) fn read_out(&mut self, r: Reduction<'_>, like: &View) -> FResult<()> {
        let Reduction {
            file, res, negate, ..
        } = r;
        let Some(res) = res else { return Ok(()) };
        let rv = self.dst(res, "reduce_res")?;
        let vals: Vec<f32> = self
            .accs(file, like)?
            .iter()
            .map(|&a| if negate { -a } else { a })
            .collect();
        let undef = match file {
            AccFile::Scalar => &self.acc.scalar_undef,
            AccFile::Vector => &self.acc.vector_undef,
        };
        if let Some(lanes) = undef.get(like.part_start..like.part_start + like.rows) {
            self.mem.taint_lanes(lanes);
        }
        self.mem.write_f32(&rv, &vals)
    }

    // ------------------------------------------------------------ data movement

    fn dma_copy(&mut self, i: &insn::DmaCopy) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let accumulate = i.accumulate;
        let oob = i.oob;
        if oob == OobMode::Skip {
            return self.dma_copy_skipping(dst, src, accumulate);
        }
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        if sv.dtype == dv.dtype && !accumulate {
            let mut raw = Vec::new();
            self.mem.read_raw(&sv, &mut raw)?;
            return self.mem.write_raw(&dv, &raw);
        }
        plain(&sv)?;
        plain(&dv)?;
        let mut x = self.mem.read_f32(&sv)?;
        if accumulate {
            let old = self.mem.read_f32(&dv)?;
            for (x, o) in x.iter_mut().zip(old) {
                *x += o;
            }
        }
        self.mem.write_f32(&dv, &x)
    }

    /// `dma_copy` with `oob=skip`: elements whose source or destination
    /// lies outside its memory are not transferred.
    fn dma_copy_skipping(
        &mut self,
        dst: &AccessPattern,
        src: &AccessPattern,
        accumulate: bool,
    ) -> FResult<()> {
        let sv = self.mem.view_unchecked(src, self.regs, "src")?;
        let dv = self.mem.view_unchecked(dst, self.regs, "dst")?;
        self.copy_elements(&sv, &dv, accumulate, |mem, [ps, is, pd, id]| {
            mem.in_bounds(&sv, ps, is) && mem.in_bounds(&dv, pd, id)
        })
    }

    /// Copies the elements of `sv` to `dv` one at a time, paired in
    /// row-major order as `dma_copy` pairs them, except the pairs `keep`
    /// rejects (given the source row and position, then the
    /// destination's): raw bits within a dtype, through f32 between
    /// dtypes or when `accumulate` adds the destination's old value.
    fn copy_elements(
        &mut self,
        sv: &View,
        dv: &View,
        accumulate: bool,
        keep: impl Fn(&MemoryState, [usize; 4]) -> bool,
    ) -> FResult<()> {
        let raw_copy = sv.dtype == dv.dtype && !accumulate;
        if !raw_copy {
            plain(sv)?;
            plain(dv)?;
        }
        let (sf, df) = (sv.free().max(1), dv.free().max(1));
        let mut buf = Vec::new();
        for e in 0..sv.elements() {
            let (ps, is) = (e / sf, e % sf);
            let (pd, id) = (e / df, e % df);
            if !keep(self.mem, [ps, is, pd, id]) {
                continue;
            }
            buf.clear();
            self.mem.read_elem(sv, ps, is, &mut buf)?;
            if !raw_copy {
                let mut x = numerics::to_f32(sv.dtype, bits_of(&buf));
                if accumulate {
                    let mut old = Vec::new();
                    self.mem.read_elem(dv, pd, id, &mut old)?;
                    x += numerics::to_f32(dv.dtype, bits_of(&old));
                }
                buf.clear();
                numerics::encode(dv.dtype, &[x], &mut buf);
            }
            self.mem.write_elem(dv, pd, id, &buf);
        }
        Ok(())
    }

    /// `dma_gather` (`scatter` false: `src` rows remapped) and
    /// `dma_scatter` (`dst` rows remapped): row `w` of the remapped side is
    /// row `index[w]` of its tensor. Elements then pair as in `dma_copy`,
    /// one at a time in row-major order, so repeated scatter indices with
    /// `accumulate` add up. A remapped row outside its tensor faults, or
    /// with `oob=skip` is not transferred.
    fn dma_indirect(
        &mut self,
        dst: &AccessPattern,
        src: &AccessPattern,
        index: &AccessPattern,
        scatter: bool,
        accumulate: bool,
        oob: OobMode,
    ) -> FResult<()> {
        let iv = self.view(index, "index")?;
        let idx = self.mem.read_defined_bits(&iv)?;
        let (mut sv, mut dv) = if scatter {
            (
                self.view(src, "src")?,
                self.mem.view_unchecked(dst, self.regs, "dst")?,
            )
        } else {
            (
                self.mem.view_unchecked(src, self.regs, "src")?,
                self.view_w(dst, "dst")?,
            )
        };
        let remapped = if scatter { &mut dv } else { &mut sv };
        let rows: Vec<i64> = idx
            .iter()
            .map(|&b| {
                let row = if iv.dtype == DType::I32 {
                    i64::from(b as i32)
                } else {
                    i64::from(b)
                };
                remapped
                    .row_base
                    .saturating_add(row.saturating_mul(remapped.row_step))
            })
            .collect();
        remapped.row_addrs = Some(rows);
        let field = remapped.field;
        let bad_row = (0..remapped.rows).find(|&w| !self.mem.row_in_bounds(remapped, w));
        let valid: Vec<bool> = (0..remapped.rows)
            .map(|w| self.mem.row_in_bounds(remapped, w))
            .collect();
        if let (Some(w), OobMode::Error) = (bad_row, oob) {
            let mut f = Fault::new(
                SimErrorKind::OutOfBounds,
                format!(
                    "out-of-bounds indirect row: row {w} of the index tile read through `index` holds {} and `{field}` leaves its tensor",
                    idx[w] as i32
                ),
            );
            if let Some(mut facts) = self.mem.outside(remapped, w..w + 1) {
                f.message = format!("{}: {}", f.message, facts.message());
                let value = if iv.dtype == DType::I32 {
                    i64::from(idx[w] as i32)
                } else {
                    i64::from(idx[w])
                };
                facts.index_tile = Some(("index".to_owned(), value));
                f.oob = Some(Box::new(facts));
            }
            return Err(f);
        }
        // The usual gather or scatter of whole rows: every row in bounds,
        // the same row shape and dtype on both sides, separate memories and
        // every byte read written and defined. Then reading everything and
        // then writing everything gives the element loop's bytes, counters
        // and (all-defined) shadow, without a call per element.
        // Otherwise (`oob=skip`, or bytes never written or undefined) the
        // same per stretch of clean rows in bounds (rows pair one to one),
        // and for each row that reads unclean bytes, in row order, what the
        // element loop does (`MemoryState::copy_row`, else the loop): the
        // bytes, shadow and any fault of the element loop.
        if sv.dtype == dv.dtype
            && !accumulate
            && sv.rows == dv.rows
            && sv.free() == dv.free()
            && sv.space != dv.space
        {
            if bad_row.is_none() && self.mem.is_clean(&sv) {
                let mut bytes = Vec::new();
                self.mem.read_raw(&sv, &mut bytes)?;
                return self.mem.write_raw(&dv, &bytes);
            }
            // Per row: in bounds, and clean (checked once, before any
            // write: the two sides are separate memories).
            let rows: Vec<(bool, bool)> = (0..valid.len())
                .map(|r| (valid[r], valid[r] && self.mem.is_clean(&sv.sub_rows(r, 1))))
                .collect();
            let mut w = 0;
            while w < rows.len() {
                let n = rows[w..].iter().take_while(|&&k| k == rows[w]).count();
                let (s, d) = (sv.sub_rows(w, n), dv.sub_rows(w, n));
                match rows[w] {
                    (true, true) => {
                        let mut bytes = Vec::new();
                        self.mem.read_raw(&s, &mut bytes)?;
                        self.mem.write_raw(&d, &bytes)?;
                    }
                    (true, false) => {
                        // Row by row while `copy_row` can, then the
                        // element loop for the rest of the stretch.
                        let mut r = 0;
                        while r < n && self.mem.copy_row(&s, &d, r) {
                            r += 1;
                        }
                        if r < n {
                            self.copy_elements(&s, &d, false, |_, [ps, ..]| ps >= r)?;
                        }
                    }
                    (false, _) => {}
                }
                w += n;
            }
            return Ok(());
        }
        self.copy_elements(&sv, &dv, accumulate, |_, [ps, _, pd, _]| {
            valid[if scatter { pd } else { ps }]
        })
    }

    fn dma_transpose(&mut self, i: &insn::DmaTranspose) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let s = src.shape();
        let perm: &[usize] = match s.len() {
            2 => &[1, 0],
            3 => &[2, 1, 0],
            4 => &[3, 1, 2, 0],
            n => unreachable!(
                "`src` of a verified dma_transpose has rank {n}: the verifier's DmaTransposeRank rule allows 2, 3 or 4"
            ),
        };
        let out = self.read_permuted(&sv, &s, perm)?;
        self.mem.write_raw(&dv, &out)
    }

    /// The elements of `sv`, a row-major array of `shape`, in the order
    /// `permuted` gives for `perm` (what `read_raw` then `permuted` give):
    /// a transposition of clean rows (`[rows, free]` swapped) reads them
    /// in place (`MemoryState::clean_rows`, `transposed_rows`).
    fn read_permuted(&mut self, sv: &View, shape: &[u64], perm: &[usize]) -> FResult<Vec<u8>> {
        let rows_by_free = shape == [sv.rows as u64, sv.free() as u64];
        if rows_by_free
            && perm == [1, 0]
            && let Some(rows) = self.mem.clean_rows(sv)
        {
            return Ok(crate::transpose::transposed_rows(&rows, sv.size));
        }
        let mut raw = Vec::new();
        self.mem.read_raw(sv, &mut raw)?;
        Ok(permuted(&raw, sv.size, shape, perm))
    }

    fn tensor_copy(&mut self, i: &insn::TensorCopy) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        if sv.dtype == dv.dtype {
            let mut raw = Vec::new();
            self.mem.read_raw(&sv, &mut raw)?;
            return self.mem.write_raw(&dv, &raw);
        }
        plain(&sv)?;
        plain(&dv)?;
        let x = self.mem.read_f32(&sv)?;
        self.mem.write_f32(&dv, &x)
    }

    fn memset(&mut self, i: &insn::Memset) -> FResult<()> {
        let dst = &i.dst;
        let value = i.value;
        let dv = self.view_w(dst, "dst")?;
        let raw = memset_element(&dv, value).repeat(dv.elements());
        self.mem.write_raw(&dv, &raw)
    }

    fn iota(&mut self, i: &insn::Iota) -> FResult<()> {
        let dst = &i.dst;
        let pattern = &i.pattern;
        let offset = i.offset;
        let cm = i.channel_multiplier;
        let dv = self.dst(dst, "dst")?;
        let values = affine_values(pattern, offset, cm, dv.rows, dv.free())?;
        let wide: Vec<i64> = values.into_iter().map(i64::from).collect();
        let mut raw = Vec::with_capacity(dv.elements() * dv.size);
        encode_ints(dv.dtype, &wide, &mut raw);
        self.mem.write_raw(&dv, &raw)
    }

    // ------------------------------------------------------------ Tensor engine

    fn matmul(&mut self, i: &insn::NcMatmul) -> FResult<()> {
        let dst = &i.dst;
        let stationary = &i.stationary;
        let moving = &i.moving;
        let accumulate = i.accumulate;
        let transpose = i.transpose;
        let perf_mode = i.perf_mode;
        // Both operands through the cache of decoded operands
        // (`MemoryState::read_operand`), stationary first.
        let sv = self.view(stationary, "stationary")?;
        plain(&sv)?;
        let s = self.mem.read_operand(&sv, self.mem.read_once(stationary))?;
        // Double-row mode contracts over (partition, j): the [P, 2, M]
        // stationary is, in row-major order, exactly a [2P, M] matrix.
        let rows = if perf_mode == MatmulPerfMode::DoubleRow {
            2
        } else {
            1
        };
        // The moving rows, padded for the loop to read them in place (no
        // packed copy), when they are clean rows of one matrix row each
        // (contiguous or strided); else the values, packed by the loop.
        let mv = self.view(moving, "moving")?;
        plain(&mv)?;
        let stride = moving_stride(mv.free());
        let once = self.mem.read_once(moving);
        let in_rows = if rows == 1 && !transpose {
            self.mem.read_operand_padded(&mv, stride, once)?
        } else {
            None
        };
        let padded = in_rows.is_some();
        let v = match in_rows {
            Some(v) => v,
            None => self.mem.read_operand(&mv, once)?,
        };
        let dv = self.dst(dst, "dst")?;
        let (k, m, n) = (sv.rows * rows, sv.free() / rows, mv.free() / rows);
        *self.flops += 2 * (k * m * n) as u64;
        if transpose {
            self.mem.settle_view(&dv);
            return self.matmul_transpose(&dv, &sv, &s, &v, [k, m, n], accumulate);
        }
        let bytes = 4 * (s.len() + v.len());
        let product: Product = Box::new(move |rows| {
            let moving = if padded {
                Moving::Padded { values: &v, stride }
            } else {
                Moving::Dense(&v)
            };
            let products = products(&s, &v, k);
            matmul_moving(&s, moving, [k, m, n], rows, Some(products));
        });
        self.add_product(&dv, [k, m, n], accumulate, bytes, product)
    }

    /// Adds `product` into the f32 `[m, n]` rows of `dv` (`add_into`), on
    /// rayon's pool when the matmul is large and `dv` plain PSUM rows
    /// (`deferred`: read, checked and marked now, summed there).
    fn add_product(
        &mut self,
        dv: &View,
        [k, m, n]: [usize; 3],
        accumulate: bool,
        bytes: usize,
        product: Product,
    ) -> FResult<()> {
        let mut product = product;
        if dv.rows == m && dv.free() == n && self.mem.defers(k * m * n) {
            let operands = Operands {
                product,
                bytes,
                m,
                n,
            };
            match self.mem.defer_matmul(dv, accumulate, operands) {
                Ok(()) => return Ok(()),
                Err(back) => product = back.product,
            }
        }
        self.add_into(dv, [m, n], accumulate, product)
    }

    /// Runs `add` on the f32 `[m, n]` accumulator rows of `dv` (its values
    /// with `accumulate`, else zeros) and leaves the sums in `dv`: in place
    /// when that is all reading and writing would do
    /// (`MemoryState::psum_in_place`), else read, added and written.
    fn add_into(
        &mut self,
        dv: &View,
        [m, n]: [usize; 2],
        accumulate: bool,
        add: impl FnOnce(Rows<'_>),
    ) -> FResult<()> {
        // Its rows may be a deferred matmul's (`deferred`).
        self.mem.settle_view(dv);
        if dv.rows == m
            && dv.free() == n
            && let Some((bytes, stride)) = self.mem.psum_in_place(dv, accumulate)
        {
            add(Rows::Bytes { bytes, stride });
            return Ok(());
        }
        let mut acc = if accumulate {
            self.mem.read_f32(dv)?
        } else {
            pages::zeros(m * n)
        };
        add(Rows::Values(&mut acc));
        self.mem.write_f32(dv, &acc)
    }

    /// Transpose mode (`transpose=true`): when column `n` of `moving` has
    /// exactly one nonzero element, at row `k`, and it is 1.0, `dst[m, n]`
    /// is `stationary[k, m]` exactly (bits when `dst` has its dtype, so NaN
    /// and infinity survive; `accumulate` does not apply); otherwise the
    /// column is an ordinary matmul (docs/isa.md `nc_matmul`).
    fn matmul_transpose(
        &mut self,
        dv: &View,
        sv: &View,
        s: &[f32],
        v: &[f32],
        [k, m, n]: [usize; 3],
        accumulate: bool,
    ) -> FResult<()> {
        let mut s_raw = Vec::new();
        self.mem.read_raw(sv, &mut s_raw)?;
        let old = if accumulate {
            Some(self.mem.read_f32(dv)?)
        } else {
            None
        };
        let size = sv.size;
        // Per column of `moving`: the row of its one nonzero element when
        // that element is exactly 1.0 (the column selects a row), found once
        // for every output partition.
        let unit: Vec<Option<usize>> = (0..n)
            .map(|nn| {
                let mut terms = (0..k).filter(|&kk| v[kk * n + nn] != 0.0);
                match (terms.next(), terms.next()) {
                    (Some(kk), None) if v[kk * n + nn] == 1.0 => Some(kk),
                    _ => None,
                }
            })
            .collect();
        let mut out = Vec::with_capacity(m * n * dv.size);
        for mm in 0..m {
            for (nn, &unit) in unit.iter().enumerate() {
                let e = mm * n + nn;
                if let Some(kk) = unit {
                    if dv.dtype == sv.dtype {
                        let at = (kk * m + mm) * size;
                        out.extend_from_slice(&s_raw[at..at + size]);
                    } else {
                        numerics::encode(dv.dtype, &[s[kk * m + mm]], &mut out);
                    }
                    continue;
                }
                let mut sum = old.as_ref().map_or(0.0, |o| o[e]);
                for kk in 0..k {
                    sum += s[kk * m + mm] * v[kk * n + nn];
                }
                numerics::encode(dv.dtype, &[sum], &mut out);
            }
        }
        self.mem.write_raw(dv, &out)
    }

    fn matmul_mx(&mut self, i: &insn::NcMatmulMx) -> FResult<()> {
        let dst = &i.dst;
        let stationary = &i.stationary;
        let moving = &i.moving;
        let stationary_scale = &i.stationary_scale;
        let moving_scale = &i.moving_scale;
        let accumulate = i.accumulate;
        let a = self.mx_operand(
            stationary,
            stationary_scale,
            "stationary",
            "stationary_scale",
        )?;
        let b = self.mx_operand(moving, moving_scale, "moving", "moving_scale")?;
        let dv = self.dst(dst, "dst")?;
        let (k, m, n) = (a.rows, a.cols, b.cols);
        *self.flops += 2 * (k * m * n) as u64;
        let bytes = 8 * (a.values.len() + b.values.len());
        let product: Product = Box::new(move |rows| mx_product(&a, &b, rows));
        self.add_product(&dv, [k, m, n], accumulate, bytes, product)
    }

    /// An MX operand as a `[4P, F]` matrix of exactly scaled values: row
    /// `4k + q` holds lane `q` of partition `k`, times `2^(scale − 127)` of
    /// the scale element of group `(k / 8, column)` (isa.md `nc_matmul_mx`),
    /// in f64 so that the scaling is exact.
    fn mx_operand(
        &mut self,
        data: &AccessPattern,
        scale: &AccessPattern,
        field: &'static str,
        scale_field: &'static str,
    ) -> FResult<MxMatrix> {
        let dv = self.view(data, field)?;
        let vals = self.mem.read_f32(&dv)?;
        let scv = self.view(scale, scale_field)?;
        let (p, f) = (dv.rows, dv.free());
        // Only the scale rows of the data's groups are read (the first 4
        // partitions of each quadrant, `footprint`); the rows between them
        // stay untouched, written or not.
        let mut codes = pages::zeros(scv.rows * f);
        for (first, count) in mx_scale_rows(p) {
            let mut raw = Vec::with_capacity(count * f);
            self.mem.read_raw(&scv.sub_rows(first, count), &mut raw)?;
            codes[first * f..(first + count) * f].copy_from_slice(&raw);
        }
        // Row 4k + q holds element q of each group of partition k: pushed
        // in row order, so no element is written twice.
        let mut values = Vec::with_capacity(4 * p * f);
        let mut factors = Vec::with_capacity(f);
        for k in 0..p {
            let srow = 32 * (k / 32) + (k % 32) / 8;
            factors.clear();
            factors.extend(
                codes[srow * f..(srow + 1) * f]
                    .iter()
                    .map(|&code| mx_scale(code)),
            );
            let groups = &vals[k * f * 4..(k + 1) * f * 4];
            for q in 0..4 {
                values.extend(
                    factors
                        .iter()
                        .zip(groups.chunks_exact(4))
                        .map(|(factor, group)| f64::from(group[q]) * factor),
                );
            }
        }
        Ok(MxMatrix {
            rows: 4 * p,
            cols: f,
            values,
        })
    }

    fn transpose(&mut self, i: &insn::NcTranspose) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let (p, f) = (sv.rows, sv.free());
        if sv.dtype == dv.dtype {
            let out = self.read_permuted(&sv, &[p as u64, f as u64], &[1, 0])?;
            return self.mem.write_raw(&dv, &out);
        }
        plain(&sv)?;
        plain(&dv)?;
        let x = self.mem.read_f32(&sv)?;
        let y: Vec<f32> = (0..f * p).map(|e| x[(e % p) * f + e / p]).collect();
        self.mem.write_f32(&dv, &y)
    }

    // ------------------------------------------------------------ Scalar engine

    /// The rows of `func(src · scale + bias)` (`activation` and
    /// `activation_reduce`, whose callers reduce and write them), with the
    /// source and destination views.
    fn activation(
        &mut self,
        dst: &AccessPattern,
        src: &AccessPattern,
        func: ActFunc,
        scale: &Scalar,
        bias: Option<&Scalar>,
    ) -> FResult<(View, View, Vec<f32>)> {
        let (sv, x) = self.values(src, "src")?;
        let dv = self.dst(dst, "dst")?;
        let rows = sv.rows;
        let scale = self.scalar(scale, rows, "scale")?;
        let bias = self.opt_scalar(bias, rows, 0.0, "bias")?;
        let f = sv.free();
        let y = map_rows(&x, f, |p, x| activation(func, x * scale[p] + bias[p], 0.0));
        Ok((sv, dv, y))
    }

    fn activate2(&mut self, i: &insn::Activate2) -> FResult<()> {
        let (sv, x) = self.values(&i.src, "src")?;
        let dv = self.dst(&i.dst, "dst")?;
        let rows = sv.rows;
        let i0 = self.opt_scalar(i.imm0.as_ref(), rows, 0.0, "imm0")?;
        let i1 = self.opt_scalar(i.imm1.as_ref(), rows, 0.0, "imm1")?;
        let alpha = self.opt_scalar(i.relu_param.as_ref(), rows, 0.0, "relu_param")?;
        let f = sv.free().max(1);
        let y: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(e, &x)| {
                let p = e / f;
                let mut v = x;
                if i.op0 != AluOp::Bypass {
                    v = apply(i.op0, v, i0[p], i.reverse0);
                }
                if i.op1 != AluOp::Bypass {
                    v = apply(i.op1, v, i1[p], i.reverse1);
                }
                activation(i.func, v, alpha[p])
            })
            .collect();
        let rop = i.reduce_op.unwrap_or(AluOp::Add);
        let r = Reduction::new(AccFile::Scalar, i.reduce_cmd, rop, i.reduce_res.as_ref());
        self.reduce_and_write(r, &sv, &dv, &y, None)
    }

    // ------------------------------------------------------------ Vector engine

    fn tensor_tensor(&mut self, i: &insn::TensorTensor) -> FResult<()> {
        let dst = &i.dst;
        let src0 = &i.src0;
        let src1 = &i.src1;
        let op = i.op;
        let av = self.view(src0, "src0")?;
        let bv = self.view(src1, "src1")?;
        let dv = self.view_w(dst, "dst")?;
        if op.is_bitvec() {
            let a = self.ext_bits(&av)?;
            let b = self.ext_bits(&bv)?;
            let out: Vec<u32> = a
                .iter()
                .zip(&b)
                .map(|(&a, &b)| alu_bits(op, a, b))
                .collect();
            return self.mem.write_bits(&dv, &out);
        }
        if self.exact_int(&[&av, &bv, &dv], &[op]) {
            let signed = dv.dtype == DType::I32;
            let a = self.mem.read_bits(&av)?;
            let b = self.mem.read_bits(&bv)?;
            let out: Vec<u32> = a
                .iter()
                .zip(&b)
                .map(|(&a, &b)| alu_i32(op, a, b, signed).unwrap_or(0))
                .collect();
            return self.mem.write_bits(&dv, &out);
        }
        plain(&av)?;
        plain(&bv)?;
        plain(&dv)?;
        let a = self.mem.read_f32(&av)?;
        let b = self.mem.read_f32(&bv)?;
        let y: Vec<f32> = a.iter().zip(&b).map(|(&a, &b)| alu(op, a, b)).collect();
        self.mem.write_f32(&dv, &y)
    }

    fn tensor_scalar(&mut self, i: &insn::TensorScalar) -> FResult<()> {
        let &insn::TensorScalar {
            op0,
            reverse0,
            op1,
            reverse1,
            ..
        } = i;
        let (operand0, operand1) = (&i.operand0, &i.operand1);
        let sv = self.view(&i.src, "src")?;
        let dv = self.view_w(&i.dst, "dst")?;
        let rows = sv.rows;
        let f = sv.free().max(1);
        let ops: Vec<AluOp> = std::iter::once(op0).chain(op1).collect();
        let int_operands = [operand0, operand1].iter().all(|o| match o {
            Some(Scalar::Vector(ap)) => matches!(ap.dtype, DType::I32 | DType::U32),
            _ => true,
        });
        let exact = int_operands && self.exact_int(&[&sv, &dv], &ops);
        if op0.is_bitvec() || exact {
            let x = if exact {
                self.mem.read_bits(&sv)?
            } else {
                self.ext_bits(&sv)?
            };
            let o0 = self.scalar_bits(operand0.as_ref(), rows, "operand0")?;
            let o1 = self.scalar_bits(operand1.as_ref(), rows, "operand1")?;
            let signed = dv.dtype == DType::I32;
            let f2 = |op: AluOp, a: u32, b: u32| {
                if exact {
                    alu_i32(op, a, b, signed).unwrap_or(0)
                } else {
                    alu_bits(op, a, b)
                }
            };
            let y: Vec<u32> = x
                .iter()
                .enumerate()
                .map(|(e, &x)| {
                    let p = e / f;
                    // As in `apply`, a unary operator applies to the data
                    // whatever its reverse flag says.
                    let t = if reverse0 && !op0.is_unary() {
                        f2(op0, o0[p], x)
                    } else {
                        f2(op0, x, o0[p])
                    };
                    match op1 {
                        Some(op1) if reverse1 && !op1.is_unary() => f2(op1, o1[p], t),
                        Some(op1) => f2(op1, t, o1[p]),
                        None => t,
                    }
                })
                .collect();
            return self.mem.write_bits(&dv, &y);
        }
        plain(&sv)?;
        plain(&dv)?;
        let x = self.mem.read_f32(&sv)?;
        let o0 = self.opt_scalar(operand0.as_ref(), rows, 0.0, "operand0")?;
        let o1 = self.opt_scalar(operand1.as_ref(), rows, 0.0, "operand1")?;
        let y = map_rows(&x, f, |p, x| {
            let t = apply(op0, x, o0[p], reverse0);
            match op1 {
                Some(op1) => apply(op1, t, o1[p], reverse1),
                None => t,
            }
        });
        self.mem.write_f32(&dv, &y)
    }

    fn scalar_tensor_tensor(&mut self, i: &insn::ScalarTensorTensor) -> FResult<()> {
        let &insn::ScalarTensorTensor {
            ref dst,
            ref src,
            op0,
            ref operand0,
            reverse0,
            op1,
            ref src1,
            reverse1,
        } = i;
        let (sv, x) = self.values(src, "src")?;
        let (_, x1) = self.values(src1, "src1")?;
        let dv = self.dst(dst, "dst")?;
        let o0 = self.scalar(operand0, sv.rows, "operand0")?;
        let f = sv.free().max(1);
        let y: Vec<f32> = x
            .iter()
            .zip(&x1)
            .enumerate()
            .map(|(e, (&x, &b))| {
                let t = apply(op0, x, o0[e / f], reverse0);
                apply(op1, t, b, reverse1)
            })
            .collect();
        self.mem.write_f32(&dv, &y)
    }

    fn tensor_scalar_reduce(&mut self, i: &insn::TensorScalarReduce) -> FResult<()> {
        let (sv, x) = self.values(&i.src, "src")?;
        let dv = self.dst(&i.dst, "dst")?;
        let rows = sv.rows;
        let o0 = self.opt_scalar(i.operand0.as_ref(), rows, 0.0, "operand0")?;
        let init = match &i.reduce_init {
            Some(s) => Some(self.scalar(s, rows, "reduce_init")?),
            None => None,
        };
        let f = sv.free().max(1);
        let y: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(e, &x)| alu(i.op0, x, o0[e / f]))
            .collect();
        let res = i.reduce_res.as_ref();
        let r = Reduction {
            negate: i.reduce_res_negate,
            ..Reduction::new(AccFile::Vector, i.reduce_cmd, i.reduce_op, res)
        };
        self.reduce_and_write(r, &sv, &dv, &y, init.as_deref())
    }

    /// `tensor_scalar_cumulative`: per partition,
    /// `reg = op1(op0(src[i], imm0), reg); dst[i] = reg`, the register
    /// starting per `reduce_cmd` (reset: identity of `op1`; reduce: the
    /// Vector accumulator; load: `imm1`) and left in the accumulator.
    fn cumulative(&mut self, i: &insn::TensorScalarCumulative) -> FResult<()> {
        let &insn::TensorScalarCumulative {
            ref dst,
            ref src,
            op0,
            ref imm0,
            op1,
            ref imm1,
            reduce_cmd: cmd,
        } = i;
        let imm1 = imm1.as_ref();
        let (sv, x) = self.values(src, "src")?;
        let dv = self.dst(dst, "dst")?;
        let rows = sv.rows;
        let i0 = self.scalar(imm0, rows, "imm0")?;
        let i1 = self.opt_scalar(imm1, rows, 0.0, "imm1")?;
        let f = sv.free();
        let mut y = pages::zeros(x.len());
        let accs = self.running_registers(&sv, cmd, op1, &i1)?;
        for (p, reg) in accs.iter_mut().enumerate() {
            for i in 0..f {
                *reg = alu(op1, alu(op0, x[p * f + i], i0[p]), *reg);
                y[p * f + i] = *reg;
            }
        }
        self.running_taint(&sv, cmd);
        self.mem.write_f32(&dv, &y)
    }

    /// The Vector registers of `like`'s lanes as `tensor_scalar_cumulative`
    /// starts them per `cmd`: kept (`reduce`, `idle`), loaded from `i1`
    /// (`load_reduce`) or the identity of `op1` (the resets).
    pub(crate) fn running_registers(
        &mut self,
        like: &View,
        cmd: ReduceCmd,
        op1: AluOp,
        i1: &[f32],
    ) -> FResult<&mut [f32]> {
        let accs = self.accs(AccFile::Vector, like)?;
        for (p, reg) in accs.iter_mut().enumerate() {
            match cmd {
                ReduceCmd::Reduce | ReduceCmd::Idle => {}
                ReduceCmd::LoadReduce => *reg = i1[p],
                ReduceCmd::Reset | ReduceCmd::ResetReduce => *reg = identity(op1),
            }
        }
        Ok(accs)
    }

    /// The undefinedness of `tensor_scalar_cumulative`'s lanes and of
    /// what it writes next: the lanes carry undefined data across
    /// instructions unless reset or loaded, and take the rows' reads.
    pub(crate) fn running_taint(&mut self, like: &View, cmd: ReduceCmd) {
        let (lo, hi) = (like.part_start, like.part_start + like.rows);
        if let Some(lanes) = self.acc.vector_undef.get_mut(lo..hi) {
            if !matches!(cmd, ReduceCmd::Reduce | ReduceCmd::Idle) {
                lanes.fill(None);
            }
            self.mem.taint_lanes(lanes);
            let taint = self.mem.row_taint(like.rows, like.free());
            lanes.copy_from_slice(&taint);
        }
    }

    fn tensor_reduce(&mut self, i: &insn::TensorReduce) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let op = i.op;
        let last_dims = i.last_dims;
        let negate = i.negate;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let n = src.dims.len();
        let last = usize::from(last_dims);
        let inner: usize = src.dims[n - last..]
            .iter()
            .map(|d| d.count as usize)
            .product();
        if inner == 0 {
            return Ok(());
        }
        if op.is_bitvec() {
            let x = self.ext_bits(&sv)?;
            let y: Vec<u32> = x
                .chunks(inner)
                .map(|c| c[1..].iter().fold(c[0], |a, &b| alu_bits(op, a, b)))
                .collect();
            return self.mem.write_bits(&dv, &y);
        }
        plain(&sv)?;
        plain(&dv)?;
        let x = self.mem.read_f32(&sv)?;
        let y: Vec<f32> = x
            .chunks(inner)
            .map(|c| {
                let r = c[1..].iter().fold(c[0], |a, &b| alu(op, a, b));
                if negate { -r } else { r }
            })
            .collect();
        self.mem.write_f32(&dv, &y)
    }

    /// `tensor_partition_reduce`: `dst[0, f] = op` over partitions in
    /// ascending order; `average` is the f32 sum divided by P.
    fn partition_reduce(&mut self, i: &insn::TensorPartitionReduce) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let op = i.op;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let f = sv.free();
        if op.is_bitvec() {
            let x = self.ext_bits(&sv)?;
            let y: Vec<u32> = (0..f)
                .map(|i| (1..sv.rows).fold(x[i], |a, p| alu_bits(op, a, x[p * f + i])))
                .collect();
            return self.mem.write_bits(&dv, &y);
        }
        plain(&sv)?;
        plain(&dv)?;
        let x = self.mem.read_f32(&sv)?;
        let y: Vec<f32> = (0..f)
            .map(|i| {
                let r = (1..sv.rows).fold(x[i], |a, p| alu(op, a, x[p * f + i]));
                if op == AluOp::Average {
                    r / sv.rows as f32
                } else {
                    r
                }
            })
            .collect();
        self.mem.write_f32(&dv, &y)
    }

    /// `tensor_tensor_scan`; the running value stays in f32 between steps.
    fn scan(&mut self, i: &insn::TensorTensorScan) -> FResult<()> {
        let &insn::TensorTensorScan {
            ref dst,
            ref src0,
            ref src1,
            ref initial,
            op0,
            op1,
            reverse0,
            reverse1,
        } = i;
        let (av, a) = self.values(src0, "src0")?;
        let (_, b) = self.values(src1, "src1")?;
        let dv = self.dst(dst, "dst")?;
        let init = self.scalar(initial, av.rows, "initial")?;
        let f = av.free();
        let mut y = pages::zeros(a.len());
        for (p, &start) in init.iter().enumerate() {
            let mut prev = start;
            for i in 0..f {
                let e = p * f + i;
                let t = apply(op0, a[e], prev, reverse0);
                prev = apply(op1, t, b[e], reverse1);
                y[e] = prev;
            }
        }
        self.mem.write_f32(&dv, &y)
    }

    /// `tensor_copy_predicated`: only the selected elements of `src` are
    /// read, and only those of `dst` written.
    fn copy_predicated(&mut self, i: &insn::TensorCopyPredicated) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let predicate = &i.predicate;
        let reverse = i.reverse_pred;
        let sv = self.view(src, "src")?;
        let pv = self.view(predicate, "predicate")?;
        let dv = self.view_w(dst, "dst")?;
        let pred = self.mem.read_bits(&pv)?;
        let f = dv.free().max(1);
        let mut buf = Vec::new();
        for (e, &b) in pred.iter().enumerate() {
            if (b != 0) == reverse {
                continue;
            }
            let (p, i) = (e / f, e % f);
            buf.clear();
            self.mem.read_elem(&sv, p, i, &mut buf)?;
            if sv.dtype != dv.dtype {
                plain(&sv)?;
                plain(&dv)?;
                let x = numerics::to_f32(sv.dtype, bits_of(&buf));
                buf.clear();
                numerics::encode(dv.dtype, &[x], &mut buf);
            }
            self.mem.write_elem(&dv, p, i, &buf);
        }
        Ok(())
    }

    fn exponential(&mut self, i: &insn::Exponential) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let max_value = &i.max_value;
        let cmd = i.reduce_cmd;
        let init = i.reduce_init.as_ref();
        let reduce_res = i.reduce_res.as_ref();
        let (sv, x) = self.values(src, "src")?;
        let dv = self.dst(dst, "dst")?;
        let rows = sv.rows;
        let mx = self.scalar(max_value, rows, "max_value")?;
        let init = match init {
            Some(s) => Some(self.scalar(s, rows, "reduce_init")?),
            None => None,
        };
        let f = sv.free().max(1);
        let y: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(e, &x)| activation(ActFunc::Exp, x - mx[e / f], 0.0))
            .collect();
        let r = Reduction::new(AccFile::Vector, cmd, AluOp::Add, reduce_res);
        self.reduce_and_write(r, &sv, &dv, &y, init.as_deref())
    }

    fn range_select(&mut self, i: &insn::RangeSelect) -> FResult<()> {
        let (sv, x) = self.values(&i.src, "src")?;
        let dv = self.dst(&i.dst, "dst")?;
        let rows = sv.rows;
        let b0 = self.scalar(&i.bound0, rows, "bound0")?;
        let b1 = self.scalar(&i.bound1, rows, "bound1")?;
        let f = sv.free().max(1);
        let start = i64::from(i.range_start);
        let y: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(e, &x)| {
                let p = e / f;
                let idx = (start + (e % f) as i64) as f32;
                let keep = alu(i.cmp0, idx, b0[p]) != 0.0 && alu(i.cmp1, idx, b1[p]) != 0.0;
                if keep { x } else { i.on_false.get() }
            })
            .collect();
        let res = i.reduce_res.as_ref();
        let r = Reduction::new(AccFile::Vector, i.reduce_cmd, AluOp::Maximum, res);
        self.reduce_and_write(r, &sv, &dv, &y, None)
    }

    fn select_reduce(&mut self, i: &insn::SelectReduce) -> FResult<()> {
        let &insn::SelectReduce {
            ref dst,
            ref predicate,
            ref on_true,
            ref on_false,
            reverse_pred: reverse,
            reduce_cmd: cmd,
            ref reduce_res,
        } = i;
        let reduce_res = reduce_res.as_ref();
        let pv = self.view(predicate, "predicate")?;
        let pred = self.mem.read_bits(&pv)?;
        let (tv, t) = self.values(on_true, "on_true")?;
        let dv = self.dst(dst, "dst")?;
        let fv = self.scalar(on_false, tv.rows, "on_false")?;
        let f = tv.free().max(1);
        let y: Vec<f32> = t
            .iter()
            .zip(&pred)
            .enumerate()
            .map(|(e, (&t, &b))| if (b != 0) != reverse { t } else { fv[e / f] })
            .collect();
        let r = Reduction::new(AccFile::Vector, cmd, AluOp::Maximum, reduce_res);
        self.reduce_and_write(r, &tv, &dv, &y, None)
    }

    /// `max8`: the 8 largest values of each partition in descending order,
    /// NaN above +inf, equal values (and ±0) in their original order.
    fn max8(&mut self, i: &insn::Max8) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let (sv, x) = self.values(src, "src")?;
        let dv = self.dst(dst, "dst")?;
        let f = sv.free();
        let mut y = Vec::with_capacity(sv.rows * 8);
        for row in x.chunks(f) {
            let mut r = row.to_vec();
            r.sort_by(|a, b| {
                (b.is_nan(), *b)
                    .partial_cmp(&(a.is_nan(), *a))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            y.extend_from_slice(&r[..8]);
        }
        self.mem.write_f32(&dv, &y)
    }

    /// `nc_find_index8`: for each of the 8 values (in order), the first
    /// position holding an equal value (f32 `==`) not already matched by an
    /// earlier value; all ones when there is none.
    fn find_index8(&mut self, i: &insn::FindIndex8) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let vals = &i.vals;
        let (sv, x) = self.values(src, "src")?;
        let (_, v) = self.values(vals, "vals")?;
        let dv = self.view_w(dst, "dst")?;
        let f = sv.free();
        let mut out = Vec::with_capacity(sv.rows * 8);
        for p in 0..sv.rows {
            let row = &x[p * f..(p + 1) * f];
            let mut used = vec![false; f];
            for j in 0..8 {
                let want = v[p * 8 + j];
                match (0..f).find(|&i| !used[i] && row[i] == want) {
                    Some(i) => {
                        used[i] = true;
                        out.push(i as u32);
                    }
                    None => out.push(u32::MAX),
                }
            }
        }
        self.mem.write_bits(&dv, &out)
    }

    /// `nc_match_replace8`: values processed from the last to the first;
    /// each replaces the first not-yet-replaced equal element with `imm`.
    fn match_replace8(&mut self, i: &insn::MatchReplace8) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let vals = &i.vals;
        let imm = i.imm.get();
        let dst_idx = i.dst_idx.as_ref();
        let (sv, mut x) = self.values(src, "src")?;
        let (_, v) = self.values(vals, "vals")?;
        let dv = self.dst(dst, "dst")?;
        let f = sv.free();
        let mut idx = vec![u32::MAX; sv.rows * 8];
        for p in 0..sv.rows {
            let row = &mut x[p * f..(p + 1) * f];
            let mut replaced = vec![false; f];
            for j in (0..8).rev() {
                let want = v[p * 8 + j];
                if let Some(i) = (0..f).find(|&i| !replaced[i] && row[i] == want) {
                    replaced[i] = true;
                    row[i] = imm;
                    idx[p * 8 + j] = i as u32;
                }
            }
        }
        self.mem.write_f32(&dv, &x)?;
        if let Some(ap) = dst_idx {
            let iv = self.view_w(ap, "dst_idx")?;
            self.mem.write_bits(&iv, &idx)?;
        }
        Ok(())
    }

    /// `bn_stats`: `[n, mean, M2]` of the even then the odd free positions,
    /// in f32 (the sum in element order, mean = sum / n, then M2 as the sum
    /// of squared deviations); an empty half gives `[0, 0, 0]`.
    fn bn_stats(&mut self, i: &insn::BnStats) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let (sv, x) = self.values(src, "src")?;
        let dv = self.dst(dst, "dst")?;
        let f = sv.free();
        let mut y = Vec::with_capacity(sv.rows * 6);
        for p in 0..sv.rows {
            let row = &x[p * f..(p + 1) * f];
            for parity in 0..2 {
                let half: Vec<f32> = row.iter().skip(parity).step_by(2).copied().collect();
                let n = half.len() as f32;
                if half.is_empty() {
                    y.extend_from_slice(&[0.0, 0.0, 0.0]);
                    continue;
                }
                let mean = half.iter().fold(0f32, |a, &b| a + b) / n;
                let m2 = half.iter().fold(0f32, |a, &b| a + (b - mean) * (b - mean));
                y.extend_from_slice(&[n, mean, m2]);
            }
        }
        self.mem.write_f32(&dv, &y)
    }

    /// `bn_aggr`: folds the `(n, mean, M2)` triples in order with Chan's
    /// parallel combination in f32 (triples with n = 0 are skipped) and
    /// writes `[mean, M2 / n]` (population variance; 0, 0 when n = 0).
    fn bn_aggr(&mut self, i: &insn::BnAggr) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let (sv, x) = self.values(src, "src")?;
        let dv = self.dst(dst, "dst")?;
        let f = sv.free();
        let mut y = Vec::with_capacity(sv.rows * 2);
        for p in 0..sv.rows {
            let (mut n, mut mean, mut m2) = (0f32, 0f32, 0f32);
            for t in x[p * f..(p + 1) * f].chunks(3) {
                let (nb, mb, m2b) = (t[0], t[1], t[2]);
                if nb == 0.0 {
                    continue;
                }
                let total = n + nb;
                let delta = mb - mean;
                mean += delta * nb / total;
                m2 = m2 + m2b + delta * delta * n * nb / total;
                n = total;
            }
            if n == 0.0 {
                y.extend_from_slice(&[0.0, 0.0]);
            } else {
                y.extend_from_slice(&[mean, m2 / n]);
            }
        }
        self.mem.write_f32(&dv, &y)
    }

    /// `quantize_mx` (isa.md): per group of 8 partitions × 4 consecutive
    /// free elements, `X = 2^(floor(log2 amax) − (Emax − 1))` (Emax 8 for
    /// e4m3fn, 15 for e5m2), the biased exponent clamped to 0..=254; an
    /// all-zero group gets code 0 and a group with a NaN or infinity code
    /// 0xFF (NaN) with every lane the positive NaN code (0x7f for e4m3fn,
    /// 0x7e for e5m2), whatever the sign of the NaN input. Elements are `v / X` rounded (RNE) with
    /// saturation. Only the 4 scale partitions per quadrant are written.
    fn quantize_mx(&mut self, i: &insn::QuantizeMx) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let dst_scale = &i.dst_scale;
        let (sv, x) = self.values(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let scv = self.view_w(dst_scale, "dst_scale")?;
        let emax = match dv.dtype {
            DType::F8E4M3FNx4 => 8,
            DType::F8E5M2x4 => 15,
            other => unreachable!(
                "`dst` of a verified quantize_mx is {other}: the verifier's OperandDtype rule allows float8_e5m2_x4 or float8_e4m3fn_x4"
            ),
        };
        // The lane format's positive NaN code (isa.md: written for every lane
        // of a group holding an infinity or a NaN, whatever its sign).
        let nan_code: u8 = if dv.dtype == DType::F8E4M3FNx4 {
            0x7f
        } else {
            0x7e
        };
        let (p, f) = (sv.rows, sv.free());
        let groups = f / 4;
        let mut out = pages::zeros(p * f);
        let mut nan_groups = Vec::new();
        for g in 0..p / 8 {
            for j in 0..groups {
                let cell = |pp: usize, q: usize| (8 * g + pp) * f + 4 * j + q;
                let mut amax = 0f32;
                let mut finite = true;
                for pp in 0..8 {
                    for q in 0..4 {
                        let v = x[cell(pp, q)];
                        finite &= v.is_finite();
                        amax = amax.max(v.abs());
                    }
                }
                let code: u8 = if !finite {
                    0xff
                } else if amax == 0.0 {
                    0
                } else {
                    let e = f64_exponent(f64::from(amax)) - (emax - 1);
                    (e + 127).clamp(0, 254) as u8
                };
                if code == 0xff {
                    // The lanes are overwritten with `nan_code` after encoding.
                    nan_groups.push((g, j));
                } else {
                    let scale = mx_scale(code);
                    for pp in 0..8 {
                        for q in 0..4 {
                            out[cell(pp, q)] = (f64::from(x[cell(pp, q)]) / scale) as f32;
                        }
                    }
                }
                let srow = 32 * (g / 4) + g % 4;
                self.mem.write_elem(&scv, srow, j, &[code]);
            }
        }
        let mut raw = Vec::with_capacity(p * groups * 4);
        numerics::encode_with(dv.dtype, &out, Overflow::Saturate, &mut raw);
        // Lane `q` of `dst[k, j]` is byte `k·F + 4j + q` of `raw` (lane 0 is
        // the least significant byte of the little-endian x4 element).
        for (g, j) in nan_groups {
            for pp in 0..8 {
                let at = (8 * g + pp) * f + 4 * j;
                raw[at..at + 4].fill(nan_code);
            }
        }
        self.mem.write_raw(&dv, &raw)
    }

    /// `nc_stream_shuffle`: in each 32-partition quadrant of `dst`, row `i`
    /// receives row `mask[i]` of the same quadrant of `src` (relative to the
    /// operands' first partitions); 255 leaves the row untouched.
    fn stream_shuffle(&mut self, i: &insn::StreamShuffle) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let mask = &i.mask;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let mut raw = Vec::new();
        self.mem.read_raw(&sv, &mut raw)?;
        let (f, size) = (sv.free(), sv.size);
        for p in 0..dv.rows {
            let m = mask[p % 32];
            if m == 255 {
                continue;
            }
            let from = p / 32 * 32 + usize::from(m);
            if from >= sv.rows {
                return Err(Fault::new(
                    SimErrorKind::OutOfBounds,
                    format!(
                        "`mask` selects source row {from} but `src` has {} partitions",
                        sv.rows
                    ),
                ));
            }
            for i in 0..f {
                let at = (from * f + i) * size;
                self.mem.write_elem(&dv, p, i, &raw[at..at + size]);
            }
        }
        Ok(())
    }

    /// The executing engine's generators for the lanes of `v`.
    fn generators(&mut self, v: &View) -> FResult<&mut [Xorwow]> {
        let gens = if self.engine == Engine::GpSimd {
            &mut self.acc.rng_gpsimd
        } else {
            &mut self.acc.rng_vector
        };
        let (lo, hi) = (v.part_start, v.part_start + v.rows);
        Ok(&mut gens[lo..hi])
    }

    /// `rng`: one 32-bit draw per element from its lane, low bits stored.
    fn rng(&mut self, i: &insn::Rng) -> FResult<()> {
        let dst = &i.dst;
        let dv = self.view_w(dst, "dst")?;
        let f = dv.free();
        let mut bits = Vec::with_capacity(dv.elements());
        for g in self.generators(&dv)? {
            bits.extend((0..f).map(|_| g.next()));
        }
        self.mem.write_bits(&dv, &bits)
    }

    /// `rand2`: `min + u · (max − min)` with `u` uniform in `[0, 1)`.
    fn rand2(&mut self, i: &insn::Rand2) -> FResult<()> {
        let dst = &i.dst;
        let min = &i.min;
        let max = &i.max;
        let dv = self.dst(dst, "dst")?;
        let lo = self.scalar(min, dv.rows, "min")?;
        let hi = self.scalar(max, dv.rows, "max")?;
        let f = dv.free();
        let mut y = Vec::with_capacity(dv.elements());
        for (p, g) in self.generators(&dv)?.iter_mut().enumerate() {
            y.extend((0..f).map(|_| lo[p] + g.unit() * (hi[p] - lo[p])));
        }
        self.mem.write_f32(&dv, &y)
    }

    /// `dropout`: an element becomes 0 when its draw `u < prob`, else keeps
    /// its bits.
    fn dropout(&mut self, i: &insn::Dropout) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let prob = &i.prob;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let prob = self.scalar(prob, sv.rows, "prob")?;
        let mut raw = Vec::new();
        self.mem.read_raw(&sv, &mut raw)?;
        let (f, size) = (sv.free(), sv.size);
        let mut zero = Vec::new();
        encode_int(dv.dtype, 0, &mut zero);
        for (p, g) in self.generators(&dv)?.iter_mut().enumerate() {
            for i in 0..f {
                if g.unit() < prob[p] {
                    let at = (p * f + i) * size;
                    raw[at..at + size].copy_from_slice(&zero);
                }
            }
        }
        self.mem.write_raw(&dv, &raw)
    }

    // ------------------------------------------------------------ GpSimd engine

    fn affine_select(&mut self, i: &insn::AffineSelect) -> FResult<()> {
        let &insn::AffineSelect {
            ref dst,
            ref src,
            ref pattern,
            offset,
            channel_multiplier: cm,
            cmp,
            on_false,
        } = i;
        let on_false = on_false.get();
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let values = affine_values(pattern, offset, cm, dv.rows, dv.free())?;
        let same = sv.dtype == dv.dtype;
        if !same {
            plain(&sv)?;
            plain(&dv)?;
        }
        let mut raw = Vec::new();
        self.mem.read_raw(&sv, &mut raw)?;
        let mut fill = Vec::new();
        encode_all(dv.dtype, on_false, &mut fill);
        let mut out = Vec::with_capacity(dv.elements() * dv.size);
        for (e, v) in values.into_iter().enumerate() {
            if alu(cmp, v as f32, 0.0) != 0.0 {
                let elem = &raw[e * sv.size..(e + 1) * sv.size];
                if same {
                    out.extend_from_slice(elem);
                } else {
                    numerics::encode(
                        dv.dtype,
                        &[numerics::to_f32(sv.dtype, bits_of(elem))],
                        &mut out,
                    );
                }
            } else {
                out.extend_from_slice(&fill);
            }
        }
        self.mem.write_raw(&dv, &out)
    }

    /// `local_gather`: each 16-partition core flattens its slice of
    /// `index` partition-first, keeps the first `valid` indices, and every
    /// partition of the core gathers `elem_per_idx` elements at each index
    /// from its own row.
    fn local_gather(&mut self, i: &insn::LocalGather) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let index = &i.index;
        let e = i.elem_per_idx;
        let valid = i.valid_indices;
        let sv = self.view(src, "src")?;
        let iv = self.view(index, "index")?;
        let dv = self.view_w(dst, "dst")?;
        let e = e as usize;
        let fi = iv.free();
        let valid = valid.map_or(16 * fi, |v| v as usize);
        let idx = self.mem.read_defined_bits(&iv)?;
        let mut raw = Vec::new();
        self.mem.read_raw(&sv, &mut raw)?;
        let (fs, size) = (sv.free(), sv.size);
        let mut out = Vec::with_capacity(dv.elements() * size);
        for p in 0..sv.rows {
            let core = p / 16;
            for t in 0..valid {
                let start = idx[(16 * core + t % 16) * fi + t / 16] as usize;
                if start + e > fs {
                    return Err(Fault::new(
                        SimErrorKind::OutOfBounds,
                        format!(
                            "`index` {start} (+{e} elements) is beyond the {fs} elements of `src`"
                        ),
                    ));
                }
                let at = (p * fs + start) * size;
                out.extend_from_slice(&raw[at..at + e * size]);
            }
        }
        self.mem.write_raw(&dv, &out)
    }

    fn n_gather(&mut self, i: &insn::NGather) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let indices = &i.indices;
        let sv = self.view(src, "src")?;
        let iv = self.view(indices, "indices")?;
        let dv = self.view_w(dst, "dst")?;
        let idx = self.mem.read_defined_bits(&iv)?;
        let mut raw = Vec::new();
        self.mem.read_raw(&sv, &mut raw)?;
        let (fs, f, size) = (sv.free(), dv.free().max(1), sv.size);
        let mut out = Vec::with_capacity(dv.elements() * size);
        for (e, &i) in idx.iter().enumerate() {
            let i = i as usize;
            if i >= fs {
                return Err(Fault::new(
                    SimErrorKind::OutOfBounds,
                    format!("`indices` holds {i} but `src` has {fs} elements per partition"),
                ));
            }
            let at = ((e / f) * fs + i) * size;
            out.extend_from_slice(&raw[at..at + size]);
        }
        self.mem.write_raw(&dv, &out)
    }

    /// `sequence_bounds`: for each element, the start and one-past-end of
    /// its run of equal segment ids; id 0 (padding) gets `n` and −1.
    fn sequence_bounds(&mut self, i: &insn::SequenceBounds) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let n = sv.free();
        let bits = self.mem.read_bits(&sv)?;
        let ids: Vec<f64> = bits
            .iter()
            .map(|&b| {
                if sv.dtype == DType::F32 {
                    f64::from(f32::from_bits(b))
                } else {
                    f64::from(b as i32)
                }
            })
            .collect();
        let mut starts = vec![0i64; n];
        let mut ends = vec![0i64; n];
        let mut i = 0;
        while i < n {
            let mut j = i + 1;
            while j < n && ids[j] == ids[i] {
                j += 1;
            }
            for k in i..j {
                if ids[k] == 0.0 {
                    starts[k] = n as i64;
                    ends[k] = -1;
                } else {
                    starts[k] = i as i64;
                    ends[k] = j as i64;
                }
            }
            i = j;
        }
        let mut raw = Vec::with_capacity(2 * n * 4);
        encode_ints(sv.dtype, &[starts, ends].concat(), &mut raw);
        self.mem.write_raw(&dv, &raw)
    }

    /// `nonzero_with_count`: only partitions 0, 16, 32, … of the operands
    /// (the first of each GpSimd core) are read and written.
    fn nonzero_with_count(&mut self, i: &insn::NonzeroWithCount) -> FResult<()> {
        let dst = &i.dst;
        let src = &i.src;
        let index_offset = i.index_offset;
        let padding = i.padding;
        let sv = self.view(src, "src")?;
        let dv = self.view_w(dst, "dst")?;
        let f = sv.free();
        let mut buf = Vec::new();
        for p in 0..sv.rows {
            if p % 16 != 0 {
                continue;
            }
            self.mem.clear_pending();
            let mut found = Vec::new();
            for i in 0..f {
                buf.clear();
                self.mem.read_elem(&sv, p, i, &mut buf)?;
                let b = bits_of(&buf);
                let nonzero = if sv.dtype == DType::F32 {
                    f32::from_bits(b) != 0.0
                } else {
                    b != 0
                };
                if nonzero {
                    found.push((i as i32).wrapping_add(index_offset));
                }
            }
            for i in 0..f {
                let v = found.get(i).copied().unwrap_or(padding);
                self.mem.write_elem(&dv, p, i, &v.to_le_bytes());
            }
            self.mem
                .write_elem(&dv, p, f, &(found.len() as i32).to_le_bytes());
        }
        Ok(())
    }
}

/// An MX operand expanded to exact values.
struct MxMatrix {
    rows: usize,
    cols: usize,
    values: Vec<f64>,
}

/// `acc[m, n] += Σ_k a[k, m] · b[k, n]`, each exact product rounded to
/// f32 and added in ascending `k` (isa.md `nc_matmul_mx`); through the
/// blocked f32 `matmul` when both operands are exact in f32
/// (`MxMatrix::exact_f32`), which gives the same bits.
fn mx_product(a: &MxMatrix, b: &MxMatrix, rows: Rows<'_>) {
    let kmn = [a.rows, a.cols, b.cols];
    if let (Some(s), Some(v)) = (a.exact_f32(), b.exact_f32()) {
        return matmul_rows(&s, &v, kmn, rows);
    }
    // The definition's operations in its order, register-blocked.
    matmul_rows(&a.values, &b.values, kmn, rows);
}

/// `mx_product` in f64, for any operands: the definition.
#[cfg(test)]
fn mx_product_f64(a: &MxMatrix, b: &MxMatrix, acc: &mut [f32]) {
    let (k, m, n) = (a.rows, a.cols, b.cols);
    for kk in 0..k {
        for mm in 0..m {
            let x = a.values[kk * m + mm];
            let row = &mut acc[mm * n..(mm + 1) * n];
            for (nn, out) in row.iter_mut().enumerate() {
                *out += (x * b.values[kk * n + nn]) as f32;
            }
        }
    }
}

impl MxMatrix {
    /// The values as f32 when every one is finite and exactly an f32 (its
    /// scale keeps it inside f32's range), else `None`.
    ///
    /// With both operands exact in f32, the blocked f32 `matmul` gives the
    /// bits of the f64 loop in `matmul_mx`: the product of two f32 values is
    /// exact in f64 (48 significant bits), so rounding it to f32 once is
    /// f32 multiplication's own correctly rounded product, and both add
    /// the rounded products to the f32 sum in ascending `k`. Operands
    /// outside that range (huge or tiny scales, NaN scale codes) keep the
    /// f64 loop, and so does any NaN value: where two NaNs meet in a sum,
    /// which payload survives is the order the compiled loop adds in, and
    /// the two loops are compiled differently (a release build of the f32
    /// loop kept the other NaN's payload than the f64 loop).
    fn exact_f32(&self) -> Option<Vec<f32>> {
        // Sized at once: collecting into an `Option` grows the vector by
        // doubling, copying what it holds each time.
        let mut out = Vec::with_capacity(self.values.len());
        for &x in &self.values {
            let y = x as f32;
            if !(y.is_finite() && f64::from(y) == x) {
                return None;
            }
            out.push(y);
        }
        Some(out)
    }
}

/// `g(row, value)` for every value of `x`, `f` values per row.
fn map_rows(x: &[f32], f: usize, g: impl Fn(usize, f32) -> f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    if f == 0 {
        return out;
    }
    for (p, row) in x.chunks(f).enumerate() {
        out.extend(row.iter().map(|&v| g(p, v)));
    }
    out
}

/// `x op operand`, or `operand op x` when `reverse`.
///
/// A unary operator (isa.md §1.6) ignores its operand, so it always applies
/// to the data `x` and `reverse` has no effect on it (isa.md §6.4: "a unary
/// `op0`/`op1` needs no operand (one given is ignored)").
#[inline]
fn apply(op: AluOp, x: f32, operand: f32, reverse: bool) -> f32 {
    if reverse && !op.is_unary() {
        alu(op, operand, x)
    } else {
        alu(op, x, operand)
    }
}

/// The `reg_alu` operators on 32-bit registers.
fn reg_alu(op: RegAluOp, a: i32, b: i32) -> FResult<i32> {
    Ok(match op {
        RegAluOp::Add => a.wrapping_add(b),
        RegAluOp::Sub => a.wrapping_sub(b),
        RegAluOp::Mul => a.wrapping_mul(b),
        RegAluOp::Div | RegAluOp::Rem if b == 0 => {
            return Err(Fault::new(
                SimErrorKind::DivideByZero,
                format!("`reg_alu {op}` divides {a} by zero"),
            ));
        }
        RegAluOp::Div => a.wrapping_div(b),
        RegAluOp::Rem => a.wrapping_rem(b),
        RegAluOp::And => a & b,
        RegAluOp::Or => a | b,
        RegAluOp::Xor => a ^ b,
        RegAluOp::Shl => a.wrapping_shl(b as u32 % 32),
        RegAluOp::Shr => ((a as u32) >> (b as u32 % 32)) as i32,
        RegAluOp::Sar => a >> (b as u32 % 32),
        RegAluOp::Min => a.min(b),
        RegAluOp::Max => a.max(b),
    })
}

/// The panic of a register the verifier let through although it does
/// not exist: a broken invariant (`Exec::reg`), never bad input.
fn no_register(r: Reg) -> ! {
    panic!("register {r} of a verified program does not exist (the verifier's Register rule)")
}

/// Arithmetic needs unpacked elements.
fn plain(v: &View) -> FResult<()> {
    if v.dtype.is_packed_x4() {
        return Err(Fault::bad(format!(
            "`{}` is {}; only copies and the MX instructions handle packed x4 dtypes",
            v.field, v.dtype
        )));
    }
    Ok(())
}

/// One value per row of a `(P, 1)` operand.
fn per_row(v: &View, x: &[f32]) -> Vec<f32> {
    x.iter().step_by(v.values_per_row()).copied().collect()
}

/// Raw bits as a 32-bit integer: sign-extended for signed dtypes.
fn extend(dt: DType, bits: u32) -> u32 {
    match dt {
        DType::I8 => bits as u8 as i8 as i32 as u32,
        DType::I16 => bits as u16 as i16 as i32 as u32,
        _ => bits,
    }
}

/// The bytes `memset` writes to each element of `dv`.
pub(crate) fn memset_element(dv: &View, value: Imm) -> Vec<u8> {
    let dt = dv.dtype;
    let mut elem = Vec::with_capacity(dv.size);
    match value {
        Imm::Int(v) if dt.is_int() => elem.extend_from_slice(&v.to_le_bytes()[..dv.size]),
        Imm::Int(v) if dt == DType::Bool => elem.push(u8::from(v != 0)),
        Imm::Int(v) => encode_all(dt, v as f32, &mut elem),
        Imm::Float(x) => encode_all(dt, x.get(), &mut elem),
    }
    elem
}

/// Encodes `x` as one element of `dt` (all four lanes for packed types).
fn encode_all(dt: DType, x: f32, out: &mut Vec<u8>) {
    let lanes = numerics::lanes(dt);
    numerics::encode(dt, &vec![x; lanes], out);
}

/// Encodes an exact integer: saturated to an integer dtype's range, `!= 0`
/// for bool, rounded (RNE) for float dtypes.
fn encode_int(dt: DType, v: i64, out: &mut Vec<u8>) {
    encode_ints(dt, &[v], out);
}

/// `encode_int` over a slice, with the dtype dispatch hoisted.
fn encode_ints(dt: DType, vs: &[i64], out: &mut Vec<u8>) {
    let size = dt.size() as usize;
    if dt.is_int() {
        let lo = numerics::min_finite(dt) as i64;
        let hi = numerics::max_finite(dt) as i64;
        out.reserve(vs.len() * size);
        for &v in vs {
            out.extend_from_slice(&v.clamp(lo, hi).to_le_bytes()[..size]);
        }
    } else if dt == DType::Bool {
        out.extend(vs.iter().map(|&v| u8::from(v != 0)));
    } else {
        let lanes = numerics::lanes(dt);
        let xs: Vec<f32> = vs
            .iter()
            .flat_map(|&v| std::iter::repeat_n(v as f32, lanes))
            .collect();
        numerics::encode(dt, &xs, out);
    }
}

/// The affine values of `iota`/`affine_select`: for row `p` and the
/// row-major multi-index `i` of `pattern`, `offset + p·cm + Σ i_k·step_k`
/// in wrapping 32-bit arithmetic (`p` relative to the operand's first
/// partition).
fn affine_values(
    pattern: &[Dim],
    offset: i32,
    cm: i32,
    rows: usize,
    free: usize,
) -> FResult<Vec<i32>> {
    let row = affine_row(pattern, free);
    let mut out = Vec::with_capacity(rows * free);
    for p in 0..rows {
        let base = affine_base(offset, cm, p);
        out.extend(row.iter().map(|&v| base.wrapping_add(v)));
    }
    Ok(out)
}

/// The part of the affine values of `affine_values` that depends on the
/// row: `offset + p·cm`.
pub(crate) fn affine_base(offset: i32, cm: i32, p: usize) -> i32 {
    offset.wrapping_add((p as i32).wrapping_mul(cm))
}

/// The part of the affine values of `affine_values` that every row
/// shares: `Σ i_k·step_k` for the first `free` multi-indices of
/// `pattern`, row-major.
pub(crate) fn affine_row(pattern: &[Dim], free: usize) -> Vec<i32> {
    let mut row = Vec::with_capacity(free);
    let mut idx = vec![0u32; pattern.len()];
    for _ in 0..free {
        let v = pattern.iter().zip(&idx).fold(0i32, |a, (d, &i)| {
            a.wrapping_add((d.stride as i32).wrapping_mul(i as i32))
        });
        row.push(v);
        for j in (0..idx.len()).rev() {
            idx[j] += 1;
            if idx[j] < pattern[j].count {
                break;
            }
            idx[j] = 0;
        }
    }
    row
}

/// The factor of an MX scale code: `2^(code − 127)`, NaN for `0xff`
/// (isa.md `nc_matmul_mx`), built from its exponent bits (every factor is
/// a normal f64).
fn mx_scale(code: u8) -> f64 {
    if code == 0xff {
        return f64::NAN;
    }
    f64::from_bits((u64::from(code) + 1023 - 127) << 52)
}

/// `floor(log2 x)` of a positive normal f64, from its exponent bits.
fn f64_exponent(x: f64) -> i32 {
    (((x.to_bits() >> 52) & 0x7ff) as i32) - 1023
}

/// The elements (`size` bytes each) of a row-major array of `shape` in
/// `raw`, in the row-major order of the array whose dim `d` is the
/// source's dim `perm[d]`.
fn permuted(raw: &[u8], size: usize, shape: &[u64], perm: &[usize]) -> Vec<u8> {
    if let ([p, f], [1, 0]) = (shape, perm)
        && size > 0
        && raw.len() as u64 == p * f * size as u64
    {
        let row = *f as usize * size;
        let rows: Vec<&[u8]> = (0..*p as usize).map(|i| &raw[i * row..][..row]).collect();
        return crate::transpose::transposed_rows(&rows, size);
    }
    match size {
        1 => permuted_as::<1>(raw, shape, perm),
        2 => permuted_as::<2>(raw, shape, perm),
        4 => permuted_as::<4>(raw, shape, perm),
        8 => permuted_as::<8>(raw, shape, perm),
        _ => permuted_dyn(raw, size, shape, perm),
    }
}

/// [`permuted`] for elements of `S` bytes: a fixed-size copy per element,
/// the innermost dim stepping through the source at a constant stride.
fn permuted_as<const S: usize>(raw: &[u8], shape: &[u64], perm: &[usize]) -> Vec<u8> {
    let strides = row_major_strides(shape);
    let want: Vec<usize> = perm.iter().map(|&k| shape[k] as usize).collect();
    let mut out = vec![0u8; raw.len()];
    let Some((&inner, outer)) = want.split_last() else {
        return out;
    };
    if inner == 0 || out.is_empty() {
        return out;
    }
    let step = strides[perm[perm.len() - 1]];
    let mut idx = vec![0usize; outer.len()];
    for line in out.chunks_exact_mut(inner * S) {
        let base: usize = idx.iter().zip(perm).map(|(&j, &k)| j * strides[k]).sum();
        for (i, element) in line.chunks_exact_mut(S).enumerate() {
            let from = (base + i * step) * S;
            element.copy_from_slice(&raw[from..from + S]);
        }
        advance(&mut idx, outer);
    }
    out
}

/// [`permuted`] for any element size, one element at a time.
fn permuted_dyn(raw: &[u8], size: usize, shape: &[u64], perm: &[usize]) -> Vec<u8> {
    let strides = row_major_strides(shape);
    let want: Vec<usize> = perm.iter().map(|&k| shape[k] as usize).collect();
    let mut out = Vec::with_capacity(raw.len());
    let mut idx = vec![0usize; want.len()];
    for _ in 0..raw.len() / size.max(1) {
        let flat: usize = idx.iter().zip(perm).map(|(&j, &k)| j * strides[k]).sum();
        out.extend_from_slice(&raw[flat * size..flat * size + size]);
        advance(&mut idx, &want);
    }
    out
}

/// Steps the row-major index `idx` of an array of `dims` to the next
/// element (back to all zeros after the last).
fn advance(idx: &mut [usize], dims: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// Row-major strides of `shape`, in elements.
fn row_major_strides(shape: &[u64]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1] as usize;
    }
    strides
}

#[cfg(test)]
mod tests {
    /// The fixed-size transposes move each element where the
    /// element-at-a-time one does, for every rank `dma_transpose` takes.
    #[test]
    fn typed_permutes_agree_with_the_element_loop() {
        let cases: [(&[u64], &[usize]); 4] = [
            (&[3, 5], &[1, 0]),
            (&[2, 3, 4], &[2, 1, 0]),
            (&[2, 3, 1, 5], &[3, 1, 2, 0]),
            (&[7, 1], &[1, 0]),
        ];
        for (shape, perm) in cases {
            let n: u64 = shape.iter().product();
            for size in [1usize, 2, 4, 8] {
                let raw: Vec<u8> = (0..n as usize * size)
                    .map(|b| (b * 37 % 251) as u8)
                    .collect();
                let want = permuted_dyn(&raw, size, shape, perm);
                let got = permuted(&raw, size, shape, perm);
                assert_eq!(got, want, "{shape:?} {perm:?} size {size}");
            }
        }
    }

    use super::{MxMatrix, mx_product, mx_product_f64, permuted, permuted_dyn};
    use crate::rng::Xorwow;

    /// A matrix of MX-like values, `(1 + q/8) · 2^e` with random sign, `q`
    /// in 0..8 and `e` in `exponents`, and some zeros.
    fn matrix(rng: &mut Xorwow, rows: usize, cols: usize, exponents: (i32, i32)) -> MxMatrix {
        let span = (exponents.1 - exponents.0 + 1) as u32;
        let values = (0..rows * cols)
            .map(|_| {
                let r = rng.next();
                if r.is_multiple_of(17) {
                    return 0.0;
                }
                let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
                let q = f64::from((r >> 1) & 7);
                let e = exponents.0 + ((r >> 4) % span) as i32;
                sign * (1.0 + q / 8.0) * f64::from(e).exp2()
            })
            .collect();
        MxMatrix { rows, cols, values }
    }

    #[test]
    fn mx_scale_is_the_power_of_two() {
        for code in 0..=254u8 {
            assert_eq!(super::mx_scale(code), (f64::from(code) - 127.0).exp2());
        }
        assert!(super::mx_scale(0xff).is_nan());
    }

    /// The f32 path gives the f64 definition's bits, including products
    /// that overflow to infinity and underflow to subnormals or zero, and
    /// falls back where an operand is not an f32.
    #[test]
    fn mx_product_matches_the_f64_definition_bit_for_bit() {
        let mut rng = Xorwow::seeded(7, 0);
        let (k, m, n) = (512, 7, 19);
        // (a's exponents, b's exponents, whether a is exact in f32)
        for (exponents, b_exponents, fast) in [
            ((-20, 20), (-10, 10), true),
            ((-75, -60), (-70, -60), true),
            ((60, 70), (55, 65), true),
            ((-160, -140), (-10, 10), false),
            ((120, 140), (-10, 10), false),
        ] {
            let a = matrix(&mut rng, k, m, exponents);
            let b = matrix(&mut rng, k, n, b_exponents);
            assert_eq!(a.exact_f32().is_some(), fast, "{exponents:?}");
            let start: Vec<f32> = (0..m * n).map(|_| rng.unit() - 0.5).collect();
            let (mut got, mut want) = (start.clone(), start);
            mx_product(&a, &b, crate::matmul::Rows::Values(&mut got));
            mx_product_f64(&a, &b, &mut want);
            let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{exponents:?}");
        }
    }

    /// One NaN value, of either operand, sends the product through the
    /// f64 loop (`MxMatrix::exact_f32`).
    #[test]
    fn a_nan_value_keeps_the_f64_loop() {
        let mut rng = Xorwow::seeded(11, 0);
        let mut a = matrix(&mut rng, 64, 3, (-20, 20));
        assert!(a.exact_f32().is_some());
        a.values[100] = f64::from_bits(0x7ff4_0000_0000_0001);
        assert!(a.exact_f32().is_none());
        a.values[100] = -f64::NAN;
        assert!(a.exact_f32().is_none());
    }
}
