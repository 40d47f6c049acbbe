//! Expressions: names, literals, displays, comprehensions, attribute
//! access, subscripts, f-strings, lambdas and calls.

use std::cell::RefCell;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_syntax::ast::{self, ArgKind, DictItem, Expr, ExprKind, FStringPart};

use crate::args::{Arg, CallArgs};
use crate::builtins::Builtin;
use crate::ctx::Ctx;
use crate::value::{
    ClassKind, Dict, Function, FunctionBody, IndexExpr, MethodKind, Scope, SliceValue, Value,
};
use crate::{api, codes, format, intrinsics};

/// The defaults of the positional and of the keyword-only parameters.
pub(crate) type Defaults = (Vec<Option<Value>>, Vec<Option<Value>>);

/// Methods of the builtin containers and strings, by name.
const METHODS: &[&str] = &[
    "append",
    "extend",
    "pop",
    "insert",
    "index",
    "count",
    "remove",
    "reverse",
    "sort",
    "copy",
    "clear",
    "keys",
    "values",
    "items",
    "get",
    "setdefault",
    "update",
    "format",
    "join",
    "split",
    "startswith",
    "endswith",
    "upper",
    "lower",
    "replace",
    "strip",
    "lstrip",
    "rstrip",
    "find",
    "isdigit",
    "title",
    "popitem",
];

impl Ctx<'_> {
    /// Evaluates `e`, charging the budget (`crate::budget`).
    pub(crate) fn eval(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        self.enter(e.span)?;
        let res = self.eval_expr(e);
        self.leave();
        res
    }

    fn eval_expr(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        match &e.kind {
            ExprKind::Name(name) => {
                if !self.dyn_frames.is_empty() {
                    self.note_dyn_read(name);
                }
                let v = self.lookup_name_hashed(name, name.key_hash(), e.span)?;
                self.record_fact(e.span, &v);
                Ok(v)
            }
            ExprKind::Int(i) => match i64::try_from(*i) {
                Ok(i) if i < 1 << 32 => Ok(Value::Int(i)),
                _ => Err(self.error(
                    codes::INT_OVERFLOW,
                    "this integer does not fit the 32-bit ints of NKI's compile-time language",
                    e.span,
                    "too large",
                )),
            },
            ExprKind::Float(f) => Ok(Value::Float(*f)),
            ExprKind::Str(s) => Ok(Value::str(s)),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::None => Ok(Value::None),
            ExprKind::Ellipsis => Ok(Value::Ellipsis),
            ExprKind::FString(parts) => {
                let text = self.fstring(parts)?;
                self.charge_bytes(text.len() as u64, e.span)?;
                Ok(Value::str(&text))
            }
            ExprKind::Attribute { value, attr } => {
                let o = self.eval(value)?;
                let v = self.get_attr(&o, &attr.name, attr.span)?;
                self.record_fact(e.span, &v);
                Ok(v)
            }
            ExprKind::Subscript { value, index } => {
                let o = self.eval(value)?;
                let key = self.eval_subscript_key(index)?;
                let v = self.subscript(&o, &key, e.span)?;
                self.record_fact(e.span, &v);
                Ok(v)
            }
            ExprKind::Call { func, args } => {
                let f = self.eval(func)?;
                let args = self.eval_args(args)?;
                let v = self.call(&f, args, e.span)?;
                self.record_fact(e.span, &v);
                Ok(v)
            }
            ExprKind::BinOp { left, op, right } => {
                let l = self.eval(left)?;
                let r = self.eval(right)?;
                self.binary(*op, l, r, false, e.span)
            }
            ExprKind::UnaryOp { op, operand } => {
                let v = self.eval(operand)?;
                self.unary(*op, v, e.span)
            }
            ExprKind::BoolOp { op, values } => {
                let mut last = Value::None;
                for (i, v) in values.iter().enumerate() {
                    last = self.eval(v)?;
                    if i + 1 == values.len() {
                        break;
                    }
                    // `mask=(i_p < n and i_f < m)`: `and` of legacy index
                    // predicates means both, as `&` does (Python would keep
                    // only the last one, which no kernel author means).
                    if *op == ast::BoolOp::And && matches!(last, Value::IndexPred(_)) {
                        for w in &values[i + 1..] {
                            let r = self.eval(w)?;
                            last = self.binary(ast::BinOp::BitAnd, last, r, false, e.span)?;
                        }
                        return Ok(last);
                    }
                    // Index-grid masks combine with `&`, not `or`; a tensor
                    // has no compile-time truth value, which `truthy` reports.
                    let t = self.truthy(&last, v.span)?;
                    match op {
                        ast::BoolOp::And if !t => return Ok(last),
                        ast::BoolOp::Or if t => return Ok(last),
                        _ => {}
                    }
                }
                Ok(last)
            }
            ExprKind::Compare { left, comparisons } => {
                let mut l = self.eval(left)?;
                let mut result = Value::Bool(true);
                for (i, (op, right)) in comparisons.iter().enumerate() {
                    let r = self.eval(right)?;
                    let span = if i == 0 {
                        left.span.to(right.span)
                    } else {
                        right.span
                    };
                    result = self.compare(*op, &l, &r, span)?;
                    if comparisons.len() == 1 {
                        return Ok(result);
                    }
                    if !self.truthy(&result, span)? {
                        return Ok(result);
                    }
                    l = r;
                }
                Ok(result)
            }
            ExprKind::IfExp { test, body, orelse } => {
                let t = self.eval(test)?;
                if self.truthy(&t, test.span)? {
                    self.eval(body)
                } else {
                    self.eval(orelse)
                }
            }
            ExprKind::NamedExpr { target, value } => {
                let v = self.eval(value)?;
                self.assign(target, v.clone())?;
                Ok(v)
            }
            ExprKind::Tuple(items) => Ok(Value::tuple(self.eval_items(items)?)),
            ExprKind::List(items) => Ok(Value::list(self.eval_items(items)?)),
            ExprKind::Dict(items) => {
                let mut d = Dict::default();
                for item in items {
                    match item {
                        DictItem::KeyValue(k, v) => {
                            let key = self.eval(k)?;
                            self.check_hashable(&key, k.span)?;
                            let value = self.eval(v)?;
                            d.insert(key, value);
                        }
                        DictItem::Unpack(m) => {
                            let o = self.eval_unpacked_dict(m)?;
                            for (k, v) in o.borrow().entries.iter() {
                                d.insert(k.clone(), v.clone());
                            }
                        }
                    }
                }
                Ok(Value::Dict(Rc::new(RefCell::new(d))))
            }
            ExprKind::Slice { lower, upper, step } => {
                let mut part = |p: &Option<Box<Expr>>| -> Result<Value, Diagnostic> {
                    match p {
                        Some(x) => self.eval(x),
                        None => Ok(Value::None),
                    }
                };
                Ok(Value::Slice(Rc::new(SliceValue {
                    lower: part(lower)?,
                    upper: part(upper)?,
                    step: part(step)?,
                })))
            }
            ExprKind::ListComp { elt, generators } | ExprKind::GeneratorExp { elt, generators } => {
                let mut out = Vec::new();
                self.comprehension(generators, &mut |ctx| {
                    out.push(ctx.eval(elt)?);
                    Ok(())
                })?;
                Ok(Value::list(out))
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => {
                let mut d = Dict::default();
                self.comprehension(generators, &mut |ctx| {
                    let k = ctx.eval(key)?;
                    ctx.check_hashable(&k, key.span)?;
                    let v = ctx.eval(value)?;
                    d.insert(k, v);
                    Ok(())
                })?;
                Ok(Value::Dict(Rc::new(RefCell::new(d))))
            }
            ExprKind::Lambda { .. } => self.make_lambda(e),
            ExprKind::Starred(_) => Err(self.error(
                codes::TYPE_ERROR,
                "a starred expression is only allowed in calls, displays and assignment targets",
                e.span,
                "misplaced `*`",
            )),
            ExprKind::Set(_) | ExprKind::SetComp { .. } => Err(self
                .unsupported("sets", e.span)
                .with_help("use a list or a dict instead")),
            ExprKind::Await(_) => Err(self.unsupported("`await`", e.span)),
            ExprKind::Yield(_) | ExprKind::YieldFrom(_) => Err(self
                .unsupported("generators (`yield`)", e.span)
                .with_help("build and return a list instead")),
            ExprKind::Imaginary(_) => Err(self.unsupported("complex numbers", e.span)),
            ExprKind::Bytes(_) => Err(self.unsupported("bytes literals", e.span)),
            ExprKind::Error => Err(self.error(
                codes::SYNTAX_ERRORS,
                "this expression could not be parsed",
                e.span,
                "syntax error",
            )),
        }
    }

    /// A shared `Rc<str>` for a name, so calls, bindings and attribute
    /// assignments in unrolled loops do not allocate their names again.
    pub(crate) fn intern(&mut self, name: &str) -> Rc<str> {
        self.names.intern(name)
    }

    /// Records a hover fact when the table is on.
    #[inline]
    pub(crate) fn record_fact(&mut self, span: Span, v: &Value) {
        if self.facts.is_some() {
            self.record_fact_text(span, v);
        }
    }

    fn record_fact_text(&mut self, span: Span, v: &Value) {
        let text = |ctx: &Self| match v {
            Value::Tensor(t) => crate::facts::tensor_text(ctx, t),
            _ => format::short_repr(v),
        };
        // The text is only built the first few times a span is reached.
        let file = self.file;
        let wanted = self.facts.as_ref().is_some_and(|f| f.wants(file, span));
        let t = if wanted { Some(text(self)) } else { None };
        if let Some(facts) = &mut self.facts {
            facts.record(file, span, || t.unwrap_or_default());
        }
    }

    fn eval_items(&mut self, items: &[Expr]) -> Result<Vec<Value>, Diagnostic> {
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            if let ExprKind::Starred(inner) = &it.kind {
                let v = self.eval(inner)?;
                out.extend(self.iterate(&v, inner.span)?);
            } else {
                out.push(self.eval(it)?);
            }
        }
        Ok(out)
    }

    /// Evaluates call arguments, expanding `*args` and `**kwargs`.
    pub(crate) fn eval_args(&mut self, args: &[ast::Arg]) -> Result<CallArgs, Diagnostic> {
        let keywords = args
            .iter()
            .filter(|a| matches!(a.kind, ArgKind::Keyword(..)))
            .count();
        let mut out = CallArgs {
            // One spare slot for a receiver (`Ctx::call_on`).
            positional: Vec::with_capacity(args.len() - keywords + 1),
            keywords: Vec::with_capacity(keywords),
        };
        for a in args {
            match &a.kind {
                ArgKind::Positional(e) => {
                    let v = self.eval(e)?;
                    out.positional.push(Arg::new(v, e.span));
                }
                ArgKind::Keyword(name, e) => {
                    let v = self.eval(e)?;
                    let key = self.names.intern_hashed(name.name.key_hash(), &name.name);
                    out.keywords.push((key, Arg::new(v, e.span)));
                }
                ArgKind::Star(e) => {
                    let v = self.eval(e)?;
                    for item in self.iterate(&v, e.span)? {
                        out.positional.push(Arg::new(item, e.span));
                    }
                }
                ArgKind::DoubleStar(e) => {
                    let d = self.eval_unpacked_dict(e)?;
                    for (k, val) in d.borrow().entries.iter() {
                        let Value::Str(k) = k else {
                            return Err(self.error(
                                codes::TYPE_ERROR,
                                "keywords must be strings",
                                e.span,
                                "non-string key",
                            ));
                        };
                        out.keywords
                            .push((k.clone(), Arg::new(val.clone(), e.span)));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Evaluates the index of a subscript: a tuple of items for `t[a, b]`.
    pub(crate) fn eval_subscript_key(&mut self, index: &Expr) -> Result<Value, Diagnostic> {
        self.eval(index)
    }

    fn comprehension(
        &mut self,
        generators: &[ast::Comprehension],
        body: &mut dyn FnMut(&mut Self) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let scope = Scope::new(Some(self.scope.clone()));
        let saved = std::mem::replace(&mut self.scope, scope);
        let res = self.comprehension_level(generators, body);
        self.scope = saved;
        res
    }

    fn comprehension_level(
        &mut self,
        generators: &[ast::Comprehension],
        body: &mut dyn FnMut(&mut Self) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let Some((g, rest)) = generators.split_first() else {
            return body(self);
        };
        if g.is_async {
            return Err(self.unsupported("`async` comprehensions", g.span));
        }
        let it = self.eval(&g.iter)?;
        'items: for item in self.iterate(&it, g.iter.span)? {
            self.count_iteration(g.span)?;
            self.assign(&g.target, item)?;
            for cond in &g.ifs {
                let c = self.eval(cond)?;
                if !self.truthy(&c, cond.span)? {
                    continue 'items;
                }
            }
            self.comprehension_level(rest, body)?;
        }
        Ok(())
    }

    fn make_lambda(&mut self, e: &Expr) -> Result<Value, Diagnostic> {
        let Some(def) = self.modules[self.module.0 as usize]
            .lambdas
            .get(&e.span.start)
            .cloned()
        else {
            return Err(self.error(
                codes::UNSUPPORTED,
                "this lambda was not found in its module",
                e.span,
                "lambda",
            ));
        };
        let (defaults, kw_defaults) = self.eval_defaults(&def.params)?;
        Ok(Value::Function(Rc::new(Function {
            name: Rc::from("<lambda>"),
            param_names: self.param_names(&def.params),
            locals: Default::default(),
            body: FunctionBody::Lambda(def),
            module: self.module,
            env: self.closure_env(),
            defaults,
            kw_defaults,
            owner: RefCell::new(None),
            method_kind: MethodKind::Plain,
            jit: false,
        })))
    }

    /// The environment a function defined here closes over.
    pub(crate) fn closure_env(&self) -> Option<Rc<Scope>> {
        let globals = &self.modules[self.module.0 as usize].globals;
        let scope = if self.in_class_body {
            self.scope.parent.clone()?
        } else {
            self.scope.clone()
        };
        if Rc::ptr_eq(&scope, globals) {
            None
        } else {
            Some(scope)
        }
    }

    /// The interned names of the positional then keyword-only parameters
    /// of `params` (`Function::param_names`).
    pub(crate) fn param_names(&mut self, params: &ast::Params) -> Rc<[Rc<str>]> {
        let all = params
            .posonly
            .iter()
            .chain(&params.args)
            .chain(&params.kwonly);
        all.map(|p| self.intern(&p.name.name)).collect()
    }

    /// Evaluates the defaults of `params`, aligned with the positional and
    /// keyword-only parameters.
    pub(crate) fn eval_defaults(&mut self, params: &ast::Params) -> Result<Defaults, Diagnostic> {
        let mut defaults = Vec::new();
        for p in params.posonly.iter().chain(&params.args) {
            defaults.push(match &p.default {
                Some(d) => Some(self.eval(d)?),
                None => None,
            });
        }
        let mut kw = Vec::new();
        for p in &params.kwonly {
            kw.push(match &p.default {
                Some(d) => Some(self.eval(d)?),
                None => None,
            });
        }
        Ok((defaults, kw))
    }

    fn fstring(&mut self, parts: &[FStringPart]) -> Result<String, Diagnostic> {
        let mut out = String::new();
        for p in parts {
            match p {
                FStringPart::Literal(s) => out.push_str(s),
                FStringPart::Field(f) => {
                    let v = self.eval(&f.value)?;
                    if let Some(t) = &f.debug_text {
                        out.push_str(t);
                    }
                    let v = match f.conversion {
                        Some('r' | 'a') => Value::str(&format::repr(&v)),
                        Some('s') => Value::str(&format::str(&v)),
                        _ if f.debug_text.is_some() && f.format_spec.is_none() => {
                            Value::str(&format::repr(&v))
                        }
                        _ => v,
                    };
                    let spec = match &f.format_spec {
                        Some(spec) => self.fstring(spec)?,
                        None => String::new(),
                    };
                    match format::format_value(&v, &spec) {
                        Ok(s) => out.push_str(&s),
                        Err(msg) => {
                            return Err(self.error(
                                codes::FORMAT_SPEC,
                                msg,
                                f.span,
                                "in this field",
                            ));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    pub(crate) fn check_hashable(&self, key: &Value, span: Span) -> Result<(), Diagnostic> {
        if key.is_hashable() {
            Ok(())
        } else {
            Err(self.error(
                codes::UNHASHABLE,
                format!("{} cannot be a dict key", crate::format::a_type(key)),
                span,
                "unhashable",
            ))
        }
    }

    /// Looks a name up: scopes, module globals, builtins.
    pub(crate) fn lookup_name(&self, name: &str, span: Span) -> Result<Value, Diagnostic> {
        self.lookup_name_hashed(name, crate::value::name_hash(name), span)
    }

    /// [`Ctx::lookup_name`] with `hash` the name's `name_hash`.
    fn lookup_name_hashed(&self, name: &str, hash: u64, span: Span) -> Result<Value, Diagnostic> {
        if let Some(v) = self.scope.lookup_hashed(hash, name) {
            return Ok(v);
        }
        let module = &self.modules[self.module.0 as usize];
        if let Some(v) = module.globals.get_local_hashed(hash, name) {
            return Ok(v);
        }
        if let Some(b) = Builtin::lookup(name) {
            return Ok(Value::Builtin(b));
        }
        match name {
            "object" => return Ok(Value::Class(self.bases.object.clone())),
            "True" => return Ok(Value::Bool(true)),
            "False" => return Ok(Value::Bool(false)),
            "staticmethod" => return Ok(Value::Builtin(Builtin::StaticMethod)),
            "classmethod" => return Ok(Value::Builtin(Builtin::ClassMethod)),
            "property" => return Ok(Value::Builtin(Builtin::Property)),
            _ => {}
        }
        if let Some(reason) = module.poisoned.get(name) {
            return Err(self
                .error(
                    codes::UNDEFINED_NAME,
                    format!("`{name}` has no compile-time value"),
                    span,
                    "used here",
                )
                .with_note(reason.clone()));
        }
        let mut d = self.error(
            codes::UNDEFINED_NAME,
            format!("name `{name}` is not defined"),
            span,
            "not defined",
        );
        let mut known: Vec<String> = module
            .globals
            .vars
            .borrow()
            .keys()
            .map(|k| k.to_string())
            .collect();
        let mut cur = Some(self.scope.clone());
        while let Some(s) = cur {
            known.extend(s.vars.borrow().keys().map(|k| k.to_string()));
            cur = s.parent.clone();
        }
        known.sort();
        let refs: Vec<&str> = known.iter().map(String::as_str).collect();
        if let Some(c) = crate::args::closest(name, &refs) {
            d = d.with_help(format!("did you mean `{c}`?"));
        }
        Err(d)
    }

    /// `o.name`.
    pub(crate) fn get_attr(
        &mut self,
        o: &Value,
        name: &str,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match o {
            Value::Object(obj) => {
                if let Some(v) = obj.get(name) {
                    return Ok(v);
                }
                if let Some(v) = obj.class.lookup(name) {
                    return self.bind_class_attr(o.clone(), v, span);
                }
                match name {
                    "__class__" => return Ok(Value::Class(obj.class.clone())),
                    "__dict__" => {
                        let mut d = Dict::default();
                        for (k, v) in obj.fields.borrow().iter() {
                            d.insert(Value::Str(k.clone()), v.clone());
                        }
                        return Ok(Value::Dict(Rc::new(RefCell::new(d))));
                    }
                    _ => {}
                }
                Err(self.no_attr(o, name, span))
            }
            Value::Class(c) => {
                if let Some(v) = c.lookup(name) {
                    return match v {
                        Value::Function(ref f) if f.method_kind == MethodKind::ClassMethod => {
                            Ok(bound(o.clone(), v))
                        }
                        other => Ok(other),
                    };
                }
                if name == "__name__" {
                    return Ok(Value::Str(c.name.clone()));
                }
                // `object.__setattr__(obj, name, value)`, which frozen
                // dataclasses use to set a field: `setattr` (nkic does
                // not freeze dataclasses).
                if name == "__setattr__" && Rc::ptr_eq(c, &self.bases.object) {
                    return Ok(Value::Builtin(Builtin::Setattr));
                }
                Err(self.no_attr(o, name, span))
            }
            Value::Module(m) => match m.globals.get_local(name) {
                Some(v) => Ok(v),
                None => {
                    let reason = self.modules[m.id.0 as usize].poisoned.get(name).cloned();
                    let mut d = self.no_attr(o, name, span);
                    if let Some(r) = reason {
                        d = d.with_note(r);
                    }
                    Err(d)
                }
            },
            Value::Namespace(ns) => {
                if name == "NKIObject"
                    && matches!(
                        ns,
                        crate::value::Namespace::Nki | crate::value::Namespace::Language
                    )
                {
                    return Ok(Value::Class(self.bases.nki_object.clone()));
                }
                if let Some(v) = intrinsics::lookup(*ns, name) {
                    return Ok(v);
                }
                if let Some(v) = crate::builtins::module_attr(self, *ns, name) {
                    return Ok(v);
                }
                if let Some(v) = api::lookup(self, *ns, name) {
                    return Ok(v);
                }
                let d = self.error(
                    codes::NO_ATTRIBUTE,
                    format!("module `{}` has no attribute `{name}`", ns.name()),
                    span,
                    "unknown name",
                );
                Err(api::no_attribute_hints(*ns, name, d))
            }
            Value::Function(f) => match name {
                "__name__" => Ok(Value::Str(f.name.clone())),
                _ => Err(self.no_attr(o, name, span)),
            },
            Value::Str(_) | Value::List(_) | Value::Dict(_) | Value::Tuple(_) => {
                match METHODS.iter().find(|m| **m == name) {
                    Some(m) => Ok(bound(o.clone(), Value::Builtin(Builtin::Method(m)))),
                    None => Err(self.no_attr(o, name, span)),
                }
            }
            Value::Range(r) => match name {
                "start" => Ok(Value::Int(r.start)),
                "stop" => Ok(Value::Int(r.stop)),
                "step" => Ok(Value::Int(r.step)),
                _ => Err(self.no_attr(o, name, span)),
            },
            Value::Slice(s) => match name {
                "start" => Ok(s.lower.clone()),
                "stop" => Ok(s.upper.clone()),
                "step" => Ok(s.step.clone()),
                _ => Err(self.no_attr(o, name, span)),
            },
            Value::Int(i) => match name {
                "real" | "numerator" => Ok(Value::Int(*i)),
                "bit_length" => Ok(bound(
                    o.clone(),
                    Value::Builtin(Builtin::Method("bit_length")),
                )),
                _ => Err(self.no_attr(o, name, span)),
            },
            Value::Float(_) => match name {
                "is_integer" => Ok(bound(
                    o.clone(),
                    Value::Builtin(Builtin::Method("is_integer")),
                )),
                _ => Err(self.no_attr(o, name, span)),
            },
            Value::Index(_) | Value::IndexPred(_) => Err(self.no_attr(o, name, span)),
            Value::Super(s) => {
                for base in &s.class.bases {
                    if let Some(v) = base.lookup(name) {
                        return self.bind_class_attr(s.receiver.clone(), v, span);
                    }
                }
                if name == "__init__" || name == "__post_init__" {
                    // `object.__init__` and an absent `__post_init__` do nothing.
                    return Ok(Value::Builtin(Builtin::NoOp));
                }
                Err(self.no_attr(o, name, span))
            }
            _ => api::attribute(self, o, name, span),
        }
    }

    /// Binds a class attribute found through an instance.
    fn bind_class_attr(
        &mut self,
        receiver: Value,
        v: Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match v {
            Value::Function(ref f) => match f.method_kind {
                MethodKind::Plain => Ok(bound(receiver, v)),
                MethodKind::Static => Ok(v),
                MethodKind::ClassMethod => {
                    let class = match &receiver {
                        Value::Object(o) => Value::Class(o.class.clone()),
                        other => other.clone(),
                    };
                    Ok(bound(class, v))
                }
                MethodKind::Property => {
                    let args = CallArgs::positional(vec![Arg::new(receiver, span)]);
                    self.call(&v, args, span)
                }
            },
            other => Ok(other),
        }
    }

    fn no_attr(&self, o: &Value, name: &str, span: Span) -> Diagnostic {
        let what = match o {
            Value::Object(obj) => format!("`{}` object", obj.class.name),
            Value::Class(c) => format!("class `{}`", c.name),
            Value::Module(m) => format!("module `{}`", m.name),
            other => format!("{} value", other.type_name()),
        };
        let mut d = self.error(
            codes::NO_ATTRIBUTE,
            format!("{what} has no attribute `{name}`"),
            span,
            "unknown attribute",
        );
        let candidates: Vec<String> = match o {
            Value::Object(obj) => {
                let mut c: Vec<String> = obj
                    .fields
                    .borrow()
                    .iter()
                    .map(|(k, _)| k.to_string())
                    .collect();
                c.extend(obj.class.attrs.borrow().iter().map(|(k, _)| k.to_string()));
                c
            }
            Value::Class(cl) => cl
                .attrs
                .borrow()
                .iter()
                .map(|(k, _)| k.to_string())
                .collect(),
            _ => Vec::new(),
        };
        let refs: Vec<&str> = candidates.iter().map(String::as_str).collect();
        if let Some(c) = crate::args::closest(name, &refs) {
            d = d.with_help(format!("did you mean `{c}`?"));
        }
        d
    }

    /// `o.name = v`.
    pub(crate) fn set_attr(
        &mut self,
        o: &Value,
        name: &str,
        v: Value,
        span: Span,
    ) -> Result<(), Diagnostic> {
        match o {
            Value::Object(obj) if obj.class.kind == ClassKind::Plain => {
                obj.set_with(name, v, || self.intern(name));
                Ok(())
            }
            Value::Class(c) if !c.builtin => {
                c.set_attr(Rc::from(name), v);
                Ok(())
            }
            _ => Err(self.error(
                codes::TYPE_ERROR,
                format!(
                    "cannot set attribute `{name}` on {}",
                    crate::format::a_type(o)
                ),
                span,
                "read-only",
            )),
        }
    }

    /// A list index: negative from the end, checked against `len`.
    pub(crate) fn list_index(
        &self,
        key: &Value,
        len: usize,
        span: Span,
    ) -> Result<usize, Diagnostic> {
        let Some(i) = key.as_int() else {
            return Err(self.type_error("indices must be ints", key, span, "not an int"));
        };
        let j = if i < 0 { i + len as i64 } else { i };
        if j < 0 || j >= len as i64 {
            return Err(self.error(
                codes::INDEX_ERROR,
                format!("index {i} is out of range for length {len}"),
                span,
                "out of range",
            ));
        }
        Ok(j as usize)
    }

    /// The indices a slice selects from a sequence of length `len`.
    pub(crate) fn slice_indices(
        &self,
        s: &SliceValue,
        len: usize,
        span: Span,
    ) -> Result<Vec<usize>, Diagnostic> {
        let get = |v: &Value| -> Result<Option<i64>, Diagnostic> {
            match v {
                Value::None => Ok(None),
                v => v.as_int().map(Some).ok_or_else(|| {
                    self.error(
                        codes::TYPE_ERROR,
                        "slice bounds must be ints",
                        span,
                        "not an int",
                    )
                }),
            }
        };
        let step = get(&s.step)?.unwrap_or(1);
        if step == 0 {
            return Err(self.error(
                codes::VALUE_ERROR,
                "slice step cannot be zero",
                span,
                "zero step",
            ));
        }
        let n = len as i64;
        let norm = |i: i64, lo: i64, hi: i64| {
            let i = if i < 0 { i + n } else { i };
            i.clamp(lo, hi)
        };
        let (start, stop) = if step > 0 {
            (
                get(&s.lower)?.map_or(0, |i| norm(i, 0, n)),
                get(&s.upper)?.map_or(n, |i| norm(i, 0, n)),
            )
        } else {
            (
                get(&s.lower)?.map_or(n - 1, |i| norm(i, -1, n - 1)),
                get(&s.upper)?.map_or(-1, |i| norm(i, -1, n - 1)),
            )
        };
        let mut out = Vec::new();
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            out.push(i as usize);
            i += step;
        }
        Ok(out)
    }

    /// `o[key]`.
    pub(crate) fn subscript(
        &mut self,
        o: &Value,
        key: &Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match (o, key) {
            // One element by its index, without copying the sequence.
            (Value::List(l), k) if !matches!(k, Value::Slice(_)) => {
                let len = l.borrow().len();
                let i = self.list_index(key, len, span)?;
                Ok(l.borrow()[i].clone())
            }
            (Value::Tuple(t), k) if !matches!(k, Value::Slice(_)) => {
                let i = self.list_index(key, t.len(), span)?;
                Ok(t[i].clone())
            }
            _ => self.subscript_any(o, key, span),
        }
    }

    /// [`Ctx::subscript`] of anything but one element of a list or tuple
    /// (which `subscript` reads in place): slices, strings, ranges, dicts,
    /// index expressions, enums and objects.
    fn subscript_any(&mut self, o: &Value, key: &Value, span: Span) -> Result<Value, Diagnostic> {
        match o {
            Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(_) => {
                let items = self.iterate(o, span)?;
                if let Value::Slice(s) = key {
                    let picked: Vec<Value> = self
                        .slice_indices(s, items.len(), span)?
                        .into_iter()
                        .map(|i| items[i].clone())
                        .collect();
                    return Ok(match o {
                        Value::List(_) => Value::list(picked),
                        Value::Str(_) => {
                            Value::str(&picked.iter().map(format::str).collect::<String>())
                        }
                        _ => Value::tuple(picked),
                    });
                }
                let i = self.list_index(key, items.len(), span)?;
                Ok(items[i].clone())
            }
            Value::Dict(d) => match d.borrow().get(key) {
                Some(v) => Ok(v.clone()),
                None => Err(self.error(
                    codes::INDEX_ERROR,
                    format!("key {} is not in the dict", format::repr(key)),
                    span,
                    "missing key",
                )),
            },
            Value::Index(e) => self.index_subscript(e, key, span),
            Value::Intrinsic(crate::intrinsics::Intrinsic::Mgrid) => self.mgrid(key, span),
            Value::Class(c) if c.kind != ClassKind::Plain => {
                let name = key.as_str().unwrap_or_default();
                match c
                    .members
                    .borrow()
                    .iter()
                    .find(|m| m.get("name").is_some_and(|n| n.as_str() == Some(name)))
                {
                    Some(m) => Ok(Value::Object(m.clone())),
                    None => Err(self.error(
                        codes::INDEX_ERROR,
                        format!("enum `{}` has no member {}", c.name, format::repr(key)),
                        span,
                        "unknown member",
                    )),
                }
            }
            // `tuple[int, ...]`-style generics in expressions: types only.
            Value::Builtin(b) if b.is_type() => Ok(o.clone()),
            Value::Object(obj) => match obj.class.lookup("__getitem__") {
                Some(f) => {
                    let args = CallArgs::positional(vec![Arg::new(key.clone(), span)]);
                    self.call_on(&f, o, args, span)
                }
                None => Err(self.error(
                    codes::TYPE_ERROR,
                    format!("a `{}` object cannot be indexed", obj.class.name),
                    span,
                    "not subscriptable",
                )),
            },
            _ => api::subscript(self, o, key, span),
        }
    }

    /// `arange(n)[:, None]`-style subscripts that place a legacy index
    /// vector on an axis of a higher-rank grid.
    fn index_subscript(&self, e: &IndexExpr, key: &Value, span: Span) -> Result<Value, Diagnostic> {
        let items: Vec<Value> = match key {
            Value::Tuple(t) => t.to_vec(),
            k => vec![k.clone()],
        };
        let full = |v: &Value| matches!(v, Value::Slice(s) if s.lower.is_none() && s.upper.is_none() && s.step.is_none());
        let n_full = items.iter().filter(|v| full(v)).count();
        if n_full != usize::from(e.ndim) || items.iter().any(|v| !full(v) && !v.is_none()) {
            return Err(self.error(
                codes::TYPE_ERROR,
                "an index expression can only be placed on grid axes with `[:, None]`-style subscripts",
                span,
                "unsupported index",
            ));
        }
        // Map old axes to the positions of the `:` items.
        let positions: Vec<u8> = items
            .iter()
            .enumerate()
            .filter(|(_, v)| full(v))
            .map(|(i, _)| i as u8)
            .collect();
        let terms = e
            .terms
            .iter()
            .map(|t| crate::value::IndexTerm {
                axis: positions[usize::from(t.axis)],
                ..*t
            })
            .collect();
        Ok(Value::Index(Rc::new(IndexExpr {
            ndim: items.len() as u8,
            constant: e.constant,
            terms,
        })))
    }

    /// `o[key] = v` for builtin containers and objects.
    pub(crate) fn store_subscript(
        &mut self,
        o: &Value,
        key: Value,
        v: Value,
        span: Span,
    ) -> Result<(), Diagnostic> {
        match o {
            Value::List(l) => {
                if let Value::Slice(s) = &key {
                    let len = l.borrow().len();
                    let idx = self.slice_indices(s, len, span)?;
                    let new = self.iterate(&v, span)?;
                    let contiguous = s.step.is_none() || s.step.as_int() == Some(1);
                    if contiguous {
                        let start = idx.first().copied().unwrap_or_else(|| {
                            s.lower.as_int().map_or(0, |i| {
                                if i < 0 {
                                    (i + len as i64).max(0) as usize
                                } else {
                                    (i as usize).min(len)
                                }
                            })
                        });
                        let end = idx.last().map_or(start, |&i| i + 1);
                        l.borrow_mut().splice(start..end, new);
                        return Ok(());
                    }
                    if idx.len() != new.len() {
                        return Err(self.error(
                            codes::VALUE_ERROR,
                            format!(
                                "cannot assign {} values to an extended slice of {}",
                                new.len(),
                                idx.len()
                            ),
                            span,
                            "size mismatch",
                        ));
                    }
                    let mut l = l.borrow_mut();
                    for (i, x) in idx.into_iter().zip(new) {
                        l[i] = x;
                    }
                    return Ok(());
                }
                let len = l.borrow().len();
                let i = self.list_index(&key, len, span)?;
                l.borrow_mut()[i] = v;
                Ok(())
            }
            Value::Dict(d) => {
                self.check_hashable(&key, span)?;
                d.borrow_mut().insert(key, v);
                Ok(())
            }
            Value::Object(obj) => match obj.class.lookup("__setitem__") {
                Some(f) => {
                    let args = CallArgs::positional(vec![Arg::new(key, span), Arg::new(v, span)]);
                    self.call_on(&f, o, args, span)?;
                    Ok(())
                }
                None => Err(self.error(
                    codes::TYPE_ERROR,
                    format!(
                        "a `{}` object does not support item assignment",
                        obj.class.name
                    ),
                    span,
                    "not assignable",
                )),
            },
            other => Err(self.error(
                codes::TYPE_ERROR,
                format!(
                    "{} does not support item assignment",
                    crate::format::a_type(other)
                ),
                span,
                "not assignable",
            )),
        }
    }

    /// The elements of an iterable compile-time value.
    pub(crate) fn iterate(&mut self, v: &Value, span: Span) -> Result<Vec<Value>, Diagnostic> {
        Ok(match v {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) => t.to_vec(),
            Value::Str(s) => s
                .chars()
                .map(|c| Value::str(c.encode_utf8(&mut [0; 4])))
                .collect(),
            Value::Dict(d) => d.borrow().entries.iter().map(|(k, _)| k.clone()).collect(),
            Value::Range(r) => {
                let n = r.len();
                if n > 10_000_000 {
                    return Err(self.error(
                        codes::OP_BUDGET,
                        format!("a range of {n} elements is too long to expand"),
                        span,
                        "too long",
                    ));
                }
                (0..n).map(|i| Value::Int(r.at(i))).collect()
            }
            Value::Class(c) if c.kind != ClassKind::Plain => c
                .members
                .borrow()
                .iter()
                .map(|m| Value::Object(m.clone()))
                .collect(),
            Value::Object(obj) if Rc::ptr_eq(&obj.class, &self.bases.mgrid) => {
                obj.fields.borrow().iter().map(|(_, v)| v.clone()).collect()
            }
            Value::Object(obj) if obj.class.lookup("__iter__").is_some() => {
                let f = obj.class.lookup("__iter__").unwrap_or(Value::None);
                let it = self.call_on(&f, v, CallArgs::default(), span)?;
                if matches!(it, Value::Object(_)) {
                    return Err(self.error(
                        codes::NOT_ITERABLE,
                        "`__iter__` must return a list, tuple or other container here",
                        span,
                        "iterated here",
                    ));
                }
                return self.iterate(&it, span);
            }
            Value::DynRange(_) => {
                return Err(self.error(
                    codes::DYNAMIC_LOOP,
                    "`nl.dynamic_range` can only be iterated by a `for` loop",
                    span,
                    "dynamic range",
                ));
            }
            Value::Tensor(_) | Value::Register(_) => {
                return Err(self.error(
                    codes::RUNTIME_VALUE,
                    format!(
                        "{} cannot be iterated at compile time",
                        crate::format::a_type(v)
                    ),
                    span,
                    "a run-time value",
                ));
            }
            other => {
                return Err(self.error(
                    codes::NOT_ITERABLE,
                    format!("{} is not iterable", crate::format::a_type(other)),
                    span,
                    "not iterable",
                ));
            }
        })
    }

    /// Evaluates `e`, the operand of `**` in a dict display or a call,
    /// which must be a dict.
    fn eval_unpacked_dict(&mut self, e: &Expr) -> Result<Rc<RefCell<Dict>>, Diagnostic> {
        match self.eval(e)? {
            Value::Dict(d) => Ok(d),
            other => Err(self.type_error("`**` needs a dict", &other, e.span, "not a dict")),
        }
    }

    /// The error that `v`, a run-time value, has no truth value at compile
    /// time, labelled `label`.
    pub(crate) fn no_truth_value(&self, v: &Value, span: Span, label: &str) -> Diagnostic {
        self.error(
            codes::RUNTIME_VALUE,
            format!(
                "{} has no truth value at compile time",
                crate::format::a_type(v)
            ),
            span,
            label,
        )
    }

    /// Python truthiness; tensors and registers have none at compile time.
    pub(crate) fn truthy(&mut self, v: &Value, span: Span) -> Result<bool, Diagnostic> {
        Ok(match v {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            Value::Dict(d) => !d.borrow().is_empty(),
            Value::Range(r) => !r.is_empty(),
            Value::Object(obj) => {
                for (name, want_len) in [("__bool__", false), ("__len__", true)] {
                    if let Some(f) = obj.class.lookup(name) {
                        let args = CallArgs::positional(vec![Arg::new(v.clone(), span)]);
                        let r = self.call(&f, args, span)?;
                        return match r {
                            Value::Bool(b) if !want_len => Ok(b),
                            Value::Int(i) if want_len => Ok(i != 0),
                            other => Err(self.error(
                                codes::TYPE_ERROR,
                                format!(
                                    "`{name}` must return {}, found {}",
                                    if want_len { "an int" } else { "a bool" },
                                    crate::format::a_type(&other)
                                ),
                                span,
                                "used as a condition",
                            )),
                        };
                    }
                }
                true
            }
            // A tensor is a Python object without `__bool__`: always true,
            // so `x if t else None` works as in NKI's tracer.
            Value::Tensor(_) => true,
            // A host NumPy array as NumPy decides; other API objects are
            // Python objects without `__bool__`.
            Value::Ext(_) => match crate::api::host::as_array(v) {
                Some(a) => return crate::api::host::truth(self, a, span),
                None => true,
            },
            Value::Register(_) | Value::Index(_) | Value::IndexPred(_) => {
                return Err(self
                    .no_truth_value(v, span, "used as a condition")
                    .with_note("conditions are decided while specializing; run-time values are not known then")
                    .with_help("for a run-time loop use `nl.dynamic_range` or `while <register>:`"));
            }
            _ => true,
        })
    }
}

/// `receiver.func` as a bound method.
pub(crate) fn bound(receiver: Value, func: Value) -> Value {
    Value::BoundMethod(Rc::new(crate::value::BoundMethod { receiver, func }))
}
