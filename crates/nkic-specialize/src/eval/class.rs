//! Definitions: `def` (with decorators and defaults), `class` (plain
//! classes, dataclasses, `NKIObject`s and enums), and instantiation.
//!
//! Classes follow language.md §4.3: a class without `__init__` gets a
//! synthesized one taking its annotated fields in order (default: the
//! field's default, else `None`), which then calls `__post_init__` if the
//! class has one. `@dataclass` is accepted and changes nothing. Enum
//! members are instances holding `name` and `value`; `auto()` numbers from
//! 1 (or one past the previous int value).

use std::cell::RefCell;
use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_syntax::ast::{self, ArgKind, ExprKind, StmtKind};

use crate::args::{Arg, CallArgs};
use crate::builtins::Builtin;
use crate::codes;
use crate::ctx::Ctx;
use crate::eval::Flow;
use crate::intrinsics::Intrinsic;
use crate::value::{
    Class, ClassKind, FieldDef, Function, FunctionBody, MethodKind, Object, Scope, Value,
};

/// The value of `dataclasses.field(...)` until its class is built.
#[derive(Debug)]
pub(crate) struct FieldMarker {
    pub(crate) default: Option<Value>,
    pub(crate) default_factory: Option<Value>,
}

crate::value::api_object!(FieldMarker, "Field");

/// The value of `enum.auto()` until its enum is built.
#[derive(Debug)]
pub(crate) struct AutoMarker;

crate::value::api_object!(AutoMarker, "auto");

impl Ctx<'_> {
    /// `def name(...)`: builds the function and binds it.
    pub(crate) fn exec_def(
        &mut self,
        def: &ast::FunctionDef,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if def.is_async {
            return Err(self.unsupported("`async def`", span));
        }
        let Some(shared) = self.modules[self.module.0 as usize]
            .defs
            .get(&span.start)
            .cloned()
        else {
            return Err(self.error(
                codes::UNSUPPORTED,
                "this function was not found in its module",
                def.name.span,
                "function",
            ));
        };
        let mut decorators = Vec::new();
        // The wrong-target warning of `@nki.jit(platform_target=...)` is
        // for the kernel being run only (`check_platform_target`).
        let saved = self.defining.replace(Rc::from(def.name.name.as_str()));
        for d in &def.decorators {
            match self.eval(d) {
                Ok(v) => decorators.push((v, d.span)),
                Err(e) => {
                    self.defining = saved;
                    return Err(e);
                }
            }
        }
        self.defining = saved;
        let mut method_kind = MethodKind::Plain;
        let mut jit = false;
        let mut others = Vec::new();
        for (v, dspan) in decorators {
            match v {
                Value::Builtin(Builtin::StaticMethod) => method_kind = MethodKind::Static,
                Value::Builtin(Builtin::ClassMethod) => method_kind = MethodKind::ClassMethod,
                Value::Builtin(Builtin::Property) => method_kind = MethodKind::Property,
                Value::Intrinsic(Intrinsic::Jit) => jit = true,
                // `functools.wraps(f)`-style and `@x.setter` decorators
                // change nothing the meta-language can observe.
                Value::Builtin(Builtin::NoOp) => {}
                other => others.push((other, dspan)),
            }
        }
        let (defaults, kw_defaults) = self.eval_defaults(&def.params)?;
        let mut f = Value::Function(Rc::new(Function {
            name: Rc::from(def.name.name.as_str()),
            param_names: self.param_names(&def.params),
            locals: Default::default(),
            body: FunctionBody::Def(shared),
            module: self.module,
            env: self.closure_env(),
            defaults,
            kw_defaults,
            owner: RefCell::new(None),
            method_kind,
            jit,
        }));
        for (dec, dspan) in others.into_iter().rev() {
            let args = CallArgs::positional(vec![Arg::new(f, dspan)]);
            f = self.call(&dec, args, dspan)?;
        }
        self.bind_name(&def.name.name, f);
        Ok(())
    }

    /// `class Name(bases): body`.
    pub(crate) fn exec_class(&mut self, def: &ast::ClassDef, span: Span) -> Result<(), Diagnostic> {
        let mut bases = Vec::new();
        for b in &def.bases {
            let ArgKind::Positional(e) = &b.kind else {
                // `metaclass=...` and other class keywords are ignored.
                continue;
            };
            match self.eval(e)? {
                Value::Class(c) => bases.push(c),
                Value::Namespace(_) | Value::Builtin(_) => {
                    // `typing.Generic`, `object`-like builtins, `ABC`: no behaviour.
                }
                other => {
                    return Err(self.type_error(
                        "a class can only derive from classes",
                        &other,
                        e.span,
                        "not a class",
                    ));
                }
            }
        }
        let mut others = Vec::new();
        let mut dataclass = bases.iter().any(|b| b.dataclass);
        for d in &def.decorators {
            let v = self.eval(d)?;
            if matches!(v, Value::Builtin(Builtin::Dataclass)) {
                dataclass = true;
            } else {
                others.push((v, d.span));
            }
        }
        let kind = bases
            .iter()
            .map(|b| b.kind)
            .find(|k| *k != ClassKind::Plain)
            .unwrap_or(ClassKind::Plain);
        let mut fields: Vec<FieldDef> = Vec::new();
        for b in &bases {
            for f in b.fields.borrow().iter() {
                if let Some(slot) = fields.iter_mut().find(|x| x.name == f.name) {
                    *slot = f.clone();
                } else {
                    fields.push(f.clone());
                }
            }
        }
        // Run the body in a class scope.
        let scope = Scope::new(Some(self.scope.clone()));
        let saved = std::mem::replace(&mut self.scope, scope.clone());
        let saved_class = std::mem::replace(&mut self.in_class_body, true);
        let res = self.exec_block(&def.body);
        self.scope = saved;
        self.in_class_body = saved_class;
        match res? {
            Flow::Next => {}
            _ => {
                return Err(self.error(
                    codes::MISPLACED,
                    "`return`, `break` or `continue` in a class body",
                    span,
                    "in this class",
                ));
            }
        }
        let mut order: Vec<(String, bool)> = Vec::new();
        for s in &def.body {
            let names: Vec<(String, bool)> = match &s.kind {
                StmtKind::Assign { targets, .. } => targets
                    .iter()
                    .filter_map(|t| match &t.kind {
                        ExprKind::Name(n) => Some((n.to_string(), false)),
                        _ => None,
                    })
                    .collect(),
                StmtKind::AnnAssign { target, .. } => match &target.kind {
                    ExprKind::Name(n) => vec![(n.to_string(), true)],
                    _ => Vec::new(),
                },
                StmtKind::FunctionDef(f) => vec![(f.name.name.to_string(), false)],
                StmtKind::ClassDef(c) => vec![(c.name.name.to_string(), false)],
                _ => Vec::new(),
            };
            for (n, ann) in names {
                if !order.iter().any(|(m, _)| *m == n) {
                    order.push((n, ann));
                }
            }
        }
        let class = Rc::new(Class {
            name: Rc::from(def.name.name.as_str()),
            bases,
            kind,
            attrs: RefCell::new(Vec::new()),
            fields: RefCell::new(Vec::new()),
            members: RefCell::new(Vec::new()),
            builtin: false,
            dataclass,
        });
        let mut next_auto: i64 = 1;
        for (name, annotated) in &order {
            let value = scope.get_local(name);
            if *annotated && kind == ClassKind::Plain {
                let (default, default_factory) = match &value {
                    Some(Value::Ext(e)) => match e.as_any().downcast_ref::<FieldMarker>() {
                        Some(m) => (m.default.clone(), m.default_factory.clone()),
                        None => (value.clone(), None),
                    },
                    other => (other.clone(), None),
                };
                let field = FieldDef {
                    name: Rc::from(name.as_str()),
                    default: default.clone(),
                    default_factory,
                };
                if let Some(slot) = fields.iter_mut().find(|f| f.name == field.name) {
                    *slot = field;
                } else {
                    fields.push(field);
                }
                // Defaults are also readable as class attributes.
                if let Some(d) = default {
                    class.set_attr(Rc::from(name.as_str()), d);
                }
                continue;
            }
            let Some(value) = value else { continue };
            if let Value::Function(f) = &value {
                *f.owner.borrow_mut() = Some(Rc::downgrade(&class));
            }
            let is_member = kind != ClassKind::Plain
                && !name.starts_with('_')
                && !matches!(
                    value,
                    Value::Function(_) | Value::Class(_) | Value::Builtin(_)
                );
            if is_member {
                let v = match &value {
                    Value::Ext(e) if e.as_any().is::<AutoMarker>() => Value::Int(next_auto),
                    other => other.clone(),
                };
                if let Some(i) = v.as_int() {
                    next_auto = i + 1;
                }
                let member = Rc::new(Object {
                    class: class.clone(),
                    fields: RefCell::new(vec![
                        (Rc::from("name"), Value::str(name)),
                        (Rc::from("value"), v),
                    ]),
                });
                class.members.borrow_mut().push(member.clone());
                class.set_attr(Rc::from(name.as_str()), Value::Object(member));
            } else {
                class.set_attr(Rc::from(name.as_str()), value);
            }
        }
        *class.fields.borrow_mut() = fields;
        let mut v = Value::Class(class);
        for (dec, dspan) in others.into_iter().rev() {
            let args = CallArgs::positional(vec![Arg::new(v, dspan)]);
            v = self.call(&dec, args, dspan)?;
        }
        self.bind_name(&def.name.name, v);
        Ok(())
    }

    /// `C(args)`: makes an instance (or looks up an enum member by value).
    pub(crate) fn instantiate(
        &mut self,
        c: &Rc<Class>,
        args: CallArgs,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        if c.kind != ClassKind::Plain {
            let [value] = args.bind(self, &c.name, ["value"], 1, span)?;
            let value = value.expect("bound");
            let found = c
                .members
                .borrow()
                .iter()
                .find(|m| m.get("value").is_some_and(|v| v.key_eq(&value.value)))
                .cloned();
            return match found {
                Some(m) => Ok(Value::Object(m)),
                None => Err(self.error(
                    codes::VALUE_ERROR,
                    format!(
                        "{} is not a valid `{}`",
                        crate::format::repr(&value.value),
                        c.name
                    ),
                    value.span,
                    "no member has this value",
                )),
            };
        }
        let obj = Value::Object(Rc::new(Object {
            class: c.clone(),
            fields: RefCell::new(Vec::new()),
        }));
        if let Some(init) = c.lookup("__init__") {
            let mut args = args;
            args.positional.insert(0, Arg::new(obj.clone(), span));
            self.call(&init, args, span)?;
            return Ok(obj);
        }
        let fields = c.fields.borrow().clone();
        let Value::Object(o) = &obj else {
            unreachable!("made above")
        };
        // `NKIObject.__init__(**kwargs)` sets each keyword as an attribute,
        // so a subclass with no fields of its own (`class P(nl.NKIObject):
        // x = None`) is made with keywords.
        if fields.is_empty()
            && args.positional.is_empty()
            && c.is_subclass_of(&self.bases.nki_object)
        {
            for (name, a) in args.keywords {
                o.set(name, a.value);
            }
            return Ok(obj);
        }
        if fields.is_empty() && !args.is_empty() {
            return Err(self.error(
                codes::BAD_ARGUMENTS,
                format!("`{}` takes no arguments", c.name),
                span,
                "arguments given",
            ));
        }
        let mut given: Vec<Option<Value>> = vec![None; fields.len()];
        for (i, a) in args.positional.into_iter().enumerate() {
            if i >= fields.len() {
                return Err(self.error(
                    codes::BAD_ARGUMENTS,
                    format!("`{}` takes {} arguments", c.name, fields.len()),
                    a.span,
                    "unexpected argument",
                ));
            }
            given[i] = Some(a.value);
        }
        for (name, a) in args.keywords {
            let Some(i) = fields.iter().position(|f| f.name == name) else {
                return Err(self.error(
                    codes::BAD_ARGUMENTS,
                    format!("`{}` has no field named `{name}`", c.name),
                    a.span,
                    "unknown field",
                ));
            };
            self.bind_keyword(&mut given[i], a, &c.name, "field", &name)?;
        }
        for (f, g) in fields.iter().zip(given) {
            let v = match (g, &f.default, &f.default_factory) {
                (Some(v), _, _) => v,
                (None, _, Some(factory)) => self.call(factory, CallArgs::default(), span)?,
                (None, Some(d), None) => d.clone(),
                (None, None, None) => Value::None,
            };
            o.set(f.name.clone(), v);
        }
        if let Some(post) = c.lookup("__post_init__") {
            let args = CallArgs::positional(vec![Arg::new(obj.clone(), span)]);
            self.call(&post, args, span)?;
        }
        Ok(obj)
    }
}
