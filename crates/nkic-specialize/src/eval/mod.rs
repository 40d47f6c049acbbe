//! The evaluator: statements, expressions, calls and operators of the
//! meta-language, as methods on [`Ctx`](crate::ctx::Ctx).

mod call;
