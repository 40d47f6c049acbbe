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
