//! The evaluator: statements, expressions, calls and operators of the
//! meta-language, as methods on [`Ctx`](crate::ctx::Ctx).
//!
//! Semantics are Python's where NKI follows Python (language.md §4–§5):
//! * scopes: a call gets a fresh local scope whose parent is the scope the
//!   function was defined in (closures see later changes, as Python cells
//!   do); names are looked up locally, then in enclosing scopes, then in
//!   the module's globals, then among the builtins. Assignment binds in
//!   the innermost scope unless the name is declared `nonlocal`. A name
//!   read before its local assignment finds the outer binding instead of
//!   raising `UnboundLocalError` (a deliberate simplification);
//! * `global` is rejected: kernels must be pure functions of their
//!   arguments (§1.3);
//! * static loops are unrolled; the IR's static loop for a `for`/`while`
//!   statement is created lazily, when the first op or storage inside it
//!   is recorded, so loops that only compute compile-time values leave no
//!   trace in the IR;
//! * errors propagate as `Diagnostic`s; on the way out of a loop iteration
//!   or an inlined call they gain a note naming it (innermost first).

mod call;
mod class;
mod expr;
mod ops;
mod stmt;

pub(crate) use class::{AutoMarker, FieldMarker};
pub(crate) use stmt::Flow;
