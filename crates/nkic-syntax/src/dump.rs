//! Stable text dumps of tokens and of the AST, for `--emit tokens|ast` and
//! golden tests.
//!
//! Token dump: one token per line, `start..end Kind text`. AST dump: one node
//! per line, indented two spaces per level, `Kind start..end` followed by the
//! node's scalar fields; child lists are introduced by a `label:` line. The
//! format changes only deliberately, because snapshots pin it.

use std::fmt::Write;

use crate::ast::*;
use crate::layout::Spanned;

/// Dumps logical tokens, one per line.
pub fn tokens(tokens: &[Spanned<'_>]) -> String {
    let mut out = String::new();
    for (start, tok, end) in tokens {
        let _ = write!(out, "{start}..{end} {}", tok.kind_name());
        match tok.kind_name() {
            "Indent" | "Dedent" | "Newline" | "Error" | "EndMarker" | "StartModule"
            | "StartExpression" => {}
            _ => {
                let _ = write!(out, " {}", tok.text().escape_debug());
            }
        }
        out.push('\n');
    }
    out
}

/// Dumps a module as an indented tree.
pub fn module(module: &Module) -> String {
    let mut d = Dumper {
        out: String::new(),
        depth: 0,
    };
    let host = if module.host_code.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = module.host_code.iter().map(|i| i.to_string()).collect();
        format!(" host_code=[{}]", list.join(", "))
    };
    d.line(&format!("Module {:?}{host}", module.span));
    d.nested(|d| d.stmts(&module.body));
    d.out
}

/// Dumps one expression as an indented tree.
pub fn expr(expr: &Expr) -> String {
    let mut d = Dumper {
        out: String::new(),
        depth: 0,
    };
    d.expr(expr);
    d.out
}

struct Dumper {
    out: String,
    depth: usize,
}

impl Dumper {
    fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn nested(&mut self, f: impl FnOnce(&mut Dumper)) {
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    /// A labelled child list; nothing is printed for an empty list.
    fn stmts_field(&mut self, label: &str, stmts: &[Stmt]) {
        if stmts.is_empty() {
            return;
        }
        self.line(&format!("{label}:"));
        self.nested(|d| d.stmts(stmts));
    }

    fn expr_field(&mut self, label: &str, expr: &Expr) {
        self.line(&format!("{label}:"));
        self.nested(|d| d.expr(expr));
    }

    fn opt_expr_field(&mut self, label: &str, expr: Option<&Expr>) {
        if let Some(e) = expr {
            self.expr_field(label, e);
        }
    }

    fn exprs_field(&mut self, label: &str, exprs: &[Expr]) {
        if exprs.is_empty() {
            return;
        }
        self.line(&format!("{label}:"));
        self.nested(|d| {
            for e in exprs {
                d.expr(e);
            }
        });
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        let span = stmt.span;
        match &stmt.kind {
            StmtKind::FunctionDef(def) => {
                let asyn = if def.is_async { " async" } else { "" };
                self.line(&format!(
                    "FunctionDef {span:?} name={}{asyn}",
                    def.name.name
                ));
                self.nested(|d| {
                    d.exprs_field("decorators", &def.decorators);
                    d.params(&def.params);
                    d.opt_expr_field("returns", def.returns.as_ref());
                    d.stmts_field("body", &def.body);
                });
            }
            StmtKind::ClassDef(def) => {
                self.line(&format!("ClassDef {span:?} name={}", def.name.name));
                self.nested(|d| {
                    d.exprs_field("decorators", &def.decorators);
                    d.args_field("bases", &def.bases);
                    d.stmts_field("body", &def.body);
                });
            }
            StmtKind::Return(e) => {
                self.line(&format!("Return {span:?}"));
                self.nested(|d| {
                    if let Some(e) = e {
                        d.expr(e);
                    }
                });
            }
            StmtKind::Delete(targets) => {
                self.line(&format!("Delete {span:?}"));
                self.nested(|d| {
                    for t in targets {
                        d.expr(t);
                    }
                });
            }
            StmtKind::Assign { targets, value } => {
                self.line(&format!("Assign {span:?}"));
                self.nested(|d| {
                    d.exprs_field("targets", targets);
                    d.expr_field("value", value);
                });
            }
            StmtKind::AugAssign { target, op, value } => {
                self.line(&format!("AugAssign {span:?} op={}=", op.as_str()));
                self.nested(|d| {
                    d.expr_field("target", target);
                    d.expr_field("value", value);
                });
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                self.line(&format!("AnnAssign {span:?}"));
                self.nested(|d| {
                    d.expr_field("target", target);
                    d.expr_field("annotation", annotation);
                    d.opt_expr_field("value", value.as_ref());
                });
            }
            StmtKind::For {
                is_async,
                target,
                iter,
                body,
                orelse,
            } => {
                let asyn = if *is_async { " async" } else { "" };
                self.line(&format!("For {span:?}{asyn}"));
                self.nested(|d| {
                    d.expr_field("target", target);
                    d.expr_field("iter", iter);
                    d.stmts_field("body", body);
                    d.stmts_field("orelse", orelse);
                });
            }
            StmtKind::While { test, body, orelse } => {
                self.line(&format!("While {span:?}"));
                self.nested(|d| {
                    d.expr_field("test", test);
                    d.stmts_field("body", body);
                    d.stmts_field("orelse", orelse);
                });
            }
            StmtKind::If { test, body, orelse } => {
                self.line(&format!("If {span:?}"));
                self.nested(|d| {
                    d.expr_field("test", test);
                    d.stmts_field("body", body);
                    d.stmts_field("orelse", orelse);
                });
            }
            StmtKind::With {
                is_async,
                items,
                body,
            } => {
                let asyn = if *is_async { " async" } else { "" };
                self.line(&format!("With {span:?}{asyn}"));
                self.nested(|d| {
                    for item in items {
                        d.line(&format!("WithItem {:?}", item.span));
                        d.nested(|d| {
                            d.expr_field("context", &item.context);
                            d.opt_expr_field("target", item.target.as_ref());
                        });
                    }
                    d.stmts_field("body", body);
                });
            }
            StmtKind::Raise { exc, cause } => {
                self.line(&format!("Raise {span:?}"));
                self.nested(|d| {
                    d.opt_expr_field("exc", exc.as_ref());
                    d.opt_expr_field("cause", cause.as_ref());
                });
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.line(&format!("Try {span:?}"));
                self.nested(|d| {
                    d.stmts_field("body", body);
                    for h in handlers {
                        let name = h
                            .name
                            .as_ref()
                            .map_or(String::new(), |n| format!(" name={}", n.name));
                        d.line(&format!("ExceptHandler {:?}{name}", h.span));
                        d.nested(|d| {
                            d.opt_expr_field("type", h.type_.as_ref());
                            d.stmts_field("body", &h.body);
                        });
                    }
                    d.stmts_field("orelse", orelse);
                    d.stmts_field("finalbody", finalbody);
                });
            }
            StmtKind::Assert { test, msg } => {
                self.line(&format!("Assert {span:?}"));
                self.nested(|d| {
                    d.expr_field("test", test);
                    d.opt_expr_field("msg", msg.as_ref());
                });
            }
            StmtKind::Import(names) => {
                self.line(&format!("Import {span:?}"));
                self.nested(|d| d.aliases(names));
            }
            StmtKind::ImportFrom {
                module,
                names,
                level,
            } => {
                let m = module
                    .as_ref()
                    .map_or(String::new(), |m| format!(" module={}", m.name));
                self.line(&format!("ImportFrom {span:?}{m} level={level}"));
                self.nested(|d| d.aliases(names));
            }
            StmtKind::Global(names) | StmtKind::Nonlocal(names) => {
                let kind = if matches!(stmt.kind, StmtKind::Global(_)) {
                    "Global"
                } else {
                    "Nonlocal"
                };
                let list: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
                self.line(&format!("{kind} {span:?} names=[{}]", list.join(", ")));
            }
            StmtKind::Expr(e) => {
                self.line(&format!("Expr {span:?}"));
                self.nested(|d| d.expr(e));
            }
            StmtKind::Pass => self.line(&format!("Pass {span:?}")),
            StmtKind::Break => self.line(&format!("Break {span:?}")),
            StmtKind::Continue => self.line(&format!("Continue {span:?}")),
            StmtKind::Error(body) => {
                self.line(&format!("ErrorStmt {span:?}"));
                self.nested(|d| d.stmts(body));
            }
        }
    }

    fn aliases(&mut self, names: &[Alias]) {
        for a in names {
            let asname = a
                .asname
                .as_ref()
                .map_or(String::new(), |n| format!(" as={}", n.name));
            self.line(&format!("Alias {:?} name={}{asname}", a.span, a.name.name));
        }
    }

    fn params(&mut self, p: &Params) {
        self.line(&format!("Params {:?}", p.span));
        self.nested(|d| {
            for (label, list) in [
                ("posonly", &p.posonly),
                ("args", &p.args),
                ("kwonly", &p.kwonly),
            ] {
                for param in list {
                    d.param(label, param);
                }
            }
            if let Some(v) = &p.vararg {
                d.param("vararg", v);
            }
            if let Some(k) = &p.kwarg {
                d.param("kwarg", k);
            }
        });
    }

    fn param(&mut self, label: &str, p: &Param) {
        self.line(&format!("Param {:?} {label} name={}", p.span, p.name.name));
        self.nested(|d| {
            d.opt_expr_field("annotation", p.annotation.as_ref());
            d.opt_expr_field("default", p.default.as_ref());
        });
    }

    fn args_field(&mut self, label: &str, args: &[Arg]) {
        if args.is_empty() {
            return;
        }
        self.line(&format!("{label}:"));
        self.nested(|d| {
            for a in args {
                d.arg(a);
            }
        });
    }

    fn arg(&mut self, a: &Arg) {
        match &a.kind {
            ArgKind::Positional(e) => {
                self.line(&format!("Arg {:?}", a.span));
                self.nested(|d| d.expr(e));
            }
            ArgKind::Star(e) => {
                self.line(&format!("StarArg {:?}", a.span));
                self.nested(|d| d.expr(e));
            }
            ArgKind::Keyword(name, e) => {
                self.line(&format!("Keyword {:?} name={}", a.span, name.name));
                self.nested(|d| d.expr(e));
            }
            ArgKind::DoubleStar(e) => {
                self.line(&format!("DoubleStarArg {:?}", a.span));
                self.nested(|d| d.expr(e));
            }
        }
    }

    fn comprehensions(&mut self, generators: &[Comprehension]) {
        for g in generators {
            let asyn = if g.is_async { " async" } else { "" };
            self.line(&format!("Comprehension {:?}{asyn}", g.span));
            self.nested(|d| {
                d.expr_field("target", &g.target);
                d.expr_field("iter", &g.iter);
                d.exprs_field("ifs", &g.ifs);
            });
        }
    }

    fn fstring_parts(&mut self, parts: &[FStringPart]) {
        for p in parts {
            match p {
                FStringPart::Literal(s) => self.line(&format!("Literal {s:?}")),
                FStringPart::Field(f) => {
                    let conv = f
                        .conversion
                        .map_or(String::new(), |c| format!(" conversion={c}"));
                    let debug = f
                        .debug_text
                        .as_ref()
                        .map_or(String::new(), |t| format!(" debug={t:?}"));
                    self.line(&format!("Field {:?}{conv}{debug}", f.span));
                    self.nested(|d| {
                        d.expr(&f.value);
                        if let Some(spec) = &f.format_spec {
                            d.line("format_spec:");
                            d.nested(|d| d.fstring_parts(spec));
                        }
                    });
                }
            }
        }
    }

    fn expr(&mut self, expr: &Expr) {
        let span = expr.span;
        match &expr.kind {
            ExprKind::BoolOp { op, values } => {
                self.line(&format!("BoolOp {span:?} op={}", op.as_str()));
                self.nested(|d| {
                    for v in values {
                        d.expr(v);
                    }
                });
            }
            ExprKind::NamedExpr { target, value } => {
                self.line(&format!("NamedExpr {span:?}"));
                self.nested(|d| {
                    d.expr(target);
                    d.expr(value);
                });
            }
            ExprKind::BinOp { left, op, right } => {
                self.line(&format!("BinOp {span:?} op={}", op.as_str()));
                self.nested(|d| {
                    d.expr(left);
                    d.expr(right);
                });
            }
            ExprKind::UnaryOp { op, operand } => {
                self.line(&format!("UnaryOp {span:?} op={}", op.as_str()));
                self.nested(|d| d.expr(operand));
            }
            ExprKind::Lambda { params, body } => {
                self.line(&format!("Lambda {span:?}"));
                self.nested(|d| {
                    d.params(params);
                    d.expr_field("body", body);
                });
            }
            ExprKind::IfExp { test, body, orelse } => {
                self.line(&format!("IfExp {span:?}"));
                self.nested(|d| {
                    d.expr_field("test", test);
                    d.expr_field("body", body);
                    d.expr_field("orelse", orelse);
                });
            }
            ExprKind::Dict(items) => {
                self.line(&format!("Dict {span:?}"));
                self.nested(|d| {
                    for item in items {
                        match item {
                            DictItem::KeyValue(k, v) => {
                                d.line("KeyValue");
                                d.nested(|d| {
                                    d.expr(k);
                                    d.expr(v);
                                });
                            }
                            DictItem::Unpack(e) => {
                                d.line("Unpack");
                                d.nested(|d| d.expr(e));
                            }
                        }
                    }
                });
            }
            ExprKind::Set(elts) => self.elts("Set", span, elts),
            ExprKind::List(elts) => self.elts("List", span, elts),
            ExprKind::Tuple(elts) => self.elts("Tuple", span, elts),
            ExprKind::ListComp { elt, generators } => self.comp("ListComp", span, elt, generators),
            ExprKind::SetComp { elt, generators } => self.comp("SetComp", span, elt, generators),
            ExprKind::GeneratorExp { elt, generators } => {
                self.comp("GeneratorExp", span, elt, generators)
            }
            ExprKind::DictComp {
                key,
                value,
                generators,
            } => {
                self.line(&format!("DictComp {span:?}"));
                self.nested(|d| {
                    d.expr_field("key", key);
                    d.expr_field("value", value);
                    d.comprehensions(generators);
                });
            }
            ExprKind::Await(e) => {
                self.line(&format!("Await {span:?}"));
                self.nested(|d| d.expr(e));
            }
            ExprKind::Yield(e) => {
                self.line(&format!("Yield {span:?}"));
                self.nested(|d| {
                    if let Some(e) = e {
                        d.expr(e);
                    }
                });
            }
            ExprKind::YieldFrom(e) => {
                self.line(&format!("YieldFrom {span:?}"));
                self.nested(|d| d.expr(e));
            }
            ExprKind::Compare { left, comparisons } => {
                let ops: Vec<&str> = comparisons.iter().map(|(op, _)| op.as_str()).collect();
                self.line(&format!("Compare {span:?} ops=[{}]", ops.join(", ")));
                self.nested(|d| {
                    d.expr(left);
                    for (_, e) in comparisons {
                        d.expr(e);
                    }
                });
            }
            ExprKind::Call { func, args } => {
                self.line(&format!("Call {span:?}"));
                self.nested(|d| {
                    d.expr_field("func", func);
                    d.args_field("args", args);
                });
            }
            ExprKind::Int(v) => self.line(&format!("Int {span:?} {v}")),
            ExprKind::Float(v) => self.line(&format!("Float {span:?} {v:?}")),
            ExprKind::Imaginary(v) => self.line(&format!("Imaginary {span:?} {v:?}j")),
            ExprKind::Str(s) => self.line(&format!("Str {span:?} {s:?}")),
            ExprKind::Bytes(b) => self.line(&format!("Bytes {span:?} b\"{}\"", b.escape_ascii())),
            ExprKind::FString(parts) => {
                self.line(&format!("FString {span:?}"));
                self.nested(|d| d.fstring_parts(parts));
            }
            ExprKind::Bool(b) => self.line(&format!(
                "Bool {span:?} {}",
                if *b { "True" } else { "False" }
            )),
            ExprKind::None => self.line(&format!("None {span:?}")),
            ExprKind::Ellipsis => self.line(&format!("Ellipsis {span:?}")),
            ExprKind::Attribute { value, attr } => {
                self.line(&format!("Attribute {span:?} attr={}", attr.name));
                self.nested(|d| d.expr(value));
            }
            ExprKind::Subscript { value, index } => {
                self.line(&format!("Subscript {span:?}"));
                self.nested(|d| {
                    d.expr(value);
                    d.expr_field("index", index);
                });
            }
            ExprKind::Starred(e) => {
                self.line(&format!("Starred {span:?}"));
                self.nested(|d| d.expr(e));
            }
            ExprKind::Name(n) => self.line(&format!("Name {span:?} {n}")),
            ExprKind::Slice { lower, upper, step } => {
                self.line(&format!("Slice {span:?}"));
                self.nested(|d| {
                    d.opt_expr_field("lower", lower.as_deref());
                    d.opt_expr_field("upper", upper.as_deref());
                    d.opt_expr_field("step", step.as_deref());
                });
            }
            ExprKind::Error => self.line(&format!("ErrorExpr {span:?}")),
        }
    }

    fn elts(&mut self, kind: &str, span: nkic_diag::Span, elts: &[Expr]) {
        self.line(&format!("{kind} {span:?}"));
        self.nested(|d| {
            for e in elts {
                d.expr(e);
            }
        });
    }

    fn comp(
        &mut self,
        kind: &str,
        span: nkic_diag::Span,
        elt: &Expr,
        generators: &[Comprehension],
    ) {
        self.line(&format!("{kind} {span:?}"));
        self.nested(|d| {
            d.expr_field("elt", elt);
            d.comprehensions(generators);
        });
    }
}
