//! Statements: assignment, control flow, loops (static and dynamic),
//! `assert`, `raise`, `with nl.no_reorder()`, definitions and imports.

use std::rc::Rc;

use nkic_diag::{Diagnostic, Span};
use nkic_ir::{DynLoopKind, RegOrImm, StaticLoopKind};
use nkic_syntax::ast::{self, Expr, ExprKind, Stmt, StmtKind};

use crate::ctx::{Ctx, LoopFrame};
use crate::value::{DynRangeValue, IntOrReg, RangeKind, RegValue, Value};
use crate::{api, codes, format};

/// How a statement finished.
#[derive(Debug)]
pub(crate) enum Flow {
    Next,
    Break,
    Continue,
    Return(Value),
}

/// What a `for` loop iterates over after evaluation.
enum Iteration {
    Range(Rc<crate::value::RangeValue>),
    Items(Vec<Value>),
}

impl Ctx<'_> {
    /// Runs `stmts` in order until one leaves the block.
    pub(crate) fn exec_block(&mut self, stmts: &[Stmt]) -> Result<Flow, Diagnostic> {
        for s in stmts {
            match self.exec_stmt(s)? {
                Flow::Next => {}
                flow => return Ok(flow),
            }
        }
        Ok(Flow::Next)
    }

    /// Runs `s`, charging the budget (`crate::budget`).
    pub(crate) fn exec_stmt(&mut self, s: &Stmt) -> Result<Flow, Diagnostic> {
        self.enter(s.span)?;
        let res = self.run_stmt(s);
        self.leave();
        res
    }

    fn run_stmt(&mut self, s: &Stmt) -> Result<Flow, Diagnostic> {
        match &s.kind {
            StmtKind::Expr(e) => {
                self.eval(e)?;
            }
            StmtKind::Assign { targets, value } => {
                let v = self.eval(value)?;
                for t in targets {
                    self.name_fresh_tile(t, &v, value.span);
                    self.assign(t, v.clone())?;
                }
            }
            StmtKind::AugAssign { target, op, value } => self.aug_assign(target, *op, value)?,
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(value) = value {
                    let v = self.eval(value)?;
                    self.name_fresh_tile(target, &v, value.span);
                    self.assign(target, v)?;
                }
            }
            StmtKind::Return(value) => {
                if self.calls.is_empty() && !self.in_kernel_body() {
                    return Err(self.error(
                        codes::MISPLACED,
                        "`return` outside a function",
                        s.span,
                        "not in a function",
                    ));
                }
                let v = match value {
                    Some(e) => self.eval(e)?,
                    None => Value::None,
                };
                if self.calls.is_empty() {
                    self.return_span = Some(s.span);
                }
                return Ok(Flow::Return(v));
            }
            StmtKind::If { test, body, orelse } => {
                let t = self.eval(test)?;
                return if self.truthy(&t, test.span)? {
                    self.exec_block(body)
                } else {
                    self.exec_block(orelse)
                };
            }
            StmtKind::For {
                is_async,
                target,
                iter,
                body,
                orelse,
            } => {
                self.reject_async(*is_async, "`async for`", s.span)?;
                return self.exec_for(s.span, target, iter, body, orelse);
            }
            StmtKind::While { test, body, orelse } => {
                return self.exec_while(s.span, test, body, orelse);
            }
            StmtKind::Pass => {}
            StmtKind::Break | StmtKind::Continue if self.fn_loops == 0 => {
                return Err(self.error(
                    codes::MISPLACED,
                    "`break` or `continue` outside a loop",
                    s.span,
                    "not in a loop",
                ));
            }
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            StmtKind::Assert { test, msg } => {
                let t = self.eval(test)?;
                if !self.truthy(&t, test.span)? {
                    let message = match msg {
                        Some(m) => {
                            let v = self.eval(m)?;
                            format!("assertion failed: {}", format::str(&v))
                        }
                        None => format!("assertion failed: `{}`", nkic_syntax::unparse_expr(test)),
                    };
                    return Err(self.error(
                        codes::ASSERT_FAILED,
                        message,
                        s.span,
                        "this assertion",
                    ));
                }
            }
            StmtKind::Raise { exc, .. } => {
                let message = match exc {
                    Some(e) => {
                        let v = self.eval(e)?;
                        match v {
                            Value::Builtin(b) => b.name().to_owned(),
                            other => format::str(&other),
                        }
                    }
                    None => "re-raise".to_owned(),
                };
                return Err(self.error(
                    codes::RAISED,
                    format!("the kernel raised an error at compile time: {message}"),
                    s.span,
                    "raised here",
                ));
            }
            StmtKind::FunctionDef(def) => self.exec_def(def, s.span)?,
            StmtKind::ClassDef(def) => self.exec_class(def, s.span)?,
            StmtKind::Import(aliases) => self.exec_import(aliases)?,
            StmtKind::ImportFrom {
                module,
                names,
                level,
            } => self.exec_import_from(module.as_ref(), names, *level, s.span)?,
            StmtKind::Delete(targets) => {
                for t in targets {
                    self.delete(t)?;
                }
            }
            StmtKind::With {
                is_async,
                items,
                body,
            } => {
                self.reject_async(*is_async, "`async with`", s.span)?;
                return self.exec_with(items, body);
            }
            StmtKind::Global(_) => {
                return Err(self
                    .unsupported("`global`", s.span)
                    .with_note(
                        "a kernel must be a pure function of its arguments (language.md §1.3)",
                    )
                    .with_help("pass the value as an argument or return it"));
            }
            StmtKind::Nonlocal(names) => {
                for n in names {
                    self.nonlocals.push(Rc::from(n.name.as_str()));
                }
            }
            StmtKind::Try { .. } => {
                return Err(self
                    .unsupported("`try` statements", s.span)
                    .with_help("check the condition with `if` or `assert` instead"));
            }
            StmtKind::Error(_) => {
                return Err(self.error(
                    codes::SYNTAX_ERRORS,
                    "this statement could not be parsed",
                    s.span,
                    "syntax error",
                ));
            }
        }
        Ok(Flow::Next)
    }

    /// True while the kernel function's own body runs (it is entered
    /// without a call frame).
    fn in_kernel_body(&self) -> bool {
        self.kernel_depth > 0
    }

    /// The [`Ctx::unsupported`] error for `what` (`async for`, `async
    /// with`) if the statement `is_async`.
    fn reject_async(&self, is_async: bool, what: &str, span: Span) -> Result<(), Diagnostic> {
        if is_async {
            return Err(self.unsupported(what, span));
        }
        Ok(())
    }

    pub(crate) fn unsupported(&self, what: &str, span: Span) -> Diagnostic {
        self.error(
            codes::UNSUPPORTED,
            format!(
                "{what} {} not valid NKI",
                if what.ends_with('s') { "are" } else { "is" }
            ),
            span,
            "not supported in kernels",
        )
    }

    fn aug_assign(
        &mut self,
        target: &Expr,
        op: ast::BinOp,
        value: &Expr,
    ) -> Result<(), Diagnostic> {
        // `acc += nl.matmul(...)` accumulates in place (`nl_core::matmul`).
        let call = matches!(value.kind, ExprKind::Call { .. }) && op == ast::BinOp::Add;
        let saved = std::mem::replace(&mut self.accumulate_call, call.then_some(value.span));
        let result = self.aug_assign_inner(target, op, value);
        self.accumulate_call = saved;
        result
    }

    fn aug_assign_inner(
        &mut self,
        target: &Expr,
        op: ast::BinOp,
        value: &Expr,
    ) -> Result<(), Diagnostic> {
        match &target.kind {
            ExprKind::Subscript { value: obj, index } => {
                let o = self.eval(obj)?;
                let key = self.eval_subscript_key(index)?;
                let rhs = self.eval(value)?;
                if self.is_api_value(&o) {
                    let span = target.span.to(value.span);
                    return api::store_subscript(self, &o, &key, rhs, Some(op), span);
                }
                let cur = self.subscript(&o, &key, target.span)?;
                let new = self.binary(op, cur, rhs, true, target.span.to(value.span))?;
                self.store_subscript(&o, key, new, target.span)
            }
            ExprKind::Attribute { value: obj, attr } => {
                let o = self.eval(obj)?;
                let cur = self.get_attr(&o, &attr.name, target.span)?;
                let rhs = self.eval(value)?;
                let new = self.binary(op, cur, rhs, true, target.span.to(value.span))?;
                self.set_attr(&o, &attr.name, new, target.span)
            }
            ExprKind::Name(_) => {
                let cur = self.eval(target)?;
                let rhs = self.eval(value)?;
                // Lists extend in place under `+=`, as in Python.
                if let (ast::BinOp::Add, Value::List(l)) = (op, &cur) {
                    let items = self.iterate(&rhs, value.span)?;
                    l.borrow_mut().extend(items);
                    return Ok(());
                }
                let new = self.binary(op, cur, rhs, true, target.span.to(value.span))?;
                self.assign(target, new)
            }
            _ => Err(self.error(
                codes::TYPE_ERROR,
                "this expression cannot be assigned to",
                target.span,
                "not assignable",
            )),
        }
    }

    /// Binds `value` to an assignment target.
    /// Names an on-chip tile after the variable it is assigned to, when the
    /// tile was allocated by the assigned expression itself (`t =
    /// nl.ndarray(...)`, `t = nl.exp(x)`) and has no `name=`; a value-form
    /// result's generated name (`exp_2`) is replaced when the kernel is
    /// finished, so messages during specialization keep it. HBM tensors
    /// keep their names (arguments and outputs are named by the kernel's
    /// signature and return order).
    fn name_fresh_tile(&mut self, target: &Expr, value: &Value, value_span: nkic_diag::Span) {
        let ExprKind::Name(name) = &target.kind else {
            return;
        };
        // A legacy block tensor names every block's storage.
        let tiles: Vec<Rc<crate::value::Tensor>> =
            match (value.as_tensor(), crate::api::blocks::as_blocks(value)) {
                (Some(t), _) => vec![t.clone()],
                (None, Some(b)) => b.tiles.clone(),
                (None, None) => return,
            };
        let file = self.file();
        for t in tiles {
            let storage = t.storage();
            let fresh = self.builder.storage_loc(storage).is_some_and(|loc| {
                loc.file == file
                    && value_span.start <= loc.span.start
                    && loc.span.end <= value_span.end
            });
            if !fresh {
                continue;
            }
            if t.buffer.is_on_chip() {
                if self.auto_named.remove(&storage) {
                    self.renames.push((storage, name.to_string()));
                } else {
                    self.builder.name_if_unnamed(storage, name);
                }
            } else if !self.hbm_vars.iter().any(|(s, _)| *s == storage) {
                // HBM tensors keep their names (arguments and outputs are
                // named by the signature and the return order); the
                // variable is only remembered for messages.
                self.hbm_vars.push((storage, Rc::from(name.as_str())));
            }
        }
    }

    pub(crate) fn assign(&mut self, target: &Expr, value: Value) -> Result<(), Diagnostic> {
        match &target.kind {
            ExprKind::Name(name) => {
                // `acc = nl.loop_reduce(x, ...)` reduces into the tile `acc`
                // names, which stays bound.
                if let Some(r) = crate::api::nl_math::PendingLoopReduce::of(&value) {
                    return match self.scope.lookup(name) {
                        Some(Value::Tensor(acc)) => r.record(self, &acc, target.span),
                        _ => Err(r.unassigned(self)),
                    };
                }
                self.record_fact(target.span, &value);
                if !self.dyn_frames.is_empty()
                    && let super::carried::Rebind::Written =
                        self.dyn_rebind(name, &value, target.span)?
                {
                    return Ok(());
                }
                self.bind_name_hashed(name, name.key_hash(), value);
                Ok(())
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                self.unpack(items, value, target.span)
            }
            ExprKind::Attribute { value: obj, attr } => {
                let o = self.eval(obj)?;
                self.set_attr(&o, &attr.name, value, target.span)
            }
            ExprKind::Subscript { value: obj, index } => {
                let o = self.eval(obj)?;
                let key = self.eval_subscript_key(index)?;
                if self.is_api_value(&o) {
                    return api::store_subscript(self, &o, &key, value, None, target.span);
                }
                self.store_subscript(&o, key, value, target.span)
            }
            ExprKind::Starred(_) => Err(self.error(
                codes::TYPE_ERROR,
                "a starred target must be inside a tuple or list",
                target.span,
                "starred target",
            )),
            _ => Err(self.error(
                codes::TYPE_ERROR,
                "this expression cannot be assigned to",
                target.span,
                "not assignable",
            )),
        }
    }

    /// Binds `name` in the innermost scope, or where `nonlocal` says.
    pub(crate) fn bind_name(&mut self, name: &str, value: Value) {
        self.bind_name_hashed(name, crate::value::name_hash(name), value);
    }

    /// [`Ctx::bind_name`] with `hash` the name's `name_hash`.
    fn bind_name_hashed(&mut self, name: &str, hash: u64, value: Value) {
        if !self.nonlocals.is_empty() && self.nonlocals.iter().any(|n| &**n == name) {
            let mut cur = self.scope.parent.clone();
            while let Some(s) = cur {
                if s.get_local(name).is_some() {
                    s.set(name, value);
                    return;
                }
                cur = s.parent.clone();
            }
        }
        let names = &mut self.names;
        self.scope
            .set_hashed(hash, name, value, || names.intern_hashed(hash, name));
    }

    fn unpack(&mut self, targets: &[Expr], value: Value, span: Span) -> Result<(), Diagnostic> {
        let items = self.iterate(&value, span)?;
        let star = targets
            .iter()
            .position(|t| matches!(t.kind, ExprKind::Starred(_)));
        match star {
            None => {
                if items.len() != targets.len() {
                    return Err(self.error(
                        codes::VALUE_ERROR,
                        format!(
                            "cannot unpack {} values into {} targets",
                            items.len(),
                            targets.len()
                        ),
                        span,
                        format!(
                            "{} values unpacked into {} names",
                            items.len(),
                            targets.len()
                        ),
                    ));
                }
                for (t, v) in targets.iter().zip(items) {
                    self.assign(t, v)?;
                }
            }
            Some(k) => {
                let after = targets.len() - k - 1;
                if items.len() < targets.len() - 1 {
                    return Err(self.error(
                        codes::VALUE_ERROR,
                        format!(
                            "cannot unpack {} values into at least {} targets",
                            items.len(),
                            targets.len() - 1
                        ),
                        span,
                        "too few values",
                    ));
                }
                let mut items = items;
                let tail = items.split_off(items.len() - after);
                let middle = items.split_off(k);
                for (t, v) in targets[..k].iter().zip(items) {
                    self.assign(t, v)?;
                }
                if let ExprKind::Starred(inner) = &targets[k].kind {
                    self.assign(inner, Value::list(middle))?;
                }
                for (t, v) in targets[k + 1..].iter().zip(tail) {
                    self.assign(t, v)?;
                }
            }
        }
        Ok(())
    }

    fn delete(&mut self, target: &Expr) -> Result<(), Diagnostic> {
        match &target.kind {
            ExprKind::Name(name) => {
                if self.scope.remove(name).is_none() {
                    return Err(self.error(
                        codes::UNDEFINED_NAME,
                        format!("name `{name}` is not defined"),
                        target.span,
                        "not defined here",
                    ));
                }
                Ok(())
            }
            ExprKind::Subscript { value, index } => {
                let o = self.eval(value)?;
                let key = self.eval_subscript_key(index)?;
                match &o {
                    Value::Dict(d) => {
                        if d.borrow_mut().remove(&key).is_none() {
                            return Err(self.error(
                                codes::INDEX_ERROR,
                                format!("key {} is not in the dict", format::repr(&key)),
                                index.span,
                                "missing key",
                            ));
                        }
                        Ok(())
                    }
                    Value::List(l) => {
                        let len = l.borrow().len();
                        let i = self.list_index(&key, len, index.span)?;
                        l.borrow_mut().remove(i);
                        Ok(())
                    }
                    other => Err(self.error(
                        codes::TYPE_ERROR,
                        format!("cannot delete items of {}", crate::format::a_type(other)),
                        target.span,
                        "not deletable",
                    )),
                }
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for t in items {
                    self.delete(t)?;
                }
                Ok(())
            }
            _ => Err(self.error(
                codes::TYPE_ERROR,
                "this expression cannot be deleted",
                target.span,
                "not deletable",
            )),
        }
    }

    fn exec_with(&mut self, items: &[ast::WithItem], body: &[Stmt]) -> Result<Flow, Diagnostic> {
        let Some((first, rest)) = items.split_first() else {
            return self.exec_block(body);
        };
        let ctxv = self.eval(&first.context)?;
        if let Some(file) = crate::api::host::as_temp_file(&ctxv) {
            if let Some(t) = &first.target {
                self.assign(t, ctxv.clone())?;
            }
            let res = self.exec_with(rest, body);
            crate::api::host::after_with(self, file);
            return res;
        }
        if !matches!(ctxv, Value::Ext(ref e) if e.type_name() == "no_reorder") {
            return Err(self
                .unsupported(
                    "`with` statements other than `with nl.no_reorder():`",
                    first.span,
                )
                .with_note(format!(
                    "the context here is {}",
                    crate::format::a_type(&ctxv)
                )));
        }
        if let Some(t) = &first.target {
            self.assign(t, Value::None)?;
        }
        self.no_reorder_depth += 1;
        self.builder().begin_no_reorder();
        let res = self.exec_with(rest, body);
        self.builder.end_no_reorder();
        self.no_reorder_depth -= 1;
        res
    }

    fn exec_for(
        &mut self,
        span: Span,
        target: &Expr,
        iter: &Expr,
        body: &[Stmt],
        orelse: &[Stmt],
    ) -> Result<Flow, Diagnostic> {
        let it = self.eval(iter)?;
        // `nl.sequential_range(n, directives=ncc.no_reorder())` runs the
        // whole loop as if inside `with nl.no_reorder():`.
        if matches!(&it, Value::Range(r) if r.no_reorder) {
            self.no_reorder_depth += 1;
            self.builder().begin_no_reorder();
            let res = self.exec_for_value(span, target, iter, it, body, orelse);
            self.builder.end_no_reorder();
            self.no_reorder_depth -= 1;
            return res;
        }
        self.exec_for_value(span, target, iter, it, body, orelse)
    }

    /// A `for` loop over the evaluated iterable `it`.
    fn exec_for_value(
        &mut self,
        span: Span,
        target: &Expr,
        iter: &Expr,
        it: Value,
        body: &[Stmt],
        orelse: &[Stmt],
    ) -> Result<Flow, Diagnostic> {
        let (kind, iteration) = match it {
            Value::DynRange(r) => {
                let header = Span::new(span.start, iter.span.end);
                return self.exec_dynamic_for(header, target, &r, body, orelse);
            }
            Value::Range(r) => {
                let kind = match r.kind {
                    RangeKind::Range => StaticLoopKind::Range,
                    RangeKind::AffineRange => StaticLoopKind::AffineRange,
                    RangeKind::SequentialRange => StaticLoopKind::SequentialRange,
                    RangeKind::StaticRange => StaticLoopKind::StaticRange,
                };
                (kind, Iteration::Range(r))
            }
            other => (
                StaticLoopKind::Iter,
                Iteration::Items(self.iterate(&other, iter.span)?),
            ),
        };
        let trips = match &iteration {
            Iteration::Range(r) => r.len(),
            Iteration::Items(items) => items.len() as i64,
        };
        let trips = u32::try_from(trips).map_err(|_| {
            self.error(
                codes::OP_BUDGET,
                format!("this loop has {trips} iterations, too many to unroll"),
                iter.span,
                "too many iterations",
            )
        })?;
        let var = match &target.kind {
            ExprKind::Name(n) => Some(Rc::<str>::from(n.as_str())),
            _ => None,
        };
        // Loops are named by their header (`for i in range(n)`).
        let header = Span::new(span.start, iter.span.end);
        self.loops.push(LoopFrame {
            var: None,
            loc: self.loc(header),
            kind,
            trips,
            index: 0,
            ir: None,
            entered: false,
        });
        let mut stop = None;
        let mut done = 0;
        for i in 0..trips {
            let v = match &iteration {
                Iteration::Range(r) => Value::Int(r.at(i64::from(i))),
                Iteration::Items(items) => items[i as usize].clone(),
            };
            let frame = self.loops.last_mut().expect("pushed above");
            frame.index = i;
            frame.var = var.clone().map(|n| (n, v.clone()));
            done = i + 1;
            let res = self
                .count_iteration(span)
                .and_then(|()| self.assign(target, v))
                .and_then(|()| self.loop_body(body));
            stop = self.after_iteration(res, done)?;
            if stop.is_some() {
                break;
            }
        }
        self.finish_loop(stop, done, orelse)
    }

    /// Leaves the iteration of the innermost loop that gave `res`, its
    /// `done`th: `None` when the loop goes on, the flow that stops it
    /// (`break` or `return`), or the error with the iteration's note after
    /// ending the loop.
    fn after_iteration(
        &mut self,
        res: Result<Flow, Diagnostic>,
        done: u32,
    ) -> Result<Option<Flow>, Diagnostic> {
        self.leave_iteration();
        match res {
            Err(e) => {
                let note = self.loop_note(self.loops.last().expect("inside a loop"));
                self.end_loop(done);
                Err(e.with_note(note))
            }
            Ok(Flow::Next | Flow::Continue) => Ok(None),
            Ok(flow) => Ok(Some(flow)),
        }
    }

    /// Ends the innermost loop after `done` iterations, stopped by `stop`
    /// or (`None`) run to its end: a `return` passes on, and the `else`
    /// block runs unless the loop broke.
    fn finish_loop(
        &mut self,
        stop: Option<Flow>,
        done: u32,
        orelse: &[Stmt],
    ) -> Result<Flow, Diagnostic> {
        self.end_loop(done);
        match stop {
            Some(Flow::Return(v)) => Ok(Flow::Return(v)),
            Some(_) => Ok(Flow::Next),
            None => self.exec_block(orelse),
        }
    }

    /// Runs a loop body, where `break` and `continue` are allowed.
    fn loop_body(&mut self, body: &[Stmt]) -> Result<Flow, Diagnostic> {
        self.fn_loops += 1;
        let res = self.exec_block(body);
        self.fn_loops -= 1;
        res
    }

    /// Leaves the innermost loop frame's current iteration in the builder.
    fn leave_iteration(&mut self) {
        let frame = self.loops.last_mut().expect("inside a loop");
        if frame.entered {
            frame.entered = false;
            self.builder.exit_iteration();
        }
    }

    /// Pops the innermost loop frame, fixing its IR trip count.
    fn end_loop(&mut self, trips: u32) {
        let frame = self.loops.pop().expect("inside a loop");
        if let Some(lp) = frame.ir {
            self.builder.set_trips(lp, trips);
            self.builder.end_static_loop(lp);
        }
    }

    fn exec_while(
        &mut self,
        span: Span,
        test: &Expr,
        body: &[Stmt],
        orelse: &[Stmt],
    ) -> Result<Flow, Diagnostic> {
        let t = self.eval(test)?;
        if let Value::Register(r) = t {
            return self.exec_dynamic_while(span, test, r, body, orelse);
        }
        let header = Span::new(span.start, test.span.end);
        self.loops.push(LoopFrame {
            var: None,
            loc: self.loc(header),
            kind: StaticLoopKind::Iter,
            trips: u32::MAX,
            index: 0,
            ir: None,
            entered: false,
        });
        let mut cond = t;
        let mut i: u32 = 0;
        let mut stop = None;
        loop {
            let res = self.truthy(&cond, test.span);
            let go = match res {
                Ok(go) => go,
                Err(e) => {
                    self.end_loop(i);
                    return Err(e);
                }
            };
            if !go {
                break;
            }
            if u64::from(i) >= self.config.max_while_iterations {
                let d = self
                    .error(
                        codes::LOOP_LIMIT,
                        format!(
                            "this `while` loop ran {} iterations at compile time without ending",
                            self.config.max_while_iterations
                        ),
                        test.span,
                        "condition still true",
                    )
                    .with_help("check that the loop condition eventually becomes false");
                self.end_loop(i);
                return Err(d);
            }
            let frame = self.loops.last_mut().expect("pushed above");
            frame.index = i;
            i += 1;
            let res = self
                .count_iteration(span)
                .and_then(|()| self.loop_body(body));
            stop = self.after_iteration(res, i)?;
            if stop.is_some() {
                break;
            }
            cond = match self.eval(test) {
                Ok(c) => c,
                Err(e) => {
                    self.end_loop(i);
                    return Err(e);
                }
            };
            if matches!(cond, Value::Register(_)) {
                self.end_loop(i);
                return Err(self.error(
                    codes::DYNAMIC_LOOP,
                    "this loop condition became a register after starting as a compile-time value",
                    test.span,
                    "now a run-time value",
                ));
            }
        }
        self.finish_loop(stop, i, orelse)
    }

    /// Turns a register expression into a plain register, emitting
    /// register arithmetic when it is scaled or offset.
    pub(crate) fn plain_register(
        &mut self,
        r: RegValue,
        span: Span,
    ) -> Result<nkic_ir::RegHandle, Diagnostic> {
        if r.is_plain() {
            return Ok(r.reg);
        }
        let factors = self.reg_factors(r, span)?;
        let loc = self.loc(span);
        let dst = self.builder().alloc_register("", None, loc);
        // Not plain, so a multiply or an add lands in `dst`.
        self.scaled_into(r.reg, factors, dst, span)?;
        Ok(dst)
    }

    /// The factor and offset of register expression `r` as immediates.
    pub(crate) fn reg_factors(&self, r: RegValue, span: Span) -> Result<(i32, i32), Diagnostic> {
        let (Ok(scale), Ok(offset)) = (i32::try_from(r.scale), i32::try_from(r.offset)) else {
            return Err(self.error(
                codes::INT_OVERFLOW,
                "a register expression's factor does not fit 32 bits",
                span,
                "too large",
            ));
        };
        Ok((scale, offset))
    }

    /// Records `dst = reg · scale + offset`, leaving out a factor of 1 and
    /// an offset of 0; returns the register holding the result: `dst`, or
    /// `reg` itself when nothing was recorded.
    pub(crate) fn scaled_into(
        &mut self,
        reg: nkic_ir::RegHandle,
        (scale, offset): (i32, i32),
        dst: nkic_ir::RegHandle,
        span: Span,
    ) -> Result<nkic_ir::RegHandle, Diagnostic> {
        let mut src = reg;
        for (op, imm, identity) in [
            (nkic_isa::RegAluOp::Mul, scale, 1),
            (nkic_isa::RegAluOp::Add, offset, 0),
        ] {
            if imm != identity {
                self.push_op(
                    nkic_ir::Op::new(nkic_ir::OpKind::RegAlu {
                        dst,
                        op,
                        a: src,
                        b: RegOrImm::Imm(imm),
                    }),
                    span,
                )?;
                src = dst;
            }
        }
        Ok(src)
    }

    /// A dynamic loop bound as the IR wants it.
    pub(crate) fn reg_or_imm(&mut self, v: IntOrReg, span: Span) -> Result<RegOrImm, Diagnostic> {
        match v {
            IntOrReg::Int(i) => i32::try_from(i).map(RegOrImm::Imm).map_err(|_| {
                self.error(
                    codes::INT_OVERFLOW,
                    format!("loop bound {i} does not fit a 32-bit register"),
                    span,
                    "too large",
                )
            }),
            IntOrReg::Reg(r) => Ok(RegOrImm::Reg(self.plain_register(r, span)?)),
        }
    }

    fn check_dynamic_allowed(&self, span: Span) -> Result<(), Diagnostic> {
        if self.no_reorder_depth > 0 {
            return Err(self
                .error(
                    codes::DYN_IN_NO_REORDER,
                    "dynamic loops are not allowed inside `nl.no_reorder()`",
                    span,
                    "dynamic loop",
                )
                .with_help("put the `with nl.no_reorder():` block inside the loop body"));
        }
        Ok(())
    }

    /// `for i in nl.dynamic_range(...)`: a hardware loop whose body is
    /// specialized once with `i` bound to the induction register.
    fn exec_dynamic_for(
        &mut self,
        span: Span,
        target: &Expr,
        r: &DynRangeValue,
        body: &[Stmt],
        orelse: &[Stmt],
    ) -> Result<Flow, Diagnostic> {
        self.check_dynamic_allowed(span)?;
        let start = self.reg_or_imm(r.start, span)?;
        let stop = self.reg_or_imm(r.stop, span)?;
        let name = match &target.kind {
            ExprKind::Name(n) => n.to_string(),
            _ => String::new(),
        };
        let kind = DynLoopKind::Range {
            start,
            stop,
            step: r.step,
        };
        self.push_dyn_frame();
        let flow = self.dynamic_region(span, kind, &name, |ctx, iv| {
            let iv = iv.expect("range loops have an induction register");
            if let ExprKind::Name(n) = &target.kind {
                ctx.mark_dyn_assigned(n);
            }
            ctx.assign(target, Value::Register(RegValue::plain(iv)))?;
            ctx.loop_body(body)
        });
        self.pop_dyn_frame();
        let flow = flow?;
        match flow {
            Flow::Next | Flow::Continue => self.exec_block(orelse),
            Flow::Break | Flow::Return(_) => unreachable!("rejected inside dynamic_region"),
        }
    }

    fn exec_dynamic_while(
        &mut self,
        span: Span,
        test: &Expr,
        cond: RegValue,
        body: &[Stmt],
        orelse: &[Stmt],
    ) -> Result<Flow, Diagnostic> {
        let span = Span::new(span.start, test.span.end);
        self.check_dynamic_allowed(span)?;
        if !cond.is_plain() {
            return Err(self.error(
                codes::DYNAMIC_LOOP,
                "the condition of a dynamic `while` must be a single register",
                test.span,
                "a register expression",
            ));
        }
        let first_op = self.builder.kernel().ops.len();
        self.push_dyn_frame();
        let res = self.dynamic_region(span, DynLoopKind::While { cond: cond.reg }, "", |ctx, _| {
            ctx.loop_body(body)
        });
        self.pop_dyn_frame();
        res?;
        let cond_name = nkic_syntax::unparse_expr(test);
        self.check_condition_written(cond.reg, first_op, &cond_name, test.span)?;
        self.exec_block(orelse)
    }

    /// Runs `body` once inside a new dynamic loop region.
    pub(crate) fn dynamic_region(
        &mut self,
        span: Span,
        kind: DynLoopKind,
        induction_name: &str,
        body: impl FnOnce(&mut Self, Option<nkic_ir::RegHandle>) -> Result<Flow, Diagnostic>,
    ) -> Result<Flow, Diagnostic> {
        self.check_dynamic_allowed(span)?;
        self.check_budget(span)?;
        let loc = self.loc(span);
        let (lp, iv) = self.builder().begin_dynamic_loop(kind, induction_name, loc);
        // Static loops opened inside the body must be closed inside it,
        // which the loop frames guarantee; the body is one block.
        let outer_loops = self.loops.len();
        self.dyn_depth += 1;
        let res = body(self, iv);
        self.dyn_depth -= 1;
        debug_assert_eq!(self.loops.len(), outer_loops);
        self.builder.end_dynamic_loop(lp);
        let flow = res.map_err(|e| {
            e.with_note(format!(
                "in the body of the dynamic loop at {}",
                self.describe_loc(loc)
            ))
        })?;
        match flow {
            Flow::Break | Flow::Continue => Err(self.error(
                codes::DYNAMIC_LOOP,
                "`break` and `continue` are not supported in dynamic loops",
                span,
                "a dynamic loop",
            )),
            Flow::Return(_) => Err(self.error(
                codes::DYNAMIC_LOOP,
                "`return` inside a dynamic loop is not supported",
                span,
                "a dynamic loop",
            )),
            Flow::Next => Ok(Flow::Next),
        }
    }

    /// `nl.fori_loop(lower, upper, body_fun, step=1)`.
    pub(crate) fn fori_loop(
        &mut self,
        lower: IntOrReg,
        upper: IntOrReg,
        body: Value,
        step: u32,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let start = self.reg_or_imm(lower, span)?;
        let stop = self.reg_or_imm(upper, span)?;
        let kind = DynLoopKind::Fori { start, stop, step };
        self.dynamic_region(span, kind, "i", |ctx, iv| {
            let iv = iv.expect("fori loops have an induction register");
            let args = crate::args::CallArgs::positional(vec![crate::args::Arg::new(
                Value::Register(RegValue::plain(iv)),
                span,
            )]);
            ctx.call(&body, args, span)?;
            Ok(Flow::Next)
        })?;
        Ok(Value::None)
    }

    /// `nl.while_loop(init, body_fun)`: `r = init; while r != 0: r = body_fun(r)`.
    pub(crate) fn while_loop(
        &mut self,
        init: IntOrReg,
        body: Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        self.check_dynamic_allowed(span)?;
        let loc = self.loc(span);
        let init_imm = match init {
            IntOrReg::Int(i) => Some(i32::try_from(i).map_err(|_| {
                self.error(
                    codes::INT_OVERFLOW,
                    "the initial value does not fit 32 bits",
                    span,
                    "too large",
                )
            })?),
            IntOrReg::Reg(_) => None,
        };
        let cond = self.builder().alloc_register("cond", init_imm, loc);
        if let IntOrReg::Reg(r) = init {
            let src = self.plain_register(r, span)?;
            self.push_op(
                nkic_ir::Op::new(nkic_ir::OpKind::RegMove {
                    dst: cond,
                    src: RegOrImm::Reg(src),
                }),
                span,
            )?;
        }
        self.dynamic_region(span, DynLoopKind::While { cond }, "", |ctx, _| {
            let args = crate::args::CallArgs::positional(vec![crate::args::Arg::new(
                Value::Register(RegValue::plain(cond)),
                span,
            )]);
            let next = ctx.call(&body, args, span)?;
            let src = match next {
                Value::Register(r) => RegOrImm::Reg(ctx.plain_register(r, span)?),
                ref v => match v.as_int().and_then(|i| i32::try_from(i).ok()) {
                    Some(i) => RegOrImm::Imm(i),
                    None => {
                        return Err(ctx.error(
                            codes::DYNAMIC_LOOP,
                            crate::format::found("the body of `nl.while_loop` must return the next condition register", v),
                            span,
                            "in this loop",
                        ));
                    }
                },
            };
            if src != RegOrImm::Reg(cond) {
                ctx.push_op(nkic_ir::Op::new(nkic_ir::OpKind::RegMove { dst: cond, src }), span)?;
            }
            Ok(Flow::Next)
        })?;
        Ok(Value::None)
    }

    /// True for values whose subscripts and operators belong to the API layer.
    pub(crate) fn is_api_value(&self, v: &Value) -> bool {
        matches!(
            v,
            Value::Tensor(_) | Value::Ext(_) | Value::DType(_) | Value::Buffer(_)
        )
    }
}
