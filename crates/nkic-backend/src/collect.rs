//! Gathers the ops and storages of every program instance into one
//! numbering, and rejects what the backend does not compile yet.
//!
//! Instance `i`'s program-order positions follow instance `i - 1`'s, so one
//! list of ops in source order and one set of live ranges describe the
//! whole grid. Arguments and returned tensors of later instances are
//! identified with instance 0's (by parameter and return index). So are
//! internal `nl.shared_hbm` tensors, which every instance sees
//! (language.md §3.2): the `n`-th internal shared_hbm allocation of an
//! instance is instance 0's `n`-th when both come from the same call with
//! the same name, dtype, shape and data (an allocation whose shape or
//! constant bytes depend on `nl.program_id` stays per instance). Every other storage, including
//! `nl.private_hbm`/`nl.hbm` tensors, is its own.
//!
//! Not compiled yet (a diagnostic, never a crash): indirect views other than
//! row indirection on one side of a `dma_copy` (E0911). Kernels with dynamic loops, registers or dynamic offsets
//! are marked [`Unit::dynamic`] for the [`dynamic`](crate::dynamic) emitter.

use nkic_diag::{Diagnostic, SourceMap};
use nkic_ir::{
    ArgKind, Buffer, Handle, Indirection, Kernel, LiveRange, Op, OpKind, SecondaryMap, SrcLoc,
    Storage, live_ranges, program_order,
};
use nkic_isa::Target;

use crate::codes;

/// One storage of the compiled program.
#[derive(Clone, Debug)]
pub struct StorageInfo<'k> {
    /// The instance that defines it (0 for shared arguments and outputs).
    pub inst: usize,
    pub handle: Handle<Storage>,
    pub st: &'k Storage,
    /// Positions during which it needs memory; `None` when no op uses it.
    pub live: Option<LiveRange>,
    pub loc: Option<SrcLoc>,
}

/// One op of the compiled program.
#[derive(Clone, Debug)]
pub struct OpInfo<'k> {
    pub inst: usize,
    pub handle: Handle<Op>,
    pub op: &'k Op,
    /// The global program-order position.
    pub pos: u32,
    pub loc: Option<SrcLoc>,
}

/// The whole grid in one numbering.
#[derive(Debug)]
pub struct Unit<'k> {
    pub kernels: &'k [Kernel],
    pub target: Target,
    pub storages: Vec<StorageInfo<'k>>,
    /// Per instance, the global storage index of each storage handle.
    pub storage_ids: Vec<SecondaryMap<Storage, usize>>,
    /// All ops in source order (instance by instance).
    pub ops: Vec<OpInfo<'k>>,
    /// The program's arguments: global storage and kind, in order.
    pub args: Vec<(usize, ArgKind)>,
    /// Returned storages that are not arguments, in return order.
    pub outputs: Vec<usize>,
    /// True when some instance has dynamic loops, registers or dynamic
    /// offsets.
    pub dynamic: bool,
    /// Per instance, the physical register of each virtual register and
    /// the number of physical registers used ([`crate::regs`]).
    pub regs: Vec<(Vec<u32>, usize)>,
}

impl Unit<'_> {
    /// The physical register of virtual register `r` of instance `inst`.
    pub fn reg(&self, inst: usize, r: nkic_ir::RegHandle) -> nkic_isa::Reg {
        let p = self.regs[inst]
            .0
            .get(r.index())
            .copied()
            .unwrap_or(u32::MAX);
        nkic_isa::Reg(u8::try_from(p).unwrap_or(u8::MAX))
    }

    /// The global index of storage `h` of instance `inst`.
    ///
    /// Every storage handle of a verified kernel was numbered by
    /// [`collect`], so the lookup cannot fail for handles taken from it.
    pub fn sid(&self, inst: usize, h: Handle<Storage>) -> usize {
        match self.storage_ids.get(inst).and_then(|m| m.get(h)) {
            Some(&id) => id,
            None => panic!("storage {h:?} of instance {inst} was not collected"),
        }
    }

    /// The display name of a storage for messages.
    pub fn storage_label(&self, id: usize, sources: &SourceMap) -> String {
        let s = &self.storages[id];
        storage_label(&self.kernels[s.inst], s.handle, sources)
    }
}

/// The display name of storage `h` of `kernel` for messages: its name (or
/// `t<n>`) and where it was allocated.
pub(crate) fn storage_label(kernel: &Kernel, h: Handle<Storage>, sources: &SourceMap) -> String {
    let st = &kernel.storages[h];
    let name = if st.name.is_empty() {
        format!("t{}", h.index())
    } else {
        format!("`{}`", st.name)
    };
    match kernel.spans.storages.get(h) {
        Some(&loc) => format!(
            "{name} allocated at {}",
            kernel.describe_loc(loc, Some(sources))
        ),
        None => name,
    }
}

/// A diagnostic with a primary label at `loc` when there is one.
pub(crate) fn diag_at(
    code: &'static str,
    message: impl Into<String>,
    loc: Option<SrcLoc>,
    label: impl Into<String>,
) -> Diagnostic {
    let d = Diagnostic::error(code, message);
    match loc {
        Some(loc) => d.with_primary(loc.file, loc.span, label),
        None => d,
    }
}

/// E0922 for one broken IR invariant of program instance `inst`.
fn invalid_ir(kernel: &Kernel, inst: usize, e: &nkic_ir::verify::VerifyError) -> Diagnostic {
    use nkic_ir::verify::Location;
    let loc = match e.at {
        Location::Op(h) => kernel.spans.ops.get(h).copied(),
        Location::Storage(h) => kernel.spans.storages.get(h).copied(),
        _ => None,
    };
    diag_at(
        codes::INVALID_IR,
        format!("nkic built a program it cannot compile: {e}"),
        loc,
        "here",
    )
    .with_note(format!("in program instance {inst}"))
    .with_help("this is a bug in nkic: please report it with the kernel and its arguments")
}

/// Numbers the ops and storages of `kernels`; see the module doc.
pub fn collect<'k>(
    kernels: &'k [Kernel],
    sources: &SourceMap,
) -> Result<Unit<'k>, Vec<Diagnostic>> {
    // The specializer builds only IR that verifies (`nkic_ir::verify`'s
    // module doc). A program that does not is a bug in nkic, reported at
    // the ops and tensors it concerns rather than as a crash (the first
    // failing instance only: the others usually repeat it).
    for (inst, k) in kernels.iter().enumerate() {
        if let Err(errors) = nkic_ir::verify(k) {
            return Err(errors.iter().map(|e| invalid_ir(k, inst, e)).collect());
        }
    }
    let mut diags = Vec::new();
    let target = kernels.first().map_or(Target::Trn3, |k| k.target);
    let mut unit = Unit {
        kernels,
        target,
        storages: Vec::new(),
        storage_ids: Vec::new(),
        ops: Vec::new(),
        args: Vec::new(),
        outputs: Vec::new(),
        dynamic: false,
        regs: crate::regs::assign_all(kernels),
    };
    let mut offset = 0u32;
    for (inst, k) in kernels.iter().enumerate() {
        if k.target != target {
            diags.push(Diagnostic::error(
                codes::GRID_MISMATCH,
                format!(
                    "program instance {inst} targets {} but instance 0 targets {}",
                    k.target.name(),
                    target.name()
                ),
            ));
        }
        unit.dynamic |= check_supported(k, sources, &mut diags);
        let mut ids = SecondaryMap::new();
        // Arguments and outputs of later instances are instance 0's.
        if inst > 0 {
            let first = &kernels[0];
            let mismatched = argument_mismatches(inst, k, first);
            let counts_differ =
                k.args.len() != first.args.len() || k.outputs.len() != first.outputs.len();
            diags.extend(mismatched);
            if counts_differ {
                continue;
            }
            for (mine, theirs) in shared_tensors(k, first) {
                ids.insert(mine, unit.sid(0, theirs));
            }
            for (mine, theirs) in shared_internal(k).into_iter().zip(shared_internal(first)) {
                if ids.get(mine).is_none() && same_site(k, mine, first, theirs) {
                    ids.insert(mine, unit.sid(0, theirs));
                }
            }
        }
        let ranges = live_ranges(k);
        for (h, st) in k.storages.iter() {
            let live = ranges.get(h).map(|r| LiveRange {
                first: r.first + offset,
                last: r.last + offset,
            });
            if let Some(&id) = ids.get(h) {
                let info: &mut StorageInfo<'_> = &mut unit.storages[id];
                info.live = match (info.live, live) {
                    (Some(a), Some(b)) => Some(LiveRange {
                        first: a.first.min(b.first),
                        last: a.last.max(b.last),
                    }),
                    (a, b) => a.or(b),
                };
                continue;
            }
            ids.insert(h, unit.storages.len());
            unit.storages.push(StorageInfo {
                inst,
                handle: h,
                st,
                live,
                loc: k.spans.storages.get(h).copied(),
            });
        }
        unit.storage_ids.push(ids);
        if inst == 0 {
            for a in &k.args {
                unit.args.push((unit.sid(0, a.storage), a.kind));
            }
            for &o in &k.outputs {
                let id = unit.sid(0, o);
                if !unit.args.iter().any(|&(a, _)| a == id) && !unit.outputs.contains(&id) {
                    unit.outputs.push(id);
                }
            }
        }
        let order = program_order(k);
        for h in k.ops_in_order() {
            let pos = order.op_position.get(h).copied().unwrap_or(0) + offset;
            unit.ops.push(OpInfo {
                inst,
                handle: h,
                op: &k.ops[h],
                pos,
                loc: k.spans.ops.get(h).copied(),
            });
        }
        offset += order.len;
    }
    if diags.is_empty() {
        Ok(unit)
    } else {
        Err(diags)
    }
}

/// The storages of instance `k` that are instance `first`'s arguments and
/// returned tensors, paired in order: `(k's, first's)`.
fn shared_tensors<'a>(
    k: &'a Kernel,
    first: &'a Kernel,
) -> impl Iterator<Item = (Handle<Storage>, Handle<Storage>)> + 'a {
    k.args
        .iter()
        .map(|a| a.storage)
        .zip(first.args.iter().map(|a| a.storage))
        .chain(k.outputs.iter().copied().zip(first.outputs.iter().copied()))
}

/// E0912 for each way program instance `inst` (`k`) differs from instance
/// 0 (`first`) in its arguments and returned tensors; none when they agree.
/// [`collect`] reports them for the instances one core runs, and
/// [`compile_launch`](crate::compile_launch) for every instance of a
/// launch before it splits the instances over the cores.
pub(crate) fn argument_mismatches(inst: usize, k: &Kernel, first: &Kernel) -> Vec<Diagnostic> {
    if k.outputs.len() != first.outputs.len() {
        // The first returned tensor one instance has and the other lacks.
        let (longer, n) = if k.outputs.len() > first.outputs.len() {
            (k, first.outputs.len())
        } else {
            (first, k.outputs.len())
        };
        let loc = longer
            .outputs
            .get(n)
            .and_then(|&s| longer.spans.storages.get(s).copied());
        return vec![
            diag_at(
                codes::GRID_MISMATCH,
                format!(
                    "program instance {inst} returns {} tensors, instance 0 returns {}",
                    k.outputs.len(),
                    first.outputs.len()
                ),
                loc,
                "returned by one instance and not the other",
            )
            .with_help("every instance of a grid returns the same tensors"),
        ];
    }
    if k.args.len() != first.args.len() {
        return vec![Diagnostic::error(
            codes::GRID_MISMATCH,
            format!("program instance {inst} has other arguments than instance 0"),
        )];
    }
    shared_tensors(k, first)
        .filter_map(|(mine, theirs)| {
            let (a, b) = (&k.storages[mine], &first.storages[theirs]);
            (a.shape != b.shape || a.dtype != b.dtype).then(|| {
                diag_at(
                    codes::GRID_MISMATCH,
                    if a.name.is_empty() {
                        format!("a returned tensor of program instance {inst} has another shape or dtype than in instance 0")
                    } else {
                        format!("tensor `{}` of program instance {inst} has another shape or dtype than in instance 0", a.name)
                    },
                    k.spans.storages.get(mine).copied(),
                    format!("{}{:?} in instance {inst}, {}{:?} in instance 0", a.dtype, a.shape, b.dtype, b.shape),
                )
            })
        })
        .collect()
}

/// The internal `nl.shared_hbm` storages of `k` (not arguments, not
/// returned), in allocation order.
pub(crate) fn shared_internal(k: &Kernel) -> Vec<Handle<Storage>> {
    k.storages
        .iter()
        .filter(|(h, st)| {
            st.buffer == Buffer::SharedHbm
                && !k.args.iter().any(|a| a.storage == *h)
                && !k.outputs.contains(h)
        })
        .map(|(h, _)| h)
        .collect()
}

/// True when storage `a` of kernel `ka` and `b` of `kb` are the same
/// allocation of the kernel's source in two instances: the same call,
/// name, dtype, shape and data.
fn same_site(ka: &Kernel, a: Handle<Storage>, kb: &Kernel, b: Handle<Storage>) -> bool {
    let (x, y) = (&ka.storages[a], &kb.storages[b]);
    let (lx, ly) = (ka.spans.storages.get(a), kb.spans.storages.get(b));
    x.name == y.name && x.dtype == y.dtype && x.shape == y.shape && x.data == y.data && lx == ly
}

/// Reports the constructs of `k` the backend does not compile yet, and
/// returns whether `k` has dynamic control (dynamic loops, registers or
/// dynamic offsets), which the [`dynamic`](crate::dynamic) emitter handles.
fn check_supported(k: &Kernel, sources: &SourceMap, diags: &mut Vec<Diagnostic>) -> bool {
    let mut dynamic = !k.dyn_loops.is_empty();
    for (h, op) in k.ops.iter() {
        let loc = k.spans.ops.get(h).copied();
        if op.kind.is_register_op() {
            dynamic = true;
            continue;
        }
        let accesses = op.accesses();
        if accesses.iter().any(|a| a.view.dyn_offset.is_some()) {
            dynamic = true;
        }
        // Row indirection on exactly one side of a `dma_copy` is a gather
        // or a scatter; every other indirect view is not compiled yet.
        let gather_or_scatter = match &op.kind {
            OpKind::DmaCopy { dst, src, .. } => {
                let rows = |v: &nkic_ir::View| matches!(v.indirect, Some(Indirection::Rows { .. }));
                rows(dst) != rows(src)
                    && dst.indirect.iter().chain(src.indirect.iter()).all(
                        |i| matches!(i, Indirection::Rows { index } if index.indirect.is_none()),
                    )
            }
            _ => false,
        };
        if !gather_or_scatter && accesses.iter().any(|a| a.view.indirect.is_some()) {
            let mut d = diag_at(
                codes::UNSUPPORTED_VIEW,
                format!(
                    "`{}`: indirect (gather/scatter) views are not supported by the backend yet",
                    op.kind.mnemonic()
                ),
                loc,
                "an operand's rows are chosen at run time",
            );
            for note in k.op_notes(h, Some(sources)) {
                d = d.with_note(note);
            }
            diags.push(d);
        }
    }
    dynamic
}
