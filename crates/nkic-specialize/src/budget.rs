//! The compile-time evaluation budget: one bound on the work, the memory and
//! the nesting a kernel's compile-time code may use, so that every analysis
//! (a `check`, one keystroke in the language server) ends in bounded time and
//! memory whatever the source says.
//!
//! The budget is charged at a few choke points only:
//! - every expression evaluated and every statement run is one *step* and
//!   one level of *nesting* while it runs ([`Ctx::enter`], from `eval` and
//!   `exec_stmt`);
//! - every string, list or tuple built by an operation whose result can
//!   outgrow its operands (concatenation, repetition, `join`, `replace`,
//!   `str`/`repr`, f-strings, `%` and `format`) charges its size in *bytes*
//!   before it is built ([`Ctx::charge_bytes`]); the total over the run is
//!   bounded, so memory never grows beyond it however the values are shared.
//!
//! Running out is a diagnostic at the expression where it happened; the
//! evaluator adds the call chain and loop iterations as notes on the way out.
//! The limits are [`SpecializeConfig`](crate::config::SpecializeConfig)'s
//! `max_steps`, `max_value_bytes` and `max_nesting`.

use nkic_diag::{Diagnostic, Span};

use crate::codes;
use crate::ctx::Ctx;

/// What the running specialization has used so far.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Budget {
    /// Expressions evaluated plus statements run.
    pub(crate) steps: u64,
    /// Bytes of strings and sequences built by growing operations.
    pub(crate) bytes: u64,
    /// Expressions and statements being evaluated (the evaluator's
    /// recursion depth).
    pub(crate) nesting: u32,
}

impl Ctx<'_> {
    /// Charges one step and one level of nesting for the expression or
    /// statement at `span`; a successful call must be paired with
    /// [`Ctx::leave`].
    #[inline]
    pub(crate) fn enter(&mut self, span: Span) -> Result<(), Diagnostic> {
        if self.budget.steps < self.config.max_steps
            && self.budget.nesting < self.config.max_nesting
        {
            self.budget.steps += 1;
            self.budget.nesting += 1;
            return Ok(());
        }
        Err(self.over_budget(span))
    }

    /// The error of an [`Ctx::enter`] past the step or nesting budget.
    #[cold]
    fn over_budget(&self, span: Span) -> Diagnostic {
        if self.budget.steps >= self.config.max_steps {
            return self
                .error(
                    codes::STEP_BUDGET,
                    format!(
                        "compile-time evaluation takes more than {} steps",
                        self.config.max_steps
                    ),
                    span,
                    "the budget ran out here",
                )
                .with_help(
                    "compile-time code runs at every compile; if this much work is intended, raise the budget with --max-steps",
                );
        }
        self.error(
            codes::NESTING_BUDGET,
            format!(
                "compile-time evaluation is nested more than {} levels deep",
                self.config.max_nesting
            ),
            span,
            "nested too deeply here",
        )
        .with_help("split deeply nested expressions, or make recursion shallower")
    }

    /// Leaves the level entered by the last successful [`Ctx::enter`].
    pub(crate) fn leave(&mut self) {
        self.budget.nesting -= 1;
    }

    /// Charges `bytes` for a value about to be built at `span`.
    pub(crate) fn charge_bytes(&mut self, bytes: u64, span: Span) -> Result<(), Diagnostic> {
        let total = self.budget.bytes.saturating_add(bytes);
        if total > self.config.max_value_bytes {
            return Err(self
                .error(
                    codes::BYTES_BUDGET,
                    format!(
                        "compile-time values take more than {} bytes",
                        self.config.max_value_bytes
                    ),
                    span,
                    format!("this value needs {bytes} bytes"),
                )
                .with_help(
                    "build smaller strings and lists at compile time, or raise the budget with --max-value-bytes",
                ));
        }
        self.budget.bytes = total;
        Ok(())
    }

    /// Charges a sequence of `items` values about to be built at `span`.
    pub(crate) fn charge_items(&mut self, items: usize, span: Span) -> Result<(), Diagnostic> {
        let size = std::mem::size_of::<crate::value::Value>() as u64;
        self.charge_bytes((items as u64).saturating_mul(size), span)
    }
}
