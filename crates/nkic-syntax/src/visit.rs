//! Generic walks over the AST: every span (mutable, for erasing spans) and
//! every node with its span and its parent's span (for validators).

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
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Imaginary(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Ellipsis
        | ExprKind::Name(_)
        | ExprKind::Error => {}
    }
}

/// The statements and expressions directly below `stmt`, in source order
/// (decorators, then the header, then the body).
fn stmt_children(stmt: &Stmt) -> (Vec<&Stmt>, Vec<&Expr>) {
    let mut stmts: Vec<&Stmt> = Vec::new();
    let mut exprs: Vec<&Expr> = Vec::new();
    match &stmt.kind {
        StmtKind::FunctionDef(def) => {
            exprs.extend(&def.decorators);
            params_exprs(&def.params, &mut exprs);
            exprs.extend(&def.returns);
            stmts.extend(&def.body);
        }
        StmtKind::ClassDef(def) => {
            exprs.extend(&def.decorators);
            exprs.extend(def.bases.iter().map(arg_expr));
            stmts.extend(&def.body);
        }
        StmtKind::Return(e) => exprs.extend(e),
        StmtKind::Delete(targets) => exprs.extend(targets),
        StmtKind::Assign { targets, value } => {
            exprs.extend(targets);
            exprs.push(value);
        }
        StmtKind::AugAssign { target, value, .. } => exprs.extend([target, value]),
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => {
            exprs.extend([target, annotation]);
            exprs.extend(value);
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
            ..
        } => {
            exprs.extend([target, iter]);
            stmts.extend(body.iter().chain(orelse));
        }
        StmtKind::While { test, body, orelse } | StmtKind::If { test, body, orelse } => {
            exprs.push(test);
            stmts.extend(body.iter().chain(orelse));
        }
        StmtKind::With { items, body, .. } => {
            for item in items {
                exprs.push(&item.context);
                exprs.extend(&item.target);
            }
            stmts.extend(body);
        }
        StmtKind::Raise { exc, cause } => exprs.extend(exc.iter().chain(cause)),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            stmts.extend(body);
            for h in handlers {
                exprs.extend(&h.type_);
                stmts.extend(&h.body);
            }
            stmts.extend(orelse.iter().chain(finalbody));
        }
        StmtKind::Assert { test, msg } => {
            exprs.push(test);
            exprs.extend(msg);
        }
        StmtKind::Expr(e) => exprs.push(e),
        StmtKind::Error(body) => stmts.extend(body),
        StmtKind::Import(_)
        | StmtKind::ImportFrom { .. }
        | StmtKind::Global(_)
        | StmtKind::Nonlocal(_)
        | StmtKind::Pass
        | StmtKind::Break
        | StmtKind::Continue => {}
    }
    (stmts, exprs)
}

fn params_exprs<'a>(p: &'a Params, out: &mut Vec<&'a Expr>) {
    for param in p
        .posonly
        .iter()
        .chain(&p.args)
        .chain(&p.vararg)
        .chain(&p.kwonly)
        .chain(&p.kwarg)
    {
        out.extend(param.annotation.iter().chain(&param.default));
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

fn comp_exprs<'a>(generators: &'a [Comprehension], out: &mut Vec<&'a Expr>) {
    for g in generators {
        out.push(&g.target);
        out.push(&g.iter);
        out.extend(&g.ifs);
    }
}

fn fstring_exprs<'a>(parts: &'a [FStringPart], out: &mut Vec<&'a Expr>) {
    for p in parts {
        if let FStringPart::Field(field) = p {
            out.push(&field.value);
            if let Some(spec) = &field.format_spec {
                fstring_exprs(spec, out);
            }
        }
    }
}

/// The expressions directly below `expr`.
fn expr_children(expr: &Expr) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = Vec::new();
    match &expr.kind {
        ExprKind::BoolOp { values, .. } => out.extend(values),
        ExprKind::NamedExpr { target, value } => out.extend([&**target, &**value]),
        ExprKind::BinOp { left, right, .. } => out.extend([&**left, &**right]),
        ExprKind::UnaryOp { operand, .. } => out.push(operand),
        ExprKind::Lambda { params, body } => {
            params_exprs(params, &mut out);
            out.push(body);
        }
        ExprKind::IfExp { test, body, orelse } => out.extend([&**body, &**test, &**orelse]),
        ExprKind::Dict(items) => {
            for item in items {
                match item {
                    DictItem::KeyValue(k, v) => out.extend([k, v]),
                    DictItem::Unpack(e) => out.push(e),
                }
            }
        }
        ExprKind::Set(elts) | ExprKind::List(elts) | ExprKind::Tuple(elts) => out.extend(elts),
        ExprKind::ListComp { elt, generators }
        | ExprKind::SetComp { elt, generators }
        | ExprKind::GeneratorExp { elt, generators } => {
            out.push(elt);
            comp_exprs(generators, &mut out);
        }
        ExprKind::DictComp {
            key,
            value,
            generators,
        } => {
            out.extend([&**key, &**value]);
            comp_exprs(generators, &mut out);
        }
        ExprKind::Await(e) | ExprKind::YieldFrom(e) | ExprKind::Starred(e) => out.push(e),
        ExprKind::Yield(e) => out.extend(e.as_deref()),
        ExprKind::Compare { left, comparisons } => {
            out.push(left);
            out.extend(comparisons.iter().map(|(_, e)| e));
        }
        ExprKind::Call { func, args } => {
            out.push(func);
            out.extend(args.iter().map(arg_expr));
        }
        ExprKind::FString(parts) => fstring_exprs(parts, &mut out),
        ExprKind::Attribute { value, .. } => out.push(value),
        ExprKind::Subscript { value, index } => out.extend([&**value, &**index]),
        ExprKind::Slice { lower, upper, step } => {
            out.extend(
                lower
                    .as_deref()
                    .into_iter()
                    .chain(upper.as_deref())
                    .chain(step.as_deref()),
            );
        }
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Imaginary(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Ellipsis
        | ExprKind::Name(_)
        | ExprKind::Error => {}
    }
    out
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
    if !parent.encloses(stmt.span) {
        return Err(format!(
            "statement {:?} lies outside its parent {:?}",
            stmt.span, parent
        ));
    }
    let (stmts, exprs) = stmt_children(stmt);
    let mut prev_end = stmt.span.start;
    for s in stmts {
        check_stmt(s, stmt.span)?;
        if s.span.start < prev_end {
            return Err(format!("statement {:?} overlaps its predecessor", s.span));
        }
        prev_end = s.span.end;
    }
    for e in exprs {
        check_expr(e, stmt.span)?;
    }
    Ok(())
}

fn check_expr(expr: &Expr, parent: Span) -> Result<(), String> {
    if !parent.encloses(expr.span) {
        return Err(format!(
            "expression {:?} lies outside its parent {:?}",
            expr.span, parent
        ));
    }
    for child in expr_children(expr) {
        check_expr(child, expr.span)?;
    }
    Ok(())
}
