//! The IR verifier: the structural invariants every stage may rely on.
//!
//! `verify` runs after the specializer (under `debug_assertions`, in
//! `KernelBuilder::finish`), after every IR pass and in every test. NKI
//! legality (dtype rules, shape agreement between operands, engine
//! capabilities beyond memory access) is the specializer's job, with
//! diagnostics; what is checked here are the facts later stages index and
//! compute with. Once a kernel verifies, indexing any arena with any handle
//! stored in it cannot panic.
//!
//! Invariants checked:
//!
//! **Handles.** Every handle stored anywhere (storages in views, args and
//! outputs; ops in blocks and `depends_on`; registers; dynamic loops in
//! blocks and storage scopes; static loops in loop contexts; call frames)
//! is in range of its arena, and every side-table key is too.
//!
//! **Kernel.** File ids and file names are unique; every location names a
//! known file. `program_id` and `num_programs` have the same length and
//! each id is below its count. Arguments are distinct HBM storages created
//! outside every loop; outputs are distinct `shared_hbm` storages.
//!
//! **Structure.** Every op and every dynamic loop appears exactly once in
//! the body tree (so regions are well nested and acyclic). A static loop's
//! parent context refers only to older loops; every loop context names an
//! iteration below its loop's trip count. An item inside a dynamic loop,
//! and a storage allocated in one, has a loop context within the loop's
//! own.
//!
//! **Storages.** Shapes are non-empty with non-zero dims. SBUF/PSUM
//! storages have at least two dims, at most 128 partitions (the target's
//! count) and fit one partition row of the buffer; a manual address is only
//! on chip, fits the buffer and, in PSUM, starts at a bank boundary. Data
//! (a constant's bytes on entry) is only on HBM storages that are neither
//! arguments nor returned, and is exactly the storage's size in bytes.
//!
//! **Views.** Between one and five dims, all counts non-zero. The view's
//! dtype size divides the storage's row (on chip) or size (HBM). On chip,
//! the offset is non-negative, `dims[0]` is the partition dim (stride =
//! elements per partition whenever its count exceeds one), the partitions
//! lie within the storage and the free dims stay within one partition row.
//! In HBM the touched byte range lies within the storage. Only the static
//! part of a dynamic offset is checked, and an HBM view whose rows come
//! from an index (`vector_offset`) is checked for one row at its static
//! offset (the index picks the rows at run time, where the simulator
//! checks each). These bounds are [`bounds`], which the specializer also
//! asks of the access patterns it makes. Row indirection (`vector_offset`)
//! is only on HBM views and column indirection (`indirect`) only on on-chip
//! views; index views are SBUF views without indirection of their own.
//!
//! **Op operands.** Compute ops touch only SBUF/PSUM; DMA ops never touch
//! PSUM; `reg_load`/`reg_store` touch one element of SBUF or HBM; matmul
//! inputs are SBUF and their output PSUM (likewise `nc_transpose` on the
//! Tensor engine); ops on GpSimd never touch PSUM; the `data` of a
//! `core_barrier` is an HBM view and the tiles of a `sendrecv` are SBUF
//! views. A chosen engine is one of the op's
//! engines.
//!
//! **Scheduling.** `depends_on` lists distinct ops that precede the op in
//! program order and sit at the same dynamic loop or an enclosing one. All
//! ops of a `no_reorder` group are in one block with no dynamic loop
//! between them.
//!
//! **Registers.** Every register is defined exactly once, by `reg_alloc` or
//! as a loop's induction variable, and read or written only after its
//! definition and within the block that defines it (including nested
//! blocks). Induction registers are never written. A counted dynamic loop
//! has a step of at least 1 and an induction register; a `while` loop has
//! none, and its condition register is defined before the loop.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use nkic_isa::Engine;

use crate::arena::{Arena, Entity, Handle, SecondaryMap};
use crate::kernel::{
    Buffer, DynLoop, DynLoopKind, Item, Kernel, LoopCtx, RegHandle, SrcLoc, StaticLoop, Storage,
};
use crate::op::{Op, OpKind, RegOrImm, Role};
use crate::view::{Indirection, MAX_VIEW_DIMS, View};

/// The entity a verifier error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Location {
    Kernel,
    Storage(Handle<Storage>),
    Op(Handle<Op>),
    DynLoop(Handle<DynLoop>),
    StaticLoop(Handle<StaticLoop>),
    Register(RegHandle),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Kernel => f.write_str("kernel"),
            Location::Storage(h) => write!(f, "{h}"),
            Location::Op(h) => write!(f, "{h}"),
            Location::DynLoop(h) => write!(f, "{h}"),
            Location::StaticLoop(h) => write!(f, "{h}"),
            Location::Register(h) => write!(f, "{h}"),
        }
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub at: Location,
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

impl std::error::Error for VerifyError {}

/// Checks every invariant listed in the module doc.
pub fn verify(kernel: &Kernel) -> Result<(), Vec<VerifyError>> {
    let mut v = Verifier {
        k: kernel,
        errors: Vec::new(),
    };
    v.kernel();
    v.static_loops();
    v.storages();
    let order = v.structure();
    v.ops(&order);
    v.registers();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// Why the bytes `view` touches do not lie within `st` (module doc,
/// **Views**; empty when they do): on chip, a non-negative
/// offset, the partition dim's stride the row length, the partitions
/// within the storage's and the free dims within one partition row; in
/// HBM, the touched byte range within the storage. Only the static part
/// of a dynamic offset counts, and an HBM view whose rows come from an
/// index (`vector_offset`) counts one row at its static offset: which
/// rows it reads is known at run time, where each is checked. The
/// specializer asks this of an access pattern it makes (`t.ap(...)`), so
/// what it builds verifies. `view`'s dtype must tile `st`'s rows; the
/// reasons call the storage `name`.
pub fn bounds(view: &View, st: &Storage, name: &dyn fmt::Display) -> Vec<String> {
    let mut errors = Vec::new();
    let size = u64::from(view.dtype.size());
    let row = st.bytes_per_partition();
    let fp = match &view.indirect {
        Some(Indirection::Rows { .. }) if !st.buffer.is_on_chip() => {
            let mut one_row = view.clone();
            if let Some(d0) = one_row.dims.first_mut() {
                d0.count = 1;
            }
            one_row.footprint_in(st)
        }
        _ => view.footprint_in(st),
    };
    let Some((lo, hi)) = fp.byte_bounds() else {
        return errors;
    };
    let row_i = i64::try_from(row).unwrap_or(i64::MAX);
    if st.buffer.is_on_chip() {
        if view.offset < 0 {
            errors.push("negative offset".to_string());
            return errors;
        }
        let elems_per_row = i64::try_from(row / size.max(1)).unwrap_or(i64::MAX);
        if let Some(p) = view.dims.first()
            && p.count > 1
            && p.stride != elems_per_row
        {
            errors.push(format!(
                "the partition dim has stride {} but rows of {name} hold {elems_per_row} elements",
                p.stride
            ));
        }
        if fp.partitions.end > st.partitions() {
            errors.push(format!(
                "partitions {}..{} outside the {} of {name}",
                fp.partitions.start,
                fp.partitions.end,
                st.partitions(),
            ));
        }
        if lo < 0 || hi > row_i {
            errors.push(format!(
                "bytes {lo}..{hi} leave the {row}-byte partition row of {name}"
            ));
        }
    } else {
        let total = i64::try_from(st.bytes()).unwrap_or(i64::MAX);
        if lo < 0 || hi > total {
            errors.push(format!(
                "bytes {lo}..{hi} outside the {total} bytes of {name}"
            ));
        }
    }
    errors
}

/// Where an op sits: its position in program order, its block and index in
/// that block, and the dynamic loops enclosing it.
struct Place {
    position: usize,
    block: Option<Handle<DynLoop>>,
    index_in_block: usize,
    loops: Vec<Handle<DynLoop>>,
}

/// Each op's place in the body, by the op's index (the body names only
/// ops of the arena: `Verifier::block` skips unknown handles).
struct Places(Vec<Option<Place>>);

impl Places {
    fn get(&self, h: &Handle<Op>) -> Option<&Place> {
        self.0.get(h.index()).and_then(Option::as_ref)
    }

    fn contains_key(&self, h: &Handle<Op>) -> bool {
        self.get(h).is_some()
    }

    fn insert(&mut self, h: Handle<Op>, place: Place) {
        if let Some(slot) = self.0.get_mut(h.index()) {
            *slot = Some(place);
        }
    }
}

struct Verifier<'k> {
    k: &'k Kernel,
    errors: Vec<VerifyError>,
}

impl Verifier<'_> {
    fn err(&mut self, at: Location, message: impl Into<String>) {
        self.errors.push(VerifyError {
            at,
            message: message.into(),
        });
    }

    fn loc(&mut self, at: Location, loc: &SrcLoc) {
        if self.k.file_name(loc.file).is_none() {
            self.err(at, format!("location in unknown {}", loc.file));
        }
    }

    /// A span side table: every key an entity of `arena`, every location
    /// in a known file.
    fn span_table<T: Entity>(
        &mut self,
        spans: &SecondaryMap<T, SrcLoc>,
        arena: &Arena<T>,
        at: fn(Handle<T>) -> Location,
    ) {
        for (h, loc) in spans.iter() {
            if !arena.contains(h) {
                self.err(Location::Kernel, format!("span of unknown {h}"));
            }
            self.loc(at(h), loc);
        }
    }

    fn ctx(&mut self, at: Location, ctx: LoopCtx) {
        if let Some(it) = ctx.0 {
            match self.k.static_loops.try_get(it.lp) {
                None => self.err(at, format!("loop context names unknown {}", it.lp)),
                Some(lp) if it.index >= lp.trips => self.err(
                    at,
                    format!(
                        "iteration {} of {} which has {} trips",
                        it.index, it.lp, lp.trips
                    ),
                ),
                Some(_) => {}
            }
        }
    }

    fn kernel(&mut self) {
        let k = self.k;
        let mut ids = BTreeSet::new();
        let mut names = BTreeSet::new();
        for f in &k.files {
            if !ids.insert(f.id) {
                self.err(Location::Kernel, format!("{} listed twice", f.id));
            }
            if !names.insert(f.name.as_str()) {
                self.err(
                    Location::Kernel,
                    format!("file name {:?} listed twice", f.name),
                );
            }
        }
        if k.program_id.len() != k.num_programs.len() {
            self.err(
                Location::Kernel,
                "program_id and num_programs differ in length",
            );
        }
        for (id, n) in k.program_id.iter().zip(&k.num_programs) {
            if id >= n {
                self.err(Location::Kernel, format!("program id {id} not below {n}"));
            }
        }
        let mut seen = BTreeSet::new();
        for arg in &k.args {
            match k.storages.try_get(arg.storage) {
                None => self.err(
                    Location::Kernel,
                    format!("argument {} out of range", arg.storage),
                ),
                Some(st) => {
                    if !st.buffer.is_hbm() {
                        self.err(Location::Storage(arg.storage), "argument not in HBM");
                    }
                    if st.loop_ctx != LoopCtx::TOP || st.scope.is_some() {
                        self.err(
                            Location::Storage(arg.storage),
                            "argument created inside a loop",
                        );
                    }
                }
            }
            if !seen.insert(arg.storage) {
                self.err(Location::Storage(arg.storage), "argument listed twice");
            }
        }
        let mut seen = BTreeSet::new();
        for &out in &k.outputs {
            match k.storages.try_get(out) {
                None => self.err(Location::Kernel, format!("output {out} out of range")),
                Some(st) if st.buffer != Buffer::SharedHbm => {
                    self.err(Location::Storage(out), "returned tensor not in shared_hbm")
                }
                Some(_) => {}
            }
            if !seen.insert(out) {
                self.err(Location::Storage(out), "returned twice");
            }
        }
        // Side tables: keys in range, locations in known files.
        let spans = &k.spans;
        self.span_table(&spans.ops, &k.ops, Location::Op);
        self.span_table(&spans.storages, &k.storages, Location::Storage);
        self.span_table(&spans.dyn_loops, &k.dyn_loops, Location::DynLoop);
        self.span_table(&spans.static_loops, &k.static_loops, Location::StaticLoop);
        for (h, &frame) in spans.call_chains.iter() {
            if !k.ops.contains(h) {
                self.err(Location::Kernel, format!("call chain of unknown {h}"));
            }
            if !spans.call_frames.contains(frame) {
                self.err(Location::Op(h), format!("unknown {frame}"));
            }
        }
        for (h, frame) in spans.call_frames.iter() {
            self.loc(Location::Kernel, &frame.loc);
            if frame.parent.is_some_and(|p| p >= h) {
                self.err(Location::Kernel, format!("{h} has a younger parent frame"));
            }
        }
    }

    fn static_loops(&mut self) {
        for (h, lp) in self.k.static_loops.iter() {
            let at = Location::StaticLoop(h);
            if let Some(it) = lp.parent.0
                && it.lp >= h
            {
                self.err(
                    at,
                    format!("parent context names {} which is not older", it.lp),
                );
                continue;
            }
            self.ctx(at, lp.parent);
        }
    }

    /// The rules of a storage `h` with `len` bytes of data.
    fn data(&mut self, h: Handle<Storage>, st: &Storage, len: usize) {
        let at = Location::Storage(h);
        if !st.buffer.is_hbm() {
            self.err(
                at,
                format!("data on a {} storage; only HBM holds constants", st.buffer),
            );
        } else if len as u64 != st.bytes() {
            self.err(
                at,
                format!("{len} bytes of data for a storage of {} bytes", st.bytes()),
            );
        }
        if self.k.args.iter().any(|a| a.storage == h) {
            self.err(at, "data on an argument");
        }
        if self.k.outputs.contains(&h) {
            self.err(at, "data on a returned tensor");
        }
    }

    fn storages(&mut self) {
        let figures = self.k.target.figures();
        for (h, st) in self.k.storages.iter() {
            let at = Location::Storage(h);
            self.ctx(at, st.loop_ctx);
            if let Some(scope) = st.scope {
                match self.k.dyn_loops.try_get(scope) {
                    None => self.err(at, format!("scope {scope} out of range")),
                    Some(lp) if !self.k.ctx_within(st.loop_ctx, lp.loop_ctx) => self.err(
                        at,
                        format!("loop context outside the iteration of its scope {scope}"),
                    ),
                    Some(_) => {}
                }
            }
            if st.shape.is_empty() || st.shape.contains(&0) {
                self.err(at, format!("bad shape {:?}", st.shape));
                continue;
            }
            if let Some(data) = &st.data {
                self.data(h, st, data.len());
            }
            let capacity = match st.buffer {
                Buffer::Sbuf => u64::from(figures.sbuf_usable_bytes_per_partition),
                Buffer::Psum => u64::from(figures.psum_bytes_per_partition),
                Buffer::SharedHbm | Buffer::PrivateHbm => {
                    if st.address.is_some() {
                        self.err(at, "manual address on an HBM storage");
                    }
                    continue;
                }
            };
            if st.shape.len() < 2 {
                self.err(
                    at,
                    "an on-chip storage needs a partition dim and a free dim",
                );
            }
            let partitions = u64::from(figures.sbuf_partitions);
            if st.shape[0] > partitions {
                self.err(
                    at,
                    format!("{} partitions, more than {partitions}", st.shape[0]),
                );
            }
            let row = st.bytes_per_partition();
            if row > capacity {
                self.err(
                    at,
                    format!(
                        "{row} bytes per partition exceed the {capacity} of {}",
                        st.buffer
                    ),
                );
            }
            if let Some(addr) = st.address {
                if u64::from(addr.partition).saturating_add(st.shape[0]) > partitions {
                    self.err(at, "manual address runs past the last partition");
                }
                if addr.byte.saturating_add(row) > capacity {
                    self.err(at, "manual address runs past the end of the partition");
                }
                if st.buffer == Buffer::Psum && addr.byte % u64::from(figures.psum_bank_bytes) != 0
                {
                    self.err(at, "manual PSUM address not at a bank boundary");
                }
            }
        }
    }

    /// Walks the body: every op and loop exactly once, loop contexts nested,
    /// loop kinds well formed. Returns each op's place.
    fn structure(&mut self) -> Places {
        let mut places = Places(
            std::iter::repeat_with(|| None)
                .take(self.k.ops.len())
                .collect(),
        );
        let mut seen_loops = BTreeSet::new();
        let mut position = 0;
        self.block(
            &self.k.body,
            None,
            &mut Vec::new(),
            LoopCtx::TOP,
            &mut places,
            &mut seen_loops,
            &mut position,
        );
        for h in self.k.ops.handles() {
            if !places.contains_key(&h) {
                self.err(Location::Op(h), "not in the body");
            }
        }
        for h in self.k.dyn_loops.handles() {
            if !seen_loops.contains(&h) {
                self.err(Location::DynLoop(h), "not in the body");
            }
        }
        places
    }

    #[allow(clippy::too_many_arguments)]
    fn block(
        &mut self,
        block: &[Item],
        owner: Option<Handle<DynLoop>>,
        stack: &mut Vec<Handle<DynLoop>>,
        outer_ctx: LoopCtx,
        places: &mut Places,
        seen_loops: &mut BTreeSet<Handle<DynLoop>>,
        position: &mut usize,
    ) {
        for (index_in_block, &item) in block.iter().enumerate() {
            match item {
                Item::Op(h) => {
                    let Some(op) = self.k.ops.try_get(h) else {
                        self.err(Location::Kernel, format!("body names unknown {h}"));
                        continue;
                    };
                    if places.contains_key(&h) {
                        self.err(Location::Op(h), "appears twice in the body");
                        continue;
                    }
                    self.ctx(Location::Op(h), op.loop_ctx);
                    if !self.k.ctx_within(op.loop_ctx, outer_ctx) {
                        self.err(
                            Location::Op(h),
                            "loop context outside its dynamic loop's iteration",
                        );
                    }
                    places.insert(
                        h,
                        Place {
                            position: *position,
                            block: owner,
                            index_in_block,
                            loops: stack.clone(),
                        },
                    );
                    *position += 1;
                }
                Item::Loop(l) => {
                    let Some(lp) = self.k.dyn_loops.try_get(l) else {
                        self.err(Location::Kernel, format!("body names unknown {l}"));
                        continue;
                    };
                    if !seen_loops.insert(l) {
                        self.err(Location::DynLoop(l), "appears twice in the body");
                        continue;
                    }
                    let at = Location::DynLoop(l);
                    self.ctx(at, lp.loop_ctx);
                    if !self.k.ctx_within(lp.loop_ctx, outer_ctx) {
                        self.err(at, "loop context outside its dynamic loop's iteration");
                    }
                    match &lp.kind {
                        DynLoopKind::Range { step, .. } | DynLoopKind::Fori { step, .. } => {
                            if *step == 0 {
                                self.err(at, "step 0");
                            }
                            if lp.induction.is_none() {
                                self.err(at, "counted loop without an induction register");
                            }
                        }
                        DynLoopKind::While { .. } => {
                            if lp.induction.is_some() {
                                self.err(at, "while loop with an induction register");
                            }
                        }
                    }
                    stack.push(l);
                    self.block(
                        &lp.body,
                        Some(l),
                        stack,
                        lp.loop_ctx,
                        places,
                        seen_loops,
                        position,
                    );
                    stack.pop();
                }
            }
        }
    }

    fn ops(&mut self, places: &Places) {
        let mut groups: BTreeMap<_, Vec<Handle<Op>>> = BTreeMap::new();
        for (h, op) in self.k.ops.iter() {
            let at = Location::Op(h);
            if let Some(e) = op.engine
                && !op.kind.engines().contains(&e)
            {
                self.err(at, format!("{} cannot run on {e}", op.kind.mnemonic()));
            }
            self.operands(h, op);
            let mut seen = BTreeSet::new();
            for &d in &op.depends_on {
                if !seen.insert(d) {
                    self.err(at, format!("depends on {d} twice"));
                }
                let (Some(pd), Some(pc)) = (places.get(&d), places.get(&h)) else {
                    if !self.k.ops.contains(d) {
                        self.err(at, format!("depends on unknown {d}"));
                    }
                    continue;
                };
                if pd.position >= pc.position {
                    self.err(at, format!("depends on {d}, which does not precede it"));
                }
                if !pc.loops.starts_with(&pd.loops) {
                    self.err(
                        at,
                        format!("depends on {d} inside a dynamic loop this op is not in"),
                    );
                }
            }
            if let Some(g) = op.no_reorder {
                groups.entry(g).or_default().push(h);
            }
        }
        for (g, members) in groups {
            let Some(first) = places.get(&members[0]) else {
                continue;
            };
            let block = first.block;
            let mut lo = first.index_in_block;
            let mut hi = lo;
            for m in &members {
                let Some(p) = places.get(m) else { continue };
                if p.block != block {
                    self.err(
                        Location::Op(*m),
                        format!("no_reorder group {g} spans more than one block"),
                    );
                }
                lo = lo.min(p.index_in_block);
                hi = hi.max(p.index_in_block);
            }
            let items: &[Item] = match block {
                None => &self.k.body,
                Some(l) => self.k.dyn_loops.try_get(l).map_or(&[][..], |lp| &lp.body),
            };
            if items
                .get(lo..=hi)
                .is_some_and(|s| s.iter().any(|i| matches!(i, Item::Loop(_))))
            {
                self.err(
                    Location::Op(members[0]),
                    format!("no_reorder group {g} contains a dynamic loop"),
                );
            }
        }
    }

    fn operands(&mut self, h: Handle<Op>, op: &Op) {
        let at = Location::Op(h);
        let gpsimd = op.engine == Some(Engine::GpSimd) || op.kind.engines() == [Engine::GpSimd];
        let tensor_engine = matches!(op.kind, OpKind::NcMatmul { .. } | OpKind::NcMatmulMx { .. })
            || (matches!(op.kind, OpKind::NcTranspose { .. }) && op.engine == Some(Engine::Tensor));
        for access in op.accesses() {
            let field = access.field;
            let Some(st) = self.view(at, field, access.view) else {
                continue;
            };
            let buffer = st.buffer;
            if op.kind.is_dma() {
                if buffer == Buffer::Psum {
                    self.err(at, format!("`{field}`: DMA cannot access PSUM"));
                }
            } else if matches!(op.kind, OpKind::RegLoad { .. } | OpKind::RegStore { .. }) {
                if buffer == Buffer::Psum {
                    self.err(
                        at,
                        format!("`{field}`: registers load and store SBUF or HBM"),
                    );
                }
                if access.view.num_elements() != 1 && access.view.indirect.is_none() {
                    self.err(
                        at,
                        format!("`{field}`: a register moves exactly one element"),
                    );
                }
            } else if matches!(op.kind, OpKind::CoreBarrier { .. }) {
                if !buffer.is_hbm() {
                    self.err(
                        at,
                        format!("`{field}`: a core barrier synchronises on a shared HBM tensor"),
                    );
                }
            } else if matches!(op.kind, OpKind::SendRecv { .. }) {
                if buffer != Buffer::Sbuf {
                    self.err(
                        at,
                        format!("`{field}`: the cores exchange SBUF tiles, not {buffer}"),
                    );
                }
            } else if buffer.is_hbm() {
                self.err(
                    at,
                    format!("`{field}`: compute ops access only SBUF and PSUM"),
                );
            }
            if gpsimd && buffer == Buffer::Psum {
                self.err(at, format!("`{field}`: GpSimd cannot access PSUM"));
            }
            if tensor_engine && !access.is_index {
                let want = if access.role == Role::Write {
                    Buffer::Psum
                } else {
                    Buffer::Sbuf
                };
                if buffer != want {
                    self.err(
                        at,
                        format!("`{field}`: the Tensor engine needs {want} here, not {buffer}"),
                    );
                }
            }
        }
    }

    /// Checks one view; returns its storage when the handle is valid.
    fn view(&mut self, at: Location, field: &str, view: &View) -> Option<&Storage> {
        let Some(st) = self.k.storages.try_get(view.storage) else {
            self.err(at, format!("`{field}`: unknown {}", view.storage));
            return None;
        };
        let n = view.dims.len();
        if n == 0 || n > MAX_VIEW_DIMS {
            self.err(
                at,
                format!("`{field}`: {n} dims (1 to {MAX_VIEW_DIMS} allowed)"),
            );
            return Some(st);
        }
        if view.dims.iter().any(|d| d.count == 0) {
            self.err(at, format!("`{field}`: a dim of count 0"));
            return Some(st);
        }
        if let Some(ind) = &view.indirect {
            match ind {
                Indirection::Rows { .. } if st.buffer.is_on_chip() => {
                    self.err(at, format!("`{field}`: vector_offset on an on-chip view"))
                }
                Indirection::Columns { .. } if st.buffer.is_hbm() => {
                    self.err(at, format!("`{field}`: indirect columns on an HBM view"))
                }
                _ => {}
            }
            let index = ind.index();
            if index.indirect.is_some() {
                self.err(at, format!("`{field}`: an index view is itself indirect"));
            }
            if self
                .k
                .storages
                .try_get(index.storage)
                .is_some_and(|s| s.buffer != Buffer::Sbuf)
            {
                self.err(at, format!("`{field}`: index views live in SBUF"));
            }
        }
        let size = u64::from(view.dtype.size());
        let row = st.bytes_per_partition();
        if row % size != 0 {
            self.err(
                at,
                format!(
                    "`{field}`: {} elements do not tile the {row}-byte rows of {}",
                    view.dtype, view.storage
                ),
            );
            return Some(st);
        }
        for message in bounds(view, st, &view.storage) {
            self.err(at, format!("`{field}`: {message}"));
        }
        if let Some(d) = &view.dyn_offset
            && !self.k.registers.contains(d.reg)
        {
            self.err(at, format!("`{field}`: unknown {}", d.reg));
        }
        Some(st)
    }

    /// Register definitions and uses, in program order with block scoping.
    fn registers(&mut self) {
        let mut defined_anywhere: BTreeSet<RegHandle> = BTreeSet::new();
        let mut induction: BTreeSet<RegHandle> = BTreeSet::new();
        let mut scopes = Scopes::new(self.k.registers.len());
        self.reg_block(
            &self.k.body,
            &mut scopes,
            &mut defined_anywhere,
            &mut induction,
            &mut BTreeSet::new(),
        );
        for h in self.k.registers.handles() {
            if !defined_anywhere.contains(&h) {
                self.err(Location::Register(h), "never defined");
            }
        }
    }

    fn reg_block(
        &mut self,
        block: &[Item],
        scopes: &mut Scopes,
        defined_anywhere: &mut BTreeSet<RegHandle>,
        induction: &mut BTreeSet<RegHandle>,
        visiting: &mut BTreeSet<Handle<DynLoop>>,
    ) {
        for &item in block {
            match item {
                Item::Op(h) => {
                    let Some(op) = self.k.ops.try_get(h) else {
                        continue;
                    };
                    let at = Location::Op(h);
                    for r in op.reg_reads() {
                        if !self.k.registers.contains(r) {
                            self.err(at, format!("unknown {r}"));
                        } else if !scopes.sees(r) {
                            self.err(at, format!("reads {r} before its definition"));
                        }
                    }
                    if let OpKind::RegAlloc { dst, .. } = op.kind {
                        if !self.k.registers.contains(dst) {
                            self.err(at, format!("unknown {dst}"));
                        } else if !defined_anywhere.insert(dst) {
                            self.err(at, format!("defines {dst} a second time"));
                        } else {
                            scopes.define(dst);
                        }
                        continue;
                    }
                    for r in op.reg_writes() {
                        if !self.k.registers.contains(r) {
                            self.err(at, format!("unknown {r}"));
                        } else if !scopes.sees(r) {
                            self.err(at, format!("writes {r} before its definition"));
                        } else if induction.contains(&r) {
                            self.err(at, format!("writes the read-only induction register {r}"));
                        }
                    }
                }
                Item::Loop(l) => {
                    let Some(lp) = self.k.dyn_loops.try_get(l) else {
                        continue;
                    };
                    if !visiting.insert(l) {
                        continue;
                    }
                    let at = Location::DynLoop(l);
                    let reads: Vec<RegHandle> = match &lp.kind {
                        DynLoopKind::Range { start, stop, .. }
                        | DynLoopKind::Fori { start, stop, .. } => [start, stop]
                            .into_iter()
                            .filter_map(|b| match b {
                                RegOrImm::Reg(r) => Some(*r),
                                RegOrImm::Imm(_) => None,
                            })
                            .collect(),
                        DynLoopKind::While { cond } => vec![*cond],
                    };
                    for r in reads {
                        if !self.k.registers.contains(r) {
                            self.err(at, format!("unknown {r}"));
                        } else if !scopes.sees(r) {
                            self.err(at, format!("reads {r} before its definition"));
                        }
                    }
                    scopes.open();
                    if let Some(iv) = lp.induction {
                        if !self.k.registers.contains(iv) {
                            self.err(at, format!("unknown induction register {iv}"));
                        } else if !defined_anywhere.insert(iv) {
                            self.err(
                                at,
                                format!("induction register {iv} is defined elsewhere too"),
                            );
                        } else {
                            induction.insert(iv);
                            scopes.define(iv);
                        }
                    }
                    self.reg_block(&lp.body, scopes, defined_anywhere, induction, visiting);
                    scopes.close();
                    visiting.remove(&l);
                }
            }
        }
    }
}

/// The registers visible at a point of `Verifier::registers`' walk: a flag
/// per register, which a read or write asks (it was a search through every
/// open block's definitions, quadratic in a kernel's registers: 4 % of
/// `nkic check` of nki-library's `blockwise_mm_bwd`), and the definitions
/// of each open block, which closing it hides again. A register is
/// defined at most once (a second definition is an error and not
/// recorded), so it is in at most one block's list.
struct Scopes {
    visible: Vec<bool>,
    open: Vec<Vec<RegHandle>>,
}

impl Scopes {
    /// The kernel's outermost block open, with `registers` registers.
    fn new(registers: usize) -> Scopes {
        Scopes {
            visible: vec![false; registers],
            open: vec![Vec::new()],
        }
    }

    fn sees(&self, r: RegHandle) -> bool {
        self.visible.get(r.index()).copied().unwrap_or(false)
    }

    /// Defines `r` in the innermost open block.
    fn define(&mut self, r: RegHandle) {
        if let Some(v) = self.visible.get_mut(r.index()) {
            *v = true;
        }
        if let Some(block) = self.open.last_mut() {
            block.push(r);
        }
    }

    fn open(&mut self) {
        self.open.push(Vec::new());
    }

    /// Closes the innermost block: its definitions are no longer visible.
    fn close(&mut self) {
        for r in self.open.pop().unwrap_or_default() {
            if let Some(v) = self.visible.get_mut(r.index()) {
                *v = false;
            }
        }
    }
}
