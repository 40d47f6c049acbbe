//! Operators on compile-time values, with Python semantics: int
//! arithmetic (floor division and modulo round toward negative infinity,
//! `/` gives a float, results checked against the 32-bit range), float
//! arithmetic, sequence concatenation and repetition, comparisons
//! (chained by the caller), membership, legacy index-grid arithmetic and
//! register arithmetic for dynamic offsets. Operators on tensors and other
//! API values go to `api::operator`.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{Op, OpKind, RegOrImm};
use nkic_isa::RegAluOp;
use nkic_syntax::ast::{BinOp, CmpOp, UnaryOp};

use crate::api::{self, Operator};
use crate::args::{Arg, CallArgs};
use crate::ctx::Ctx;
use crate::value::{IndexExpr, IndexPred, IndexTerm, PredOp, RegValue, Value};
use crate::{codes, format};

/// The smallest int the meta-language holds.
pub(crate) const INT_MIN: i64 = -(1 << 31);
/// One past the largest int (unsigned 32-bit values are admitted).
pub(crate) const INT_END: i64 = 1 << 32;

fn dunder(op: BinOp) -> (&'static str, &'static str) {
    match op {
        BinOp::Add => ("__add__", "__radd__"),
        BinOp::Sub => ("__sub__", "__rsub__"),
        BinOp::Mult => ("__mul__", "__rmul__"),
        BinOp::MatMult => ("__matmul__", "__rmatmul__"),
        BinOp::Div => ("__truediv__", "__rtruediv__"),
        BinOp::Mod => ("__mod__", "__rmod__"),
        BinOp::Pow => ("__pow__", "__rpow__"),
        BinOp::LShift => ("__lshift__", "__rlshift__"),
        BinOp::RShift => ("__rshift__", "__rrshift__"),
        BinOp::BitOr => ("__or__", "__ror__"),
        BinOp::BitXor => ("__xor__", "__rxor__"),
        BinOp::BitAnd => ("__and__", "__rand__"),
        BinOp::FloorDiv => ("__floordiv__", "__rfloordiv__"),
    }
}

impl Ctx<'_> {
    /// Checks an int result against the meta-language's range.
    pub(crate) fn int_result(
        &self,
        v: Option<i64>,
        what: impl std::fmt::Display,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match v {
            Some(i) if (INT_MIN..INT_END).contains(&i) => Ok(Value::Int(i)),
            _ => Err(self
                .error(
                    codes::INT_OVERFLOW,
                    format!("integer overflow in {what}"),
                    span,
                    "the result does not fit 32 bits",
                )
                .with_note("ints at specialization time are 32-bit (language.md §4.1)")),
        }
    }

    /// `l op r`.
    pub(crate) fn binary(
        &mut self,
        op: BinOp,
        l: Value,
        r: Value,
        inplace: bool,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        use Value as V;
        if matches!(l, V::Tensor(_) | V::Ext(_)) || matches!(r, V::Tensor(_) | V::Ext(_)) {
            return api::operator(self, Operator::Binary(op), &[l, r], inplace, span);
        }
        if let (V::Object(o), _) | (_, V::Object(o)) = (&l, &r)
            && o.class.kind == crate::value::ClassKind::Plain
        {
            let (name, rname) = dunder(op);
            if let V::Object(lo) = &l
                && let Some(f) = lo.class.lookup(name)
            {
                let args = CallArgs::positional(vec![Arg::new(l.clone(), span), Arg::new(r, span)]);
                return self.call(&f, args, span);
            }
            if let V::Object(ro) = &r
                && let Some(f) = ro.class.lookup(rname)
            {
                let args = CallArgs::positional(vec![Arg::new(r.clone(), span), Arg::new(l, span)]);
                return self.call(&f, args, span);
            }
        }
        match (&l, &r) {
            (V::Float(_), _) | (_, V::Float(_))
                if l.as_float().is_some() && r.as_float().is_some() =>
            {
                let (a, b) = (l.as_float().unwrap_or(0.0), r.as_float().unwrap_or(0.0));
                let x = match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mult => a * b,
                    BinOp::Div => {
                        if b == 0.0 {
                            return Err(self.div_zero(span));
                        }
                        a / b
                    }
                    BinOp::FloorDiv => {
                        if b == 0.0 {
                            return Err(self.div_zero(span));
                        }
                        (a / b).floor()
                    }
                    BinOp::Mod => {
                        if b == 0.0 {
                            return Err(self.div_zero(span));
                        }
                        let m = a % b;
                        if m != 0.0 && (m < 0.0) != (b < 0.0) {
                            m + b
                        } else {
                            m
                        }
                    }
                    BinOp::Pow => a.powf(b),
                    _ => return Err(self.bad_operands(op.as_str(), &l, &r, span)),
                };
                Ok(V::Float(x))
            }
            _ if l.as_int().is_some()
                && r.as_int().is_some()
                && !matches!((&l, &r), (V::Object(_), V::Object(_))) =>
            {
                let (a, b) = (l.as_int().unwrap_or(0), r.as_int().unwrap_or(0));
                if matches!((&l, &r), (V::Bool(_), V::Bool(_)))
                    && matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
                {
                    let x = match op {
                        BinOp::BitAnd => a & b,
                        BinOp::BitOr => a | b,
                        _ => a ^ b,
                    };
                    return Ok(V::Bool(x != 0));
                }
                let x = match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mult => a.checked_mul(b),
                    BinOp::Div => {
                        if b == 0 {
                            return Err(self.div_zero(span));
                        }
                        return Ok(V::Float(a as f64 / b as f64));
                    }
                    BinOp::FloorDiv => {
                        if b == 0 {
                            return Err(self.div_zero(span));
                        }
                        Some(a.div_euclid(b) - if b < 0 && a.rem_euclid(b) != 0 { 1 } else { 0 })
                    }
                    BinOp::Mod => {
                        if b == 0 {
                            return Err(self.div_zero(span));
                        }
                        let m = a % b;
                        Some(if m != 0 && (m < 0) != (b < 0) {
                            m + b
                        } else {
                            m
                        })
                    }
                    BinOp::Pow => {
                        if b < 0 {
                            return Ok(V::Float((a as f64).powf(b as f64)));
                        }
                        u32::try_from(b).ok().and_then(|e| a.checked_pow(e))
                    }
                    BinOp::LShift | BinOp::RShift if b < 0 => {
                        return Err(self.error(
                            codes::VALUE_ERROR,
                            "negative shift count",
                            span,
                            "negative",
                        ));
                    }
                    BinOp::LShift if b >= 40 => None,
                    BinOp::LShift => a.checked_mul(1 << b),
                    BinOp::RShift => Some(a >> b.min(63)),
                    BinOp::BitAnd => Some(a & b),
                    BinOp::BitOr => Some(a | b),
                    BinOp::BitXor => Some(a ^ b),
                    BinOp::MatMult => return Err(self.bad_operands("@", &l, &r, span)),
                };
                // The message is only formatted when the result overflows.
                self.int_result(x, format_args!("`{}`", op.as_str()), span)
            }
            (V::Str(a), V::Str(b)) if op == BinOp::Add => {
                self.charge_bytes((a.len() + b.len()) as u64, span)?;
                Ok(V::str(&format!("{a}{b}")))
            }
            (V::Str(s), n) | (n, V::Str(s)) if op == BinOp::Mult && n.as_int().is_some() => {
                let k = n.as_int().unwrap_or(0).max(0) as usize;
                self.charge_bytes((s.len() as u64).saturating_mul(k as u64), span)?;
                Ok(V::str(&s.repeat(k)))
            }
            (V::Str(s), args) if op == BinOp::Mod => {
                let v = self.percent_format(s, args, span)?;
                self.charge_bytes(v.as_str().map_or(0, |t| t.len() as u64), span)?;
                Ok(v)
            }
            (V::List(a), V::List(b)) if op == BinOp::Add => {
                self.charge_items(a.borrow().len() + b.borrow().len(), span)?;
                let mut v = a.borrow().clone();
                v.extend(b.borrow().iter().cloned());
                Ok(V::list(v))
            }
            (V::Tuple(a), V::Tuple(b)) if op == BinOp::Add => {
                self.charge_items(a.len() + b.len(), span)?;
                let mut v = a.to_vec();
                v.extend(b.iter().cloned());
                Ok(V::tuple(v))
            }
            (V::List(_) | V::Tuple(_), n) | (n, V::List(_) | V::Tuple(_))
                if op == BinOp::Mult && n.as_int().is_some() =>
            {
                let seq = if matches!(l, V::List(_) | V::Tuple(_)) {
                    &l
                } else {
                    &r
                };
                let k = n.as_int().unwrap_or(0).max(0) as usize;
                let items = self.iterate(seq, span)?;
                self.charge_items(items.len().saturating_mul(k), span)?;
                let mut out = Vec::with_capacity(items.len() * k);
                for _ in 0..k {
                    out.extend(items.iter().cloned());
                }
                Ok(if matches!(seq, V::List(_)) {
                    V::list(out)
                } else {
                    V::tuple(out)
                })
            }
            (V::Dict(a), V::Dict(b)) if op == BinOp::BitOr => {
                let mut d = a.borrow().clone();
                for (k, v) in b.borrow().entries.iter() {
                    d.insert(k.clone(), v.clone());
                }
                Ok(V::Dict(Rc::new(std::cell::RefCell::new(d))))
            }
            (V::Index(_), _) | (_, V::Index(_)) => self.index_binary(op, &l, &r, span),
            (V::IndexPred(a), V::IndexPred(b)) if op == BinOp::BitAnd => {
                let mut clauses = a.clauses.clone();
                clauses.extend(b.clauses.iter().cloned());
                Ok(V::IndexPred(Rc::new(IndexPred { clauses })))
            }
            (V::Register(_), _) | (_, V::Register(_)) => self.register_binary(op, &l, &r, span),
            _ => Err(self.bad_operands(op.as_str(), &l, &r, span)),
        }
    }

    fn div_zero(&self, span: Span) -> Diagnostic {
        self.error(
            codes::DIV_BY_ZERO,
            "division by zero",
            span,
            "the divisor is zero",
        )
    }

    pub(crate) fn bad_operands(&self, op: &str, l: &Value, r: &Value, span: Span) -> Diagnostic {
        self.error(
            codes::TYPE_ERROR,
            format!(
                "unsupported operand types for `{op}`: {} and {}",
                l.type_name(),
                r.type_name()
            ),
            span,
            format!("{} {op} {}", l.type_name(), r.type_name()),
        )
    }

    /// `"%d items" % n`.
    fn percent_format(&self, fmt: &str, args: &Value, span: Span) -> Result<Value, Diagnostic> {
        let items: Vec<Value> = match args {
            Value::Tuple(t) => t.to_vec(),
            other => vec![other.clone()],
        };
        let mut out = String::new();
        let mut it = items.iter();
        let mut chars = fmt.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let mut spec = String::new();
            while let Some(&n) = chars.peek() {
                chars.next();
                if n.is_ascii_alphabetic() || n == '%' {
                    spec.push(n);
                    break;
                }
                spec.push(n);
            }
            if spec == "%" {
                out.push('%');
                continue;
            }
            let Some(v) = it.next() else {
                return Err(self.error(
                    codes::FORMAT_SPEC,
                    "not enough arguments for format string",
                    span,
                    "here",
                ));
            };
            let (flags, ty) = spec.split_at(spec.len().saturating_sub(1));
            let text = match ty {
                "s" => format::format_value(&Value::str(&format::str(v)), flags),
                "r" => format::format_value(&Value::str(&format::repr(v)), flags),
                "d" | "i" => format::format_value(
                    &Value::Int(v.as_float().unwrap_or(0.0) as i64),
                    &format!("{flags}d"),
                ),
                t => format::format_value(v, &format!("{flags}{t}")),
            };
            match text {
                Ok(t) => out.push_str(&t),
                Err(m) => return Err(self.error(codes::FORMAT_SPEC, m, span, "here")),
            }
        }
        Ok(Value::str(&out))
    }

    /// Arithmetic on legacy index expressions.
    fn index_binary(
        &self,
        op: BinOp,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let as_expr = |v: &Value| -> Option<IndexExpr> {
            match v {
                Value::Index(e) => Some((**e).clone()),
                v => v.as_int().map(|c| IndexExpr {
                    ndim: 0,
                    constant: c,
                    terms: Vec::new(),
                }),
            }
        };
        let (Some(a), Some(b)) = (as_expr(l), as_expr(r)) else {
            return Err(self.bad_operands(op.as_str(), l, r, span));
        };
        let scale = |e: &IndexExpr, k: i64| IndexExpr {
            ndim: e.ndim,
            constant: e.constant.saturating_mul(k),
            terms: e
                .terms
                .iter()
                .map(|t| IndexTerm {
                    coef: t.coef.saturating_mul(k),
                    ..*t
                })
                .collect(),
        };
        let add = |a: &IndexExpr, b: &IndexExpr| {
            let ndim = a.ndim.max(b.ndim);
            let (a, b) = (a.aligned(ndim), b.aligned(ndim));
            let mut terms = a.terms.clone();
            for t in &b.terms {
                match terms
                    .iter_mut()
                    .find(|x| x.axis == t.axis && x.size == t.size)
                {
                    Some(x) => x.coef = x.coef.saturating_add(t.coef),
                    None => terms.push(*t),
                }
            }
            terms.retain(|t| t.coef != 0);
            IndexExpr {
                ndim,
                constant: a.constant.saturating_add(b.constant),
                terms,
            }
        };
        let res = match op {
            BinOp::Add => add(&a, &b),
            BinOp::Sub => add(&a, &scale(&b, -1)),
            BinOp::Mult if b.terms.is_empty() => scale(&a, b.constant),
            BinOp::Mult if a.terms.is_empty() => scale(&b, a.constant),
            _ => {
                return Err(self
                    .bad_operands(op.as_str(), l, r, span)
                    .with_note("index expressions support `+`, `-` and `*` by an int"));
            }
        };
        Ok(Value::Index(Rc::new(res)))
    }

    /// Register arithmetic: kept affine in one register when possible,
    /// otherwise emitted as `reg_alu` ops.
    fn register_binary(
        &mut self,
        op: BinOp,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match (l, r, op) {
            (Value::Register(a), k, BinOp::Add) | (k, Value::Register(a), BinOp::Add)
                if k.as_int().is_some() =>
            {
                Ok(Value::Register(RegValue {
                    offset: a.offset.saturating_add(k.as_int().unwrap_or(0)),
                    ..*a
                }))
            }
            (Value::Register(a), k, BinOp::Sub) if k.as_int().is_some() => {
                Ok(Value::Register(RegValue {
                    offset: a.offset.saturating_sub(k.as_int().unwrap_or(0)),
                    ..*a
                }))
            }
            (Value::Register(a), k, BinOp::Mult) | (k, Value::Register(a), BinOp::Mult)
                if k.as_int().is_some() =>
            {
                let k = k.as_int().unwrap_or(0);
                Ok(Value::Register(RegValue {
                    reg: a.reg,
                    scale: a.scale.saturating_mul(k),
                    offset: a.offset.saturating_mul(k),
                }))
            }
            (Value::Register(a), Value::Register(b), BinOp::Add | BinOp::Sub) => {
                let ra = self.plain_register(*a, span)?;
                let rb = self.plain_register(*b, span)?;
                let loc = self.loc(span);
                let dst = self.builder().alloc_register("", None, loc);
                let alu = if op == BinOp::Add {
                    RegAluOp::Add
                } else {
                    RegAluOp::Sub
                };
                self.push_op(
                    Op::new(OpKind::RegAlu {
                        dst,
                        op: alu,
                        a: ra,
                        b: RegOrImm::Reg(rb),
                    }),
                    span,
                )?;
                Ok(Value::Register(RegValue::plain(dst)))
            }
            _ => Err(self
                .bad_operands(op.as_str(), l, r, span)
                .with_note("registers support `+`/`-` of ints or registers and `*` by an int")),
        }
    }

    /// `op v`.
    pub(crate) fn unary(&mut self, op: UnaryOp, v: Value, span: Span) -> Result<Value, Diagnostic> {
        match (op, &v) {
            (UnaryOp::Not, _)
                if !matches!(v, Value::Ext(_)) || api::host::as_array(&v).is_some() =>
            {
                Ok(Value::Bool(!self.truthy(&v, span)?))
            }
            (_, Value::Tensor(_) | Value::Ext(_)) => {
                let o = match op {
                    UnaryOp::USub => Operator::Neg,
                    UnaryOp::UAdd => Operator::Pos,
                    UnaryOp::Invert => Operator::Invert,
                    UnaryOp::Not => {
                        return Err(self.no_truth_value(
                            &v,
                            span,
                            "`not` needs a compile-time value",
                        ));
                    }
                };
                api::operator(self, o, &[v], false, span)
            }
            (UnaryOp::USub, Value::Float(f)) => Ok(Value::Float(-f)),
            (UnaryOp::UAdd, Value::Float(_)) => Ok(v),
            (UnaryOp::USub, Value::Index(_) | Value::Register(_)) => {
                self.binary(BinOp::Mult, v, Value::Int(-1), false, span)
            }
            (UnaryOp::USub, _) if v.as_int().is_some() => {
                self.int_result(v.as_int().and_then(i64::checked_neg), "`-`", span)
            }
            (UnaryOp::UAdd, _) if v.as_int().is_some() => Ok(Value::Int(v.as_int().unwrap_or(0))),
            (UnaryOp::Invert, _) if v.as_int().is_some() => {
                Ok(Value::Int(!v.as_int().unwrap_or(0)))
            }
            _ => Err(self.error(
                codes::TYPE_ERROR,
                format!(
                    "bad operand type for unary `{}`: {}",
                    op.as_str(),
                    v.type_name()
                ),
                span,
                "not defined for this value",
            )),
        }
    }

    /// `l op r` for one comparison of a chain.
    pub(crate) fn compare(
        &mut self,
        op: CmpOp,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match op {
            CmpOp::Is => return Ok(Value::Bool(l.is_same(r))),
            CmpOp::IsNot => return Ok(Value::Bool(!l.is_same(r))),
            CmpOp::In => return Ok(Value::Bool(self.contains(r, l, span)?)),
            CmpOp::NotIn => return Ok(Value::Bool(!self.contains(r, l, span)?)),
            _ => {}
        }
        if let Some(v) = self.rich_compare(op, l, r, span)? {
            return Ok(v);
        }
        // Tiles, tensors, registers and index grids are never `None`: a
        // comparison with `None` is a plain bool (`if bias != None:`).
        if matches!(op, CmpOp::Eq | CmpOp::NotEq) && (l.is_none() || r.is_none()) {
            return Ok(Value::Bool(l.is_same(r) == (op == CmpOp::Eq)));
        }
        if let (Some(a), Some(b)) = (api::consts::nc_generation(l), api::consts::nc_generation(r))
            && !matches!(op, CmpOp::Eq | CmpOp::NotEq)
        {
            return Ok(Value::Bool(match op {
                CmpOp::Lt => a < b,
                CmpOp::LtE => a <= b,
                CmpOp::Gt => a > b,
                _ => a >= b,
            }));
        }
        if matches!(l, Value::Tensor(_) | Value::Ext(_))
            || matches!(r, Value::Tensor(_) | Value::Ext(_))
        {
            // Equality of API objects without run-time meaning (enum-like
            // constants) is decided here when possible.
            if matches!(op, CmpOp::Eq | CmpOp::NotEq)
                && api::host::as_array(l).is_none()
                && api::host::as_array(r).is_none()
                && let (Value::Ext(_), Value::Ext(_)) | (Value::Ext(_), _) | (_, Value::Ext(_)) =
                    (l, r)
                && let Some(eq) = l.py_eq(r)
            {
                return Ok(Value::Bool(eq == (op == CmpOp::Eq)));
            }
            return api::operator(
                self,
                Operator::Compare(op),
                &[l.clone(), r.clone()],
                false,
                span,
            );
        }
        if let (Value::Index(_), _) | (_, Value::Index(_)) = (l, r) {
            return self.index_compare(op, l, r, span);
        }
        if matches!(op, CmpOp::Eq | CmpOp::NotEq) {
            if matches!(
                (l, r),
                (Value::List(_), Value::List(_))
                    | (Value::Tuple(_), Value::Tuple(_))
                    | (Value::Dict(_), Value::Dict(_))
            ) {
                let eq = self.eq_values(l, r, span)?;
                return Ok(Value::Bool(eq == (op == CmpOp::Eq)));
            }
            return match l.py_eq(r) {
                Some(eq) => Ok(Value::Bool(eq == (op == CmpOp::Eq))),
                None => Err(self.pair_error(
                    codes::RUNTIME_VALUE,
                    (l, r),
                    "cannot be compared at compile time",
                    span,
                    "a run-time value",
                )),
            };
        }
        let ord = self.order(l, r, span)?;
        Ok(Value::Bool(match op {
            CmpOp::Lt => ord.is_lt(),
            CmpOp::LtE => ord.is_le(),
            CmpOp::Gt => ord.is_gt(),
            _ => ord.is_ge(),
        }))
    }

    /// An error about the operands `l` and `r` together: "a list and an
    /// int {what}".
    fn pair_error(
        &self,
        code: &'static str,
        (l, r): (&Value, &Value),
        what: &str,
        span: Span,
        label: &str,
    ) -> Diagnostic {
        let (l, r) = (crate::format::a_type(l), crate::format::a_type(r));
        self.error(code, format!("{l} and {r} {what}"), span, label)
    }

    /// Python ordering of two compile-time values.
    pub(crate) fn order(
        &mut self,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<std::cmp::Ordering, Diagnostic> {
        self.nested("order", span, |ctx| ctx.order_inner(l, r, span))
    }

    /// Runs `f` one container level deeper; containers nested more than
    /// 64 deep (self-referential ones, in practice) cannot be compared
    /// (`what`: "order" or "compare").
    pub(crate) fn nested<T>(
        &mut self,
        what: &str,
        span: Span,
        f: impl FnOnce(&mut Self) -> Result<T, Diagnostic>,
    ) -> Result<T, Diagnostic> {
        if self.order_depth > 64 {
            return Err(self.error(
                codes::TYPE_ERROR,
                format!("these containers are nested too deeply to {what}"),
                span,
                "compared here",
            ));
        }
        self.order_depth += 1;
        let res = f(self);
        self.order_depth -= 1;
        res
    }

    fn order_inner(
        &mut self,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<std::cmp::Ordering, Diagnostic> {
        use std::cmp::Ordering;
        match (l, r) {
            (Value::Str(a), Value::Str(b)) => Ok(a.cmp(b)),
            (Value::Tuple(_) | Value::List(_), Value::Tuple(_) | Value::List(_))
                if std::mem::discriminant(l) == std::mem::discriminant(r) =>
            {
                let (a, b) = (self.iterate(l, span)?, self.iterate(r, span)?);
                for (x, y) in a.iter().zip(&b) {
                    if x.py_eq(y) != Some(true) {
                        return self.order(x, y, span);
                    }
                }
                Ok(a.len().cmp(&b.len()))
            }
            _ => match (l.as_float(), r.as_float()) {
                (Some(_), Some(_))
                    if matches!(l, Value::Float(_)) || matches!(r, Value::Float(_)) =>
                {
                    let (a, b) = (l.as_float().unwrap_or(0.0), r.as_float().unwrap_or(0.0));
                    Ok(a.partial_cmp(&b).unwrap_or(Ordering::Equal))
                }
                (Some(_), Some(_)) => Ok(l.as_int().cmp(&r.as_int())),
                _ => {
                    if matches!(l, Value::Register(_)) || matches!(r, Value::Register(_)) {
                        return Err(self
                            .error(
                                codes::RUNTIME_VALUE,
                                "a register cannot be compared at compile time",
                                span,
                                "a run-time value",
                            )
                            .with_help("use a dynamic `while` on a register, or `nl.while_loop`"));
                    }
                    Err(self.pair_error(
                        codes::TYPE_ERROR,
                        (l, r),
                        "cannot be ordered",
                        span,
                        "not comparable",
                    ))
                }
            },
        }
    }

    /// `i_p < n`-style masks from legacy index expressions.
    fn index_compare(
        &self,
        op: CmpOp,
        l: &Value,
        r: &Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        // Two grids compare through their difference: `i_p >= i_f` is
        // `i_p - i_f >= 0` (a triangular predicate).
        let diff;
        let (e, k, flipped) = match (l, r) {
            (Value::Index(_), Value::Index(_)) => {
                let Value::Index(d) = self.index_binary(BinOp::Sub, l, r, span)? else {
                    return Err(self.bad_operands(op.as_str(), l, r, span));
                };
                diff = d;
                (&diff, 0, false)
            }
            (Value::Index(e), k) if k.as_int().is_some() => (e, k.as_int().unwrap_or(0), false),
            (k, Value::Index(e)) if k.as_int().is_some() => (e, k.as_int().unwrap_or(0), true),
            _ => return Err(self.bad_operands(op.as_str(), l, r, span)),
        };
        let pop = match (op, flipped) {
            (CmpOp::Lt, false) | (CmpOp::Gt, true) => PredOp::Lt,
            (CmpOp::LtE, false) | (CmpOp::GtE, true) => PredOp::Le,
            (CmpOp::Gt, false) | (CmpOp::Lt, true) => PredOp::Gt,
            (CmpOp::GtE, false) | (CmpOp::LtE, true) => PredOp::Ge,
            (CmpOp::Eq, _) => PredOp::Eq,
            (CmpOp::NotEq, _) => PredOp::Ne,
            _ => return Err(self.bad_operands(op.as_str(), l, r, span)),
        };
        let mut e = (**e).clone();
        e.constant = e.constant.saturating_sub(k);
        Ok(Value::IndexPred(Rc::new(IndexPred {
            clauses: vec![(e, pop)],
        })))
    }

    /// `item in container`.
    pub(crate) fn contains(
        &mut self,
        container: &Value,
        item: &Value,
        span: Span,
    ) -> Result<bool, Diagnostic> {
        match container {
            Value::Str(s) => match item {
                Value::Str(sub) => Ok(s.contains(&**sub)),
                other => Err(self.type_error(
                    "`in <str>` needs a str on the left",
                    other,
                    span,
                    "not a str",
                )),
            },
            Value::Dict(d) => Ok(d.borrow().get(item).is_some()),
            Value::Range(r) => Ok(match item.as_int() {
                Some(i) => {
                    let n = r.len();
                    n > 0 && (i - r.start) % r.step == 0 && {
                        let k = (i - r.start) / r.step;
                        k >= 0 && k < n
                    }
                }
                None => false,
            }),
            _ => {
                for x in self.iterate(container, span)? {
                    if self.eq_values(&x, item, span)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }
}
