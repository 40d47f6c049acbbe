//! Counting loops: many iterations of a loop that only counts, taken in
//! one step.
//!
//! The dynamic emitter runs the control of every dynamic loop on every
//! participating queue (`nkic-backend` `dynamic`), so a queue with no work
//! in a loop still counts through it: `label`, `reg_alu`s adding
//! constants, the back `branch`, and the same for every loop nested in it.
//! Such an iteration costs a few sequencer cycles, while the queue doing
//! the loop's work may take microseconds per iteration (a DMA transfer),
//! and the machine lets no transfer start before every other queue has
//! caught up with it (`machine`, "Stepping"): the idle queue then stepped
//! through hundreds of iterations per transfer, one instruction at a time,
//! and a runaway loop of transfers reached its time limit (E2007) after
//! 200 to 480 million instructions and 20 to 45 s instead of a second.
//!
//! A *quiet region* is the code from a backward `branch` (or `jump`)'s
//! target label to it in which every instruction waits for nothing,
//! signals nothing and has no memory operand, is a `label`, `nop`,
//! `reg_set`, `reg_move`, `reg_alu`, `branch` or `jump`, and every branch
//! and jump stays inside (`Region::of`). Every such instruction starts
//! when its queue is free, and nothing it does is visible to another
//! queue (no memory, no semaphore, no shared engine or port). At the back
//! branch, `Region::cycle` runs two iterations of the region on a copy of
//! the registers: when both execute the same instructions and change
//! every register by the same amount, and the registers that change (the
//! *counters*) are read only by their own `add`/`sub` of a constant and by
//! the back branch's test, then every later iteration executes the same
//! instructions too (no other value depends on a counter) and moves the
//! counters by the same amounts: a *counting cycle*. Iteration `j` from
//! now then starts at `free + j · busy`, and the back branch's test is a
//! monotone function of `j`. So the machine may execute `k` iterations at
//! once (`Cycle::iterations`: the branch still taken, no start past the
//! time limit, no more instructions than the instruction limit allows)
//! and give the queue the registers, free time, statistics, trace events
//! and race clock that stepping through them gives: every byte, time and
//! statistic of a run is the same. What may differ is how the queues'
//! steps interleave, which only the limit errors report (E2007 names the
//! first instruction past the limit that the machine reaches, and counts
//! the instructions executed by then), as with another step order.

use std::collections::BTreeMap;

use nkic_isa::{BranchCond, Instruction, Label, Op, Reg, RegAluOp, RegOrImm, insn};

use crate::exec::Flow;

/// One iteration of a counting loop (module doc), from the registers at
/// its back branch.
#[derive(Clone, Debug)]
pub(crate) struct Cycle {
    /// The instructions of an iteration in execution order: the backward
    /// `branch` or `jump`, then those from its label until it again.
    pub indices: Vec<usize>,
    /// Per instruction of `indices`: when it starts and when it completes,
    /// from the start of the iteration.
    pub offsets: Vec<(u64, u64)>,
    /// The queue's busy time per iteration: the sum of the instructions'
    /// initiation intervals.
    pub busy_ps: u64,
    /// Per counter, the constant an iteration adds to it (wrapping, as
    /// `reg_alu` does).
    deltas: Vec<(usize, i32)>,
    /// The back branch's test (`None` for a `jump`): it loops while
    /// `cond(r[a], b)`.
    test: Option<(BranchCond, usize, RegOrImm)>,
}

/// What `Cycle::iterations` allows: how many iterations to take at once,
/// and whether the loop would still run when they are done, so that the
/// queue's next instructions pass a limit (the run then ends in its
/// error, and what these iterations would record for a trace is never
/// seen).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Take {
    pub iterations: u64,
    pub doomed: bool,
}

/// The limits an iteration taken at once must respect: that of
/// `SimConfig::max_simulated_ps` on every start, and the instructions the
/// run may still execute.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_start_ps: u64,
    pub instructions_left: u64,
}

/// The most instructions `Region::cycle` runs for one iteration before
/// it gives up (a region that loops inside for longer is stepped).
const PROBE_STEPS: usize = 4096;

/// A quiet region ending at a backward `branch` or `jump` (module doc),
/// found once per back branch.
#[derive(Clone, Debug)]
pub(crate) struct Region {
    /// The index of the target label, and of the back branch.
    head: usize,
    at: usize,
    /// Per instruction from `head` to `at`: its initiation interval and
    /// latency.
    costs: Vec<(u64, u64)>,
}

impl Region {
    /// The quiet region of the backward `branch` or `jump` at `at`, if it
    /// closes one (module doc); `cost(i)` is instruction `i`'s initiation
    /// interval and latency, `None` when it holds a resource queues share.
    pub fn of(
        insts: &[Instruction],
        at: usize,
        labels: &BTreeMap<Label, usize>,
        mut cost: impl FnMut(usize) -> Option<(u64, u64)>,
    ) -> Option<Region> {
        let head = *labels.get(&target(&insts.get(at)?.op)?)?;
        if head >= at {
            return None;
        }
        let inside = |label: &Label| labels.get(label).is_some_and(|&i| (head..at).contains(&i));
        for inst in &insts[head..=at] {
            let allowed = match &inst.op {
                Op::Label(_) | Op::Nop(_) | Op::RegSet(_) | Op::RegMove(_) | Op::RegAlu(_) => true,
                Op::Branch(insn::Branch { target, .. }) | Op::Jump(insn::Jump { target }) => {
                    inside(target)
                }
                _ => false,
            };
            if !allowed || !quiet(inst) {
                return None;
            }
        }
        let costs = (head..=at).map(&mut cost).collect::<Option<Vec<_>>>()?;
        Some(Region { head, at, costs })
    }

    /// The counting cycle of the region from registers `regs` at its back
    /// branch (module doc), if the next two iterations show one.
    pub fn cycle(
        &self,
        insts: &[Instruction],
        labels: &BTreeMap<Label, usize>,
        regs: &[i32],
    ) -> Option<Cycle> {
        let mut after = regs.to_vec();
        let first = self.iterate(insts, labels, &mut after)?;
        let mut again = after.clone();
        let second = self.iterate(insts, labels, &mut again)?;
        if first != second {
            return None;
        }
        let mut deltas = Vec::new();
        for (r, ((&x0, &x1), &x2)) in regs.iter().zip(&after).zip(&again).enumerate() {
            let d = x1.wrapping_sub(x0);
            if x2.wrapping_sub(x1) != d {
                return None;
            }
            if d != 0 {
                deltas.push((r, d));
            }
        }
        let counter = |r: &Reg| deltas.iter().any(|&(c, _)| c == usize::from(r.0));
        let test = match &insts[self.at].op {
            Op::Branch(insn::Branch { cond, a, b, .. }) => Some((*cond, usize::from(a.0), *b)),
            _ => None,
        };
        // Counters are read only by their own steps and the test's `a`.
        for inst in &insts[self.head..self.at] {
            let reads_counter = match &inst.op {
                Op::RegMove(insn::RegMove { src, .. }) => counter(src),
                Op::RegAlu(insn::RegAlu { dst, op, a, b }) => match b {
                    RegOrImm::Imm(_) if dst == a && matches!(op, RegAluOp::Add | RegAluOp::Sub) => {
                        false
                    }
                    RegOrImm::Imm(_) => counter(a),
                    RegOrImm::Reg(b) => counter(a) || counter(b),
                },
                Op::Branch(insn::Branch { a, b, .. }) => {
                    counter(a) || matches!(b, RegOrImm::Reg(b) if counter(b))
                }
                _ => false,
            };
            if reads_counter {
                return None;
            }
        }
        if let Some((_, _, RegOrImm::Reg(b))) = &test
            && counter(b)
        {
            return None;
        }
        let (mut offsets, mut busy_ps) = (Vec::with_capacity(first.len()), 0u64);
        for &i in &first {
            let (busy, latency) = self.costs[i - self.head];
            offsets.push((busy_ps, busy_ps + latency.max(busy)));
            busy_ps += busy;
        }
        Some(Cycle {
            indices: first,
            offsets,
            busy_ps,
            deltas,
            test,
        })
    }

    /// Runs one iteration on `regs`: the back branch taken, then the
    /// region from its label until the back branch again. Returns the
    /// instructions executed, or `None` for an iteration the machine must
    /// step (a register fault, or more than `PROBE_STEPS` instructions).
    fn iterate(
        &self,
        insts: &[Instruction],
        labels: &BTreeMap<Label, usize>,
        regs: &mut [i32],
    ) -> Option<Vec<usize>> {
        let mut executed = vec![self.at];
        let mut pc = self.head;
        while pc != self.at {
            if executed.len() > PROBE_STEPS {
                return None;
            }
            executed.push(pc);
            pc = match crate::exec::registers(&insts[pc].op, regs)?.ok()? {
                Flow::Next => pc + 1,
                Flow::Jump(label) => *labels.get(&label)?,
            };
        }
        Some(executed)
    }
}

/// The label a `branch` or `jump` goes to.
fn target(op: &Op) -> Option<Label> {
    match op {
        Op::Branch(insn::Branch { target, .. }) | Op::Jump(insn::Jump { target }) => Some(*target),
        _ => None,
    }
}

impl Cycle {
    /// How many whole iterations the queue may take at once from its back
    /// branch, with registers `regs` and free at `free_ps`: each iteration
    /// begins with the branch taken, no instruction starts after
    /// `limits.max_start_ps` and at most `limits.instructions_left`
    /// instructions execute. The branch's register does not wrap meanwhile
    /// (so that the test is monotone in the iteration).
    pub fn iterations(&self, regs: &[i32], free_ps: u64, limits: Limits) -> Take {
        let by_limits = self.within(free_ps, limits);
        let by_loop = self.looping(regs);
        Take {
            iterations: by_limits.min(by_loop),
            doomed: by_limits < by_loop,
        }
    }

    /// The iterations from a queue free at `free_ps` that stay within
    /// `limits`.
    fn within(&self, free_ps: u64, limits: Limits) -> u64 {
        let k = limits.instructions_left / self.indices.len() as u64;
        // The last instruction of iteration `k - 1` starts at
        // `free + (k - 1) · busy + last offset`.
        let last = self.offsets.last().map_or(0, |&(start, _)| start);
        match free_ps.checked_add(last) {
            Some(first_last) if first_last <= limits.max_start_ps => match self.busy_ps {
                0 => k,
                busy => k.min((limits.max_start_ps - first_last) / busy + 1),
            },
            _ => 0,
        }
    }

    /// The iterations from registers `regs` in which the back branch is
    /// taken and its register does not wrap (`u64::MAX` for a `jump` or a
    /// test that never fails).
    fn looping(&self, regs: &[i32]) -> u64 {
        let Some((cond, a, b)) = self.test else {
            return u64::MAX;
        };
        let reg = |r: usize| regs.get(r).copied().unwrap_or(0);
        let v = i64::from(reg(a));
        let bound = match b {
            RegOrImm::Reg(r) => reg(usize::from(r.0)),
            RegOrImm::Imm(imm) => imm,
        };
        let b = i64::from(bound);
        let d = i64::from(
            self.deltas
                .iter()
                .find(|&&(r, _)| r == a)
                .map_or(0, |&(_, d)| d),
        );
        // No wrap of `a` before iteration `k` is tested.
        let k = match d {
            0 => u64::MAX,
            d if d > 0 => ((i64::from(i32::MAX) - v) / d) as u64,
            d => ((v - i64::from(i32::MIN)) / -d) as u64,
        };
        // The register at the test of iteration `j` (no wrap up to `k`).
        let holds = |j: u64| i32::try_from(v + j as i64 * d).is_ok_and(|x| cond.holds(x, b as i32));
        if !holds(0) {
            return 0;
        }
        if d == 0 {
            return u64::MAX;
        }
        // With `d` nonzero, `eq` holds at one `j` only, `ne` fails at one
        // `j` at most, and the orders hold up to the first `j` they fail
        // at (the value is monotone in `j`).
        match cond {
            BranchCond::Eq => 1,
            BranchCond::Ne => match (b - v) % d == 0 && (b - v) / d > 0 {
                true => k.min(((b - v) / d) as u64),
                false => k,
            },
            _ => {
                if k == 0 || holds(k) {
                    return k;
                }
                // holds(lo), !holds(hi): the first failing `j` is in lo+1..=hi.
                let (mut lo, mut hi) = (0u64, k);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    match holds(mid) {
                        true => lo = mid,
                        false => hi = mid,
                    }
                }
                hi
            }
        }
    }

    /// Instruction `n` of the iteration (of `indices`): its initiation
    /// interval.
    pub fn busy_of(&self, n: usize) -> u64 {
        let next = self
            .offsets
            .get(n + 1)
            .map_or(self.busy_ps, |&(start, _)| start);
        next - self.offsets[n].0
    }

    /// The registers after `k` iterations from `regs`.
    pub fn advance(&self, regs: &mut [i32], k: u64) {
        for &(r, d) in &self.deltas {
            if let Some(x) = regs.get_mut(r) {
                // `k` wrapping additions of `d`: `k · d` modulo 2^32.
                *x = x.wrapping_add((i64::from(d).wrapping_mul(k as i64)) as i32);
            }
        }
    }
}

/// Whether `inst` waits for, signals and touches nothing another queue
/// sees.
fn quiet(inst: &Instruction) -> bool {
    inst.waits.is_empty() && inst.signals.is_empty() && inst.op.operands().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(body: &str) -> nkic_isa::Program {
        nkic_isa::assemble(&format!(".target trn3\n.sem s\n\n.queue dma1\n{body}"))
            .expect("the test program assembles")
    }

    /// The counting cycle at `at` with registers `regs` (each instruction
    /// `i` busy `10 + i` ps, its latency 20 ps).
    fn cycle_at(p: &nkic_isa::Program, at: usize, regs: &[i32]) -> Option<Cycle> {
        let insts = &p.queues[0].insts;
        let labels: BTreeMap<Label, usize> = insts
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| match inst.op {
                Op::Label(insn::Label { label }) => Some((label, i)),
                _ => None,
            })
            .collect();
        Region::of(insts, at, &labels, |i| Some((10 + i as u64, 20)))?.cycle(insts, &labels, regs)
    }

    const COUNTING: &str = "  reg_set dst=r0 value=0\n  jump target=L1\nL0:\n  reg_alu dst=r2 op=add a=r2 b=1\n  reg_alu dst=r0 op=add a=r0 b=3\nL1:\n  branch cond=lt a=r0 b=100 target=L0\n";

    const FREE: Limits = Limits {
        max_start_ps: u64::MAX,
        instructions_left: u64::MAX,
    };

    /// The emitter's loop control is a counting cycle: the branch, then
    /// the label and body from its target; its offsets add up the costs.
    #[test]
    fn the_loop_control_is_a_counting_cycle() {
        let p = program(COUNTING);
        let c = cycle_at(&p, 6, &[0; 4]).expect("a counting cycle");
        assert_eq!(c.indices, [6, 2, 3, 4, 5]);
        assert_eq!(c.busy_ps, 16 + 12 + 13 + 14 + 15);
        assert_eq!(c.offsets[0], (0, 20));
        assert_eq!(c.offsets[1], (16, 36));
        assert_eq!(c.deltas, [(0, 3), (2, 1)]);
        assert!(
            cycle_at(&p, 1, &[0; 4]).is_none(),
            "a forward jump is no cycle"
        );
    }

    /// A loop nested in a counting loop, its counter set at each entry,
    /// makes one counting cycle of the outer iteration; an inner loop
    /// whose bound is the outer counter does not.
    #[test]
    fn nested_loops_count_when_their_inner_trips_are_fixed() {
        let nested = "  jump target=L1\nL0:\n  reg_set dst=r1 value=0\n  jump target=L3\nL2:\n  reg_alu dst=r3 op=add a=r3 b=1\n  reg_alu dst=r1 op=add a=r1 b=1\nL3:\n  branch cond=lt a=r1 b=3 target=L2\n  reg_alu dst=r0 op=add a=r0 b=1\nL1:\n  branch cond=lt a=r0 b=100 target=L0\n";
        let p = program(nested);
        // The first iteration finds the inner counter at 0, later ones at
        // 3: only from the second on do two iterations agree.
        assert!(cycle_at(&p, 11, &[0; 4]).is_none());
        let c = cycle_at(&p, 11, &[0, 3, 0, 0]).expect("a counting cycle");
        // The branch, L0, reg_set, jump, 3 × (L2, two reg_alu, L3, branch
        // taken) but the last test falls through: L3 and the branch once
        // more, then reg_alu, L1.
        assert_eq!(c.indices.len(), 1 + 3 + 3 * 5 + 2 + 2);
        assert_eq!(c.deltas, [(0, 1), (3, 3)]);
        assert_eq!(c.iterations(&[0; 4], 0, FREE).iterations, 100);
        let triangular = nested.replace("branch cond=lt a=r1 b=3", "branch cond=lt a=r1 b=r0");
        let p = program(&triangular);
        assert!(cycle_at(&p, 11, &[5, 5, 0, 0]).is_none());
    }

    /// The iterations taken at once are those stepping would take before
    /// the branch falls through, for each condition and direction.
    #[test]
    fn iterations_stop_where_the_branch_falls_through() {
        for (cond, start, step, bound) in [
            ("lt", 0i32, 3i32, 100i32),
            ("le", 0, 3, 99),
            ("gt", 50, -7, -3),
            ("ge", 50, -7, -3),
            ("ne", 0, 4, 96),
            ("ne", 1, 4, 96),
            ("eq", 5, 1, 5),
            ("lt", 2147483000, 100, 2147483647),
        ] {
            let op = if step < 0 { "sub" } else { "add" };
            let body = format!(
                "  jump target=L1\nL0:\n  reg_alu dst=r0 op={op} a=r0 b={}\nL1:\n  branch cond={cond} a=r0 b={bound} target=L0\n",
                step.abs()
            );
            let p = program(&body);
            let c = cycle_at(&p, 4, &[start, 0, 0]).expect("a counting cycle");
            let holds = |x: i32| match cond {
                "lt" => x < bound,
                "le" => x <= bound,
                "gt" => x > bound,
                "ge" => x >= bound,
                "ne" => x != bound,
                _ => x == bound,
            };
            // Stepping: iterations while the test holds, until the value
            // would wrap.
            let (mut x, mut n) = (start, 0u64);
            while holds(x) && n < 100_000 {
                match x.checked_add(step) {
                    Some(next) => x = next,
                    None => break,
                }
                n += 1;
            }
            let k = c.iterations(&[start, 0, 0], 0, FREE).iterations;
            let endless = cond == "ne" && (bound - start) % step != 0;
            if endless {
                assert!(k >= 100_000, "{cond} {start} {step} {bound}: {k}");
            } else {
                assert_eq!(k, n, "{cond} {start} {step} {bound}");
            }
            let mut regs = [start, 0, 0];
            c.advance(&mut regs, k.min(n));
            assert_eq!(
                regs[0],
                start.wrapping_add(step.wrapping_mul(k.min(n) as i32))
            );
        }
    }

    /// No iteration taken at once starts past the time limit or runs
    /// past the instruction limit.
    #[test]
    fn iterations_respect_the_limits() {
        let p = program(COUNTING);
        let c = cycle_at(&p, 6, &[0; 4]).expect("a counting cycle");
        let busy = c.busy_ps;
        let last = c.offsets.last().expect("offsets").0;
        let time = |max_start_ps| Limits {
            max_start_ps,
            instructions_left: u64::MAX,
        };
        assert_eq!(
            c.iterations(&[0; 4], 1000, time(1000 + last - 1))
                .iterations,
            0
        );
        assert_eq!(c.iterations(&[0; 4], 1000, time(1000 + last)).iterations, 1);
        let take = c.iterations(&[0; 4], 1000, time(1000 + last + 2 * busy));
        assert_eq!(
            take,
            Take {
                iterations: 3,
                doomed: true
            }
        );
        let count = |instructions_left| Limits {
            max_start_ps: u64::MAX,
            instructions_left,
        };
        assert_eq!(c.iterations(&[0; 4], 0, count(14)).iterations, 2);
        assert_eq!(c.iterations(&[0; 4], 0, count(15)).iterations, 3);
        // r0 counts by 3 from 0 below 100: 34 iterations.
        let take = c.iterations(&[0; 4], 0, FREE);
        assert_eq!(
            take,
            Take {
                iterations: 34,
                doomed: false
            }
        );
        // Limits that end with the loop are not doomed.
        let exact = c.iterations(&[0; 4], 0, count(34 * 5));
        assert_eq!(
            exact,
            Take {
                iterations: 34,
                doomed: false
            }
        );
        // A branch that falls through now takes none.
        assert_eq!(c.iterations(&[100, 0, 0, 0], 0, FREE).iterations, 0);
    }

    /// Waits, signals and branches out are no quiet region; counters read
    /// by anything but their own steps and the test, and registers that
    /// do not move by constants, are no counting cycle.
    #[test]
    fn other_loops_are_not_counting_cycles() {
        for body in [
            "L0:\n  nop signal(s)\n  branch cond=lt a=r0 b=100 target=L0\n",
            "L0:\n  nop wait(s>=1)\n  branch cond=lt a=r0 b=100 target=L0\n",
            "L0:\n  reg_alu dst=r0 op=add a=r0 b=1\n  branch cond=lt a=r0 b=100 target=L0 wait(s>=1)\n",
            "L0:\n  branch cond=lt a=r0 b=100 target=L9\n  branch cond=lt a=r0 b=100 target=L0\nL9:\n",
            // r0 doubles: 1, 2, 4.
            "L0:\n  reg_alu dst=r0 op=mul a=r0 b=2\n  branch cond=lt a=r0 b=100 target=L0\n",
            // r1 follows the counter r0.
            "L0:\n  reg_alu dst=r0 op=add a=r0 b=1\n  reg_alu dst=r1 op=add a=r0 b=2\n  branch cond=lt a=r0 b=100 target=L0\n",
            // The test's bound is a counter.
            "L0:\n  reg_alu dst=r0 op=add a=r0 b=1\n  reg_alu dst=r1 op=add a=r1 b=2\n  branch cond=lt a=r0 b=r1 target=L0\n",
            // A branch inside tests a counter.
            "L0:\n  reg_alu dst=r0 op=add a=r0 b=1\n  branch cond=gt a=r0 b=1000 target=L1\nL1:\n  branch cond=lt a=r0 b=100 target=L0\n",
        ] {
            let p = program(body);
            let at = p.queues[0]
                .insts
                .iter()
                .rposition(|i| matches!(i.op, Op::Branch(_)))
                .expect("a back branch");
            assert!(cycle_at(&p, at, &[1, 0, 0, 0]).is_none(), "{body}");
        }
    }
}
