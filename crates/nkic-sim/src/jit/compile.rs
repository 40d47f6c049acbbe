//! Cranelift code generation for one `Sig`: a loop over `rows` rows of `n`
//! elements of up to three strided streams that decodes, computes and encodes each
//! element in one pass, and the process's compiled loops (`kernel`).
//!
//! One thread (`nkic-jit`, started by the first request or by
//! `start`) owns the Cranelift module and compiles every loop of the
//! process, each signature once, in the order they are asked for. A run
//! that does not wait (`SimConfig::jit_background`) interprets an
//! instruction whose loop is still compiling, which gives the same bits:
//! a loop takes about a millisecond to compile, and the command line's
//! kernels run each signature a few dozen times (the 1024³ bf16 matmul
//! waited 3–5 ms for its two loops, where interpreting their first
//! instructions costs a fraction of that).
//!
//! Numerics are the interpreter's by construction: `f32` loads and stores
//! move bits; `bf16` decodes by placing the bits and encodes with the
//! `half` crate's rounding (the `numerics` rule), both written out below;
//! `fp16` decodes through a table of `numerics::to_f32` and encodes with
//! the same rounding, written out below;
//! `add`, `subtract`, `multiply` and `square` are single IEEE operations
//! with the interpreter's operand order, so even NaN payloads agree; the
//! `exp` activation is `crate::exp::fast`'s operations written out, calling
//! back where that function would defer to libm. Over dense f32 and bf16
//! streams those bodies run four elements at a time (`Emit::wide`), the
//! same operations per lane, and `exp` in chunks through
//! `exp::exp_in_place` (`Emit::wide_exp`). Every other dtype,
//! operator and activation function calls the interpreter's own Rust
//! function through a callback.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, OnceLock, TryLockError, mpsc};

use cranelift_codegen::Context;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, Block, BlockArg, Endianness, Inst, InstBuilder, MemFlagsData, SigRef, StackSlotData,
    StackSlotKind, Type, Value, types,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};
use nkic_isa::{ActFunc, AluOp, DType, numerics};

use super::native::{self, Kernel};
use super::{Body, Sig};
use crate::alu::{activation, alu};

/// The compiling thread's Cranelift module and contexts.
struct Jit {
    module: JITModule,
    ctx: Context,
    fctx: FunctionBuilderContext,
    count: usize,
}

/// The process's compiled loops and the queue of the thread that makes
/// them.
struct Service {
    /// Every signature asked for: `None` while it compiles, then its loop
    /// (`Some(None)`: it cannot be compiled here, and the interpreter runs
    /// its instructions).
    loops: Mutex<HashMap<Sig, Option<Option<Kernel>>>>,
    /// Notified whenever a loop is done.
    done: Condvar,
    /// The compiling thread's queue; `None` if the thread could not start.
    requests: Option<mpsc::Sender<Sig>>,
    /// The process the thread runs in: a child forked from it (Python's
    /// `multiprocessing`) has no such thread (see `kernel`).
    pid: u32,
}

static SERVICE: OnceLock<Service> = OnceLock::new();

/// The service, its thread started on first use.
fn service() -> &'static Service {
    SERVICE.get_or_init(|| {
        let (requests, queue) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("nkic-jit".to_string())
            .spawn(move || compile_requests(&queue));
        Service {
            loops: Mutex::new(HashMap::new()),
            done: Condvar::new(),
            requests: spawned.ok().map(|_| requests),
            pid: std::process::id(),
        }
    })
}

/// Starts the compiling thread, which builds its Cranelift module before
/// any loop is asked for.
pub(super) fn start() {
    service();
}

/// The compiling thread: builds the module, then compiles each requested
/// signature and publishes the loop. A panic while compiling (a bug in
/// code generation) leaves that signature to the interpreter and the
/// module rebuilt, instead of leaving a waiting run hanging.
fn compile_requests(queue: &mpsc::Receiver<Sig>) {
    let build = || std::panic::catch_unwind(new_jit).ok().flatten();
    let mut jit = build();
    for sig in queue {
        let compiled = jit
            .as_mut()
            .map(|j| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| j.compile(sig))));
        let k = match compiled {
            Some(Ok(k)) => k,
            Some(Err(_)) => {
                jit = build();
                None
            }
            None => None,
        };
        let service = service();
        if let Ok(mut loops) = service.loops.lock() {
            loops.insert(sig, Some(k));
        }
        service.done.notify_all();
    }
}

/// The compiled loop of `sig`, asking the compiling thread for it the
/// first time; `None` when it cannot be compiled here, or, unless `wait`,
/// while it is being compiled.
pub(super) fn kernel(sig: Sig, wait: bool) -> Option<Kernel> {
    service().kernel(sig, wait, std::process::id)
}

impl Service {
    /// [`kernel`] in the process `pid` names. A child forked from this
    /// process (Python's `multiprocessing`) has no compiling thread, and a
    /// lock that one of the parent's threads held at the fork stays
    /// locked in the child for ever: the child runs the loops compiled
    /// before the fork when the lock is free, and interprets the rest. The
    /// process is asked (a system call) only off the path of a loop that
    /// is ready.
    fn kernel(&self, sig: Sig, wait: bool, pid: fn() -> u32) -> Option<Kernel> {
        let forked = || self.pid != pid();
        let mut loops = match self.loops.try_lock() {
            Ok(loops) => loops,
            Err(TryLockError::WouldBlock) if !forked() => self.loops.lock().ok()?,
            Err(_) => return None,
        };
        loop {
            match loops.get(&sig) {
                Some(Some(done)) => return *done,
                _ if forked() => return None,
                Some(None) if !wait => return None,
                Some(None) => loops = self.done.wait(loops).ok()?,
                None => {
                    self.requests.as_ref()?.send(sig).ok()?;
                    loops.insert(sig, None);
                }
            }
        }
    }
}

fn new_jit() -> Option<Jit> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    flags.set("use_colocated_libcalls", "false").ok()?;
    flags.set("is_pic", "false").ok()?;
    // The IR verifier checks our own code generation: on in debug builds
    // (the test suite, whose differential tests compile every kind of
    // loop), off in release, where it would only add compile time.
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    flags.set("enable_verifier", verify).ok()?;
    let isa = cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()?;
    let module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    Some(Jit {
        ctx: module.make_context(),
        module,
        fctx: FunctionBuilderContext::new(),
        count: 0,
    })
}

impl Jit {
    fn compile(&mut self, sig: Sig) -> Option<Kernel> {
        self.count += 1;
        let name = format!("nkic_loop{}", self.count);
        let signature = native::signature(&self.module);
        let id = self
            .module
            .declare_function(&name, Linkage::Local, &signature)
            .ok()?;
        self.ctx.func.signature = signature;
        let ptr = self.module.target_config().pointer_type();
        let callbacks = Callbacks::import(&mut self.ctx.func, &self.module);
        build(
            FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx),
            sig,
            ptr,
            &callbacks,
            self.module.isa().frontend_config(),
        );
        let defined = self.module.define_function(id, &mut self.ctx);
        self.module.clear_context(&mut self.ctx);
        defined.ok()?;
        self.module.finalize_definitions().ok()?;
        let size = |dt: Option<DType>| dt.map_or(0, |d| d.size() as usize);
        Kernel::finalized(
            &self.module,
            id,
            [size(Some(sig.dst)), size(sig.a), size(sig.b)],
        )
    }
}

/// The Rust functions a loop may call, as addresses and signatures.
struct Callbacks {
    alu: (SigRef, i64),
    activation: (SigRef, i64),
    decode: (SigRef, i64),
    encode: (SigRef, i64),
    /// `exp_in_place(buffer, len)` (`native::exp_in_place`).
    exp_in_place: (SigRef, i64),
}

impl Callbacks {
    fn import(func: &mut cranelift_codegen::ir::Function, module: &JITModule) -> Callbacks {
        let mut sig = |params: &[Type], returns: &[Type]| {
            let mut s = module.make_signature();
            s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
            s.returns.extend(returns.iter().map(|&t| AbiParam::new(t)));
            func.import_signature(s)
        };
        let (i32_, f32_) = (types::I32, types::F32);
        Callbacks {
            alu: (
                sig(&[i32_, f32_, f32_], &[f32_]),
                cb_alu as *const () as usize as i64,
            ),
            activation: (
                sig(&[i32_, f32_, f32_], &[f32_]),
                cb_activation as *const () as usize as i64,
            ),
            decode: (
                sig(&[i32_, i32_], &[f32_]),
                cb_decode as *const () as usize as i64,
            ),
            encode: (
                sig(&[i32_, f32_], &[i32_]),
                cb_encode as *const () as usize as i64,
            ),
            exp_in_place: (
                sig(&[module.target_config().pointer_type(), types::I64], &[]),
                native::exp_in_place as *const () as usize as i64,
            ),
        }
    }
}

/// `alu(AluOp::ALL[op], a, b)`.
extern "C" fn cb_alu(op: u32, a: f32, b: f32) -> f32 {
    alu(AluOp::ALL[op as usize], a, b)
}

/// `activation(ActFunc::ALL[func], x, alpha)`.
extern "C" fn cb_activation(func: u32, x: f32, alpha: f32) -> f32 {
    activation(ActFunc::ALL[func as usize], x, alpha)
}

/// One element's bits of `DType::ALL[dt]` to f32, as `numerics::decode`.
extern "C" fn cb_decode(dt: u32, bits: u32) -> f32 {
    numerics::to_f32(DType::ALL[dt as usize], bits)
}

/// f32 to one element's bits of `DType::ALL[dt]`, as `numerics::encode`.
extern "C" fn cb_encode(dt: u32, x: f32) -> u32 {
    numerics::from_f32(DType::ALL[dt as usize], x)
}

/// The index of `x` in `all`, as the callbacks take it.
fn index_of<T: PartialEq>(all: &[T], x: &T) -> i64 {
    all.iter().position(|a| a == x).unwrap_or(0) as i64
}

/// Emits the loop of `sig` into `b`'s function: a loop over the rows
/// around the loop over a row's elements.
fn build(
    mut b: FunctionBuilder<'_>,
    sig: Sig,
    ptr: Type,
    cb: &Callbacks,
    frontend: TargetFrontendConfig,
) {
    let entry = b.create_block();
    let row_header = b.create_block();
    let row_body = b.create_block();
    let header = b.create_block();
    let body = b.create_block();
    let row_end = b.create_block();
    let exit = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let [
        rows,
        n,
        d0,
        drs,
        ds,
        a0,
        ars,
        as_,
        b0,
        brs,
        bs,
        consts,
        fill,
        accs,
    ] = params[..14]
        .try_into()
        .expect("the signature has 14 parameters");
    for t in [types::I64, ptr, ptr, ptr] {
        b.append_block_param(row_header, t);
    }
    for t in [types::I64, ptr, ptr, ptr, types::F32] {
        b.append_block_param(header, t);
    }
    b.append_block_param(row_end, types::F32);
    let zero = b.ins().iconst(types::I64, 0);
    b.ins()
        .jump(row_header, &[zero.into(), d0.into(), a0.into(), b0.into()]);

    // Row `r` starts at `dr`, `ar`, `br` with its constants and its fold.
    b.switch_to_block(row_header);
    let rp = b.block_params(row_header).to_vec();
    let (r, dr, ar, br) = (rp[0], rp[1], rp[2], rp[3]);
    let more_rows = b.ins().icmp(IntCC::SignedLessThan, r, rows);
    b.ins().brif(more_rows, row_body, &[], exit, &[]);

    b.switch_to_block(row_body);
    let pair = b.ins().ishl_imm_u(r, 3);
    let pair = b.ins().iadd(consts, pair);
    let c0 = b.ins().load(types::F32, flags(), pair, 0);
    let c1 = b.ins().load(types::F32, flags(), pair, 4);
    let acc_at = b.ins().ishl_imm_u(r, 2);
    let acc_at = b.ins().iadd(accs, acc_at);
    let acc0 = b.ins().load(types::F32, flags(), acc_at, 0);
    if sig.body == Body::Copy {
        wide_copy(
            &mut b,
            sig,
            [n, dr, ds, ar, as_, br, acc0],
            header,
            frontend,
        );
    } else if lanes_of(sig) {
        let mut e = Emit { b: &mut b, cb };
        let params = [n, dr, ds, ar, as_, br, bs, acc0];
        if matches!(sig.body, Body::Activation { .. }) {
            e.wide_exp(sig, params, [c0, c1], header);
        } else {
            e.wide(sig, params, [c0, c1], fill, header);
        }
    } else if let Body::Reduce { op, .. } = sig.body {
        // A run's first element starts its fold before the loop, so the
        // fold's dependency chain is the operator alone; a max or min
        // fold then goes on in lanes where it can (`Emit::wide_fold`).
        let from = if folds_in_lanes(sig) {
            let from = b.create_block();
            for t in [types::I64, ptr, ptr, ptr, types::F32] {
                b.append_block_param(from, t);
            }
            from
        } else {
            header
        };
        let start = b.create_block();
        let first = b.ins().band_imm_u(fill, super::REDUCE_FIRST);
        let first = b.ins().icmp_imm_u(IntCC::NotEqual, first, 0);
        let some = b.ins().icmp_imm_s(IntCC::SignedGreaterThan, n, 0);
        let starts = b.ins().band(first, some);
        let continued = [zero, dr, ar, br, acc0].map(BlockArg::from);
        b.ins().brif(starts, start, &[], from, &continued);
        b.switch_to_block(start);
        let x = Emit { b: &mut b, cb }.decode(sig.a.unwrap_or(DType::F32), ar);
        let one = b.ins().iconst(types::I64, 1);
        let (d1, a1, b1) = (
            b.ins().iadd(dr, ds),
            b.ins().iadd(ar, as_),
            b.ins().iadd(br, bs),
        );
        to_elements(&mut b, from, [one, d1, a1, b1, x]);
        if from != header {
            b.switch_to_block(from);
            let [i0, d, a, bp, acc] = b.block_params(from)[..] else {
                unreachable!("five parameters");
            };
            let params = [n, i0, d, ds, a, as_, bp, bs, acc];
            Emit { b: &mut b, cb }.wide_fold(sig, op, params, header);
        }
    } else {
        to_elements(&mut b, header, [zero, dr, ar, br, acc0]);
    }

    b.switch_to_block(header);
    let hp = b.block_params(header).to_vec();
    let (i, d, a, bp, acc) = (hp[0], hp[1], hp[2], hp[3], hp[4]);
    let more = b.ins().icmp(IntCC::SignedLessThan, i, n);
    b.ins().brif(more, body, &[], row_end, &[acc.into()]);

    b.switch_to_block(body);
    let mut e = Emit { b: &mut b, cb };
    let value = e.element(sig, Element { d, a, b: bp }, [c0, c1], fill, acc);
    let acc1 = match (sig.body, sig.fold) {
        (
            Body::Reduce { .. }
            | Body::ScalarTensorTensor { scan: true, .. }
            | Body::Cumulative { .. },
            _,
        )
        | (_, None) => value,
        (_, Some(op)) => e.alu(op, acc, value),
    };
    let i1 = b.ins().iadd_imm_s(i, 1);
    let d1 = b.ins().iadd(d, ds);
    let a1 = b.ins().iadd(a, as_);
    let b1 = b.ins().iadd(bp, bs);
    to_elements(&mut b, header, [i1, d1, a1, b1, acc1]);

    b.switch_to_block(row_end);
    let acc = b.block_params(row_end)[0];
    if let Body::Reduce { negate, .. } = sig.body {
        // The end of a run: store its result, negated if asked.
        let store = b.create_block();
        let done = b.create_block();
        let last = b.ins().band_imm_u(fill, super::REDUCE_LAST);
        b.ins().brif(last, store, &[], done, &[]);
        b.switch_to_block(store);
        let r = if negate { b.ins().fneg(acc) } else { acc };
        Emit { b: &mut b, cb }.encode(sig.dst, r, dr);
        b.ins().jump(done, &[]);
        b.switch_to_block(done);
    }
    b.ins().store(flags(), acc, acc_at, 0);
    let r1 = b.ins().iadd_imm_s(r, 1);
    let dr1 = b.ins().iadd(dr, drs);
    let ar1 = b.ins().iadd(ar, ars);
    let br1 = b.ins().iadd(br, brs);
    b.ins()
        .jump(row_header, &[r1.into(), dr1.into(), ar1.into(), br1.into()]);

    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(frontend);
}

/// A loop that runs ahead of the element loop over dense streams: its
/// position `pos` starts at 0 and moves by `step` while `pos + step` is
/// at most the limit; after it ([`Wide::close`]) the caller continues at
/// the first position it left (in `pos`) and jumps to the element loop.
struct Wide {
    header: Block,
    tail: Block,
    pos: Value,
    next: Value,
}

impl Wide {
    /// Enters the loop when every stream of `streams` is dense (each
    /// stride its element size; else the element loop at `elements`
    /// starts with `start`: the destination, the two sources and the
    /// fold), and switches to its body with `pos`.
    fn enter(
        b: &mut FunctionBuilder<'_>,
        streams: &[(Value, i64)],
        (limit, step): (Value, i64),
        elements: Block,
        start: [Value; 4],
    ) -> Wide {
        let header = b.create_block();
        let body = b.create_block();
        let tail = b.create_block();
        b.append_block_param(header, types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        if_dense(b, streams, (header, &[zero.into()]), elements, start);
        b.switch_to_block(header);
        let pos = b.block_params(header)[0];
        let next = b.ins().iadd_imm_s(pos, step);
        let fits = b.ins().icmp(IntCC::SignedLessThanOrEqual, next, limit);
        b.ins().brif(fits, body, &[], tail, &[]);
        b.switch_to_block(body);
        Wide {
            header,
            tail,
            pos,
            next,
        }
    }

    /// Ends the body (back to the header) and switches to the code after
    /// the loop.
    fn close(&self, b: &mut FunctionBuilder<'_>) {
        b.ins().jump(self.header, &[self.next.into()]);
        b.switch_to_block(self.tail);
    }
}

/// Branches to `dense` with its arguments when every stream of `streams`
/// (a stride and an element size) is contiguous, else to the element loop
/// at `elements` from element 0 with `start` (the destination, the two
/// sources and the fold).
fn if_dense(
    b: &mut FunctionBuilder<'_>,
    streams: &[(Value, i64)],
    (dense, args): (Block, &[BlockArg]),
    elements: Block,
    start: [Value; 4],
) {
    let mut all = b.ins().iconst(types::I8, 1);
    for &(stride, size) in streams {
        let unit = b.ins().icmp_imm_s(IntCC::Equal, stride, size);
        all = b.ins().band(all, unit);
    }
    let zero = b.ins().iconst(types::I64, 0);
    let [d0, a0, b0, acc] = start;
    b.ins().brif(
        all,
        dense,
        args,
        elements,
        &[zero.into(), d0.into(), a0.into(), b0.into(), acc.into()],
    );
}

/// The start of a raw copy: when both streams are contiguous, the row's
/// bytes move in one call of the C library's `memmove` (the caller
/// checked the first and the last element, so every byte between lies in
/// the stream's memory; the destination and the source either do not
/// overlap or coincide), and the element loop at `header` starts past
/// the end; otherwise the element loop copies one element at a time.
fn wide_copy(
    b: &mut FunctionBuilder<'_>,
    sig: Sig,
    params: [Value; 7],
    header: Block,
    frontend: TargetFrontendConfig,
) {
    let [n, d0, ds, a0, as_, b0, acc] = params;
    let size = i64::from(sig.dst.size());
    let whole = b.create_block();
    let streams = [(ds, size), (as_, size)];
    if_dense(b, &streams, (whole, &[]), header, [d0, a0, b0, acc]);
    b.switch_to_block(whole);
    let total = b.ins().imul_imm_s(n, size);
    b.call_memmove(frontend, d0, a0, total);
    let d = b.ins().iadd(d0, total);
    let a = b.ins().iadd(a0, total);
    to_elements(b, header, [n, d, a, b0, acc]);
}

/// The vector types of `Emit::wide`.
const F32X4: Type = types::F32X4;
const I32X4: Type = types::I32X4;
const I64X2: Type = types::I64X2;

/// Whether `sig` runs four elements at a time when its streams are dense
/// (`Emit::wide`): f32 or bf16 operands and result, no fold, and a body
/// whose every step has a lane form giving the element loop's bits:
/// operators that `Emit::alu` writes as one IEEE operation, which works
/// per lane on vectors, dtype conversions, `affine_select` into f32 (a
/// comparison and a select per lane), and the `exp` activation
/// (`Emit::wide_exp`).
fn lanes_of(sig: Sig) -> bool {
    let lane_op = |op: AluOp| {
        matches!(
            op,
            AluOp::Add | AluOp::Average | AluOp::Subtract | AluOp::Multiply | AluOp::Bypass
        )
    };
    let lane_step = |step: Option<(AluOp, bool)>| step.is_none_or(|(op, _)| lane_op(op));
    let lane_dt = |dt: Option<DType>| matches!(dt, Some(DType::F32 | DType::BF16));
    let body = match sig.body {
        Body::Binary(op) => lane_dt(sig.b) && lane_op(op),
        Body::Scalar { op0, op1, .. } => sig.b.is_none() && lane_op(op0) && lane_step(op1),
        Body::ScalarTensorTensor {
            op0,
            op1,
            scan: false,
            ..
        } => lane_dt(sig.b) && lane_op(op0) && lane_op(op1),
        Body::Activation {
            func: ActFunc::Exp,
            op0,
            op1,
        } => sig.b.is_none() && lane_step(op0) && lane_step(op1),
        Body::Convert => sig.b.is_none(),
        // An f32 destination holds the kept source value or `on_false`
        // exactly, so the element loop's raw-bits copy and its
        // decode-select-encode agree with one select in lanes.
        Body::AffineSelect { cmp } => sig.dst == DType::F32 && compare_cc(cmp).is_some(),
        _ => false,
    };
    lane_dt(Some(sig.dst)) && lane_dt(sig.a) && body && sig.fold.is_none()
}

/// The condition of a comparison operator (`alu::bool_f`'s), which gives
/// 1.0 where it holds and 0.0 elsewhere; `None` for other operators.
fn compare_cc(op: AluOp) -> Option<FloatCC> {
    Some(match op {
        AluOp::Equal => FloatCC::Equal,
        AluOp::NotEqual => FloatCC::NotEqual,
        AluOp::GreaterEqual => FloatCC::GreaterThanOrEqual,
        AluOp::Greater => FloatCC::GreaterThan,
        AluOp::LessEqual => FloatCC::LessThanOrEqual,
        AluOp::Less => FloatCC::LessThan,
        _ => return None,
    })
}

/// Whether `sig` folds a row in four lanes where its source is dense
/// (`Emit::wide_fold`): a `tensor_reduce` by maximum or minimum of f32 or
/// bf16 elements.
fn folds_in_lanes(sig: Sig) -> bool {
    matches!(
        sig.body,
        Body::Reduce {
            op: AluOp::Maximum | AluOp::Minimum,
            ..
        }
    ) && matches!(sig.a, Some(DType::F32 | DType::BF16))
        && sig.fold.is_none()
}

/// Flags of a `bitcast` between vector types (little-endian lanes, as the
/// element loop's scalar loads see memory).
fn lanes() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

impl Emit<'_, '_> {
    /// The start of a row of a [`lanes_of`] signature: when every stream
    /// it uses is dense, four elements at a time in f32x4 lanes — the
    /// element loop's own `apply`/`alu` on vector values, so per lane the
    /// same IEEE operations in the same operand order and every bit (NaN
    /// payloads too) is the same; each lane reads its own position before
    /// writing it, and the planner admits an overlap only at the same
    /// positions. The element loop at `header` does the rest of the row.
    /// (An `exp` activation goes to [`Emit::wide_exp`].)
    fn wide(
        &mut self,
        sig: Sig,
        params: [Value; 8],
        [c0, c1]: [Value; 2],
        fill: Value,
        header: Block,
    ) {
        let [n, d0, ds, a0, as_, b0, bs, acc] = params;
        let size = |dt: Option<DType>| dt.map_or(4, |d| i64::from(d.size()));
        let (dsize, asize, bsize) = (size(Some(sig.dst)), size(sig.a), size(sig.b));
        let mut streams = vec![(ds, dsize), (as_, asize)];
        if sig.b.is_some() {
            streams.push((bs, bsize));
        }
        let wide = Wide::enter(self.b, &streams, (n, 4), header, [d0, a0, b0, acc]);
        let i = wide.pos;
        let at = |e: &mut Self, base: Value, size: i64| {
            let off = e.b.ins().imul_imm_s(i, size);
            e.b.ins().iadd(base, off)
        };
        let (at_d, at_a, at_b) = (
            at(self, d0, dsize),
            at(self, a0, asize),
            at(self, b0, bsize),
        );
        let src = |dt: Option<DType>| dt.unwrap_or(DType::F32);
        let x = self.decode_lanes(src(sig.a), at_a);
        let splat = |e: &mut Self, k: Value| e.b.ins().splat(F32X4, k);
        let r = match sig.body {
            Body::Binary(op) => {
                let y = self.decode_lanes(src(sig.b), at_b);
                self.alu(op, x, y)
            }
            Body::Scalar { op0, reverse0, op1 } => {
                let k0 = splat(self, c0);
                let mut t = self.apply(op0, x, k0, reverse0);
                if let Some((op1, reverse1)) = op1 {
                    let k1 = splat(self, c1);
                    t = self.apply(op1, t, k1, reverse1);
                }
                t
            }
            Body::ScalarTensorTensor {
                op0,
                reverse0,
                op1,
                reverse1,
                ..
            } => {
                let y = self.decode_lanes(src(sig.b), at_b);
                let k0 = splat(self, c0);
                let t = self.apply(op0, x, k0, reverse0);
                self.apply(op1, t, y, reverse1)
            }
            Body::Convert => x,
            Body::AffineSelect { cmp } => {
                // The element loop's steps four at a time: the row's base
                // plus the shared row's integers, converted, compared
                // with zero; the source's value where that holds, else
                // `on_false` (`c0`).
                let cc = compare_cc(cmp).expect("lanes_of admits comparisons");
                let base = self.b.ins().ireduce(types::I32, fill);
                let base = self.b.ins().splat(I32X4, base);
                let row = self.b.ins().load(I32X4, flags(), at_b, 0);
                let v = self.b.ins().iadd(base, row);
                let v = self.b.ins().fcvt_from_sint(F32X4, v);
                let zero = self.b.ins().f32const(0.0);
                let zero = splat(self, zero);
                let holds = self.b.ins().fcmp(cc, v, zero);
                let holds = self.b.ins().bitcast(F32X4, lanes(), holds);
                let on_false = splat(self, c0);
                self.b.ins().bitselect(holds, x, on_false)
            }
            _ => unreachable!("lanes_of admits no other body"),
        };
        self.encode_lanes(sig.dst, r, at_d);
        wide.close(self.b);

        self.elements_from(header, i, [(d0, ds), (a0, as_), (b0, bs)], acc);
    }

    /// The start of a row of a [`lanes_of`] `exp` activation when its
    /// source and destination are dense: chunks of up to `exp::CHUNK`
    /// elements (a multiple of four) are decoded and put through `op0`
    /// and `op1` in f32x4 lanes into a buffer on the stack, which
    /// `exp::exp_in_place` (through `native::exp_in_place`) turns into
    /// `exp_f32`'s values, and then encoded into the destination; the
    /// element loop at `header` does the rest of the row. A chunk is read
    /// whole before any of it is written, and the planner admits an
    /// overlap of source and destination only at the same positions.
    fn wide_exp(&mut self, sig: Sig, params: [Value; 8], [c0, c1]: [Value; 2], header: Block) {
        let Body::Activation { op0, op1, .. } = sig.body else {
            unreachable!("wide_exp runs exp activations");
        };
        let [n, d0, ds, a0, as_, b0, bs, acc] = params;
        let (dsize, asize) = (
            i64::from(sig.dst.size()),
            i64::from(sig.a.map_or(4, |d| d.size())),
        );
        let chunks = self.b.create_block();
        let body = self.b.create_block();
        let tail = self.b.create_block();
        self.b.append_block_param(chunks, types::I64);
        self.b.append_block_param(tail, types::I64);
        let zero = self.b.ins().iconst(types::I64, 0);
        let streams = [(ds, dsize), (as_, asize)];
        if_dense(
            self.b,
            &streams,
            (chunks, &[zero.into()]),
            header,
            [d0, a0, b0, acc],
        );

        // A chunk: the whole groups of four left, at most CHUNK elements.
        self.b.switch_to_block(chunks);
        let pos = self.b.block_params(chunks)[0];
        let left = self.b.ins().isub(n, pos);
        let whole = self.b.ins().band_imm_u(left, !3);
        let most = self.b.ins().iconst(types::I64, crate::exp::CHUNK as i64);
        let len = self.b.ins().umin(whole, most);
        self.b
            .ins()
            .brif(len, body, &[], tail, &[BlockArg::Value(pos)]);

        self.b.switch_to_block(body);
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (crate::exp::CHUNK * 4) as u32,
            4,
        ));
        let ptr = self.b.func.dfg.value_type(d0);
        let buf = self.b.ins().stack_addr(ptr, slot, 0);
        let at = |e: &mut Self, base: Value, j: Value, size: i64| {
            let off = e.b.ins().imul_imm_s(j, size);
            e.b.ins().iadd(base, off)
        };
        let src = sig.a.unwrap_or(DType::F32);
        self.groups(len, |e, k| {
            let j = e.b.ins().iadd(pos, k);
            let at_a = at(e, a0, j, asize);
            let mut t = e.decode_lanes(src, at_a);
            for (step, c) in [(op0, c0), (op1, c1)] {
                if let Some((op, reverse)) = step {
                    let c = e.b.ins().splat(F32X4, c);
                    t = e.apply(op, t, c, reverse);
                }
            }
            let at_buf = at(e, buf, k, 4);
            e.b.ins().store(flags(), t, at_buf, 0);
        });
        self.call_void(self.cb.exp_in_place, &[buf, len]);
        self.groups(len, |e, k| {
            let at_buf = at(e, buf, k, 4);
            let y = e.b.ins().load(F32X4, flags(), at_buf, 0);
            let j = e.b.ins().iadd(pos, k);
            let at_d = at(e, d0, j, dsize);
            e.encode_lanes(sig.dst, y, at_d);
        });
        let next = self.b.ins().iadd(pos, len);
        self.b.ins().jump(chunks, &[next.into()]);

        self.b.switch_to_block(tail);
        let i = self.b.block_params(tail)[0];
        self.elements_from(header, i, [(d0, ds), (a0, as_), (b0, bs)], acc);
    }

    /// Jumps to the element loop's `header` at element `i` of the row:
    /// each stream's address (a start and a stride) moved `i` elements on.
    fn elements_from(&mut self, header: Block, i: Value, streams: [(Value, Value); 3], acc: Value) {
        let [d, a, b] = streams.map(|(base, stride)| {
            let off = self.b.ins().imul(i, stride);
            self.b.ins().iadd(base, off)
        });
        to_elements(self.b, header, [i, d, a, b, acc]);
    }

    /// Emits `each(k)` for `k = 0, 4, 8, …` below `len` (a multiple of
    /// four), as a loop, and continues after it.
    fn groups(&mut self, len: Value, mut each: impl FnMut(&mut Self, Value)) {
        let head = self.b.create_block();
        let body = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(head, types::I64);
        let zero = self.b.ins().iconst(types::I64, 0);
        self.b.ins().jump(head, &[zero.into()]);
        self.b.switch_to_block(head);
        let k = self.b.block_params(head)[0];
        let more = self.b.ins().icmp(IntCC::SignedLessThan, k, len);
        self.b.ins().brif(more, body, &[], done, &[]);
        self.b.switch_to_block(body);
        each(self, k);
        let next = self.b.ins().iadd_imm_s(k, 4);
        self.b.ins().jump(head, &[next.into()]);
        self.b.switch_to_block(done);
    }

    /// The rest of a row of a [`folds_in_lanes`] signature from element
    /// `i0`, whose fold so far is `acc`, when its source is dense: four
    /// lanes each fold every fourth element from the operator's identity
    /// (−∞ for maximum, +∞ for minimum, which it keeps only against
    /// itself), then `acc` folds the four, and the element loop at
    /// `header` does the rest of the row. The folded value is the element
    /// loop's, bits included, but where it is zero: a NaN anywhere gives
    /// the default NaN, and values that compare equal have equal bits but
    /// for ±0, where the element loop keeps the first zero it meets. So a
    /// zero result sends the element loop back to `i0` to fold the row in
    /// order.
    fn wide_fold(&mut self, sig: Sig, op: AluOp, params: [Value; 9], header: Block) {
        let [n, i0, d, ds, a, as_, bp, bs, acc] = params;
        let dt = sig.a.expect("a reduction reads a source");
        let size = i64::from(dt.size());
        let lanes_loop = self.b.create_block();
        let body = self.b.create_block();
        let done = self.b.create_block();
        for block in [lanes_loop, done] {
            self.b.append_block_param(block, types::I64);
            self.b.append_block_param(block, F32X4);
        }
        let identity = if op == AluOp::Maximum {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        };
        let identity = self.b.ins().f32const(identity);
        let identity = self.b.ins().splat(F32X4, identity);
        // At least one group, so every lane folds an element: then `acc`
        // is folded with an element too, as in the element loop (a NaN
        // `acc` alone would keep its payload there).
        let dense = self.b.ins().icmp_imm_s(IntCC::Equal, as_, size);
        let left = self.b.ins().isub(n, i0);
        let a_group = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, left, 4);
        let dense = self.b.ins().band(dense, a_group);
        let in_order = [i0, d, a, bp, acc].map(BlockArg::from);
        self.b.ins().brif(
            dense,
            lanes_loop,
            &[i0.into(), identity.into()],
            header,
            &in_order,
        );

        self.b.switch_to_block(lanes_loop);
        let [pos, folds] = self.b.block_params(lanes_loop)[..] else {
            unreachable!("two parameters");
        };
        let next = self.b.ins().iadd_imm_s(pos, 4);
        let fits = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, next, n);
        let exit = [pos, folds].map(BlockArg::from);
        self.b.ins().brif(fits, body, &[], done, &exit);

        self.b.switch_to_block(body);
        let k = self.b.ins().isub(pos, i0);
        let off = self.b.ins().imul_imm_s(k, size);
        let at = self.b.ins().iadd(a, off);
        let x = self.decode_lanes(dt, at);
        let cc = if op == AluOp::Maximum {
            FloatCC::GreaterThanOrEqual
        } else {
            FloatCC::LessThanOrEqual
        };
        let folded = self.select_or_nan_lanes(cc, folds, x);
        self.b.ins().jump(lanes_loop, &[next.into(), folded.into()]);

        self.b.switch_to_block(done);
        let [pos, folds] = self.b.block_params(done)[..] else {
            unreachable!("two parameters");
        };
        let mut m = acc;
        for lane in 0..4u8 {
            let x = self.b.ins().extractlane(folds, lane);
            m = self.alu(op, m, x);
        }
        let zero = self.b.ins().f32const(0.0);
        let is_zero = self.b.ins().fcmp(FloatCC::Equal, m, zero);
        let k = self.b.ins().isub(pos, i0);
        let mut moved = |base: Value, stride: Value| {
            let off = self.b.ins().imul(k, stride);
            let moved = self.b.ins().iadd(base, off);
            self.b.ins().select(is_zero, base, moved)
        };
        let (d1, a1, b1) = (moved(d, ds), moved(a, as_), moved(bp, bs));
        let pos = self.b.ins().select(is_zero, i0, pos);
        let m = self.b.ins().select(is_zero, acc, m);
        to_elements(self.b, header, [pos, d1, a1, b1, m]);
    }

    /// `select_or_nan` per f32 lane.
    fn select_or_nan_lanes(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        let keep_a = self.b.ins().fcmp(cc, a, b);
        let keep_a = self.b.ins().bitcast(F32X4, lanes(), keep_a);
        let picked = self.b.ins().bitselect(keep_a, a, b);
        let nan = self.b.ins().f32const(f32::NAN);
        let nan = self.b.ins().splat(F32X4, nan);
        let either_nan = self.b.ins().fcmp(FloatCC::Unordered, a, b);
        let either_nan = self.b.ins().bitcast(F32X4, lanes(), either_nan);
        self.b.ins().bitselect(either_nan, nan, picked)
    }

    /// Four f32 values of `dt` elements at `at` (`decode` per lane).
    fn decode_lanes(&mut self, dt: DType, at: Value) -> Value {
        match dt {
            DType::F32 => self.b.ins().load(F32X4, flags(), at, 0),
            DType::BF16 => {
                let h = self.b.ins().uload16x4(flags(), at, 0);
                let sixteen = self.b.ins().iconst(types::I32, 16);
                let bits = self.b.ins().ishl(h, sixteen);
                self.b.ins().bitcast(F32X4, lanes(), bits)
            }
            _ => unreachable!("lanes_of admits f32 and bf16"),
        }
    }

    /// Stores four f32 values rounded to `dt` at `at` (`encode` per lane;
    /// bf16 by `bf16_bits`'s steps on 32-bit lanes).
    fn encode_lanes(&mut self, dt: DType, x: Value, at: Value) {
        match dt {
            DType::F32 => {
                self.b.ins().store(flags(), x, at, 0);
            }
            DType::BF16 => {
                let k = |e: &mut Self, v: i64| {
                    let v = e.b.ins().iconst(types::I32, v);
                    e.b.ins().splat(I32X4, v)
                };
                let bits = self.b.ins().bitcast(I32X4, lanes(), x);
                let (abs_mask, inf) = (k(self, 0x7fff_ffff), k(self, 0x7f80_0000));
                let magnitude = self.b.ins().band(bits, abs_mask);
                let nan = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedGreaterThan, magnitude, inf);
                let sixteen = self.b.ins().iconst(types::I32, 16);
                let high = self.b.ins().ushr(bits, sixteen);
                let quiet_bit = k(self, 0x0040);
                let quiet = self.b.ins().bor(high, quiet_bit);
                let (half, rest_mask, zero) = (k(self, 0x8000), k(self, 0x1_7fff), k(self, 0));
                let round_bit = self.b.ins().band(bits, half);
                let round = self.b.ins().icmp(IntCC::NotEqual, round_bit, zero);
                let rest = self.b.ins().band(bits, rest_mask);
                let inexact = self.b.ins().icmp(IntCC::NotEqual, rest, zero);
                // All ones (-1) where it rounds up.
                let up = self.b.ins().band(round, inexact);
                let rounded = self.b.ins().isub(high, up);
                let h = self.b.ins().bitselect(nan, quiet, rounded);
                // Every lane fits 16 bits, so the saturating narrowing
                // keeps it; the low 64 bits hold the four of them.
                let narrow = self.b.ins().unarrow(h, h);
                let pair = self.b.ins().bitcast(I64X2, lanes(), narrow);
                let four = self.b.ins().extractlane(pair, 0);
                self.b.ins().store(flags(), four, at, 0);
            }
            _ => unreachable!("lanes_of admits f32 and bf16"),
        }
    }
}

/// Jumps to the element loop's `header` with its parameters: the element
/// index, the three streams' addresses and the fold.
fn to_elements(b: &mut FunctionBuilder<'_>, header: Block, params: [Value; 5]) {
    let [i, d, a, bp, acc] = params;
    b.ins().jump(
        header,
        &[i.into(), d.into(), a.into(), bp.into(), acc.into()],
    );
}

/// Instruction emission for one element.
struct Emit<'a, 'b> {
    b: &'a mut FunctionBuilder<'b>,
    cb: &'a Callbacks,
}

/// Loads and stores at addresses the caller checked (`native`), possibly
/// unaligned.
fn flags() -> MemFlagsData {
    let mut f = MemFlagsData::new();
    f.set_notrap();
    f
}

/// The element addresses of one iteration.
#[derive(Clone, Copy)]
struct Element {
    d: Value,
    a: Value,
    b: Value,
}

impl Emit<'_, '_> {
    /// One element of `sig`'s loop; gives the f32 value computed (the
    /// fold so far for `Reduce`; `acc` for the raw-bit bodies).
    fn element(
        &mut self,
        sig: Sig,
        at: Element,
        [c0, c1]: [Value; 2],
        fill: Value,
        acc: Value,
    ) -> Value {
        let src = |dt: Option<DType>| dt.unwrap_or(DType::F32);
        let Element { d, a, b } = at;
        match sig.body {
            Body::Copy => {
                let ty = int_type(sig.dst);
                let x = self.b.ins().load(ty, flags(), a, 0);
                self.b.ins().store(flags(), x, d, 0);
                acc
            }
            Body::Fill => {
                let ty = int_type(sig.dst);
                let x = if ty == types::I64 {
                    fill
                } else {
                    self.b.ins().ireduce(ty, fill)
                };
                self.b.ins().store(flags(), x, d, 0);
                acc
            }
            Body::Convert => {
                let x = self.decode(src(sig.a), a);
                self.encode(sig.dst, x, d);
                x
            }
            Body::Cumulative { op0, op1 } => {
                let x = self.decode(src(sig.a), a);
                let t = self.alu(op0, x, c0);
                let r = self.alu(op1, t, acc);
                self.encode(sig.dst, r, d);
                r
            }
            Body::Iota => {
                let v = self.affine(fill, a);
                self.encode_int(sig.dst, v, d);
                acc
            }
            Body::AffineSelect { cmp } => {
                let v = self.affine(fill, b);
                let v = self.b.ins().fcvt_from_sint(types::F32, v);
                let zero = self.b.ins().f32const(0.0);
                let k = self.alu(cmp, v, zero);
                let keep = self.b.ins().fcmp(FloatCC::NotEqual, k, zero);
                if sig.a != Some(sig.dst) {
                    let x = self.decode(src(sig.a), a);
                    let y = self.b.ins().select(keep, x, c0);
                    self.encode(sig.dst, y, d);
                    return y;
                }
                // Within a dtype a kept element moves as raw bits.
                let copy = self.b.create_block();
                let other = self.b.create_block();
                let join = self.b.create_block();
                self.b.ins().brif(keep, copy, &[], other, &[]);
                self.b.switch_to_block(copy);
                let ty = int_type(sig.dst);
                let x = self.b.ins().load(ty, flags(), a, 0);
                self.b.ins().store(flags(), x, d, 0);
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(other);
                self.encode(sig.dst, c0, d);
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(join);
                acc
            }
            Body::Select { reverse } => {
                let x = self.decode(src(sig.a), a);
                let pred = self.b.ins().load(int_type(src(sig.b)), flags(), b, 0);
                let cc = if reverse {
                    IntCC::Equal
                } else {
                    IntCC::NotEqual
                };
                let keep = self.b.ins().icmp_imm_s(cc, pred, 0);
                let y = self.b.ins().select(keep, x, c0);
                self.encode(sig.dst, y, d);
                y
            }
            Body::Reduce { op, .. } => {
                // Every element after a run's first (`build`) folds in.
                let x = self.decode(src(sig.a), a);
                self.alu(op, acc, x)
            }
            Body::Binary(op) => {
                let x = self.decode(src(sig.a), a);
                let y = self.decode(src(sig.b), b);
                let r = self.alu(op, x, y);
                self.encode(sig.dst, r, d);
                r
            }
            Body::Scalar { op0, reverse0, op1 } => {
                let x = self.decode(src(sig.a), a);
                let mut t = self.apply(op0, x, c0, reverse0);
                if let Some((op1, reverse1)) = op1 {
                    t = self.apply(op1, t, c1, reverse1);
                }
                self.encode(sig.dst, t, d);
                t
            }
            Body::ScalarTensorTensor {
                op0,
                reverse0,
                op1,
                reverse1,
                scan,
            } => {
                // A scan's first operand is its running value.
                let operand = if scan { acc } else { c0 };
                let x = self.decode(src(sig.a), a);
                let y = self.decode(src(sig.b), b);
                let t = self.apply(op0, x, operand, reverse0);
                let r = self.apply(op1, t, y, reverse1);
                self.encode(sig.dst, r, d);
                r
            }
            Body::Activation { func, op0, op1 } => {
                let mut v = self.decode(src(sig.a), a);
                if let Some((op, reverse)) = op0 {
                    v = self.apply(op, v, c0, reverse);
                }
                if let Some((op, reverse)) = op1 {
                    v = self.apply(op, v, c1, reverse);
                }
                let f = self
                    .b
                    .ins()
                    .iconst(types::I32, index_of(ActFunc::ALL, &func));
                let alpha = self.f32_of(fill);
                let r = if func == ActFunc::Exp {
                    self.exp(f, v, alpha)
                } else {
                    self.call(self.cb.activation, &[f, v, alpha])
                };
                self.encode(sig.dst, r, d);
                r
            }
            Body::RangeSelect { cmp0, cmp1 } => {
                let x = self.decode(src(sig.a), a);
                let j = self.b.ins().load(types::I32, flags(), b, 0);
                let j = self.b.ins().fcvt_from_sint(types::F32, j);
                let zero = self.b.ins().f32const(0.0);
                let k0 = self.alu(cmp0, j, c0);
                let k1 = self.alu(cmp1, j, c1);
                let keep0 = self.b.ins().fcmp(FloatCC::NotEqual, k0, zero);
                let keep1 = self.b.ins().fcmp(FloatCC::NotEqual, k1, zero);
                let keep = self.b.ins().band(keep0, keep1);
                let on_false = self.f32_of(fill);
                let y = self.b.ins().select(keep, x, on_false);
                self.encode(sig.dst, y, d);
                y
            }
        }
    }

    /// The f32 whose bits are the low 32 of `fill`.
    fn f32_of(&mut self, fill: Value) -> Value {
        let bits = self.b.ins().ireduce(types::I32, fill);
        self.b.ins().bitcast(types::F32, MemFlagsData::new(), bits)
    }

    /// The affine value `base + row[i]` in wrapping 32-bit arithmetic:
    /// `base` in the fill argument, `row[i]` at `at`.
    fn affine(&mut self, fill: Value, at: Value) -> Value {
        let base = self.b.ins().ireduce(types::I32, fill);
        let row = self.b.ins().load(types::I32, flags(), at, 0);
        self.b.ins().iadd(base, row)
    }

    /// Stores the 32-bit integer `v` at `at` as `exec::encode_int` does:
    /// saturated into an integer dtype, `!= 0` for bool, rounded to
    /// nearest even into a float dtype.
    fn encode_int(&mut self, dt: DType, v: Value, at: Value) {
        if dt == DType::Bool {
            let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
            self.b.ins().store(flags(), nz, at, 0);
        } else if dt.is_int() {
            let wide = self.b.ins().sextend(types::I64, v);
            let lo = self
                .b
                .ins()
                .iconst(types::I64, numerics::min_finite(dt) as i64);
            let hi = self
                .b
                .ins()
                .iconst(types::I64, numerics::max_finite(dt) as i64);
            let clamped = self.b.ins().smax(wide, lo);
            let clamped = self.b.ins().smin(clamped, hi);
            match dt.size() {
                1 => self.b.ins().istore8(flags(), clamped, at, 0),
                2 => self.b.ins().istore16(flags(), clamped, at, 0),
                _ => self.b.ins().istore32(flags(), clamped, at, 0),
            };
        } else {
            let x = self.b.ins().fcvt_from_sint(types::F32, v);
            self.encode(dt, x, at);
        }
    }

    /// The `exp` activation of `x`: `crate::exp::fast`'s operations in its
    /// order, and the callback (`activation(func, x, alpha)`, libm) where
    /// `fast` gives `None`, so every result is `exp::exp_f32`'s bits.
    fn exp(&mut self, func: Value, x: Value, alpha: Value) -> Value {
        use crate::exp;
        let fast = self.b.create_block();
        let ends = self.b.create_block();
        let not_zero = self.b.create_block();
        let slow = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, types::F32);
        let v = self.b.ins().fpromote(types::F64, x);
        let lo = self.b.ins().f64const(exp::LO);
        let hi = self.b.ins().f64const(exp::HI);
        let above = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, v, lo);
        let below = self.b.ins().fcmp(FloatCC::LessThanOrEqual, v, hi);
        let inside = self.b.ins().band(above, below);
        self.b.ins().brif(inside, fast, &[], ends, &[]);

        // +0 at or below `ZERO_AT`, +∞ at or above `INF_AT`, else libm.
        self.b.switch_to_block(ends);
        let zero_at = self.b.ins().f64const(exp::ZERO_AT);
        let under = self.b.ins().fcmp(FloatCC::LessThanOrEqual, v, zero_at);
        let zero = self.b.ins().f32const(0.0);
        self.b
            .ins()
            .brif(under, join, &[BlockArg::Value(zero)], not_zero, &[]);
        self.b.switch_to_block(not_zero);
        let inf_at = self.b.ins().f64const(exp::INF_AT);
        let over = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, v, inf_at);
        let inf = self.b.ins().f32const(f32::INFINITY);
        self.b
            .ins()
            .brif(over, join, &[BlockArg::Value(inf)], slow, &[]);

        self.b.switch_to_block(fast);
        let c = |s: &mut Self, x: f64| s.b.ins().f64const(x);
        let (inv, shifter) = (c(self, exp::INV_LN2_64), c(self, exp::SHIFTER));
        let scaled = self.b.ins().fmul(v, inv);
        let t = self.b.ins().fadd(scaled, shifter);
        let k = self.b.ins().fsub(t, shifter);
        let (l1, l2) = (c(self, exp::L1), c(self, exp::L2));
        let kl1 = self.b.ins().fmul(k, l1);
        let r1 = self.b.ins().fsub(v, kl1);
        let kl2 = self.b.ins().fmul(k, l2);
        let r = self.b.ins().fsub(r1, kl2);
        // ((1 + r) + r²(1/2 + r C3)) + r⁴((C4 + r C5) + r² C6).
        let r2 = self.b.ins().fmul(r, r);
        let r4 = self.b.ins().fmul(r2, r2);
        let one = c(self, 1.0);
        let q1 = self.b.ins().fadd(one, r);
        let (half, c3) = (c(self, 0.5), c(self, exp::C3));
        let rc3 = self.b.ins().fmul(r, c3);
        let a = self.b.ins().fadd(half, rc3);
        let r2a = self.b.ins().fmul(r2, a);
        let q2 = self.b.ins().fadd(q1, r2a);
        let (c4, c5, c6) = (c(self, exp::C4), c(self, exp::C5), c(self, exp::C6));
        let rc5 = self.b.ins().fmul(r, c5);
        let b1 = self.b.ins().fadd(c4, rc5);
        let r2c6 = self.b.ins().fmul(r2, c6);
        let b2 = self.b.ins().fadd(b1, r2c6);
        let r4b = self.b.ins().fmul(r4, b2);
        let p = self.b.ins().fadd(q2, r4b);
        let t_bits = self.b.ins().bitcast(types::I64, MemFlagsData::new(), t);
        let ki = self.b.ins().ireduce(types::I32, t_bits);
        let e = self.b.ins().sshr_imm_u(ki, 6);
        let e = self.b.ins().iadd_imm_s(e, 1023);
        let e = self.b.ins().sextend(types::I64, e);
        let e = self.b.ins().ishl_imm_u(e, 52);
        let scale = self.b.ins().bitcast(types::F64, MemFlagsData::new(), e);
        let j = self.b.ins().band_imm_u(ki, 63);
        let j = self.b.ins().uextend(types::I64, j);
        let offset = self.b.ins().ishl_imm_u(j, 3);
        let base = self
            .b
            .ins()
            .iconst(types::I64, exp::table().as_ptr() as i64);
        let at = self.b.ins().iadd(base, offset);
        let two_j = self.b.ins().load(types::F64, flags(), at, 0);
        let tp = self.b.ins().fmul(two_j, p);
        let y = self.b.ins().fmul(tp, scale);
        let y_bits = self.b.ins().bitcast(types::I64, MemFlagsData::new(), y);
        let low = self.b.ins().band_imm_u(y_bits, exp::LOW_BITS);
        // |low - MIDPOINT| <= MARGIN, as one unsigned comparison.
        let d = self.b.ins().iadd_imm_s(low, exp::MARGIN - exp::MIDPOINT);
        let near = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, d, 2 * exp::MARGIN);
        let y32 = self.b.ins().fdemote(types::F32, y);
        self.b
            .ins()
            .brif(near, slow, &[], join, &[BlockArg::Value(y32)]);

        self.b.switch_to_block(slow);
        let r = self.call(self.cb.activation, &[func, x, alpha]);
        self.b.ins().jump(join, &[BlockArg::Value(r)]);

        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    /// `exec::apply`: `x op operand`, or `operand op x` when reversed and
    /// the operator is binary.
    fn apply(&mut self, op: AluOp, x: Value, operand: Value, reverse: bool) -> Value {
        if reverse && !op.is_unary() {
            self.alu(op, operand, x)
        } else {
            self.alu(op, x, operand)
        }
    }

    /// `alu::alu(op, a, b)`.
    fn alu(&mut self, op: AluOp, a: Value, b: Value) -> Value {
        if let Some(cc) = compare_cc(op) {
            return self.bool_f(cc, a, b);
        }
        match op {
            AluOp::Add | AluOp::Average => {
                let r = self.b.ins().fadd(a, b);
                self.first_nan(a, r)
            }
            AluOp::Subtract => {
                let r = self.b.ins().fsub(a, b);
                self.first_nan(a, r)
            }
            AluOp::Multiply => {
                let r = self.b.ins().fmul(a, b);
                self.first_nan(a, r)
            }
            AluOp::Square => self.b.ins().fmul(a, a),
            AluOp::Bypass => a,
            AluOp::Maximum => self.select_or_nan(FloatCC::GreaterThanOrEqual, a, b),
            AluOp::Minimum => self.select_or_nan(FloatCC::LessThanOrEqual, a, b),
            AluOp::Relu => {
                let zero = self.b.ins().f32const(0.0);
                self.select_or_nan(FloatCC::GreaterThanOrEqual, a, zero)
            }
            AluOp::Abs => self.b.ins().fabs(a),
            AluOp::Reciprocal => {
                let one = self.b.ins().f32const(1.0);
                self.b.ins().fdiv(one, a)
            }
            _ => {
                let k = self.b.ins().iconst(types::I32, index_of(AluOp::ALL, &op));
                self.call(self.cb.alu, &[k, a, b])
            }
        }
    }

    /// `r`, the result of an IEEE operation on `a` and another operand,
    /// except that where `a` is NaN it is `a` quieted. The interpreter's
    /// `a op b` gives its first NaN operand when both are NaN (the
    /// hardware's rule for the order written), while Cranelift may swap a
    /// commutative operation's operands: an `activation` whose source and
    /// scale were both NaN, of opposite signs, took the scale's sign in
    /// this tier. Where only `b` is NaN, `r` is already `b` quieted. For
    /// scalars and for four lanes alike.
    fn first_nan(&mut self, a: Value, r: Value) -> Value {
        let nan = self.b.ins().fcmp(FloatCC::Unordered, a, a);
        let quiet = self.b.ins().fadd(a, a);
        if self.b.func.dfg.value_type(a).is_vector() {
            let nan = self.b.ins().bitcast(F32X4, lanes(), nan);
            self.b.ins().bitselect(nan, quiet, r)
        } else {
            self.b.ins().select(nan, quiet, r)
        }
    }

    /// `alu::max` and `alu::min`: the default NaN when either operand is
    /// NaN, else `a` when `a cc b`, else `b`.
    fn select_or_nan(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        let keep_a = self.b.ins().fcmp(cc, a, b);
        let picked = self.b.ins().select(keep_a, a, b);
        let nan = self.b.ins().f32const(f32::NAN);
        let either_nan = self.b.ins().fcmp(FloatCC::Unordered, a, b);
        self.b.ins().select(either_nan, nan, picked)
    }

    /// `alu::bool_f(a cc b)`: 1.0 or 0.0 (`FloatCC::NotEqual` holds for
    /// NaN, as Rust's `!=` does; the others do not).
    fn bool_f(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        let holds = self.b.ins().fcmp(cc, a, b);
        let (one, zero) = (self.b.ins().f32const(1.0), self.b.ins().f32const(0.0));
        self.b.ins().select(holds, one, zero)
    }

    /// Calls a callback; the call instruction.
    fn call_void(&mut self, (sig, addr): (SigRef, i64), args: &[Value]) -> Inst {
        let callee = self.b.ins().iconst(types::I64, addr);
        self.b.ins().call_indirect(sig, callee, args)
    }

    /// Calls a callback that returns one value; that value.
    fn call(&mut self, callback: (SigRef, i64), args: &[Value]) -> Value {
        let inst = self.call_void(callback, args);
        self.b.inst_results(inst)[0]
    }

    /// The f32 value of the element of `dt` at `at` (`numerics::to_f32`).
    fn decode(&mut self, dt: DType, at: Value) -> Value {
        match dt {
            DType::F32 => self.b.ins().load(types::F32, flags(), at, 0),
            DType::BF16 => {
                let h = self.b.ins().uload16(types::I32, flags(), at, 0);
                let bits = self.b.ins().ishl_imm_u(h, 16);
                self.b.ins().bitcast(types::F32, MemFlagsData::new(), bits)
            }
            DType::F16 => {
                let h = self.b.ins().uload16(types::I32, flags(), at, 0);
                self.f16_value(h)
            }
            _ => {
                let bits = match dt.size() {
                    1 => self.b.ins().uload8(types::I32, flags(), at, 0),
                    2 => self.b.ins().uload16(types::I32, flags(), at, 0),
                    _ => self.b.ins().load(types::I32, flags(), at, 0),
                };
                let k = self.b.ins().iconst(types::I32, index_of(&DType::ALL, &dt));
                self.call(self.cb.decode, &[k, bits])
            }
        }
    }

    /// Stores `x` rounded to `dt` at `at` (`numerics::from_f32`).
    fn encode(&mut self, dt: DType, x: Value, at: Value) {
        match dt {
            DType::F32 => {
                self.b.ins().store(flags(), x, at, 0);
            }
            DType::BF16 => {
                let bits = self.bf16_bits(x);
                self.b.ins().istore16(flags(), bits, at, 0);
            }
            DType::F16 => {
                let bits = self.f16_bits(x);
                self.b.ins().istore16(flags(), bits, at, 0);
            }
            _ => {
                let k = self.b.ins().iconst(types::I32, index_of(&DType::ALL, &dt));
                let bits = self.call(self.cb.encode, &[k, x]);
                match dt.size() {
                    1 => self.b.ins().istore8(flags(), bits, at, 0),
                    2 => self.b.ins().istore16(flags(), bits, at, 0),
                    _ => self.b.ins().store(flags(), bits, at, 0),
                };
            }
        }
    }

    /// The bf16 bits of `x` (in an i32): a NaN keeps its top payload bits
    /// and gets the quiet bit; anything else rounds to nearest, ties to
    /// even (`half::bf16::from_f32`, which `numerics` uses).
    fn bf16_bits(&mut self, x: Value) -> Value {
        let bits = self.b.ins().bitcast(types::I32, MemFlagsData::new(), x);
        let magnitude = self.b.ins().band_imm_u(bits, 0x7fff_ffff);
        let nan = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThan, magnitude, 0x7f80_0000);
        let high = self.b.ins().ushr_imm_u(bits, 16);
        let quiet = self.b.ins().bor_imm_u(high, 0x0040);
        let round_bit = self.b.ins().band_imm_u(bits, 0x8000);
        let round = self.b.ins().icmp_imm_u(IntCC::NotEqual, round_bit, 0);
        let rest = self.b.ins().band_imm_u(bits, 0x1_7fff);
        let inexact = self.b.ins().icmp_imm_u(IntCC::NotEqual, rest, 0);
        let up = self.b.ins().band(round, inexact);
        let up = self.b.ins().uextend(types::I32, up);
        let rounded = self.b.ins().iadd(high, up);
        self.b.ins().select(nan, quiet, rounded)
    }
}

/// Every fp16 bit pattern's f32 bits, as `numerics::to_f32` gives them:
/// the native loops decode fp16 by looking the bits up here, so they agree
/// with the interpreter by construction (256 KiB, built once).
static F16_VALUES: std::sync::LazyLock<Box<[u32]>> = std::sync::LazyLock::new(|| {
    (0..1u32 << 16)
        .map(|h| numerics::to_f32(DType::F16, h).to_bits())
        .collect()
});

impl Emit<'_, '_> {
    /// The f32 value of the fp16 bits `h` (in an i32), as
    /// `numerics::to_f32`: the entry of `F16_VALUES`.
    fn f16_value(&mut self, h: Value) -> Value {
        let table = self
            .b
            .ins()
            .iconst(types::I64, F16_VALUES.as_ptr() as usize as i64);
        let index = self.b.ins().uextend(types::I64, h);
        let offset = self.b.ins().ishl_imm_u(index, 2);
        let at = self.b.ins().iadd(table, offset);
        self.b.ins().load(types::F32, flags(), at, 0)
    }

    /// The fp16 bits of `x` (in an i32), as `numerics::from_f32` (the
    /// `half` crate's conversion): round to nearest, ties to even, into
    /// subnormals too; overflow to infinity; a NaN keeps its top payload
    /// bits and gets the quiet bit. Normal results round by adding
    /// `0xfff` plus the kept mantissa's lowest bit below the cut;
    /// subnormal ones by an f32 addition of 0.5, whose unit in the last
    /// place is fp16's subnormal step 2^-24 (F. Giesen's method).
    fn f16_bits(&mut self, x: Value) -> Value {
        let bits = self.b.ins().bitcast(types::I32, MemFlagsData::new(), x);
        let sign = self.b.ins().ushr_imm_u(bits, 16);
        let sign = self.b.ins().band_imm_u(sign, 0x8000);
        let a = self.b.ins().band_imm_u(bits, 0x7fff_ffff);
        // Normal: rebias the exponent and round at bit 13.
        let odd = self.b.ins().ushr_imm_u(a, 13);
        let odd = self.b.ins().band_imm_u(odd, 1);
        let normal = self.b.ins().iadd_imm_u(a, (-112i64 << 23) + 0xfff);
        let normal = self.b.ins().iadd(normal, odd);
        let normal = self.b.ins().ushr_imm_u(normal, 13);
        // Subnormal (or zero): |x| + 0.5 rounds at 2^-24.
        let magic = self.b.ins().f32const(0.5);
        let ax = self.b.ins().bitcast(types::F32, MemFlagsData::new(), a);
        let sum = self.b.ins().fadd(ax, magic);
        let sum = self.b.ins().bitcast(types::I32, MemFlagsData::new(), sum);
        let sub = self.b.ins().iadd_imm_u(sum, -0x3f00_0000i64);
        // Infinity (from overflow too) or NaN with its top payload bits.
        let payload = self.b.ins().ushr_imm_u(a, 13);
        let payload = self.b.ins().band_imm_u(payload, 0x03ff);
        let nan = self.b.ins().bor_imm_u(payload, 0x7e00);
        let inf = self.b.ins().iconst(types::I32, 0x7c00);
        let is_nan = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThan, a, 0x7f80_0000);
        let special = self.b.ins().select(is_nan, nan, inf);
        let is_sub = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, a, 113 << 23);
        let mag = self.b.ins().select(is_sub, sub, normal);
        let is_special = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, a, 143 << 23);
        let mag = self.b.ins().select(is_special, special, mag);
        self.b.ins().bor(sign, mag)
    }
}

/// The integer type of `dt`'s raw bits.
fn int_type(dt: DType) -> Type {
    match dt.size() {
        1 => types::I8,
        2 => types::I16,
        4 => types::I32,
        _ => types::I64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forked child whose parent held the loops' lock at the fork
    /// (`Service::kernel`): asking for a loop returns at once, even when
    /// the run would wait.
    #[test]
    fn a_forked_child_never_takes_a_lock_held_at_the_fork() {
        let service = Service {
            loops: Mutex::new(HashMap::new()),
            done: Condvar::new(),
            requests: None,
            pid: 1,
        };
        let sig = Sig {
            body: Body::Copy,
            fold: None,
            dst: DType::F32,
            a: Some(DType::F32),
            b: None,
        };
        let held = service.loops.lock().expect("a fresh lock");
        let (sent, answer) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| sent.send(service.kernel(sig, true, || 2).is_none()));
            let answered = answer.recv_timeout(std::time::Duration::from_secs(30));
            drop(held);
            assert_eq!(answered, Ok(true), "the child blocked on the lock");
        });
    }
}
