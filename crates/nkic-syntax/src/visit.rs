//! Generic walks over the AST: every span (mutable, for erasing spans), and
//! the children of a node in source order ([`children`], for validators and
//! the language server's queries).

use nkic_diag::Span;

use crate::ast::*;

/// Sets every span in `module` to `0..0`.
pub(crate) fn erase_spans(module: &mut Module) {
    let mut erase = |span: &mut Span| *span = Span::default();
    erase(&mut module.span);
    for stmt in &mut module.body {
        stmt_spans(stmt, &mut erase);
    }
}

/// Calls `f` on every span of `stmt` and its descendants.
fn stmt_spans(stmt: &mut Stmt, f: &mut impl FnMut(&mut Span)) {
    f(&mut stmt.span);
    match &mut stmt.kind {
        StmtKind::FunctionDef(def) => {
            for d in &mut def.decorators {
                expr_spans(d, f);
            }
            f(&mut def.name.span);
            params_spans(&mut def.params, f);
            if let Some(r) = &mut def.returns {
                expr_spans(r, f);
            }
            stmts_spans(&mut def.body, f);
        }
        StmtKind::ClassDef(def) => {
            for d in &mut def.decorators {
                expr_spans(d, f);
            }
            f(&mut def.name.span);
            for a in &mut def.bases {
                arg_spans(a, f);
            }
            stmts_spans(&mut def.body, f);
        }
        StmtKind::Return(e) => opt_spans(e, f),
        StmtKind::Delete(targets) => {
            for t in targets {
                expr_spans(t, f);
            }
        }
        StmtKind::Assign { targets, value } => {
            for t in targets {
                expr_spans(t, f);
            }
            expr_spans(value, f);
        }
        StmtKind::AugAssign { target, value, .. } => {
            expr_spans(target, f);
            expr_spans(value, f);
        }
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => {
            expr_spans(target, f);
            expr_spans(annotation, f);
            opt_spans(value, f);
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
            ..
        } => {
            expr_spans(target, f);
            expr_spans(iter, f);
            stmts_spans(body, f);
            stmts_spans(orelse, f);
        }
        StmtKind::While { test, body, orelse } | StmtKind::If { test, body, orelse } => {
            expr_spans(test, f);
            stmts_spans(body, f);
            stmts_spans(orelse, f);
        }
        StmtKind::With { items, body, .. } => {
            for item in items {
                f(&mut item.span);
                expr_spans(&mut item.context, f);
                opt_spans(&mut item.target, f);
            }
            stmts_spans(body, f);
        }
        StmtKind::Raise { exc, cause } => {
            opt_spans(exc, f);
            opt_spans(cause, f);
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            stmts_spans(body, f);
            for h in handlers {
                f(&mut h.span);
                opt_spans(&mut h.type_, f);
                if let Some(n) = &mut h.name {
                    f(&mut n.span);
                }
                stmts_spans(&mut h.body, f);
            }
            stmts_spans(orelse, f);
            stmts_spans(finalbody, f);
        }
        StmtKind::Assert { test, msg } => {
            expr_spans(test, f);
            opt_spans(msg, f);
        }
        StmtKind::Import(names) => aliases_spans(names, f),
        StmtKind::ImportFrom { module, names, .. } => {
            if let Some(m) = module {
                f(&mut m.span);
            }
            aliases_spans(names, f);
        }
        StmtKind::Global(names) | StmtKind::Nonlocal(names) => {
            for n in names {
                f(&mut n.span);
            }
        }
        StmtKind::Expr(e) => expr_spans(e, f),
        StmtKind::Pass | StmtKind::Break | StmtKind::Continue => {}
        StmtKind::Error(body) => stmts_spans(body, f),
    }
}

fn aliases_spans(names: &mut [Alias], f: &mut impl FnMut(&mut Span)) {
    for a in names {
        f(&mut a.span);
        f(&mut a.name.span);
        if let Some(n) = &mut a.asname {
            f(&mut n.span);
        }
    }
}

fn stmts_spans(stmts: &mut [Stmt], f: &mut impl FnMut(&mut Span)) {
    for s in stmts {
        stmt_spans(s, f);
    }
}

fn opt_spans(e: &mut Option<Expr>, f: &mut impl FnMut(&mut Span)) {
    if let Some(e) = e {
        expr_spans(e, f);
    }
}

fn params_spans(p: &mut Params, f: &mut impl FnMut(&mut Span)) {
    f(&mut p.span);
    let Params {
        posonly,
        args,
        vararg,
        kwonly,
        kwarg,
        ..
    } = p;
    for param in posonly
        .iter_mut()
        .chain(args)
        .chain(vararg)
        .chain(kwonly)
        .chain(kwarg)
    {
        f(&mut param.span);
        f(&mut param.name.span);
        opt_spans(&mut param.annotation, f);
        opt_spans(&mut param.default, f);
    }
}

fn arg_spans(a: &mut Arg, f: &mut impl FnMut(&mut Span)) {
    f(&mut a.span);
    match &mut a.kind {
        ArgKind::Positional(e) | ArgKind::Star(e) | ArgKind::DoubleStar(e) => expr_spans(e, f),
        ArgKind::Keyword(name, e) => {
            f(&mut name.span);
            expr_spans(e, f);
        }
    }
}

fn comp_spans(generators: &mut [Comprehension], f: &mut impl FnMut(&mut Span)) {
    for g in generators {
        f(&mut g.span);
        expr_spans(&mut g.target, f);
        expr_spans(&mut g.iter, f);
        for i in &mut g.ifs {
            expr_spans(i, f);
        }
    }
}

fn fstring_spans(parts: &mut [FStringPart], f: &mut impl FnMut(&mut Span)) {
    for p in parts {
        if let FStringPart::Field(field) = p {
            f(&mut field.span);
            expr_spans(&mut field.value, f);
            if let Some(spec) = &mut field.format_spec {
                fstring_spans(spec, f);
            }
        }
    }
}

/// Calls `f` on every span of `expr` and its descendants.
fn expr_spans(expr: &mut Expr, f: &mut impl FnMut(&mut Span)) {
    f(&mut expr.span);
    match &mut expr.kind {
        ExprKind::BoolOp { values, .. } => {
            for v in values {
                expr_spans(v, f);
            }
        }
        ExprKind::NamedExpr { target, value } => {
            expr_spans(target, f);
            expr_spans(value, f);
        }
        ExprKind::BinOp { left, right, .. } => {
            expr_spans(left, f);
            expr_spans(right, f);
        }
        ExprKind::UnaryOp { operand, .. } => expr_spans(operand, f),
        ExprKind::Lambda { params, body } => {
            params_spans(params, f);
            expr_spans(body, f);
        }
        ExprKind::IfExp { test, body, orelse } => {
            expr_spans(body, f);
            expr_spans(test, f);
            expr_spans(orelse, f);
        }
        ExprKind::Dict(items) => {
            for item in items {
                match item {
                    DictItem::KeyValue(k, v) => {
                        expr_spans(k, f);
                        expr_spans(v, f);
                    }
                    DictItem::Unpack(e) => expr_spans(e, f),
                }
            }
        }
        ExprKind::Set(elts) | ExprKind::List(elts) | ExprKind::Tuple(elts) => {
            for e in elts {
                expr_spans(e, f);
            }
        }
        ExprKind::ListComp { elt, generators }
        | ExprKind::SetComp { elt, generators }
        | ExprKind::GeneratorExp { elt, generators } => {
            expr_spans(elt, f);
            comp_spans(generators, f);
        }
        ExprKind::DictComp {
            key,
            value,
            generators,
        } => {
            expr_spans(key, f);
            expr_spans(value, f);
            comp_spans(generators, f);
        }
        ExprKind::Await(e) | ExprKind::YieldFrom(e) | ExprKind::Starred(e) => expr_spans(e, f),
        ExprKind::Yield(e) => {
            if let Some(e) = e {
                expr_spans(e, f);
            }
        }
        ExprKind::Compare { left, comparisons } => {
            expr_spans(left, f);
            for (_, e) in comparisons {
                expr_spans(e, f);
            }
        }
        ExprKind::Call { func, args } => {
            expr_spans(func, f);
            for a in args {
                arg_spans(a, f);
            }
        }
        ExprKind::FString(parts) => fstring_spans(parts, f),
        ExprKind::Attribute { value, attr } => {
            expr_spans(value, f);
            f(&mut attr.span);
        }
        ExprKind::Subscript { value, index } => {
            expr_spans(value, f);
            expr_spans(index, f);
        }
        ExprKind::Slice { lower, upper, step } => {
            for part in [lower, upper, step].into_iter().flatten() {
                expr_spans(part, f);
            }
        }
        crate::leaf_exprs!() => {}
    }
}

/// A statement or an expression of the tree.
#[derive(Clone, Copy, Debug)]
pub enum Node<'a> {
    Stmt(&'a Stmt),
    Expr(&'a Expr),
}

impl Node<'_> {
    pub fn span(self) -> Span {
        match self {
            Node::Stmt(s) => s.span,
            Node::Expr(e) => e.span,
        }
    }
}

/// The statements and expressions directly below `node`, in source order
/// (for a definition: decorators, then the header, then the body).
pub fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Children(Vec::new());
    match node {
        Node::Stmt(stmt) => out.stmt(stmt),
        Node::Expr(expr) => out.expr(expr),
    }
    out.0
}

/// The children of one node as they are found.
struct Children<'a>(Vec<Node<'a>>);

impl<'a> Children<'a> {
    fn exprs(&mut self, exprs: impl IntoIterator<Item = &'a Expr>) {
        self.0.extend(exprs.into_iter().map(Node::Expr));
    }

    fn stmts(&mut self, stmts: impl IntoIterator<Item = &'a Stmt>) {
        self.0.extend(stmts.into_iter().map(Node::Stmt));
    }

    fn stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::FunctionDef(def) => {
                self.exprs(&def.decorators);
                self.params(&def.params);
                self.exprs(&def.returns);
                self.stmts(&def.body);
            }
            StmtKind::ClassDef(def) => {
                self.exprs(&def.decorators);
                self.exprs(def.bases.iter().map(arg_expr));
                self.stmts(&def.body);
            }
            StmtKind::Return(e) => self.exprs(e),
            StmtKind::Delete(targets) => self.exprs(targets),
            StmtKind::Assign { targets, value } => self.exprs(targets.iter().chain([value])),
            StmtKind::AugAssign { target, value, .. } => self.exprs([target, value]),
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => self.exprs([target, annotation].into_iter().chain(value)),
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
                ..
            } => {
                self.exprs([target, iter]);
                self.stmts(body.iter().chain(orelse));
            }
            StmtKind::While { test, body, orelse } | StmtKind::If { test, body, orelse } => {
                self.exprs([test]);
                self.stmts(body.iter().chain(orelse));
            }
            StmtKind::With { items, body, .. } => {
                for item in items {
                    self.exprs([&item.context].into_iter().chain(&item.target));
                }
                self.stmts(body);
            }
            StmtKind::Raise { exc, cause } => self.exprs(exc.iter().chain(cause)),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.stmts(body);
                for h in handlers {
                    self.exprs(&h.type_);
                    self.stmts(&h.body);
                }
                self.stmts(orelse.iter().chain(finalbody));
            }
            StmtKind::Assert { test, msg } => self.exprs([test].into_iter().chain(msg)),
            StmtKind::Expr(e) => self.exprs([e]),
            StmtKind::Error(body) => self.stmts(body),
            StmtKind::Import(_)
            | StmtKind::ImportFrom { .. }
            | StmtKind::Global(_)
            | StmtKind::Nonlocal(_)
            | StmtKind::Pass
            | StmtKind::Break
            | StmtKind::Continue => {}
        }
    }

    fn params(&mut self, p: &'a Params) {
        for param in p.iter() {
            self.exprs(param.annotation.iter().chain(&param.default));
        }
    }

    fn comprehensions(&mut self, generators: &'a [Comprehension]) {
        for g in generators {
            self.exprs([&g.target, &g.iter].into_iter().chain(&g.ifs));
        }
    }

    fn fstring(&mut self, parts: &'a [FStringPart]) {
        for p in parts {
            if let FStringPart::Field(field) = p {
                self.exprs([&field.value]);
                if let Some(spec) = &field.format_spec {
                    self.fstring(spec);
                }
            }
        }
    }

    fn expr(&mut self, expr: &'a Expr) {
        match &expr.kind {
            ExprKind::BoolOp { values, .. } => self.exprs(values),
            ExprKind::NamedExpr { target, value } => self.exprs([&**target, &**value]),
            ExprKind::BinOp { left, right, .. } => self.exprs([&**left, &**right]),
            ExprKind::UnaryOp { operand, .. } => self.exprs([&**operand]),
            ExprKind::Lambda { params, body } => {
                self.params(params);
                self.exprs([&**body]);
            }
            ExprKind::IfExp { test, body, orelse } => self.exprs([&**body, &**test, &**orelse]),
            ExprKind::Dict(items) => {
                for item in items {
                    match item {
                        DictItem::KeyValue(k, v) => self.exprs([k, v]),
                        DictItem::Unpack(e) => self.exprs([e]),
                    }
                }
            }
            ExprKind::Set(elts) | ExprKind::List(elts) | ExprKind::Tuple(elts) => self.exprs(elts),
            ExprKind::ListComp { elt, generators }
            | ExprKind::SetComp { elt, generators }
            | ExprKind::GeneratorExp { elt, generators } => {
                self.exprs([&**elt]);
                self.comprehensions(generators);
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => {
                self.exprs([&**key, &**value]);
                self.comprehensions(generators);
            }
            ExprKind::Await(e) | ExprKind::YieldFrom(e) | ExprKind::Starred(e) => {
                self.exprs([&**e]);
            }
            ExprKind::Yield(e) => self.exprs(e.as_deref()),
            ExprKind::Compare { left, comparisons } => {
                self.exprs(
                    [&**left]
                        .into_iter()
                        .chain(comparisons.iter().map(|(_, e)| e)),
                );
            }
            ExprKind::Call { func, args } => {
                self.exprs([&**func].into_iter().chain(args.iter().map(arg_expr)));
            }
            ExprKind::FString(parts) => self.fstring(parts),
            ExprKind::Attribute { value, .. } => self.exprs([&**value]),
            ExprKind::Subscript { value, index } => self.exprs([&**value, &**index]),
            ExprKind::Slice { lower, upper, step } => {
                self.exprs([lower, upper, step].into_iter().flatten().map(|e| &**e));
            }
            crate::leaf_exprs!() => {}
        }
    }
}

fn arg_expr(a: &Arg) -> &Expr {
    match &a.kind {
        ArgKind::Positional(e)
        | ArgKind::Star(e)
        | ArgKind::DoubleStar(e)
        | ArgKind::Keyword(_, e) => e,
    }
}

/// Checks the structural span invariants of a parsed module: every span is
/// well-formed and within the file, every child lies within its parent, and
/// sibling statements do not overlap and appear in source order.
pub fn check_structure(module: &Module) -> Result<(), String> {
    let mut prev_end = 0;
    for stmt in &module.body {
        check_stmt(stmt, module.span)?;
        if stmt.span.start < prev_end {
            return Err(format!(
                "statement {:?} overlaps its predecessor",
                stmt.span
            ));
        }
        prev_end = stmt.span.end;
    }
    for pair in module.host_code.windows(2) {
        if pair[0] >= pair[1] {
            return Err("host_code indices are not ascending".to_string());
        }
    }
    if module
        .host_code
        .last()
        .is_some_and(|&i| i >= module.body.len())
    {
        return Err("host_code index out of range".to_string());
    }
    Ok(())
}

fn check_stmt(stmt: &Stmt, parent: Span) -> Result<(), String> {
    check_within("statement", stmt.span, parent)?;
    let children = children(Node::Stmt(stmt));
    let mut prev_end = stmt.span.start;
    for child in &children {
        if let Node::Stmt(s) = child {
            check_stmt(s, stmt.span)?;
            if s.span.start < prev_end {
                return Err(format!("statement {:?} overlaps its predecessor", s.span));
            }
            prev_end = s.span.end;
        }
    }
    check_exprs(&children, stmt.span)
}

fn check_expr(expr: &Expr, parent: Span) -> Result<(), String> {
    check_within("expression", expr.span, parent)?;
    check_exprs(&children(Node::Expr(expr)), expr.span)
}

/// Checks the expressions among `children` of a node spanning `parent`.
fn check_exprs(children: &[Node<'_>], parent: Span) -> Result<(), String> {
    for child in children {
        if let Node::Expr(e) = child {
            check_expr(e, parent)?;
        }
    }
    Ok(())
}

fn check_within(what: &str, span: Span, parent: Span) -> Result<(), String> {
    if parent.encloses(span) {
        Ok(())
    } else {
        Err(format!(
            "{what} {span:?} lies outside its parent {parent:?}"
        ))
    }
}
