//! Calls: dispatch on the callee, binding arguments to parameters, and
//! inlining function bodies.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};

use crate::args::{Arg, CallArgs};
use crate::ctx::{CallFrame, Ctx};
use crate::eval::Flow;
use crate::value::{Dict, Function, FunctionBody, Scope, Value};
use crate::{api, codes};

impl Ctx<'_> {
    /// Calls `func` with `args` at `span`.
    pub(crate) fn call(
        &mut self,
        func: &Value,
        args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        match func {
            Value::Function(f) => self.call_function(f, args, span, true),
            Value::BoundMethod(m) => self.call_on(&m.func, &m.receiver, args, span),
            Value::Builtin(b) => self.call_builtin(*b, args, span),
            Value::Intrinsic(i) => self.call_intrinsic(*i, args, span),
            Value::Api(f) => api::call(self, *f, args, span),
            Value::Class(c) => {
                let c = c.clone();
                self.instantiate(&c, args, span)
            }
            Value::DType(dt) => {
                // `np.float32(x)`: a compile-time number of that type.
                let [x] = args.bind(self, dt.name(), ["x"], 1, span)?;
                let x = x.expect("bound");
                let Some(f) = x.value.as_float() else {
                    return Err(self.arg_needs(&x, dt.name(), "a number", "not a number"));
                };
                Ok(if dt.is_float() {
                    Value::Float(f)
                } else {
                    Value::Int(f.trunc() as i64)
                })
            }
            Value::Ext(e) if e.as_any().is::<crate::builtins::Partial>() => {
                let Some(p) = e.as_any().downcast_ref::<crate::builtins::Partial>() else {
                    unreachable!("checked by the guard")
                };
                let (f, args) = crate::builtins::partial_call(p, args);
                self.call(&f, args, span)
            }
            Value::Ext(e) => {
                let e = e.clone();
                match e.call(self, args, span) {
                    Some(res) => res,
                    None => Err(self.error(
                        codes::NOT_CALLABLE,
                        format!("{} is not callable", crate::format::a_type(func)),
                        span,
                        "not callable",
                    )),
                }
            }
            Value::Object(obj) => match obj.class.lookup("__call__") {
                Some(f) => self.call_on(&f, func, args, span),
                None => Err(self.error(
                    codes::NOT_CALLABLE,
                    format!("a `{}` object is not callable", obj.class.name),
                    span,
                    "not callable",
                )),
            },
            other => Err(self.error(
                codes::NOT_CALLABLE,
                format!("{} is not callable", crate::format::a_type(other)),
                span,
                "not callable",
            )),
        }
    }

    /// Calls the method `func` on `receiver`, which goes before `args`
    /// (a bound method, or a special method such as `__getitem__`).
    pub(crate) fn call_on(
        &mut self,
        func: &Value,
        receiver: &Value,
        mut args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        args.positional.insert(0, Arg::new(receiver.clone(), span));
        self.call(func, args, span)
    }

    /// Inlines a call of `f`. With `frame`, the call joins the call chain
    /// (notes, IR call sites); the kernel function itself runs without one.
    pub(crate) fn call_function(
        &mut self,
        f: &Rc<Function>,
        args: CallArgs,
        span: Span,
        frame: bool,
    ) -> Result<Value, Diagnostic> {
        // A kernel (`@nki.jit`) called from a kernel is inlined like any
        // function, as NKI does; diagnostics inside it say so
        // (`Ctx::call_note`).
        if self.calls.len() as u32 >= self.config.max_call_depth {
            return Err(self
                .error(
                    codes::CALL_DEPTH,
                    format!(
                        "calls are nested more than {} deep",
                        self.config.max_call_depth
                    ),
                    span,
                    format!("calling `{}`", f.name),
                )
                .with_note(
                    "every call is inlined at compile time, so recursion must end quickly",
                ));
        }
        let call_loc = self.loc(span);
        let scope = Scope::with_capacity(f.env.clone(), f.locals.get());
        let first_arg = args.positional.first().map(|a| a.value.clone());
        self.bind_params(f, args, span, &scope)?;
        let module = &self.modules[f.module.0 as usize];
        let (new_file, new_module) = (module.file, f.module);
        let saved_scope = std::mem::replace(&mut self.scope, scope);
        let saved_file = std::mem::replace(&mut self.file, new_file);
        let saved_module = std::mem::replace(&mut self.module, new_module);
        let saved_nonlocals = std::mem::take(&mut self.nonlocals);
        let saved_class = std::mem::replace(&mut self.in_class_body, false);
        let saved_loops = std::mem::replace(&mut self.fn_loops, 0);
        if frame {
            self.calls.push(CallFrame {
                name: f.name.clone(),
                loc: call_loc,
                func: Some(f.clone()),
                first_arg,
            });
            self.builder.enter_call(call_loc);
        } else {
            self.kernel_depth += 1;
        }
        let res = match &f.body {
            FunctionBody::Def(def) => {
                let def = def.clone();
                match self.exec_block(&def.body) {
                    Ok(Flow::Return(v)) => Ok(v),
                    Ok(Flow::Next) => Ok(Value::None),
                    Ok(Flow::Break | Flow::Continue) => Err(self.error(
                        codes::MISPLACED,
                        "`break` or `continue` outside a loop",
                        def.name.span,
                        "in this function",
                    )),
                    Err(e) => Err(e),
                }
            }
            FunctionBody::Lambda(l) => {
                let l = l.clone();
                self.eval(&l.body)
            }
        };
        // The call-chain note is only written when the call failed.
        let note = if frame {
            self.builder.exit_call();
            let frame = self.calls.pop().expect("pushed above");
            res.is_err().then(|| self.call_note(&frame))
        } else {
            self.kernel_depth -= 1;
            None
        };
        let scope = std::mem::replace(&mut self.scope, saved_scope);
        f.locals.set(scope.vars.borrow().len());
        self.file = saved_file;
        self.module = saved_module;
        self.nonlocals = saved_nonlocals;
        self.in_class_body = saved_class;
        self.fn_loops = saved_loops;
        match (res, note) {
            (Err(e), Some(note)) => Err(push_call_note(e, note)),
            (res, _) => res,
        }
    }

    /// Binds call arguments to `f`'s parameters in `scope`, Python style.
    fn bind_params(
        &mut self,
        f: &Function,
        args: CallArgs,
        span: Span,
        scope: &Scope,
    ) -> Result<(), Diagnostic> {
        let params = f.params();
        let n_posonly = params.posonly.len();
        let n_positional = n_posonly + params.args.len();
        let positional = || params.posonly.iter().chain(&params.args);
        // The interned names of the positional, then the keyword-only
        // parameters, and the arguments bound to them.
        let (pos_names, kw_names) = f.param_names.split_at(n_positional);
        let mut bound: Vec<Option<Value>> = vec![None; f.param_names.len()];
        let mut extra_pos = Vec::new();
        let n_given = args.positional.len();
        for (i, a) in args.positional.into_iter().enumerate() {
            if i < n_positional {
                bound[i] = Some(a.value);
            } else if params.vararg.is_some() {
                extra_pos.push(a.value);
            } else {
                return Err(self.error(
                    codes::BAD_ARGUMENTS,
                    format!(
                        "`{}` takes {n_positional} positional arguments but {n_given} were given",
                        f.name,
                    ),
                    a.span,
                    "unexpected argument",
                ));
            }
        }
        // Keywords are interned like the names (`Ctx::eval_args`), so they
        // are nearly always found by pointer; `**kwargs` keys by text.
        let find = |names: &[Rc<str>], name: &Rc<str>| {
            names
                .iter()
                .position(|p| Rc::ptr_eq(p, name) || *p == *name)
        };
        let mut extra_kw = Dict::default();
        for (name, a) in args.keywords {
            if let Some(i) = find(pos_names, &name)
                && i >= n_posonly
            {
                self.bind_keyword(&mut bound[i], a, &f.name, "argument", &name)?;
            } else if let Some(i) = find(kw_names, &name) {
                bound[n_positional + i] = Some(a.value);
            } else if params.kwarg.is_some() {
                extra_kw.insert(Value::Str(name), a.value);
            } else {
                let names: Vec<&str> = positional()
                    .skip(n_posonly)
                    .chain(&params.kwonly)
                    .map(|p| p.name.name.as_str())
                    .collect();
                let mut d = self.error(
                    codes::BAD_ARGUMENTS,
                    format!("`{}` has no parameter named `{name}`", f.name),
                    a.span,
                    "unknown keyword argument",
                );
                if let Some(c) = crate::args::closest(&name, &names) {
                    d = d.with_help(format!("did you mean `{c}`?"));
                }
                return Err(d);
            }
        }
        // Each parameter with its argument, else its default; for the
        // error, what kind of parameter it is.
        for (i, (p, given)) in positional().chain(&params.kwonly).zip(bound).enumerate() {
            let (kind, default) = match i.checked_sub(n_positional) {
                None => ("required", f.defaults.get(i)),
                Some(k) => ("keyword", f.kw_defaults.get(k)),
            };
            let name = &p.name.name;
            let v = match given {
                Some(v) => v,
                None => default.cloned().flatten().ok_or_else(|| {
                    self.error(
                        codes::BAD_ARGUMENTS,
                        format!("`{}` is missing {kind} argument `{name}`", f.name),
                        span,
                        format!("`{name}` is not given"),
                    )
                })?,
            };
            // Positional parameters show their value on hover.
            if kind == "required" && self.facts.is_some() {
                let file = self.modules[f.module.0 as usize].file;
                let text = match &v {
                    Value::Tensor(t) => crate::facts::tensor_text(self, t),
                    _ => crate::format::short_repr(&v),
                };
                if let Some(facts) = &mut self.facts {
                    facts.record(file, p.name.span, || text);
                }
            }
            scope.set_hashed(name.key_hash(), name, v, || f.param_names[i].clone());
        }
        if let Some(v) = &params.vararg {
            scope.set(&v.name.name, Value::tuple(extra_pos));
        }
        if let Some(k) = &params.kwarg {
            scope.set(
                &k.name.name,
                Value::Dict(Rc::new(std::cell::RefCell::new(extra_kw))),
            );
        }
        Ok(())
    }

    /// Gives `slot`, the parameter `name` of `func` (a `kind`: argument or
    /// field), keyword argument `a`'s value; the error if it has one already.
    pub(crate) fn bind_keyword(
        &self,
        slot: &mut Option<Value>,
        a: Arg,
        func: &str,
        kind: &str,
        name: &str,
    ) -> Result<(), Diagnostic> {
        if slot.is_some() {
            return Err(self.error(
                codes::BAD_ARGUMENTS,
                format!("`{func}` got multiple values for {kind} `{name}`"),
                a.span,
                "already given",
            ));
        }
        *slot = Some(a.value);
        Ok(())
    }

    /// `super()` in the running method.
    pub(crate) fn make_super(&self, span: Span) -> Result<Value, Diagnostic> {
        let frame = self.calls.last();
        let owner = frame
            .and_then(|f| f.func.as_ref())
            .and_then(|f| f.owner.borrow().as_ref().and_then(std::rc::Weak::upgrade));
        match (owner, frame.and_then(|f| f.first_arg.clone())) {
            (Some(class), Some(receiver)) => Ok(Value::Super(Rc::new(crate::value::SuperValue {
                class,
                receiver,
            }))),
            _ => Err(self.error(
                codes::TYPE_ERROR,
                "`super()` is only available inside a method",
                span,
                "not in a method",
            )),
        }
    }
}

/// Adds a call-chain note, folding runs of the same call (recursion) into
/// one note with a count.
fn push_call_note(mut e: Diagnostic, note: String) -> Diagnostic {
    if let Some(last) = e.notes.last_mut() {
        if *last == note {
            *last = format!("{note} (2 times)");
            return e;
        }
        if let Some(rest) = last.strip_prefix(note.as_str())
            && let Some(n) = rest
                .strip_prefix(" (")
                .and_then(|r| r.strip_suffix(" times)"))
                .and_then(|n| n.parse::<u32>().ok())
        {
            *last = format!("{note} ({} times)", n + 1);
            return e;
        }
    }
    e.with_note(note)
}
