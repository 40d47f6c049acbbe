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
//! * `is`/`is not` compare identity (value equality for `None`, bools,
//!   ints, strings and dtypes), so `x is None` works although the spec
//!   lists `is` as unsupported: real kernels use it;
//! * lambdas, list/dict comprehensions and generator expressions (built
//!   eagerly as lists) are supported; `yield`, `try`, `global`, sets,
//!   `async` and `with` other than `nl.no_reorder()` are rejected (E0201);
//! * top-level statements the parser classes as host code are skipped,
//!   except assignments, which are tried (a failure makes the names
//!   unavailable with the reason), and `try` blocks, whose body runs with
//!   the first handler as the fallback (`try: import a except: import b`);
//! * errors propagate as `Diagnostic`s; on the way out of a loop iteration
//!   or an inlined call they gain a note naming it (innermost first).

mod call;
mod carried;
mod class;
mod compare;
mod expr;
mod ops;
mod stmt;

pub(crate) use carried::DynFrame;
pub(crate) use class::{AutoMarker, FieldMarker};
pub(crate) use ops::{INT_END, INT_MIN};
pub(crate) use stmt::Flow;
