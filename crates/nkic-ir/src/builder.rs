//! `KernelBuilder`: how the specializer records a kernel.
//!
//! The builder keeps the state the specializer walks through (the open
//! dynamic loops, the current static loop iteration, the inlined call
//! chain, the open `no_reorder` block) and stamps it onto every storage and
//! op it records, so the specializer only says *what* happened.
//!
//! Typical use:
//!
//! ```
//! use nkic_diag::{FileId, Span};
//! use nkic_ir::{ArgKind, Buffer, KernelBuilder, Op, OpKind, SrcLoc, StaticLoopKind, View};
//! use nkic_isa::{DType, OobMode, Target};
//!
//! let loc = SrcLoc::new(FileId(0), Span::new(0, 10));
//! let mut b = KernelBuilder::new("copy", Target::Trn3);
//! b.add_file(FileId(0), "kernel.py");
//! let a = b.add_arg("a", Buffer::SharedHbm, DType::F32, &[256, 64], ArgKind::Input, loc);
//! let out = b.alloc_storage("out", Buffer::SharedHbm, DType::F32, &[256, 64], loc);
//! let lp = b.begin_static_loop(StaticLoopKind::AffineRange, 2, loc);
//! for i in 0..2 {
//!     b.enter_iteration(lp, i);
//!     let tile = b.alloc_storage("tile", Buffer::Sbuf, DType::F32, &[128, 64], loc);
//!     let rows = |t| View::new(t, DType::F32, i64::from(i) * 128 * 64, &[
//!         nkic_ir::ViewDim::new(64, 128), nkic_ir::ViewDim::new(1, 64)]);
//!     let full = b.full_view(tile);
//!     let dma = |dst, src| OpKind::DmaCopy {
//!         dst, src, accumulate: false, dge: None, oob: OobMode::Error, priority: None,
//!     };
//!     b.push_op(Op::new(dma(full.clone(), rows(a))), loc);
//!     b.push_op(Op::new(dma(rows(out), full)), loc);
//!     b.exit_iteration();
//! }
//! b.end_static_loop(lp);
//! b.add_output(out);
//! let kernel = b.finish();
//! assert!(nkic_ir::verify(&kernel).is_ok());
//! assert_eq!(kernel.ops.len(), 4);
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use nkic_diag::FileId;
use nkic_isa::{DType, Target};

use crate::arena::Handle;
use crate::kernel::{
    Address, ArgKind, Block, Buffer, CallFrame, DynLoop, DynLoopKind, Item, Kernel, KernelArg,
    LoopCtx, LoopIter, NoReorderGroup, RegHandle, Register, SourceFileName, SrcLoc, StaticLoop,
    StaticLoopKind, Storage,
};
use crate::op::{Op, OpKind};
use crate::view::View;

/// Records a kernel in program order. See the module doc.
#[derive(Debug)]
pub struct KernelBuilder {
    kernel: Kernel,
    /// The open blocks: the kernel body, then one per open dynamic loop.
    blocks: Vec<Block>,
    /// The open dynamic loops, innermost last (one per `blocks[1..]`).
    open_loops: Vec<Handle<DynLoop>>,
    loop_ctx: LoopCtx,
    /// The call sites of the inlined helpers being specialized, outermost first.
    call_stack: Vec<SrcLoc>,
    call_frames: BTreeMap<(Option<Handle<CallFrame>>, SrcLoc), Handle<CallFrame>>,
    /// The open `no_reorder` group and how many blocks are nested in it.
    no_reorder: Option<(NoReorderGroup, u32)>,
    next_group: u32,
}

impl KernelBuilder {
    /// Starts an empty kernel.
    pub fn new(name: &str, target: Target) -> KernelBuilder {
        KernelBuilder {
            kernel: Kernel::new(name, target),
            blocks: vec![Vec::new()],
            open_loops: Vec::new(),
            loop_ctx: LoopCtx::TOP,
            call_stack: Vec::new(),
            call_frames: BTreeMap::new(),
            no_reorder: None,
            next_group: 0,
        }
    }

    /// The kernel recorded so far (its body is complete only after `finish`).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The storage `h`.
    ///
    /// # Panics
    ///
    /// When `h` was not returned by this builder.
    pub fn storage(&self, h: Handle<Storage>) -> &Storage {
        &self.kernel.storages[h]
    }

    /// The whole of storage `h` as a row-major view.
    ///
    /// # Panics
    ///
    /// When `h` was not returned by this builder.
    pub fn full_view(&self, h: Handle<Storage>) -> View {
        View::full(h, &self.kernel.storages[h])
    }

    /// Sets the SPMD position: `nl.program_id` and `nl.num_programs` per axis.
    pub fn set_program_id(&mut self, program_id: &[u32], num_programs: &[u32]) {
        debug_assert_eq!(program_id.len(), num_programs.len());
        self.kernel.program_id = program_id.to_vec();
        self.kernel.num_programs = num_programs.to_vec();
    }

    /// Registers the display name of a file that locations refer to.
    pub fn add_file(&mut self, id: FileId, name: &str) {
        if let Some(f) = self.kernel.files.iter_mut().find(|f| f.id == id) {
            f.name = name.to_owned();
        } else {
            self.kernel.files.push(SourceFileName {
                id,
                name: name.to_owned(),
            });
        }
    }

    /// Adds a tensor argument (next in parameter order); `buffer` must be
    /// an HBM buffer.
    pub fn add_arg(
        &mut self,
        name: &str,
        buffer: Buffer,
        dtype: DType,
        shape: &[u64],
        kind: ArgKind,
        loc: SrcLoc,
    ) -> Handle<Storage> {
        debug_assert!(buffer.is_hbm(), "kernel arguments live in HBM");
        let storage = self.append_storage(name, buffer, dtype, shape, (LoopCtx::TOP, None), loc);
        self.kernel.args.push(KernelArg { storage, kind });
        storage
    }

    /// Allocates a storage in the current loop iteration and dynamic scope.
    pub fn alloc_storage(
        &mut self,
        name: &str,
        buffer: Buffer,
        dtype: DType,
        shape: &[u64],
        loc: SrcLoc,
    ) -> Handle<Storage> {
        let place = (self.loop_ctx, self.open_loops.last().copied());
        self.append_storage(name, buffer, dtype, shape, place, loc)
    }

    /// Appends a storage allocated in `(loop iteration, dynamic scope)`
    /// at `loc`.
    fn append_storage(
        &mut self,
        name: &str,
        buffer: Buffer,
        dtype: DType,
        shape: &[u64],
        (loop_ctx, scope): (LoopCtx, Option<Handle<DynLoop>>),
        loc: SrcLoc,
    ) -> Handle<Storage> {
        let storage = self.kernel.storages.append(Storage {
            name: name.to_owned(),
            buffer,
            dtype,
            shape: shape.to_vec(),
            address: None,
            loop_ctx,
            scope,
            data: None,
        });
        self.kernel.spans.storages.insert(storage, loc);
        storage
    }

    /// Where `storage` was allocated.
    pub fn storage_loc(&self, storage: Handle<Storage>) -> Option<SrcLoc> {
        self.kernel.spans.storages.get(storage).copied()
    }

    /// Names `storage` after the variable it was first assigned to, unless
    /// the kernel already named it (`name=`). Fault messages and
    /// `nkic run --dump` then know an on-chip tile by its variable.
    pub fn name_if_unnamed(&mut self, storage: Handle<Storage>, name: &str) {
        let s = &mut self.kernel.storages[storage];
        if s.name.is_empty() {
            s.name = name.to_owned();
        }
    }

    /// Records a manual placement (`address=`) for an on-chip storage.
    pub fn set_address(&mut self, storage: Handle<Storage>, address: Address) {
        debug_assert!(self.kernel.storages[storage].buffer.is_on_chip());
        self.kernel.storages[storage].address = Some(address);
    }

    /// Gives an HBM storage the bytes it holds on entry (`Storage::data`;
    /// a constant such as `nl.shared_constant`): `data` is row-major
    /// little-endian elements of its dtype, `storage.bytes()` of them.
    pub fn set_data(&mut self, storage: Handle<Storage>, data: Arc<[u8]>) {
        debug_assert!(self.kernel.storages[storage].buffer.is_hbm());
        self.kernel.storages[storage].data = Some(data);
    }

    /// Appends `op` to the current block. The builder sets `loop_ctx` and
    /// `no_reorder` from its state; `kind`, `engine`, `name` and
    /// `depends_on` are the caller's.
    pub fn push_op(&mut self, mut op: Op, loc: SrcLoc) -> Handle<Op> {
        op.loop_ctx = self.loop_ctx;
        op.no_reorder = self.no_reorder.map(|(g, _)| g);
        debug_assert!(
            op.depends_on.iter().all(|&d| self.kernel.ops.contains(d)),
            "dependencies must be recorded before their consumer"
        );
        let h = self.kernel.ops.append(op);
        self.kernel.spans.ops.insert(h, loc);
        if let Some(frame) = self.intern_call_chain() {
            self.kernel.spans.call_chains.insert(h, frame);
        }
        self.current_block().push(Item::Op(h));
        h
    }

    /// Adds a scheduling edge: `consumer` runs after `producer`.
    pub fn add_dependency(&mut self, consumer: Handle<Op>, producer: Handle<Op>) {
        debug_assert!(producer < consumer, "a producer precedes its consumer");
        let deps = &mut self.kernel.ops[consumer].depends_on;
        if !deps.contains(&producer) {
            deps.push(producer);
        }
    }

    /// Creates a register and records `register_alloc` defining it.
    pub fn alloc_register(&mut self, name: &str, init: Option<i32>, loc: SrcLoc) -> RegHandle {
        let reg = self.kernel.registers.append(Register {
            name: name.to_owned(),
        });
        self.push_op(Op::new(OpKind::RegAlloc { dst: reg, init }), loc);
        reg
    }

    /// Starts a static loop statement in the current iteration context.
    /// Follow with `enter_iteration`/`exit_iteration` per iteration and
    /// `end_static_loop`.
    pub fn begin_static_loop(
        &mut self,
        kind: StaticLoopKind,
        trips: u32,
        loc: SrcLoc,
    ) -> Handle<StaticLoop> {
        let lp = self.kernel.static_loops.append(StaticLoop {
            kind,
            trips,
            parent: self.loop_ctx,
        });
        self.kernel.spans.static_loops.insert(lp, loc);
        lp
    }

    /// Enters iteration `index` (0-based) of `lp`.
    pub fn enter_iteration(&mut self, lp: Handle<StaticLoop>, index: u32) {
        debug_assert_eq!(
            self.kernel.static_loops[lp].parent, self.loop_ctx,
            "iterations are entered from the loop's own context"
        );
        debug_assert!(index < self.kernel.static_loops[lp].trips);
        self.loop_ctx = LoopCtx(Some(LoopIter { lp, index }));
    }

    /// Leaves the current iteration.
    pub fn exit_iteration(&mut self) {
        let Some(it) = self.loop_ctx.0 else {
            debug_assert!(false, "exit_iteration outside a static loop");
            return;
        };
        self.loop_ctx = self.kernel.static_loops[it.lp].parent;
    }

    /// Ends the static loop `lp`; the current context must be the loop's
    /// own (every iteration exited).
    pub fn end_static_loop(&mut self, lp: Handle<StaticLoop>) {
        debug_assert_eq!(
            self.kernel.static_loops[lp].parent, self.loop_ctx,
            "every iteration is exited before the loop ends"
        );
    }

    /// Sets the trip count of `lp`, for loops whose count is known only
    /// after unrolling (a compile-time `while`, or a `break`).
    pub fn set_trips(&mut self, lp: Handle<StaticLoop>, trips: u32) {
        self.kernel.static_loops[lp].trips = trips;
    }

    /// Opens a dynamic loop; ops pushed until `end_dynamic_loop` form its
    /// body. `Range`/`Fori` loops get a fresh read-only induction register
    /// named `induction_name`, returned with the loop.
    pub fn begin_dynamic_loop(
        &mut self,
        kind: DynLoopKind,
        induction_name: &str,
        loc: SrcLoc,
    ) -> (Handle<DynLoop>, Option<RegHandle>) {
        debug_assert!(
            self.no_reorder.is_none(),
            "dynamic loops inside no_reorder are rejected by the specializer"
        );
        let induction = match kind {
            DynLoopKind::Range { .. } | DynLoopKind::Fori { .. } => {
                Some(self.kernel.registers.append(Register {
                    name: induction_name.to_owned(),
                }))
            }
            DynLoopKind::While { .. } => None,
        };
        let lp = self.kernel.dyn_loops.append(DynLoop {
            kind,
            induction,
            loop_ctx: self.loop_ctx,
            body: Vec::new(),
        });
        self.kernel.spans.dyn_loops.insert(lp, loc);
        self.current_block().push(Item::Loop(lp));
        self.open_loops.push(lp);
        self.blocks.push(Vec::new());
        (lp, induction)
    }

    /// Closes the innermost dynamic loop, which must be `lp`.
    pub fn end_dynamic_loop(&mut self, lp: Handle<DynLoop>) {
        debug_assert_eq!(self.open_loops.last(), Some(&lp), "dynamic loops nest");
        debug_assert_eq!(
            self.kernel.dyn_loops[lp].loop_ctx, self.loop_ctx,
            "static iterations opened in a dynamic body are closed in it"
        );
        if self.open_loops.last() != Some(&lp) {
            return;
        }
        self.open_loops.pop();
        let body = self.blocks.pop().unwrap_or_default();
        self.kernel.dyn_loops[lp].body = body;
    }

    /// Opens a `no_reorder` block; nested blocks join the outermost group.
    pub fn begin_no_reorder(&mut self) {
        self.no_reorder = match self.no_reorder {
            Some((g, depth)) => Some((g, depth + 1)),
            None => {
                let g = NoReorderGroup(self.next_group);
                self.next_group += 1;
                Some((g, 0))
            }
        };
    }

    /// Closes the innermost `no_reorder` block.
    pub fn end_no_reorder(&mut self) {
        debug_assert!(self.no_reorder.is_some(), "end_no_reorder without begin");
        self.no_reorder = match self.no_reorder {
            Some((g, depth)) if depth > 0 => Some((g, depth - 1)),
            _ => None,
        };
    }

    /// Enters an inlined call made at `call_site`.
    pub fn enter_call(&mut self, call_site: SrcLoc) {
        self.call_stack.push(call_site);
    }

    /// Leaves the innermost inlined call.
    pub fn exit_call(&mut self) {
        debug_assert!(!self.call_stack.is_empty(), "exit_call without enter_call");
        self.call_stack.pop();
    }

    /// Appends a returned tensor (in return order).
    pub fn add_output(&mut self, storage: Handle<Storage>) {
        self.kernel.outputs.push(storage);
    }

    /// Gives a returned HBM storage that is not an argument the shape of
    /// the view the kernel returns (`return out.reshape((B, S, 1))`), when
    /// the two have as many elements; returns whether it did. Views carry
    /// their own strides, so no view of the storage changes meaning; the
    /// caller checks that the returned view is the whole storage in
    /// row-major order.
    pub fn reshape_output(&mut self, storage: Handle<Storage>, shape: &[u64]) -> bool {
        let is_arg = self.kernel.args.iter().any(|a| a.storage == storage);
        match self.kernel.storages.try_get_mut(storage) {
            Some(st)
                if !is_arg && st.buffer.is_hbm() && st.numel() == shape.iter().product::<u64>() =>
            {
                st.shape = shape.to_vec();
                true
            }
            _ => false,
        }
    }

    /// Moves a private-HBM tensor to `shared_hbm`. Without a launch grid
    /// the two are the same memory; the specializer uses this for kernels
    /// that return an `nl.hbm` tensor (accepted with a warning), since the
    /// IR's outputs are always shared.
    pub fn share_storage(&mut self, storage: Handle<Storage>) {
        if let Some(st) = self.kernel.storages.try_get_mut(storage)
            && st.buffer == Buffer::PrivateHbm
        {
            st.buffer = Buffer::SharedHbm;
        }
    }

    /// Finishes the kernel. Every dynamic loop, static iteration, call and
    /// `no_reorder` block must be closed. Under `debug_assertions` the
    /// result is verified.
    pub fn finish(mut self) -> Kernel {
        debug_assert!(self.open_loops.is_empty(), "unclosed dynamic loop");
        debug_assert!(self.loop_ctx.0.is_none(), "unclosed static iteration");
        debug_assert!(self.call_stack.is_empty(), "unclosed call");
        debug_assert!(self.no_reorder.is_none(), "unclosed no_reorder block");
        // Close whatever is still open so the result is well formed even
        // in release builds.
        while let Some(lp) = self.open_loops.pop() {
            let body = self.blocks.pop().unwrap_or_default();
            self.kernel.dyn_loops[lp].body = body;
        }
        self.kernel.body = self.blocks.pop().unwrap_or_default();
        #[cfg(debug_assertions)]
        if let Err(errors) = crate::verify::verify(&self.kernel) {
            let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
            panic!("builder produced invalid IR:\n{}", text.join("\n"));
        }
        self.kernel
    }

    fn current_block(&mut self) -> &mut Block {
        // `blocks` starts with the kernel body and only `end_dynamic_loop`
        // pops, after checking a loop is open, so it is never empty here.
        let last = self.blocks.len() - 1;
        &mut self.blocks[last]
    }

    fn intern_call_chain(&mut self) -> Option<Handle<CallFrame>> {
        let mut parent = None;
        for &loc in &self.call_stack {
            let key = (parent, loc);
            let frame = match self.call_frames.get(&key) {
                Some(&f) => f,
                None => {
                    let f = self
                        .kernel
                        .spans
                        .call_frames
                        .append(CallFrame { loc, parent });
                    self.call_frames.insert(key, f);
                    f
                }
            };
            parent = Some(frame);
        }
        parent
    }
}
