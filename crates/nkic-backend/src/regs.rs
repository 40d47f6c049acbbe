//! Physical sequencer registers for the IR's virtual registers.
//!
//! The specializer makes a fresh virtual register for every run-time
//! value (a `register_alloc`, each `scalar_offset` read from a tensor, each
//! register expression), so a kernel that selects an expert's weights by a
//! run-time index in an unrolled loop can make hundreds, while a queue has
//! 64 (isa.md §2.2). Registers whose live ranges do not overlap share a
//! physical register, as a compiler's register allocator does.
//!
//! A register's live range runs from its first to its last mention in
//! program order (a mention: an op reading or writing it, or a dynamic
//! loop's induction, bounds or condition). A mention inside a dynamic loop
//! stretches the range over the whole outermost enclosing loop, since the
//! body runs again after its last op. Every queue executes its
//! instructions in program order and reads registers when an instruction
//! runs (register ops are replicated on every participating queue), so a
//! register written after the last read of another can take its place.

use nkic_ir::{DynLoopKind, Handle, Item, Kernel, RegHandle, RegOrImm};

/// Per instance, the physical register of each virtual register and the
/// number used. While every virtual register and every dynamic loop's
/// counter fit in a queue's registers, virtual `rN` is physical `rN` (the
/// programs read most easily so); otherwise registers are shared by
/// [`assign`].
pub fn assign_all(kernels: &[Kernel]) -> Vec<(Vec<u32>, usize)> {
    let loops: usize = kernels.iter().map(|k| k.dyn_loops.len()).sum();
    let fits =
        |k: &Kernel| k.registers.len() + loops <= k.target.figures().sequencer_registers as usize;
    kernels
        .iter()
        .map(|k| {
            if fits(k) {
                let n = k.registers.len();
                (
                    (0..n)
                        .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
                        .collect(),
                    n,
                )
            } else {
                assign(k)
            }
        })
        .collect()
}

/// The physical register of each virtual register of `k` (indexed by
/// `RegHandle::index()`), and how many physical registers are used.
pub fn assign(k: &Kernel) -> (Vec<u32>, usize) {
    let n = k.registers.len();
    // Positions in program order, and each dynamic loop's span.
    let mut pos = 0usize;
    let mut loop_span: Vec<(usize, usize)> = vec![(usize::MAX, 0); k.dyn_loops.len()];
    let mut items: Vec<(Item, usize, Option<Handle<nkic_ir::DynLoop>>)> = Vec::new();
    k.walk(&mut |item, stack| {
        for &l in stack {
            let s = &mut loop_span[l.index()];
            s.0 = s.0.min(pos);
            s.1 = s.1.max(pos);
        }
        if let Item::Loop(l) = item {
            let s = &mut loop_span[l.index()];
            s.0 = s.0.min(pos);
            s.1 = s.1.max(pos);
        }
        items.push((item, pos, stack.first().copied()));
        pos += 1;
    });
    let mut range: Vec<Option<(usize, usize)>> = vec![None; n];
    let mut mention = |r: RegHandle, at: (usize, usize)| {
        if let Some(slot) = range.get_mut(r.index()) {
            *slot = Some(match *slot {
                Some((a, b)) => (a.min(at.0), b.max(at.1)),
                None => at,
            });
        }
    };
    for &(item, p, outer) in &items {
        let outer_loop = match item {
            Item::Loop(l) => outer.or(Some(l)),
            Item::Op(_) => outer,
        };
        let at = outer_loop.map_or((p, p), |l| loop_span[l.index()]);
        match item {
            Item::Op(h) => {
                if let Some(op) = k.ops.try_get(h) {
                    for r in op.reg_reads().into_iter().chain(op.reg_writes()) {
                        mention(r, at);
                    }
                }
            }
            Item::Loop(l) => {
                let Some(lp) = k.dyn_loops.try_get(l) else {
                    continue;
                };
                if let Some(iv) = lp.induction {
                    mention(iv, at);
                }
                match &lp.kind {
                    DynLoopKind::Range { start, stop, .. }
                    | DynLoopKind::Fori { start, stop, .. } => {
                        for v in [start, stop] {
                            if let RegOrImm::Reg(r) = v {
                                mention(*r, at);
                            }
                        }
                    }
                    DynLoopKind::While { cond } => mention(*cond, at),
                }
            }
        }
    }
    // Linear scan: registers by start, each taking the lowest physical
    // register free before its start.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (range[i].map_or(usize::MAX, |r| r.0), i));
    let mut phys = vec![0u32; n];
    // The end of the range each physical register holds.
    let mut busy_until: Vec<usize> = Vec::new();
    for i in order {
        let Some((start, end)) = range[i] else {
            continue;
        };
        let free = busy_until.iter().position(|&until| until < start);
        let p = match free {
            Some(p) => p,
            None => {
                busy_until.push(0);
                busy_until.len() - 1
            }
        };
        busy_until[p] = end;
        phys[i] = u32::try_from(p).unwrap_or(u32::MAX);
    }
    (phys, busy_until.len())
}

#[cfg(test)]
mod tests {
    use super::assign;

    fn kernel(body: &str, regs: usize) -> nkic_ir::Kernel {
        let mut text = String::from(
            "kernel \"k\" target=trn2 program_id=[0] num_programs=[1]\nfile 0 \"k.py\"\n",
        );
        for r in 0..regs {
            text += &format!("reg r{r} \"r{r}\"\n");
        }
        text += "t0 = shared_hbm float32[128, 64] \"x\" arg=0 input @ k.py:0..1\n";
        text += "t1 = sbuf float32[1, 64] \"row\" @ k.py:0..1\n";
        text += "t2 = sbuf int32[1, 8] \"idx\" @ k.py:0..1\n";
        text += body;
        nkic_ir::read(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    fn load_and_use(op: usize, r: usize) -> String {
        format!(
            "op{op} = reg_load dst=r{r} src=t2[0:1, 0:1] engine=? @ k.py:0..1\n\
             op{} = dma_copy dst=t1[0:1, 0:64] src=t0.ap([[64, 1], [1, 64]], offset=0, scalar_offset=r{r}*64) engine=dma @ k.py:0..1\n",
            op + 1
        )
    }

    #[test]
    fn registers_used_one_after_another_share_one() {
        let body: String = (0..70).map(|r| load_and_use(2 * r, r)).collect();
        let (phys, used) = assign(&kernel(&body, 70));
        assert_eq!(used, 1);
        assert!(phys.iter().all(|&p| p == 0));
    }

    #[test]
    fn a_register_read_in_a_loop_stays_live_for_the_whole_loop() {
        // r0 is loaded before the loop and read in its body; r1 is loaded
        // and read inside the body, after r0's read in program order, but
        // the next iteration reads r0 again: they must differ. r2, after
        // the loop, may reuse either.
        let body = format!(
            "{}dyn0 = dynamic_range start=0 stop=4 step=1 iv=r3 @ k.py:0..1 {{\n  \
             op1 = dma_copy dst=t1[0:1, 0:64] src=t0.ap([[64, 1], [1, 64]], offset=0, scalar_offset=r0*64) engine=dma @ k.py:0..1\n  \
             {}}}\n{}",
            "op0 = reg_load dst=r0 src=t2[0:1, 0:1] engine=? @ k.py:0..1\n",
            load_and_use(2, 1).replace('\n', "\n  "),
            load_and_use(4, 2),
        );
        let (phys, used) = assign(&kernel(&body, 4));
        assert_ne!(phys[0], phys[1]);
        assert_ne!(phys[3], phys[0]);
        assert_ne!(phys[3], phys[1]);
        assert_eq!(used, 3);
    }
}
