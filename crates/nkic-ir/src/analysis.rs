//! Analyses over verified IR that more than one pass needs: program-order
//! positions and storage live ranges.
//!
//! # Positions
//!
//! [`program_order`] numbers the body depth first: every op gets one
//! position, and every dynamic loop gets a *header* position before its
//! body and a *footer* position after it, so a loop spans
//! `[header, footer]` and everything in its body lies strictly inside.
//!
//! # Live ranges
//!
//! [`live_ranges`] gives each storage the inclusive range of positions
//! during which it must keep its memory:
//! * every op that reads or writes a view of it (index views included)
//!   makes its position live;
//! * a use inside a dynamic loop that does not also enclose the storage's
//!   allocation makes the whole loop live (the value is needed again in
//!   the next iteration, or was produced by the previous one);
//! * a storage allocated in a dynamic loop body (`Storage::scope`) is live
//!   for the whole loop, as NKI keeps such tensors resident (language.md
//!   §5.3), unless each iteration makes it anew: the ops of the body that
//!   touch it write every byte of it before any reads it, at the body's
//!   own level (not in a nested loop), with no `accumulate`, run-time
//!   offset or indirection, each write over all its partitions
//!   ([`fresh_each_iteration`]). Then no
//!   iteration can see the bytes of an earlier one, and the storage is
//!   live only from that write to its last use, so the tiles of one
//!   iteration share bytes by their uses as those of an unrolled loop do.
//!   Iterations that overlap on the device (the backend's relaxed loops)
//!   are ordered by the dependency graph, which compares placed bytes, so
//!   an iteration's write waits for the previous iteration's last use of
//!   the bytes it reuses. A value is not promised to survive from one run
//!   of that loop to the next run (an enclosing loop's next iteration);
//! * arguments of kind `input` or `inout` are live from position 0, and
//!   arguments of kind `output` or `inout` and returned storages until the
//!   end.
//!
//! Storages that no op touches and that are not arguments or outputs get
//! no range: they need no memory.

use crate::arena::{Handle, SecondaryMap};
use crate::kernel::{ArgKind, DynLoop, Item, Kernel, Storage};
use crate::op::{Op, Role};

/// Program-order positions of a kernel's items; see the module doc.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgramOrder {
    /// The position of every op in the body.
    pub op_position: SecondaryMap<Op, u32>,
    /// The `(header, footer)` positions of every dynamic loop in the body.
    pub loop_span: SecondaryMap<DynLoop, (u32, u32)>,
    /// The dynamic loops enclosing each op, outermost first (absent for
    /// ops at the top level).
    pub op_loops: SecondaryMap<Op, Vec<Handle<DynLoop>>>,
    /// One past the last position.
    pub len: u32,
}

/// An inclusive range of positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LiveRange {
    pub first: u32,
    pub last: u32,
}

impl LiveRange {
    /// Grows the range to include `[first, last]`.
    fn cover(&mut self, first: u32, last: u32) {
        self.first = self.first.min(first);
        self.last = self.last.max(last);
    }

    /// True when the two ranges share a position (the storages cannot
    /// share memory).
    pub fn intersects(self, other: LiveRange) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// Grows the range of `t` to include `[first, last]`.
fn cover(ranges: &mut SecondaryMap<Storage, LiveRange>, t: Handle<Storage>, first: u32, last: u32) {
    match ranges.get_mut(t) {
        Some(r) => r.cover(first, last),
        None => {
            ranges.insert(t, LiveRange { first, last });
        }
    }
}

/// Numbers the kernel's items in program order.
pub fn program_order(kernel: &Kernel) -> ProgramOrder {
    fn go(k: &Kernel, block: &[Item], stack: &mut Vec<Handle<DynLoop>>, order: &mut ProgramOrder) {
        for &item in block {
            match item {
                Item::Op(h) => {
                    order.op_position.insert(h, order.len);
                    if !stack.is_empty() {
                        order.op_loops.insert(h, stack.clone());
                    }
                    order.len += 1;
                }
                Item::Loop(l) => {
                    // A loop nested in itself exists only in malformed IR,
                    // which the verifier rejects; skip it rather than recurse.
                    let Some(lp) = k.dyn_loops.try_get(l) else {
                        continue;
                    };
                    if stack.contains(&l) {
                        continue;
                    }
                    let header = order.len;
                    order.len += 1;
                    stack.push(l);
                    go(k, &lp.body, stack, order);
                    stack.pop();
                    order.loop_span.insert(l, (header, order.len));
                    order.len += 1;
                }
            }
        }
    }
    let mut order = ProgramOrder::default();
    go(kernel, &kernel.body, &mut Vec::new(), &mut order);
    order
}

/// Whether storage `t`, allocated in dynamic loop `scope`, is made anew
/// by every iteration: the ops touching it (`touches`, in position order)
/// write every byte of it before any reads it, all of them at the body's
/// own level (not in a nested loop, which may run no iteration), at no
/// run-time offset or indirection, and without adding into it.
fn fresh_each_iteration(
    kernel: &Kernel,
    order: &ProgramOrder,
    t: Handle<Storage>,
    scope: Handle<DynLoop>,
    touches: &[(u32, Handle<Op>)],
) -> bool {
    let Some(st) = kernel.storages.try_get(t) else {
        return false;
    };
    let whole = crate::view::View::full(t, st).footprint_in(st);
    let Some(want) = whole.runs(RUN_LIMIT) else {
        return false;
    };
    // The bytes of every row written so far (all partitions each time).
    let mut written: Vec<(i64, i64)> = Vec::new();
    for &(_, h) in touches {
        let Some(op) = kernel.ops.try_get(h) else {
            return false;
        };
        if order.op_loops.get(h).and_then(|l| l.last()) != Some(&scope) || op.accumulates() {
            return false;
        }
        let accesses: Vec<_> = op
            .accesses()
            .into_iter()
            .filter(|a| a.view.storage == t)
            .collect();
        if accesses.iter().any(|a| a.role != Role::Write || a.is_index) {
            return false;
        }
        for a in accesses {
            let fp = a.view.footprint_in(st);
            if fp.dynamic || a.view.indirect.is_some() || fp.partitions != whole.partitions {
                return false;
            }
            let Some(runs) = fp.runs(RUN_LIMIT) else {
                return false;
            };
            written = merge_runs(&written, &runs);
        }
        if written == want {
            return true;
        }
    }
    false
}

/// The union of two sorted, merged lists of byte runs `[start, end)`,
/// sorted and merged.
fn merge_runs(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut all: Vec<(i64, i64)> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(all.len());
    for (lo, hi) in all {
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// The most byte runs per row `fresh_each_iteration` compares; a write of
/// more runs than this keeps its storage live for the whole loop.
const RUN_LIMIT: u64 = 4096;

/// The live range of every storage that needs memory; see the module doc.
pub fn live_ranges(kernel: &Kernel) -> SecondaryMap<Storage, LiveRange> {
    let order = program_order(kernel);
    let mut ranges: SecondaryMap<Storage, LiveRange> = SecondaryMap::new();
    let no_loops = Vec::new();
    // The ops touching each storage allocated in a dynamic loop body.
    let mut touches: SecondaryMap<Storage, Vec<(u32, Handle<Op>)>> = SecondaryMap::new();
    for (h, op) in kernel.ops.iter() {
        let Some(&pos) = order.op_position.get(h) else {
            continue;
        };
        let loops = order.op_loops.get(h).unwrap_or(&no_loops);
        for access in op.accesses() {
            let t = access.view.storage;
            if kernel
                .storages
                .try_get(t)
                .is_some_and(|s| s.scope.is_some())
            {
                match touches.get_mut(t) {
                    Some(list) => list.push((pos, h)),
                    None => {
                        touches.insert(t, vec![(pos, h)]);
                    }
                }
            }
            cover(&mut ranges, t, pos, pos);
            let scope = kernel.storages.try_get(t).and_then(|s| s.scope);
            // The loops enclosing the allocation are the scope and its
            // ancestors, which form a prefix of `loops` for a legal use.
            let inner_from = scope
                .and_then(|s| loops.iter().position(|&l| l == s))
                .map_or(0, |i| i + 1);
            for &l in &loops[inner_from.min(loops.len())..] {
                if let Some(&(header, footer)) = order.loop_span.get(l) {
                    cover(&mut ranges, t, header, footer);
                }
            }
        }
    }
    for (t, st) in kernel.storages.iter() {
        if let Some(scope) = st.scope
            && ranges.get(t).is_some()
            && let Some(&(header, footer)) = order.loop_span.get(scope)
            && !touches.get_mut(t).is_some_and(|list| {
                list.sort_unstable();
                list.dedup();
                fresh_each_iteration(kernel, &order, t, scope, list)
            })
        {
            cover(&mut ranges, t, header, footer);
        }
    }
    let end = order.len.saturating_sub(1);
    for arg in &kernel.args {
        if matches!(arg.kind, ArgKind::Input | ArgKind::InOut) {
            cover(&mut ranges, arg.storage, 0, 0);
        }
        if matches!(arg.kind, ArgKind::Output | ArgKind::InOut) {
            cover(&mut ranges, arg.storage, end, end);
        }
    }
    for &out in &kernel.outputs {
        cover(&mut ranges, out, end, end);
    }
    ranges
}
