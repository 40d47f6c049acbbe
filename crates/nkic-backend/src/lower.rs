//! Lowering: each IR op becomes an `nkic_isa::Op` over access patterns,
//! with the engines it may legally run on.
//!
//! `nkic_ir::OpKind` is made from `nkic_isa`'s instruction table, so an op
//! lowers field by field (`OpKind::to_instruction`, with this module's
//! [`Cx`] as its `nkic_ir::Lowering`): views become access patterns
//! through their storage's placement, scalars and options follow, and
//! plain parameters are copied. The decisions the IR leaves open are made
//! here:
//!
//! * `dge` of a DMA left open becomes `none` (precomputed descriptors: the
//!   backend only emits static addresses, and `none` has no per-instruction
//!   overhead);
//! * a `dma_copy` whose source (destination) has row indirection becomes a
//!   `dma_gather` (`dma_scatter`) with the index view as its `index`;
//! * `accumulate` of a matmul left open follows the IR's rule: the op
//!   accumulates when the latest earlier op writing overlapping bytes of
//!   the same PSUM tensor is itself a matmul, and overwrites otherwise (the
//!   first matmul of a group, or one after a `memset` or a copy).
//!
//! **Legal engines.** An op with a fixed engine keeps it; an op NKI leaves
//! open may run on each engine of its table entry on which the program
//! verifier accepts it (for example `tensor_scalar` runs on GpSimd only
//! for `rsqrt`, and GpSimd never touches PSUM). The check is
//! `nkic_isa::check_instruction` on the instruction against a program
//! declaring the kernel's HBM tensors, so the verifier stays the one
//! source of the rules. Ops that use an engine's hidden
//! state (`rng`) get the first legal engine only, so that their stream of
//! random values does not depend on scheduling. `tensor_tensor` on 32-bit
//! integers (every operand `int32`/`uint32`), exact on GpSimd but through
//! `f32` on Vector, gets GpSimd when GpSimd may run it and otherwise (a
//! PSUM operand) its first legal engine, as isa.md §4.3 says.

use nkic_isa::insn;
use std::collections::HashMap;

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::{Handle, Lowering, OpKind, Storage, View, overlap};
use nkic_isa::{AccessPattern, DType, DgeMode, Engine, Instruction, Program, Queue};

use crate::alloc::Layout;
use crate::codes;
use crate::collect::{Unit, diag_at};

/// One lowered op.
#[derive(Clone, Debug, PartialEq)]
pub struct LoweredOp {
    /// The machine operation (the same on every engine).
    pub op: nkic_isa::Op,
    /// The engines it may run on, in preference order; never empty.
    pub engines: Vec<Engine>,
}

/// Every op of the unit, lowered, in source order.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowered {
    pub ops: Vec<LoweredOp>,
}

/// Why a field did not lower.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError(pub String);

/// The context a field lowers in: the placements and the instance whose
/// storage handles the op uses.
pub struct Cx<'a, 'k> {
    unit: &'a Unit<'k>,
    layout: &'a Layout,
    inst: usize,
    /// Whether the op, a matmul whose `accumulate` is left open,
    /// accumulates (see the module doc).
    accumulate: bool,
}

impl Cx<'_, '_> {
    /// The access pattern of `view`.
    fn ap(&self, view: &View) -> Result<AccessPattern, FieldError> {
        let id = self.unit.sid(self.inst, view.storage);
        let st = &self.unit.kernels[self.inst].storages[view.storage];
        let placement = self.layout.placements[id]
            .ok_or_else(|| FieldError("a tensor that was never placed".to_owned()))?;
        // A virtual register has one physical register on every queue
        // (the dynamic emitter replicates register ops on every queue).
        let reg = view.dyn_offset.map(|d| self.unit.reg(self.inst, d.reg));
        view.to_access_pattern(st, placement, reg)
            .map_err(|e| FieldError(e.to_string()))
    }
}

impl nkic_ir::Lowering for Cx<'_, '_> {
    type Error = FieldError;
    fn view(&self, view: &View) -> Result<AccessPattern, FieldError> {
        self.ap(view)
    }
    fn dge(&self) -> DgeMode {
        DgeMode::None
    }
    fn accumulate(&self) -> bool {
        self.accumulate
    }
}

/// Lowers `kind`: a `dma_copy` here, every other op with an instruction
/// of the same fields by [`OpKind::to_instruction`].
fn lower_kind(kind: &OpKind, cx: &Cx<'_, '_>) -> Result<nkic_isa::Op, FieldError> {
    if let OpKind::DmaCopy {
        dst,
        src,
        accumulate,
        dge,
        oob,
        priority,
    } = kind
    {
        // Row indirection on one side is a gather (source) or a scatter
        // (destination); the index view becomes its own operand.
        if let Some(nkic_ir::Indirection::Rows { index }) = &src.indirect {
            return Ok(nkic_isa::Op::DmaGather(insn::DmaGather {
                dst: cx.ap(dst)?,
                src: cx.ap(&src.without_indirection())?,
                index: cx.ap(index)?,
                accumulate: *accumulate,
                oob: *oob,
            }));
        }
        if let Some(nkic_ir::Indirection::Rows { index }) = &dst.indirect {
            return Ok(nkic_isa::Op::DmaScatter(insn::DmaScatter {
                dst: cx.ap(&dst.without_indirection())?,
                src: cx.ap(src)?,
                index: cx.ap(index)?,
                accumulate: *accumulate,
                oob: *oob,
            }));
        }
        // A copy reads and writes flat rows: a dim longer than a
        // descriptor's count is split in two on both sides.
        return Ok(nkic_isa::Op::DmaCopy(insn::DmaCopy {
            dst: cx.ap(dst)?.with_long_dims_split(),
            src: cx.ap(src)?.with_long_dims_split(),
            accumulate: *accumulate,
            dge: dge.unwrap_or_else(|| cx.dge()),
            oob: *oob,
            priority: *priority,
        }));
    }
    // Only the IR's own ops, the register ops, have no instruction of the
    // same fields, and `lower` hands those to the dynamic emitter.
    kind.to_instruction(cx).unwrap_or_else(|| {
        panic!(
            "invariant broken: every op but the register ops has an instruction, not `{}`",
            kind.mnemonic()
        )
    })
}

/// The queue that runs `engine`'s instructions for a legality check.
pub fn probe_queue(engine: Engine) -> Queue {
    Queue::of_engine(engine).unwrap_or(Queue::Dma(0))
}

/// Lowers every op of `unit`; see the module doc.
pub fn lower(
    unit: &Unit<'_>,
    layout: &Layout,
    sources: &SourceMap,
) -> Result<Lowered, Vec<Diagnostic>> {
    let lowerer = Lowerer::new(unit, layout, sources);
    let mut diags = Vec::new();
    let mut ops = Vec::with_capacity(unit.ops.len());
    for j in 0..unit.ops.len() {
        match lowerer.lower_op(j) {
            Ok(op) => ops.push(op.unwrap_or_else(|| LoweredOp {
                // Register ops are emitted by the dynamic emitter itself.
                op: nkic_isa::Op::Nop(insn::Nop {}),
                engines: vec![Engine::Sync],
            })),
            Err(d) => diags.push(d),
        }
    }
    if diags.is_empty() {
        Ok(Lowered { ops })
    } else {
        Err(merge_repeats(diags))
    }
}

/// What [`lower`] reports, without keeping the lowered ops: `nkic
/// check`, which stops after lowering. The ops of a large unit
/// (`crate::on_pool`) are lowered on the pool, each on its own
/// (an op's lowering reads the unit and its layout only), and the
/// diagnostics come back in op order, so the result is `lower`'s. (The
/// k = 4093 depthwise conv1d of nki-library, 563k ops, kept 330 MB of
/// lowered ops only to drop them.)
pub fn check(unit: &Unit<'_>, layout: &Layout, sources: &SourceMap) -> Result<(), Vec<Diagnostic>> {
    let lowerer = Lowerer::new(unit, layout, sources);
    let n = unit.ops.len();
    let diags: Vec<Diagnostic> = if crate::on_pool(n) {
        use rayon::prelude::*;
        (0..n)
            .into_par_iter()
            .with_min_len(crate::PARALLEL_MIN_OPS / 2)
            .filter_map(|j| lowerer.lower_op(j).err())
            .collect()
    } else {
        (0..n).filter_map(|j| lowerer.lower_op(j).err()).collect()
    };
    if diags.is_empty() {
        Ok(())
    } else {
        Err(merge_repeats(diags))
    }
}

/// What lowering an op reads: the unit, its layout, the sources (for
/// notes), a program declaring the kernel's HBM tensors (for the
/// verifier's legality checks) and the matmuls' writers.
struct Lowerer<'a, 'k> {
    unit: &'a Unit<'k>,
    layout: &'a Layout,
    sources: &'a SourceMap,
    template: Program,
    writers: Writers,
}

impl<'a, 'k> Lowerer<'a, 'k> {
    fn new(unit: &'a Unit<'k>, layout: &'a Layout, sources: &'a SourceMap) -> Self {
        let mut template = Program::new(unit.target);
        template.hbm.clone_from(&layout.hbm);
        Lowerer {
            unit,
            layout,
            sources,
            template,
            writers: Writers::of(unit),
        }
    }

    /// Op `j` lowered (`None` for a register op, which the dynamic
    /// emitter emits itself), or why it does not lower.
    fn lower_op(&self, j: usize) -> Result<Option<LoweredOp>, Diagnostic> {
        let unit = self.unit;
        let info = &unit.ops[j];
        let kernel = &unit.kernels[info.inst];
        if info.op.kind.is_register_op() {
            return Ok(None);
        }
        let accumulate = match &info.op.kind {
            OpKind::NcMatmul { dst, .. } | OpKind::NcMatmulMx { dst, .. } => {
                follows_matmul(unit, &self.writers, j, dst)
            }
            _ => false,
        };
        let cx = Cx {
            unit,
            layout: self.layout,
            inst: info.inst,
            accumulate,
        };
        let op = match lower_kind(&info.op.kind, &cx) {
            Ok(op) => op,
            Err(FieldError(why)) => {
                return Err(diag_at(
                    codes::UNLOWERABLE_VIEW,
                    format!(
                        "`{}` cannot be expressed as a machine instruction: {why}",
                        info.op.kind.mnemonic()
                    ),
                    info.loc,
                    "this op",
                ));
            }
        };
        let fixed = info.op.engine;
        let choices: Vec<Engine> = match fixed {
            Some(e) => vec![e],
            None => info.op.kind.engines().to_vec(),
        };
        let mut legal = Vec::new();
        let mut rejections = Vec::new();
        // One probe for every engine: only its queue differs.
        let probe = Instruction::new(op);
        for &engine in &choices {
            match nkic_isa::check_instruction(&self.template, probe_queue(engine), &probe) {
                Ok(()) => legal.push(engine),
                Err(errors) => {
                    rejections.extend(
                        errors
                            .into_iter()
                            .map(|e| format!("on {}: {}", engine.name(), e.message)),
                    );
                }
            }
        }
        let op = probe.op;
        // Ops whose result depends on the engine keep one engine, so the
        // result does not depend on scheduling: users of hidden engine
        // state, and `tensor_tensor` on 32-bit integers (exact on GpSimd,
        // through f32 on Vector; isa.md §1.6).
        let integer_tensor_tensor = matches!(
            &op,
            nkic_isa::Op::TensorTensor(insn::TensorTensor { dst, src0, src1, .. })
                if [dst, src0, src1].iter().all(|ap| matches!(ap.dtype, DType::I32 | DType::U32))
        );
        if fixed.is_none() && integer_tensor_tensor {
            // All-integer operands default to GpSimd, exact; Vector (f32
            // arithmetic) only when GpSimd cannot run it, as with a PSUM
            // operand (isa.md §4.3).
            if legal.contains(&Engine::GpSimd) {
                legal = vec![Engine::GpSimd];
            } else {
                legal.truncate(1);
            }
        } else if fixed.is_none() && !info.op.kind.engine_state(None).is_empty() {
            legal.truncate(1);
        }
        if legal.is_empty() {
            let message = match fixed {
                Some(e) => format!(
                    "`{}` cannot run on the {} engine as written",
                    info.op.kind.mnemonic(),
                    e.name()
                ),
                None => format!(
                    "`{}` cannot run on any engine as written",
                    info.op.kind.mnemonic()
                ),
            };
            let mut d = diag_at(codes::NO_LEGAL_ENGINE, message, info.loc, "this op");
            for r in rejections {
                d = d.with_note(r);
            }
            for note in kernel.op_notes(info.handle, Some(self.sources)) {
                d = d.with_note(note);
            }
            return Err(d);
        }
        Ok(Some(LoweredOp { op, engines: legal }))
    }
}

/// One diagnostic per source line and message: an op unrolled 1,000 times
/// fails 1,000 times the same way, so the first (with its loop iteration)
/// stands for the others and a note counts them.
fn merge_repeats(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let key = |d: &Diagnostic| {
        (
            d.code,
            d.message.clone(),
            d.primary.as_ref().map(|l| (l.file, l.span)),
        )
    };
    let mut out: Vec<(Diagnostic, usize)> = Vec::new();
    for d in diags {
        match out.iter_mut().find(|(first, _)| key(first) == key(&d)) {
            Some((_, n)) => *n += 1,
            None => out.push((d, 0)),
        }
    }
    out.into_iter()
        .map(|(d, more)| match more {
            0 => d,
            n => d.with_note(format!(
                "{n} more {} from this line (other loop iterations or instances) fail{} the same way",
                if n == 1 { "op" } else { "ops" },
                if n == 1 { "s" } else { "" }
            )),
        })
        .collect()
}

/// Per instance and storage, the indices of the ops that write it, in
/// order: what [`follows_matmul`] searches, so that finding an op's
/// latest writer costs the storage's writers, not every earlier op.
struct Writers(HashMap<(usize, Handle<Storage>), Vec<usize>>);

impl Writers {
    /// The writers of the storages matmuls write (the only ones
    /// [`follows_matmul`] asks about).
    fn of(unit: &Unit<'_>) -> Writers {
        let mut map: HashMap<(usize, Handle<Storage>), Vec<usize>> = unit
            .ops
            .iter()
            .filter_map(|info| match &info.op.kind {
                OpKind::NcMatmul { dst, .. } | OpKind::NcMatmulMx { dst, .. } => {
                    Some(((info.inst, dst.storage), Vec::new()))
                }
                _ => None,
            })
            .collect();
        if !map.is_empty() {
            for (j, info) in unit.ops.iter().enumerate() {
                for w in info.op.write_set() {
                    if let Some(list) = map.get_mut(&(info.inst, w.storage))
                        && list.last() != Some(&j)
                    {
                        list.push(j);
                    }
                }
            }
        }
        Writers(map)
    }
}

/// True when the latest op before `j` (same instance) that writes bytes of
/// `dst`'s storage overlapping `dst` is a matmul.
fn follows_matmul(unit: &Unit<'_>, writers: &Writers, j: usize, dst: &View) -> bool {
    let info = &unit.ops[j];
    let kernel = &unit.kernels[info.inst];
    let Some(list) = writers.0.get(&(info.inst, dst.storage)) else {
        return false;
    };
    let before = list.partition_point(|&i| i < j);
    for &i in list[..before].iter().rev() {
        let prev = &unit.ops[i];
        let writes = prev.op.write_set();
        if writes
            .iter()
            .any(|w| w.storage == dst.storage && overlap(kernel, w, dst).may_touch())
        {
            return matches!(
                prev.op.kind,
                OpKind::NcMatmul { .. } | OpKind::NcMatmulMx { .. }
            );
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use nkic_diag::{FileId, Span};

    use super::*;

    #[test]
    fn repeated_errors_of_one_line_are_reported_once_with_a_count() {
        let at = |start: u32, message: &str| {
            Diagnostic::error(codes::NO_LEGAL_ENGINE, message).with_primary(
                FileId(0),
                Span::new(start, start + 4),
                "this op",
            )
        };
        let merged = merge_repeats(vec![
            at(10, "`dma_copy` cannot run on any engine as written"),
            at(20, "`dma_copy` cannot run on any engine as written"),
            at(10, "`dma_copy` cannot run on any engine as written"),
            at(10, "`dma_copy` cannot run on any engine as written"),
            at(20, "`activation` cannot run on any engine as written"),
        ]);
        let notes: Vec<Vec<String>> = merged.iter().map(|d| d.notes.clone()).collect();
        assert_eq!(
            notes,
            [
                vec![
                    "2 more ops from this line (other loop iterations or instances) fail the same way"
                        .to_owned()
                ],
                vec![],
                vec![],
            ]
        );
        let starts: Vec<u32> = merged
            .iter()
            .map(|d| d.primary.as_ref().map_or(0, |l| l.span.start))
            .collect();
        assert_eq!(starts, [10, 20, 20]);
    }
}
