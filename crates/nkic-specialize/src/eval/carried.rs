//! Names rebound in the body of a dynamic loop.
//!
//! A dynamic loop's body (`nl.dynamic_range`, a `while` on a register,
//! `nl.fori_loop`, `nl.while_loop`) is specialized once and runs on the
//! device any number of times, so a compile-time rebinding inside it
//! cannot reach the next iteration (language.md §3: cross-iteration state
//! lives in SBUF/HBM or registers). Two cases are handled here, for names
//! of the scope the loop statement runs in:
//!
//! * a name that held a plain register before the loop, rebound to a
//!   register expression or an int (`r = r - 1`, `i = i + j`, `r = 0`):
//!   the assignment writes the new value into that same register with
//!   `reg_alu`/`reg_move`, as `nl.while_loop` does with its body's
//!   result, and the name keeps denoting the register. This is the only
//!   reading under which `while r: ...; r = r - 1` ends;
//! * any other name that the body read before rebinding it (`acc =
//!   nl.add(acc, t)`, `j = j + 1`): a warning (E0232) on the assignment,
//!   because the rebinding happens once at compile time and the next
//!   iteration still sees the value from before the loop.
//!
//! A name first assigned in the body (including the loop variable) is
//! body-local: rebinding it has Python's meaning and is quiet. Helper
//! functions called from the body have scopes of their own and are not
//! tracked.

use std::collections::BTreeSet;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Op, OpKind, RegHandle, RegOrImm};

use crate::codes;
use crate::ctx::Ctx;
use crate::value::{RegValue, Scope, Value};

/// One open dynamic loop whose body runs in `scope`.
#[derive(Debug)]
pub(crate) struct DynFrame {
    scope: Rc<Scope>,
    /// Names the body read while they still held their value from before
    /// the loop.
    read: BTreeSet<Rc<str>>,
    /// Names the body has bound (so they are body-local from there on).
    assigned: BTreeSet<Rc<str>>,
}

/// What an assignment to a name inside a dynamic body does.
pub(crate) enum Rebind {
    /// An ordinary binding.
    Bind,
    /// The value was written into the register the name holds; the
    /// binding stays.
    Written,
}

impl Ctx<'_> {
    /// Opens the tracking of a dynamic loop body that runs in the current
    /// scope.
    pub(crate) fn push_dyn_frame(&mut self) {
        self.dyn_frames.push(DynFrame {
            scope: self.scope.clone(),
            read: BTreeSet::new(),
            assigned: BTreeSet::new(),
        });
    }

    pub(crate) fn pop_dyn_frame(&mut self) {
        self.dyn_frames.pop();
    }

    /// Makes `name` body-local in the innermost dynamic body (its loop
    /// variable).
    pub(crate) fn mark_dyn_assigned(&mut self, name: &str) {
        if let Some(f) = self.dyn_frames.last_mut() {
            f.assigned.insert(Rc::from(name));
        }
    }

    /// Records that `name` was read in the current scope.
    pub(crate) fn note_dyn_read(&mut self, name: &str) {
        let scope = &self.scope;
        for f in self.dyn_frames.iter_mut() {
            if Rc::ptr_eq(&f.scope, scope) && !f.assigned.contains(name) && !f.read.contains(name) {
                f.read.insert(Rc::from(name));
            }
        }
    }

    /// Handles an assignment of `value` to `name` inside a dynamic body;
    /// see the module doc.
    pub(crate) fn dyn_rebind(
        &mut self,
        name: &str,
        value: &Value,
        span: Span,
    ) -> Result<Rebind, Diagnostic> {
        let scope = self.scope.clone();
        let carried = self
            .dyn_frames
            .iter()
            .rev()
            .find(|f| Rc::ptr_eq(&f.scope, &scope))
            .is_some_and(|f| !f.assigned.contains(name));
        if carried
            && let Some(Value::Register(old)) = scope.get_local(name)
            && old.is_plain()
        {
            let src = match value {
                Value::Register(r) => Some(Err(*r)),
                Value::Int(i) => Some(Ok(*i)),
                _ => None,
            };
            if let Some(src) = src {
                self.write_register(name, old.reg, src, span)?;
                return Ok(Rebind::Written);
            }
        }
        // `acc += t` on a tile writes into `acc` and rebinds it to itself.
        let same_tile = match (scope.get_local(name), value) {
            (Some(Value::Tensor(old)), Value::Tensor(new)) => old.view == new.view,
            _ => false,
        };
        let read_before = !same_tile
            && self.dyn_frames.iter().any(|f| {
                Rc::ptr_eq(&f.scope, &scope) && !f.assigned.contains(name) && f.read.contains(name)
            });
        if read_before {
            self.warn_carried(name, value, span);
        }
        for f in self.dyn_frames.iter_mut() {
            if Rc::ptr_eq(&f.scope, &scope) && !f.assigned.contains(name) {
                f.assigned.insert(Rc::from(name));
            }
        }
        Ok(Rebind::Bind)
    }

    fn warn_carried(&mut self, name: &str, value: &Value, span: Span) {
        let help = match value {
            Value::Tensor(_) => format!(
                "to carry a tile across iterations, write into it: `{name}[...] = ...`, or accumulate with `{name} += ...`"
            ),
            Value::Int(_) | Value::Bool(_) => format!(
                "derive the value from the loop variable, or keep it in a register (`{name} = nisa.register_alloc(0)` before the loop)"
            ),
            _ => "keep cross-iteration state in a tile or a register".to_owned(),
        };
        let d = Diagnostic::warning(
            codes::CARRIED_REBIND,
            format!(
                "`{name}` is rebound in the body of a dynamic loop, which is compiled once: the new value does not reach the next iteration"
            ),
        )
        .with_primary(self.file, span, "rebound here, read earlier in the body")
        .with_note(
            "the body of a dynamic loop is specialized once; every iteration sees the value from before the loop (language.md §3)",
        )
        .with_help(help);
        self.warn(d);
    }

    /// Writes `src` (a register expression or an int) into `dst`, the
    /// register the loop-carried name `name` holds.
    fn write_register(
        &mut self,
        name: &str,
        dst: RegHandle,
        src: Result<i64, RegValue>,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let frozen = self
            .builder_ref()
            .kernel()
            .dyn_loops
            .iter()
            .any(|(_, l)| l.induction == Some(dst));
        if frozen {
            return Err(self
                .error(
                    codes::DYNAMIC_LOOP,
                    format!(
                        "`{name}` is an enclosing dynamic loop's induction register, which is read-only"
                    ),
                    span,
                    "writes a read-only register",
                )
                .with_help("copy it into a register of your own first: `r = nisa.register_alloc(0)`, `nisa.register_move(r, i)`"));
        }
        let r = match src {
            Ok(i) => {
                let imm = i32::try_from(i)
                    .or_else(|_| u32::try_from(i).map(|u| u as i32))
                    .map_err(|_| {
                        self.error(
                            codes::INT_OVERFLOW,
                            format!("{i} does not fit in a 32-bit register"),
                            span,
                            "too large",
                        )
                    })?;
                self.push_op(
                    Op::new(OpKind::RegMove {
                        dst,
                        src: RegOrImm::Imm(imm),
                    }),
                    span,
                )?;
                return Ok(());
            }
            Err(r) => r,
        };
        let factors = self.reg_factors(r, span)?;
        let from = self.scaled_into(r.reg, factors, dst, span)?;
        if from != dst {
            self.push_op(
                Op::new(OpKind::RegMove {
                    dst,
                    src: RegOrImm::Reg(from),
                }),
                span,
            )?;
        }
        Ok(())
    }

    /// Fails when the body of `while cond:` (the ops recorded from index
    /// `first_op` on) never writes `cond`: once entered, the loop would
    /// never end.
    pub(crate) fn check_condition_written(
        &self,
        cond: RegHandle,
        first_op: usize,
        cond_name: &str,
        test_span: Span,
    ) -> Result<(), Diagnostic> {
        let written =
            self.builder_ref()
                .kernel()
                .ops
                .iter()
                .skip(first_op)
                .any(|(_, op)| match &op.kind {
                    OpKind::RegMove { dst, .. }
                    | OpKind::RegAlu { dst, .. }
                    | OpKind::RegLoad { dst, .. } => *dst == cond,
                    _ => false,
                });
        if written {
            return Ok(());
        }
        Err(self
            .error(
                codes::DYNAMIC_LOOP,
                format!(
                    "the body of this `while` never writes its condition register `{cond_name}`: once entered, the loop never ends"
                ),
                test_span,
                "never written in the body",
            )
            .with_help(format!(
                "update it in the body, e.g. `{cond_name} = {cond_name} - 1` or `nisa.register_load({cond_name}, flag)`"
            )))
    }
}
