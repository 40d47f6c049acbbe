//! The native tier (`SimTier::Jit`): compute instructions run as loops
//! compiled with Cranelift, one per signature, compiled once per process
//! on a thread of their own (`compile`).
//!
//! The tier replaces only the data path. An instruction takes it when
//! every precondition below holds, and otherwise runs in the interpreter
//! (`exec`), which stays the definition of every result:
//!
//! * its kind and operators are supported (`plan`): `tensor_tensor`,
//!   `tensor_scalar` (both stages, reverse flags), `scalar_tensor_tensor`,
//!   `tensor_copy` and `dma_copy` without `accumulate` or `oob=skip` (with
//!   or without a dtype change; `dma_copy` only between operands of equal
//!   P and F, the usual tile load and store), `activation`,
//!   `activation_reduce` (with every `reduce_cmd` and read-out),
//!   `activate2` (with no per-row `relu_param`), `exponential`,
//!   `range_select`, `tensor_scalar_reduce`, `tensor_reduce` (its destination apart from
//!   its source), `select_reduce`, `iota`, `affine_select`,
//!   `tensor_tensor_scan`, `tensor_scalar_cumulative` (unless it keeps
//!   lanes holding undefined data) and `memset`;
//!   bitwise operators and GpSimd's exact 32-bit integer paths stay
//!   interpreted;
//! * every operand resolves and its bounds hold (`MemoryState::view`, the
//!   same call the interpreter makes), P and F agree, and no operand is a
//!   packed x4 dtype where the interpreter needs values;
//! * every byte read is written (`MemoryState::is_written`), so the read
//!   cannot fault or read poison, and defined (`MemoryState::is_clean`),
//!   except for the instructions whose interpreter reads each source once
//!   whole, in `srcs` order, and writes the destination once
//!   (`reads_undefined`): for those, the sources' definedness is recorded
//!   before the loop (`MemoryState::read_taint`) and the destination
//!   shaded after it (`MemoryState::shade_written`), as `read_raw` and
//!   `write_raw` do, and the accumulator steps take their lanes' taint
//!   from the same record. (A kernel whose tiles once took undefined data
//!   computes on them for the rest of the run: an MX `bwmm` ran a sixth
//!   of its instructions, a third of its time, interpreted.);
//! * the destination does not overlap a source, or overlaps it exactly
//!   (same addresses, element for element, each element once), so reading
//!   an element just before writing it gives what reading everything first
//!   gives.
//!
//! Bounds checks, written bits, definedness, HBM traffic counters and the
//! race detector stay in the Rust code around the loop, and times never
//! come from here: the tier cannot change a timestamp or a fault. So do
//! the accumulator registers: a loop only folds each row's computed f32
//! values, left to right from the identity of `reduce_op` as the
//! interpreter does, and the interpreter's own `Exec::accumulate` and
//! `Exec::read_out` take the row results from there.
//!
//! A compiled loop (`compile`) walks rows of one strided segment of
//! every operand at once: it decodes each source element to f32, computes, and encodes
//! into the destination in one pass, with no intermediate buffer. A
//! `tensor_reduce` loop folds a run of source elements from its first and
//! stores the result once, at the run's end; a scan carries its f32
//! running value from element to element and piece to piece the same way. This
//! module cuts each partition row into the longest pieces where every
//! operand advances by a constant stride (`segments`), so the loop itself
//! does not depend on the access patterns' rank; when every operand's
//! row is one such piece and its rows are evenly spaced, one call runs
//! every row. f32 and bf16 decode and
//! encode inline, and so do the arithmetic, comparison, maximum/minimum
//! (`relu`), `abs` and `reciprocal` operators, as compares and selects
//! that give `alu`'s values and NaN; every other dtype, and every operator
//! or activation function without such an exact form, calls back into the
//! same Rust functions the interpreter uses (`numerics`, `alu`), so the
//! results are the interpreter's bit for bit, NaN payloads included.
//! Dense rows of f32 and bf16 whose body is one of the single IEEE
//! operators, a conversion or an `affine_select` into f32 (one select per
//! lane) run four elements at a time in vector lanes
//! (`compile`), each lane doing the element loop's operations; an `exp`
//! row's values go through `exp::exp_in_place` in chunks.
//!
//! `native` is the one place with `unsafe`: turning compiled code into a
//! function pointer and calling it on raw memory.

mod compile;
mod native;

use nkic_isa::insn;
use nkic_isa::{AccessPattern, ActFunc, AluOp, DType, Engine, OobMode, Op, ReduceCmd, Scalar};

use crate::alu::identity;
use crate::error::FResult;
use crate::exec::{AccFile, Exec, Reduction, affine_base, affine_row, memset_element};
use crate::memory::{MemoryState, NATIVE_SOURCES, SpaceId, View, bits_of};

/// What one compiled loop computes per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Body {
    /// `dst = a op b` (`tensor_tensor`).
    Binary(AluOp),
    /// `t = a op0 c0` (`c0 op0 a` when reversed), then `t op1 c1`
    /// (`tensor_scalar`; `c0`, `c1` per row).
    Scalar {
        op0: AluOp,
        reverse0: bool,
        op1: Option<(AluOp, bool)>,
    },
    /// `t = a op0 s` (`s op0 a` when reversed), then `r = t op1 b` (`b
    /// op1 t` when reversed), `dst = r`: with `s = c0` per row
    /// (`scalar_tensor_tensor`), or for a scan with `s` the running `acc`,
    /// which becomes `r` (`tensor_tensor_scan`).
    ScalarTensorTensor {
        op0: AluOp,
        reverse0: bool,
        op1: AluOp,
        reverse1: bool,
        scan: bool,
    },
    /// `t = a op0 c0` (`c0 op0 a` when reversed; `t = a` without `op0`),
    /// then `t op1 c1` likewise, `dst = func(t)` with the f32 bits of
    /// `alpha` in the fill argument (`activation`: `a · c0 + c1`;
    /// `activate2`; `exponential`: `a − c0` through `exp`).
    Activation {
        func: ActFunc,
        op0: Option<(AluOp, bool)>,
        op1: Option<(AluOp, bool)>,
    },
    /// `dst = a` through f32 (`tensor_copy`, `dma_copy` between dtypes).
    Convert,
    /// `dst = a` as raw bits (`tensor_copy`, `dma_copy` within a dtype).
    Copy,
    /// `dst = k` as raw bits (`memset`).
    Fill,
    /// `dst[k] = ±fold(op)` over a run of source elements, left to right
    /// from the first (`tensor_reduce`): a call continues the fold in its
    /// `acc` unless told it starts a run, and stores the result when told
    /// the run ends (`REDUCE_FIRST`, `REDUCE_LAST` in the fill argument).
    Reduce { op: AluOp, negate: bool },
    /// `dst = base + row[i]` in wrapping 32-bit arithmetic, saturated
    /// into an integer dtype, `!= 0` for bool, rounded otherwise (`iota`;
    /// `row` is stream a, the row's `base` the fill argument).
    Iota,
    /// `dst = cmp(base + row[i], 0) ? a : c0` (`affine_select`; `row` is
    /// stream b, `base` the fill argument; `a` moves as raw bits when the
    /// dtypes agree).
    AffineSelect { cmp: AluOp },
    /// `dst = cmp0(j, c0) != 0 && cmp1(j, c1) != 0 ? a : k` with `j`
    /// the element's index (stream b, 32-bit) as f32 and `k` the f32 bits
    /// in the fill argument (`range_select`).
    RangeSelect { cmp0: AluOp, cmp1: AluOp },
    /// `dst = (b != 0) != reverse ? a : c0` with `b`'s raw bits
    /// (`select_reduce`).
    Select { reverse: bool },
    /// `r = (a op0 c0) op1 r`, `dst = r` (`tensor_scalar_cumulative`; `r`
    /// is the running `acc`).
    Cumulative { op0: AluOp, op1: AluOp },
}

/// Fill-argument bits of a `Body::Reduce` call: the call starts a run
/// (the fold begins at its first element), and it ends one (it stores).
const REDUCE_FIRST: i64 = 1;
const REDUCE_LAST: i64 = 2;

/// The key of one compiled loop: what it computes, the operator that
/// folds each computed f32 value (before its rounding) into the running
/// `acc` the loop returns (an accumulator instruction's row reduction),
/// and the dtype of each operand (`None`: not used).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Sig {
    pub body: Body,
    pub fold: Option<AluOp>,
    pub dst: DType,
    pub a: Option<DType>,
    pub b: Option<DType>,
}

impl Sig {
    fn of(body: Body, dst: &View, a: Option<&View>, b: Option<&View>) -> Sig {
        Sig {
            body,
            fold: None,
            dst: dst.dtype,
            a: a.map(|v| v.dtype),
            b: b.map(|v| v.dtype),
        }
    }
}

/// One instruction ready for the native tier.
struct Plan<'o> {
    sig: Sig,
    dst: View,
    srcs: Vec<View>,
    /// Per row: `c0` and `c1`.
    consts: Vec<[f32; 2]>,
    /// The raw bits `Fill` stores.
    fill: i64,
    /// Source elements per destination element (`Reduce`; 1 otherwise).
    inner: usize,
    /// The accumulator step after the loop, if the instruction has one.
    acc: Option<AccStep<'o>>,
    /// `Iota`, `AffineSelect` and `RangeSelect`: the affine values.
    affine: Option<Affine>,
    /// `Scan`: each row's running value before its first element.
    starts: Option<Vec<f32>>,
    /// `Cumulative`: how its running registers start.
    running: Option<Running>,
    /// A source holds undefined elements (written ones: module doc).
    tainted: bool,
}

/// `tensor_scalar_cumulative`'s registers: `Exec::running_registers`
/// starts them, each row's loop runs from its register and leaves its
/// last value there, then `Exec::running_taint`.
struct Running {
    cmd: ReduceCmd,
    op1: AluOp,
    /// Per row: `imm1` (`load_reduce`; 0 without one).
    i1: Vec<f32>,
}

/// The affine values of `iota` and `affine_select` as the interpreter
/// splits them (`exec::affine_row`, `exec::affine_base`): one row every
/// row shares, which the loop reads as the stream after the sources, and
/// per row a base it gets as the fill argument; or the element indices of
/// `range_select`, with no base.
struct Affine {
    row: Vec<i32>,
    /// `offset` and `channel_multiplier`.
    base: Option<(i32, i32)>,
}

/// What an accumulator instruction does with its row results once the
/// loop has written the destination: `Exec::accumulate`, then
/// `Exec::read_out`, the interpreter's own steps.
struct AccStep<'o> {
    red: Reduction<'o>,
    /// Per row: `reduce_init` (`load_reduce`).
    init: Option<Vec<f32>>,
}

/// Runs `op` natively if it qualifies, giving its result; `None` (and
/// nothing done) if not, or if its loop is still being compiled and the
/// run does not `wait` for it (`SimConfig::jit_background`).
pub(crate) fn run(exec: &mut Exec<'_>, op: &Op, wait: bool) -> Option<FResult<()>> {
    let plan = plan(exec, op)?;
    let kernel = compile::kernel(plan.sig, wait)?;
    Some(execute(exec, &plan, kernel))
}

/// Starts the thread that compiles the loops (`compile`), so that a run
/// started later finds the Cranelift module built.
pub(crate) fn start() {
    compile::start();
}

/// Runs a planned instruction with its compiled loop: the loop, then
/// the accumulator steps of the interpreter.
fn execute(exec: &mut Exec<'_>, plan: &Plan<'_>, kernel: native::Kernel) -> FResult<()> {
    let starts = match &plan.running {
        Some(r) => Some(
            exec.running_registers(&plan.srcs[0], r.cmd, r.op1, &r.i1)?
                .to_vec(),
        ),
        None => plan.starts.clone(),
    };
    if plan.tainted {
        for s in &plan.srcs {
            exec.mem.read_taint(s);
        }
    }
    let rows = execute_plan(exec.mem, plan, kernel, starts);
    if plan.tainted {
        exec.mem.shade_written(&plan.dst);
    }
    NATIVE.with(|n| n.set(n.get() + 1));
    if let Some(r) = &plan.running {
        let like = &plan.srcs[0];
        exec.accs(AccFile::Vector, like)?.copy_from_slice(&rows);
        exec.running_taint(like, r.cmd);
    }
    let Some(step) = &plan.acc else {
        return Ok(());
    };
    let like = &plan.srcs[0];
    let init = step.init.as_deref();
    exec.accumulate(step.red, like, &rows, init)?;
    exec.read_out(step.red, like)
}

thread_local! {
    /// Instructions this thread has run natively.
    static NATIVE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many instructions this thread has run in the native tier so far.
pub(crate) fn native_instructions() -> u64 {
    NATIVE.with(std::cell::Cell::get)
}

/// Counts `n` instructions that a run called from this thread ran
/// natively on another (the pool worker the run went to).
pub(crate) fn credit_native_instructions(n: u64) {
    NATIVE.with(|c| c.set(c.get() + n));
}

/// The plan for `op` when every precondition of the module doc holds.
/// Reads nothing but the per-row scalars, and those only once every other
/// check has passed.
fn plan<'o>(exec: &mut Exec<'_>, op: &'o Op) -> Option<Plan<'o>> {
    let mem = &*exec.mem;
    let regs = &*exec.regs;
    let view = |ap: &AccessPattern, field: &'static str, write: bool| {
        mem.view(ap, regs, field, write).ok()
    };
    // A `src` and a `dst` holding values (not packed x4).
    let values = |src: &AccessPattern, dst: &AccessPattern| {
        let a = view(src, "src", false)?;
        let d = view(dst, "dst", true)?;
        plain(&[&a, &d]).then_some((a, d))
    };
    let exact_int = |vs: &[&View]| {
        exec.engine == Engine::GpSimd
            && vs
                .iter()
                .any(|v| matches!(v.dtype, DType::I32 | DType::U32))
    };
    // An accumulator instruction's step, checked as the interpreter's
    // `accumulate` and `read_out` would run it: the engine has the lanes,
    // and a read-out resolves to one plain value per row.
    let acc_step = |like: &View, red: Reduction<'o>| {
        let lanes = match red.file {
            AccFile::Scalar => exec.acc.scalar.len(),
            AccFile::Vector => exec.acc.vector.len(),
        };
        if like.part_start + like.rows > lanes {
            return None;
        }
        if let Some(res) = red.res {
            let r = view(res, "reduce_res", true)?;
            if !plain(&[&r]) || r.elements() != like.rows {
                return None;
            }
        }
        Some(AccStep { red, init: None })
    };
    let mut inner = 1;
    let mut acc = None;
    let mut init = None;
    let mut affine = None;
    let mut start = None;
    let mut running = None;
    let (mut sig, dst, srcs, scalars, fill) = match op {
        Op::TensorTensor(insn::TensorTensor {
            dst,
            src0,
            src1,
            op,
        }) => {
            let a = view(src0, "src0", false)?;
            let b = view(src1, "src1", false)?;
            let d = view(dst, "dst", true)?;
            if op.is_bitvec() || exact_int(&[&a, &b, &d]) || !plain(&[&a, &b, &d]) {
                return None;
            }
            let sig = Sig::of(Body::Binary(*op), &d, Some(&a), Some(&b));
            (sig, d, vec![a, b], [None, None], 0)
        }
        Op::TensorScalar(ts) => {
            let (a, d) = values(&ts.src, &ts.dst)?;
            if ts.op0.is_bitvec() || exact_int(&[&a, &d]) {
                return None;
            }
            let o0 = scalar(mem, regs, ts.operand0.as_ref(), "operand0", a.rows)?;
            let o1 = scalar(mem, regs, ts.operand1.as_ref(), "operand1", a.rows)?;
            let sig = Sig::of(
                Body::Scalar {
                    op0: ts.op0,
                    reverse0: ts.reverse0,
                    op1: ts.op1.map(|op| (op, ts.reverse1)),
                },
                &d,
                Some(&a),
                None,
            );
            (sig, d, vec![a], [o0, o1], 0)
        }
        Op::TensorScalarReduce(insn::TensorScalarReduce {
            dst,
            src,
            op0,
            operand0,
            reduce_op,
            reduce_cmd,
            reduce_init,
            reduce_res,
            reduce_res_negate,
        }) => {
            let (a, d) = values(src, dst)?;
            let o0 = scalar(mem, regs, operand0.as_ref(), "operand0", a.rows)?;
            init = scalar(mem, regs, reduce_init.as_ref(), "reduce_init", a.rows)?;
            let red = Reduction::new(
                AccFile::Vector,
                *reduce_cmd,
                *reduce_op,
                reduce_res.as_ref(),
            );
            let negate = *reduce_res_negate;
            acc = Some(acc_step(&a, Reduction { negate, ..red })?);
            // `src op0 operand0`, never reversed.
            let body = Body::Scalar {
                op0: *op0,
                reverse0: false,
                op1: None,
            };
            let sig = Sig::of(body, &d, Some(&a), None);
            (sig, d, vec![a], [o0, None], 0)
        }
        Op::ScalarTensorTensor(insn::ScalarTensorTensor {
            dst,
            src,
            op0,
            operand0,
            reverse0,
            op1,
            src1,
            reverse1,
        })
        | Op::TensorTensorScan(insn::TensorTensorScan {
            dst,
            src0: src,
            src1,
            initial: operand0,
            op0,
            op1,
            reverse0,
            reverse1,
        }) => {
            let scan = matches!(op, Op::TensorTensorScan(_));
            let (a, d) = values(src, dst)?;
            let b = view(src1, "src1", false)?;
            if !plain(&[&b]) {
                return None;
            }
            let o0 = scalar(mem, regs, Some(operand0), "operand0", a.rows)?;
            let body = Body::ScalarTensorTensor {
                op0: *op0,
                reverse0: *reverse0,
                op1: *op1,
                reverse1: *reverse1,
                scan,
            };
            let sig = Sig::of(body, &d, Some(&a), Some(&b));
            // A scan starts each row from its scalar instead.
            let o0 = if scan {
                start = o0;
                None
            } else {
                o0
            };
            (sig, d, vec![a, b], [o0, None], 0)
        }
        Op::Activation(insn::Activation {
            dst,
            src,
            func,
            scale,
            bias,
            ..
        })
        | Op::ActivationReduce(insn::ActivationReduce {
            dst,
            src,
            func,
            scale,
            bias,
            ..
        }) => {
            let (reduce_op, cmd, res) = match op {
                Op::Activation(insn::Activation {
                    reduce_op,
                    reduce_cmd,
                    reduce_res,
                    ..
                }) => (
                    reduce_op.unwrap_or(AluOp::Add),
                    *reduce_cmd,
                    reduce_res.as_ref(),
                ),
                Op::ActivationReduce(insn::ActivationReduce {
                    reduce_op,
                    reduce_res,
                    ..
                }) => (*reduce_op, ReduceCmd::ResetReduce, Some(reduce_res)),
                _ => return None,
            };
            let (a, d) = values(src, dst)?;
            let s = scalar(mem, regs, Some(scale), "scale", a.rows)?;
            let b = scalar(mem, regs, bias.as_ref(), "bias", a.rows)?;
            acc = Some(acc_step(
                &a,
                Reduction::new(AccFile::Scalar, cmd, reduce_op, res),
            )?);
            let body = Body::Activation {
                func: *func,
                op0: Some((AluOp::Multiply, false)),
                op1: Some((AluOp::Add, false)),
            };
            let sig = Sig::of(body, &d, Some(&a), None);
            (sig, d, vec![a], [s, b], 0)
        }
        Op::Activate2(act) => {
            // A per-row `relu_param` has no place in the loop.
            let alpha = match act.relu_param {
                None => 0.0,
                Some(Scalar::Imm(x)) => x.get(),
                Some(Scalar::Vector(_)) => return None,
            };
            let (a, d) = values(&act.src, &act.dst)?;
            let i0 = scalar(mem, regs, act.imm0.as_ref(), "imm0", a.rows)?;
            let i1 = scalar(mem, regs, act.imm1.as_ref(), "imm1", a.rows)?;
            let reduce_op = act.reduce_op.unwrap_or(AluOp::Add);
            let res = act.reduce_res.as_ref();
            acc = Some(acc_step(
                &a,
                Reduction::new(AccFile::Scalar, act.reduce_cmd, reduce_op, res),
            )?);
            // The interpreter skips a `bypass` stage (reversed, it would
            // give the constant).
            let stage = |op: AluOp, reverse: bool| (op != AluOp::Bypass).then_some((op, reverse));
            let body = Body::Activation {
                func: act.func,
                op0: stage(act.op0, act.reverse0),
                op1: stage(act.op1, act.reverse1),
            };
            let sig = Sig::of(body, &d, Some(&a), None);
            (sig, d, vec![a], [i0, i1], i64::from(alpha.to_bits()))
        }
        Op::Exponential(insn::Exponential {
            dst,
            src,
            max_value,
            reduce_cmd,
            reduce_init,
            reduce_res,
        }) => {
            let (a, d) = values(src, dst)?;
            let mx = scalar(mem, regs, Some(max_value), "max_value", a.rows)?;
            init = scalar(mem, regs, reduce_init.as_ref(), "reduce_init", a.rows)?;
            let (cmd, add) = (*reduce_cmd, AluOp::Add);
            acc = Some(acc_step(
                &a,
                Reduction::new(AccFile::Vector, cmd, add, reduce_res.as_ref()),
            )?);
            let body = Body::Activation {
                func: ActFunc::Exp,
                op0: Some((AluOp::Subtract, false)),
                op1: None,
            };
            let sig = Sig::of(body, &d, Some(&a), None);
            (sig, d, vec![a], [mx, None], 0)
        }
        Op::RangeSelect(insn::RangeSelect {
            dst,
            src,
            cmp0,
            bound0,
            cmp1,
            bound1,
            range_start,
            on_false,
            reduce_cmd,
            reduce_res,
        }) => {
            let (a, d) = values(src, dst)?;
            // The indices as 32-bit integers convert to f32 as the
            // interpreter's 64-bit ones do.
            let first = i64::from(*range_start);
            let row: Vec<i32> = (0..a.free() as i64)
                .map(|e| i32::try_from(first + e).ok())
                .collect::<Option<_>>()?;
            affine = Some(Affine { row, base: None });
            let b0 = scalar(mem, regs, Some(bound0), "bound0", a.rows)?;
            let b1 = scalar(mem, regs, Some(bound1), "bound1", a.rows)?;
            let (cmd, max) = (*reduce_cmd, AluOp::Maximum);
            acc = Some(acc_step(
                &a,
                Reduction::new(AccFile::Vector, cmd, max, reduce_res.as_ref()),
            )?);
            let body = Body::RangeSelect {
                cmp0: *cmp0,
                cmp1: *cmp1,
            };
            let mut sig = Sig::of(body, &d, Some(&a), None);
            sig.b = Some(DType::I32);
            let k = i64::from(on_false.get().to_bits());
            (sig, d, vec![a], [b0, b1], k)
        }
        Op::TensorReduce(insn::TensorReduce {
            dst,
            src,
            op,
            last_dims,
            negate,
        }) => {
            let (a, d) = values(src, dst)?;
            let n = src.dims.len();
            inner = src.dims[n - usize::from(*last_dims)..]
                .iter()
                .map(|d| d.count as usize)
                .product();
            // Each destination element is written after its run is read,
            // so no source may share a byte with the destination.
            if inner == 0
                || op.is_bitvec()
                || a.rows != d.rows
                || a.free() != d.free() * inner
                || overlap(&d, &a)
            {
                return None;
            }
            let body = Body::Reduce {
                op: *op,
                negate: *negate,
            };
            let sig = Sig::of(body, &d, Some(&a), None);
            (sig, d, vec![a], [None, None], 0)
        }
        Op::DmaCopy(insn::DmaCopy {
            dst,
            src,
            accumulate: false,
            oob: OobMode::Error,
            ..
        })
        | Op::TensorCopy(insn::TensorCopy { dst, src }) => {
            let a = view(src, "src", false)?;
            let d = view(dst, "dst", true)?;
            let body = if a.dtype == d.dtype {
                Body::Copy
            } else if plain(&[&a, &d]) {
                Body::Convert
            } else {
                return None;
            };
            let sig = Sig::of(body, &d, Some(&a), None);
            (sig, d, vec![a], [None, None], 0)
        }
        Op::Iota(insn::Iota {
            dst,
            pattern,
            offset,
            channel_multiplier,
        }) => {
            let d = view(dst, "dst", true)?;
            if !plain(&[&d]) {
                return None;
            }
            affine = Some(Affine {
                row: affine_row(pattern, d.free()),
                base: Some((*offset, *channel_multiplier)),
            });
            let mut sig = Sig::of(Body::Iota, &d, None, None);
            sig.a = Some(DType::I32);
            (sig, d, Vec::new(), [None, None], 0)
        }
        Op::AffineSelect(insn::AffineSelect {
            dst,
            src,
            pattern,
            offset,
            channel_multiplier,
            cmp,
            on_false,
        }) => {
            let (a, d) = values(src, dst)?;
            affine = Some(Affine {
                row: affine_row(pattern, d.free()),
                base: Some((*offset, *channel_multiplier)),
            });
            let mut sig = Sig::of(Body::AffineSelect { cmp: *cmp }, &d, Some(&a), None);
            sig.b = Some(DType::I32);
            let on_false = Some(ScalarSource::Imm(on_false.get()));
            (sig, d, vec![a], [on_false, None], 0)
        }
        Op::SelectReduce(insn::SelectReduce {
            dst,
            predicate,
            on_true,
            on_false,
            reverse_pred,
            reduce_cmd,
            reduce_res,
        }) => {
            let b = view(predicate, "predicate", false)?;
            let (a, d) = values(on_true, dst)?;
            if !plain(&[&b]) {
                return None;
            }
            let f = scalar(mem, regs, Some(on_false), "on_false", a.rows)?;
            let (cmd, max) = (*reduce_cmd, AluOp::Maximum);
            acc = Some(acc_step(
                &a,
                Reduction::new(AccFile::Vector, cmd, max, reduce_res.as_ref()),
            )?);
            let body = Body::Select {
                reverse: *reverse_pred,
            };
            let sig = Sig::of(body, &d, Some(&a), Some(&b));
            (sig, d, vec![a, b], [f, None], 0)
        }
        Op::TensorScalarCumulative(insn::TensorScalarCumulative {
            dst,
            src,
            op0,
            imm0,
            op1,
            imm1,
            reduce_cmd,
        }) => {
            let (a, d) = values(src, dst)?;
            let i0 = scalar(mem, regs, Some(imm0), "imm0", a.rows)?;
            init = scalar(mem, regs, imm1.as_ref(), "imm1", a.rows)?;
            // The lanes exist, and the write cannot take undefinedness
            // from lanes the instruction keeps.
            let (lo, hi) = (a.part_start, a.part_start + a.rows);
            let kept = matches!(reduce_cmd, ReduceCmd::Reduce | ReduceCmd::Idle);
            let lanes = exec.acc.vector_undef.get(lo..hi)?;
            if hi > exec.acc.vector.len() || (kept && lanes.iter().any(Option::is_some)) {
                return None;
            }
            running = Some(Running {
                cmd: *reduce_cmd,
                op1: *op1,
                i1: vec![0.0; a.rows],
            });
            let body = Body::Cumulative {
                op0: *op0,
                op1: *op1,
            };
            let sig = Sig::of(body, &d, Some(&a), None);
            (sig, d, vec![a], [i0, None], 0)
        }
        Op::Memset(insn::Memset { dst, value }) => {
            let d = view(dst, "dst", true)?;
            let fill = i64::from(bits_of(&memset_element(&d, *value)));
            let sig = Sig::of(Body::Fill, &d, None, None);
            (sig, d, Vec::new(), [None, None], fill)
        }
        _ => return None,
    };
    // The operator folding the loop's values into the row results, when
    // the command combines them into the accumulators.
    sig.fold = acc
        .as_ref()
        .and_then(|step| step.red.cmd.contributes().then_some(step.red.op));
    let tainted = !srcs.iter().all(|s| mem.is_clean(s));
    if srcs
        .iter()
        .any(|s| s.rows != dst.rows || s.free() != dst.free() * inner)
        || (tainted && !(reads_undefined(op) && srcs.iter().all(|s| mem.is_written(s))))
        || !srcs.iter().all(|s| no_hazard(&dst, s))
    {
        return None;
    }
    // Every check has passed: read the per-row scalars as the interpreter
    // does (clean, so the read records nothing but HBM traffic).
    let rows = dst.rows;
    let mut consts = vec![[0.0f32; 2]; rows];
    for (k, s) in scalars.iter().enumerate() {
        if let Some(s) = s {
            let xs = per_row(exec.mem, s, rows)?;
            consts.iter_mut().zip(xs).for_each(|(c, x)| c[k] = x);
        }
    }
    if let Some(s) = &init {
        let xs = per_row(exec.mem, s, rows)?;
        if let Some(step) = acc.as_mut() {
            step.init = Some(xs);
        } else if let Some(r) = running.as_mut() {
            r.i1 = xs;
        }
    }
    let starts = match &start {
        Some(s) => Some(per_row(exec.mem, s, rows)?),
        None => None,
    };
    Some(Plan {
        sig,
        dst,
        srcs,
        consts,
        fill,
        inner,
        acc,
        affine,
        starts,
        running,
        tainted,
    })
}

/// Whether `op` may read written but undefined elements natively (module
/// doc): its interpreter reads each source once, whole, through
/// `read_raw` in the order of the plan's `srcs`, reads only defined
/// per-row scalars, and writes its destination once through `write_raw`.
fn reads_undefined(op: &Op) -> bool {
    matches!(
        op,
        Op::TensorTensor(_)
            | Op::TensorScalar(_)
            | Op::ScalarTensorTensor(_)
            | Op::TensorScalarReduce(_)
            | Op::Activation(_)
            | Op::ActivationReduce(_)
            | Op::Activate2(_)
            | Op::Exponential(_)
            | Op::TensorReduce(_)
    )
}

/// The value per row of a scalar operand whose checks have passed.
fn per_row(mem: &mut MemoryState, s: &ScalarSource, rows: usize) -> Option<Vec<f32>> {
    Some(match s {
        ScalarSource::Imm(x) => vec![*x; rows],
        ScalarSource::Vector(v) => {
            let xs = mem.read_f32(v).ok()?;
            xs.into_iter().step_by(v.values_per_row()).collect()
        }
    })
}

/// Where a per-row scalar comes from.
enum ScalarSource {
    Imm(f32),
    /// A `(P, ≥1)` vector whose bytes are clean; its first value per row.
    Vector(View),
}

/// A scalar operand checked as the interpreter checks it (`None` when it
/// would fault or read undefined data); an absent one reads as 0.
fn scalar(
    mem: &MemoryState,
    regs: &[i32],
    s: Option<&Scalar>,
    field: &'static str,
    rows: usize,
) -> Option<Option<ScalarSource>> {
    Some(match s {
        None => None,
        Some(Scalar::Imm(x)) => Some(ScalarSource::Imm(x.get())),
        Some(Scalar::Vector(ap)) => {
            let v = mem.view(ap, regs, field, false).ok()?;
            if !plain(&[&v]) || v.rows != rows || v.free() == 0 || !mem.is_clean(&v) {
                return None;
            }
            Some(ScalarSource::Vector(v))
        }
    })
}

/// No operand is a packed x4 dtype.
fn plain(vs: &[&View]) -> bool {
    vs.iter().all(|v| !v.dtype.is_packed_x4())
}

/// Whether reading `src` element by element, each just before the
/// destination element of the same position is written, reads what the
/// interpreter reads (everything before any write).
fn no_hazard(dst: &View, src: &View) -> bool {
    if !overlap(dst, src) {
        return true;
    }
    let same_layout = dst.size == src.size
        && dst.row_base == src.row_base
        && dst.row_step == src.row_step
        && dst.run_len == src.run_len
        && dst.runs == src.runs;
    same_layout && injective(dst)
}

/// Whether two views may share a byte. On chip, rows are partitions:
/// views overlap only in common partitions at common bytes of a
/// partition.
fn overlap(x: &View, y: &View) -> bool {
    if x.space != y.space || x.elements() == 0 || y.elements() == 0 {
        return false;
    }
    let on_chip = !matches!(x.space, SpaceId::Hbm(_));
    if on_chip && x.row_step == y.row_step && x.row_step > 0 {
        let parts = x.part_start < y.part_start + y.rows && y.part_start < x.part_start + x.rows;
        let within = |v: &View| {
            let (lo, hi) = v.row_span();
            let base = v.row_base - v.part_start as i64 * v.row_step;
            (base + lo, base + hi)
        };
        let ((xlo, xhi), (ylo, yhi)) = (within(x), within(y));
        return parts && xlo < yhi && ylo < xhi;
    }
    let ((xlo, xhi), (ylo, yhi)) = (x.span(), y.span());
    xlo < yhi && ylo < xhi
}

/// Whether no two elements of `v` share a byte.
fn injective(v: &View) -> bool {
    let run_bytes = (v.run_len * v.size) as i64;
    let apart = |runs: &[i64]| runs.windows(2).all(|w| w[1] - w[0] >= run_bytes);
    // Runs are usually in ascending order already: sort a copy only if not.
    let disjoint = if v.runs.is_sorted() {
        apart(&v.runs)
    } else {
        let mut runs = v.runs.clone();
        runs.sort_unstable();
        apart(&runs)
    };
    let (lo, hi) = v.row_span();
    disjoint && (v.rows <= 1 || hi - lo <= v.row_step.abs())
}

/// A piece of a row in which an operand advances by a constant stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    /// First element (position in the row) and element count.
    start: usize,
    len: usize,
    /// Byte offset of the first element from the row's address, and the
    /// bytes between elements.
    offset: i64,
    stride: i64,
}

/// The longest constant-stride pieces of a row of `v`, in order.
fn segments(v: &View) -> Vec<Segment> {
    let size = v.size as i64;
    if v.run_len > 1 {
        return v
            .runs
            .iter()
            .enumerate()
            .map(|(j, &r)| Segment {
                start: j * v.run_len,
                len: v.run_len,
                offset: r,
                stride: size,
            })
            .collect();
    }
    // Single elements (a strided or broadcast dim innermost): group runs of
    // equal distance.
    let mut out: Vec<Segment> = Vec::new();
    for (j, &r) in v.runs.iter().enumerate() {
        if let Some(last) = out.last_mut() {
            let next = last.offset + last.stride * last.len as i64;
            if last.len == 1 {
                last.stride = r - last.offset;
                last.len = 2;
                continue;
            }
            if next == r {
                last.len += 1;
                continue;
            }
        }
        out.push(Segment {
            start: j,
            len: 1,
            offset: r,
            stride: size,
        });
    }
    out
}

/// Runs a planned instruction: the compiled loop over every row and piece,
/// then the bookkeeping of the write. Gives each row's running `acc`
/// after its last element: the fold of the computed values (`Sig::fold`,
/// from the identity of its operator), or the running value of a scan
/// from the row's entry of `starts`.
fn execute_plan(
    mem: &mut MemoryState,
    plan: &Plan<'_>,
    kernel: native::Kernel,
    starts: Option<Vec<f32>>,
) -> Vec<f32> {
    let start = plan.sig.fold.map_or(0.0, identity);
    let mut rows = starts.unwrap_or_else(|| vec![start; plan.dst.rows]);
    if plan.dst.elements() == 0 {
        // Nothing moves (and a shared input must not be copied for it).
        return rows;
    }
    for s in &plan.srcs {
        mem.count_read(s);
    }
    // At most two sources (a loop has three streams), so the per-source
    // state lives in fixed arrays: nothing below allocates per row.
    let n_srcs = plan.srcs.len();
    let mut ids = [plan.dst.space; NATIVE_SOURCES];
    let mut src_segs: [Vec<Segment>; NATIVE_SOURCES] = Default::default();
    for (k, s) in plan.srcs.iter().enumerate() {
        ids[k] = s.space;
        src_segs[k] = segments(s);
    }
    let src_segs = &src_segs[..n_srcs];
    let spaces = mem.native_spaces(plan.dst.space, &ids[..n_srcs]);
    let reduce = matches!(plan.sig.body, Body::Reduce { .. });
    let dst_segs = if reduce {
        runs_of(&plan.dst, plan.inner)
    } else {
        segments(&plan.dst)
    };
    let free = plan.dst.free() * plan.inner;
    let stream =
        |base: (*const u8, usize), row: i64, row_step: i64, s: Segment, i: usize| native::Stream {
            base: base.0,
            len: base.1,
            offset: row + s.offset + (i - s.start) as i64 * s.stride,
            row_step,
            stride: s.stride,
        };
    let dst_space = (spaces.dst.0.cast_const(), spaces.dst.1);
    // Every row in one call when each operand's row is one constant-stride
    // piece, its rows are evenly spaced, and the fill bits are the same
    // for every row.
    let whole_rows = !reduce
        && plan.affine.as_ref().is_none_or(|a| a.base.is_none())
        && dst_segs.len() == 1
        && plan.dst.row_addrs.is_none()
        && src_segs.iter().all(|segs| segs.len() == 1)
        && plan.srcs.iter().all(|s| s.row_addrs.is_none());
    if whole_rows {
        let mut streams = [native::Stream::UNUSED; 3];
        let d = &plan.dst;
        streams[0] = stream(dst_space, d.row_base, d.row_step, dst_segs[0], 0);
        for (n, (segs, s)) in src_segs.iter().zip(&plan.srcs).enumerate() {
            streams[n + 1] = stream(spaces.srcs[n], s.row_base, s.row_step, segs[0], 0);
        }
        if let Some(affine) = &plan.affine {
            streams[n_srcs + 1] = affine_stream(affine, 0);
        }
        kernel.call_rows(d.rows, free, &streams, &plan.consts, plan.fill, &mut rows);
        mem.wrote(&plan.dst);
        return rows;
    }
    // The pieces of every row in order, run after (perhaps split over
    // two threads by rows: `Kernel::call_pieces`).
    let mut pieces = Vec::new();
    for p in 0..rows.len() {
        let dst_row = plan.dst.row_addr(p);
        let mut src_rows = [0i64; NATIVE_SOURCES];
        for (row, s) in src_rows.iter_mut().zip(&plan.srcs) {
            *row = s.row_addr(p);
        }
        let (mut di, mut si) = (0usize, [0usize; NATIVE_SOURCES]);
        let mut i = 0;
        while i < free {
            let d = dst_segs[di];
            let mut end = d.start + d.len;
            for (segs, &k) in src_segs.iter().zip(&si) {
                end = end.min(segs[k].start + segs[k].len);
            }
            let mut streams = [native::Stream::UNUSED; 3];
            streams[0] = stream(dst_space, dst_row, 0, d, i);
            for (n, ((segs, &k), &row)) in src_segs.iter().zip(&si).zip(&src_rows).enumerate() {
                streams[n + 1] = stream(spaces.srcs[n], row, 0, segs[k], i);
            }
            if let Some(affine) = &plan.affine {
                streams[n_srcs + 1] = affine_stream(affine, i);
            }
            let fill = if let Some((offset, cm)) = plan.affine.as_ref().and_then(|a| a.base) {
                i64::from(affine_base(offset, cm, p))
            } else if reduce {
                let first = if i == d.start { REDUCE_FIRST } else { 0 };
                let last = if end == d.start + d.len {
                    REDUCE_LAST
                } else {
                    0
                };
                first | last
            } else {
                plan.fill
            };
            pieces.push(native::Piece {
                row: p,
                n: end - i,
                streams,
                fill,
            });
            i = end;
            if d.start + d.len == i {
                di += 1;
            }
            for (segs, k) in src_segs.iter().zip(si.iter_mut()) {
                if segs[*k].start + segs[*k].len == i {
                    *k += 1;
                }
            }
        }
    }
    kernel.call_pieces(&pieces, &plan.consts, &mut rows);
    mem.wrote(&plan.dst);
    rows
}

/// The stream of `affine`'s row from position `i`, the same for every row.
fn affine_stream(affine: &Affine, i: usize) -> native::Stream {
    native::Stream {
        base: affine.row.as_ptr().cast(),
        len: affine.row.len() * 4,
        offset: i as i64 * 4,
        row_step: 0,
        stride: 4,
    }
}

/// The pieces of a row of a `Body::Reduce` loop, one per destination
/// element of `v`: `inner` source positions that all name that element
/// (stride 0).
fn runs_of(v: &View, inner: usize) -> Vec<Segment> {
    (0..v.free())
        .map(|k| Segment {
            start: k * inner,
            len: inner,
            offset: v.runs[k / v.run_len] + ((k % v.run_len) * v.size) as i64,
            stride: 0,
        })
        .collect()
}
