//! Python's rich comparison protocol for compile-time values (issue 14
//! item 3): `==`, `!=`, `<`, `<=`, `>`, `>=` call the left operand's
//! `__eq__`/`__ne__`/`__lt__`/... and, when it is missing or returns
//! `NotImplemented`, the right operand's reflected method (`__eq__`,
//! `__ne__`, `__gt__`, ...); the method's value is returned unconverted.
//! `!=` without `__ne__` negates `__eq__`. When neither operand answers,
//! `==` and `!=` fall back to identity for objects with a comparison
//! method, and ordering is a `TypeError`. Container equality, `in`,
//! `list.index` and `list.count` compare elements with
//! [`Ctx::eq_values`], which uses the same protocol (identity first, as
//! CPython's containers do).

use nkic_diag::{Diagnostic, Span};
use nkic_syntax::ast::CmpOp;

use crate::args::{Arg, CallArgs};
use crate::builtins::Builtin;
use crate::codes;
use crate::ctx::Ctx;
use crate::value::Value;

/// The method `op` calls on the left operand, and its reflection on the
/// right operand.
fn rich_names(op: CmpOp) -> Option<(&'static str, &'static str)> {
    Some(match op {
        CmpOp::Eq => ("__eq__", "__eq__"),
        CmpOp::NotEq => ("__ne__", "__ne__"),
        CmpOp::Lt => ("__lt__", "__gt__"),
        CmpOp::LtE => ("__le__", "__ge__"),
        CmpOp::Gt => ("__gt__", "__lt__"),
        CmpOp::GtE => ("__ge__", "__le__"),
        _ => return None,
    })
}

fn is_not_implemented(v: &Value) -> bool {
    matches!(v, Value::Builtin(Builtin::NotImplemented))
}

/// True when `v` is an object whose class defines any of `names`.
fn defines(v: &Value, names: &[&str]) -> bool {
    matches!(v, Value::Object(o) if names.iter().any(|n| o.class.lookup(n).is_some()))
}

impl Ctx<'_> {
    /// One side's answer to `o <name> other`: its method's value, or
    /// `None` for no method or `NotImplemented`. `__ne__` defaults to
    /// the negation of `__eq__`, as `object.__ne__` does.
    fn one_side(
        &mut self,
        o: &Value,
        name: &str,
        other: &Value,
        span: Span,
    ) -> Result<Option<Value>, Diagnostic> {
        let Value::Object(obj) = o else {
            return Ok(None);
        };
        let (method, negate) = match obj.class.lookup(name) {
            Some(f) => (f, false),
            None if name == "__ne__" => match obj.class.lookup("__eq__") {
                Some(f) => (f, true),
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        let args = CallArgs::positional(vec![Arg::new(other.clone(), span)]);
        let v = self.call_on(&method, o, args, span)?;
        if is_not_implemented(&v) {
            Ok(None)
        } else if negate {
            Ok(Some(Value::Bool(!self.truthy(&v, span)?)))
        } else {
            Ok(Some(v))
        }
    }

    /// `l op r` by the rich comparison protocol when an operand is a user
    /// object; `None` when neither operand is one (or, for `==`/`!=`,
    /// neither defines a comparison method), so the built-in comparison
    /// applies.
    pub(crate) fn rich_compare(
        &mut self,
        op: CmpOp,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<Option<Value>, Diagnostic> {
        if !matches!(l, Value::Object(_)) && !matches!(r, Value::Object(_)) {
            return Ok(None);
        }
        let Some((name, reflected)) = rich_names(op) else {
            return Ok(None);
        };
        if let Some(v) = self.one_side(l, name, r, span)? {
            return Ok(Some(v));
        }
        if let Some(v) = self.one_side(r, reflected, l, span)? {
            return Ok(Some(v));
        }
        let eq_methods = ["__eq__", "__ne__"];
        match op {
            CmpOp::Eq | CmpOp::NotEq => {
                if defines(l, &eq_methods) || defines(r, &eq_methods) {
                    Ok(Some(Value::Bool(l.is_same(r) == (op == CmpOp::Eq))))
                } else {
                    Ok(None)
                }
            }
            _ => {
                let order_methods = ["__lt__", "__le__", "__gt__", "__ge__"];
                if defines(l, &order_methods) || defines(r, &order_methods) {
                    Err(self.error(
                        codes::TYPE_ERROR,
                        format!(
                            "`{}` is not supported between {} and {}",
                            op.as_str(),
                            crate::format::a_type(l),
                            crate::format::a_type(r)
                        ),
                        span,
                        "both comparison methods returned `NotImplemented`",
                    ))
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// Python `l == r` as a bool for containers and membership: identity
    /// first (as CPython's containers compare), then lists, tuples and
    /// dicts element by element, user objects by the rich comparison
    /// protocol, the rest by built-in equality.
    pub(crate) fn eq_values(
        &mut self,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<bool, Diagnostic> {
        if l.is_same(r) && !matches!(l, Value::Float(f) if f.is_nan()) {
            return Ok(true);
        }
        self.nested("compare", span, |ctx| ctx.eq_values_inner(l, r, span))
    }

    fn eq_values_inner(&mut self, l: &Value, r: &Value, span: Span) -> Result<bool, Diagnostic> {
        match (l, r) {
            (Value::List(_), Value::List(_)) | (Value::Tuple(_), Value::Tuple(_)) => {
                let (a, b) = (self.iterate(l, span)?, self.iterate(r, span)?);
                if a.len() != b.len() {
                    return Ok(false);
                }
                for (x, y) in a.iter().zip(&b) {
                    if !self.eq_values(x, y, span)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            (Value::Dict(a), Value::Dict(b)) => {
                let (a, b) = (a.borrow().entries.clone(), b.clone());
                if a.len() != b.borrow().len() {
                    return Ok(false);
                }
                for (k, v) in &a {
                    let w = b.borrow().get(k).cloned();
                    match w {
                        Some(w) if self.eq_values(v, &w, span)? => {}
                        _ => return Ok(false),
                    }
                }
                Ok(true)
            }
            _ => {
                let v = self.compare(CmpOp::Eq, l, r, span)?;
                self.truthy(&v, span)
            }
        }
    }
}
