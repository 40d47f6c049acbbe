//! AST → Python source.
//!
//! The output re-parses to the same tree with spans erased (the round-trip
//! invariant); it is not meant to preserve the original formatting.
//! Parentheses are inserted from operator precedence, blocks are indented by
//! four spaces, strings are written with double quotes and escapes, and every
//! tuple except a subscript index or an unpacking target is parenthesised.
//! Strings inside f-string fields use single quotes so that the output also
//! reads in Python versions before 3.12 (nkic itself accepts nested quotes of
//! the same kind, as Python 3.12 does).
//!
//! Error nodes have no source form: an error statement is written as `pass`
//! and an error expression as `...`.

use std::cell::Cell;
use std::fmt::Write;

use crate::ast::*;

/// Writes `module` as Python source.
pub fn module(module: &Module) -> String {
    let mut u = Unparser {
        out: String::new(),
        indent: 0,
    };
    u.stmts(&module.body);
    u.out
}

/// Writes one expression as Python source.
pub fn expr(expr: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr, prec::TUPLE);
    out
}

/// Precedence levels, loosest first.
mod prec {
    pub const TUPLE: u8 = 0;
    pub const NAMED: u8 = 1;
    pub const LAMBDA: u8 = 2;
    pub const TEST: u8 = 3;
    pub const OR: u8 = 4;
    pub const AND: u8 = 5;
    pub const NOT: u8 = 6;
    pub const CMP: u8 = 7;
    pub const BITOR: u8 = 8;
    pub const XOR: u8 = 9;
    pub const BITAND: u8 = 10;
    pub const SHIFT: u8 = 11;
    pub const ARITH: u8 = 12;
    pub const TERM: u8 = 13;
    pub const FACTOR: u8 = 14;
    pub const POWER: u8 = 15;
    pub const AWAIT: u8 = 16;
    pub const ATOM: u8 = 17;
}

thread_local! {
    /// How many f-string fields enclose the expression being written; the
    /// quote character of string literals depends on it. A thread-local keeps
    /// the many small writer functions free of a context parameter; it is
    /// reset by every field on exit, so output stays deterministic.
    static FIELD_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// The quote for string literals at the current f-string field depth.
fn quote() -> char {
    if FIELD_DEPTH.with(Cell::get) == 0 {
        '"'
    } else {
        '\''
    }
}

struct Unparser {
    out: String,
    indent: usize,
}

impl Unparser {
    fn line_start(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
    }

    fn block(&mut self, body: &[Stmt]) {
        self.out.push_str(":\n");
        self.indent += 1;
        if body.is_empty() {
            self.line_start();
            self.out.push_str("pass\n");
        }
        self.stmts(body);
        self.indent -= 1;
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    /// Starts a line with `keyword` (a compound statement's clause).
    fn header(&mut self, keyword: &str) {
        self.line_start();
        self.out.push_str(keyword);
    }

    fn decorators(&mut self, decorators: &[Expr]) {
        for d in decorators {
            self.line_start();
            self.out.push('@');
            write_expr(&mut self.out, d, prec::NAMED);
            self.out.push('\n');
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::FunctionDef(def) => {
                self.decorators(&def.decorators);
                self.header(if def.is_async { "async def " } else { "def " });
                let _ = write!(self.out, "{}(", def.name.name);
                write_params(&mut self.out, &def.params);
                self.out.push(')');
                if let Some(r) = &def.returns {
                    self.out.push_str(" -> ");
                    write_expr(&mut self.out, r, prec::TEST);
                }
                self.block(&def.body);
            }
            StmtKind::ClassDef(def) => {
                self.decorators(&def.decorators);
                self.line_start();
                let _ = write!(self.out, "class {}", def.name.name);
                if !def.bases.is_empty() {
                    self.out.push('(');
                    write_args(&mut self.out, &def.bases);
                    self.out.push(')');
                }
                self.block(&def.body);
            }
            StmtKind::If { test, body, orelse } => {
                self.header("if ");
                write_expr(&mut self.out, test, prec::NAMED);
                self.block(body);
                self.orelse_chain(orelse);
            }
            StmtKind::While { test, body, orelse } => {
                self.header("while ");
                write_expr(&mut self.out, test, prec::NAMED);
                self.block(body);
                self.else_block(orelse);
            }
            StmtKind::For {
                is_async,
                target,
                iter,
                body,
                orelse,
            } => {
                self.header(if *is_async { "async for " } else { "for " });
                write_target(&mut self.out, target);
                self.out.push_str(" in ");
                write_tuple_or_expr(&mut self.out, iter);
                self.block(body);
                self.else_block(orelse);
            }
            StmtKind::With {
                is_async,
                items,
                body,
            } => {
                self.header(if *is_async { "async with " } else { "with " });
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    // A lone parenthesised tuple would read as a group of
                    // context managers: it needs a second pair.
                    let lone_tuple =
                        item.target.is_none() && matches!(item.context.kind, ExprKind::Tuple(_));
                    if lone_tuple {
                        self.out.push('(');
                    }
                    write_expr(&mut self.out, &item.context, prec::TEST);
                    if lone_tuple {
                        self.out.push(')');
                    }
                    if let Some(t) = &item.target {
                        self.out.push_str(" as ");
                        write_expr(&mut self.out, t, prec::BITOR);
                    }
                }
                self.block(body);
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.header("try");
                self.block(body);
                for h in handlers {
                    self.header("except");
                    if let Some(t) = &h.type_ {
                        self.out.push(' ');
                        write_expr(&mut self.out, t, prec::TEST);
                        if let Some(n) = &h.name {
                            let _ = write!(self.out, " as {}", n.name);
                        }
                    }
                    self.block(&h.body);
                }
                self.else_block(orelse);
                if !finalbody.is_empty() {
                    self.header("finally");
                    self.block(finalbody);
                }
            }
            StmtKind::Error(body) => {
                self.line_start();
                self.out.push_str("pass\n");
                self.stmts(body);
            }
            simple => {
                self.line_start();
                write_simple(&mut self.out, simple);
                self.out.push('\n');
            }
        }
    }

    /// Writes an `if` statement's `orelse`, as `elif` when it is a single
    /// nested `if`.
    fn orelse_chain(&mut self, orelse: &[Stmt]) {
        if let [
            Stmt {
                kind: StmtKind::If { test, body, orelse },
                ..
            },
        ] = orelse
        {
            self.header("elif ");
            write_expr(&mut self.out, test, prec::NAMED);
            self.block(body);
            self.orelse_chain(orelse);
        } else {
            self.else_block(orelse);
        }
    }

    fn else_block(&mut self, orelse: &[Stmt]) {
        if !orelse.is_empty() {
            self.header("else");
            self.block(orelse);
        }
    }
}

fn write_simple(out: &mut String, kind: &StmtKind) {
    match kind {
        StmtKind::Return(e) => {
            out.push_str("return");
            if let Some(e) = e {
                out.push(' ');
                write_tuple_or_expr(out, e);
            }
        }
        StmtKind::Delete(targets) => {
            out.push_str("del ");
            // Each target on its own: a tuple target keeps its parentheses.
            comma_list(out, targets, |out, t| write_expr(out, t, prec::BITOR));
        }
        StmtKind::Assign { targets, value } => {
            for t in targets {
                write_target(out, t);
                out.push_str(" = ");
            }
            write_value(out, value);
        }
        StmtKind::AugAssign { target, op, value } => {
            write_expr(out, target, prec::ATOM);
            let _ = write!(out, " {}= ", op.as_str());
            write_value(out, value);
        }
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => {
            write_expr(out, target, prec::ATOM);
            out.push_str(": ");
            write_expr(out, annotation, prec::TEST);
            if let Some(v) = value {
                out.push_str(" = ");
                write_value(out, v);
            }
        }
        StmtKind::Raise { exc, cause } => {
            out.push_str("raise");
            if let Some(e) = exc {
                out.push(' ');
                write_expr(out, e, prec::TEST);
            }
            if let Some(c) = cause {
                out.push_str(" from ");
                write_expr(out, c, prec::TEST);
            }
        }
        StmtKind::Assert { test, msg } => {
            out.push_str("assert ");
            write_expr(out, test, prec::TEST);
            if let Some(m) = msg {
                out.push_str(", ");
                write_expr(out, m, prec::TEST);
            }
        }
        StmtKind::Import(names) => {
            out.push_str("import ");
            write_aliases(out, names);
        }
        StmtKind::ImportFrom {
            module,
            names,
            level,
        } => {
            out.push_str("from ");
            for _ in 0..*level {
                out.push('.');
            }
            if let Some(m) = module {
                out.push_str(&m.name);
            }
            out.push_str(" import ");
            write_aliases(out, names);
        }
        StmtKind::Global(names) | StmtKind::Nonlocal(names) => {
            out.push_str(if matches!(kind, StmtKind::Global(_)) {
                "global "
            } else {
                "nonlocal "
            });
            let list: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
            out.push_str(&list.join(", "));
        }
        StmtKind::Expr(e) => write_value(out, e),
        StmtKind::Pass => out.push_str("pass"),
        StmtKind::Break => out.push_str("break"),
        StmtKind::Continue => out.push_str("continue"),
        _ => out.push_str("pass"),
    }
}

/// An assignment value or expression statement: a bare tuple or `yield`.
fn write_value(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Yield(_) | ExprKind::YieldFrom(_) => write_yield(out, e),
        ExprKind::Tuple(elts) if !elts.is_empty() => write_bare_tuple(out, elts),
        _ => write_expr(out, e, prec::LAMBDA),
    }
}

/// A `return` value or `for` iterable: a bare tuple, or an expression
/// (with `yield` and `:=` parenthesised).
fn write_tuple_or_expr(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Tuple(elts) if !elts.is_empty() => write_bare_tuple(out, elts),
        _ => write_expr(out, e, prec::LAMBDA),
    }
}

/// An assignment target: a bare tuple, or an expression.
fn write_target(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Tuple(elts) if !elts.is_empty() => write_bare_tuple(out, elts),
        _ => write_expr(out, e, prec::BITOR),
    }
}

fn write_bare_tuple(out: &mut String, elts: &[Expr]) {
    comma_list(out, elts, |out, e| write_expr(out, e, prec::TEST));
    if elts.len() == 1 {
        out.push(',');
    }
}

fn write_yield(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Yield(None) => out.push_str("yield"),
        ExprKind::Yield(Some(v)) => {
            out.push_str("yield ");
            write_value(out, v);
        }
        ExprKind::YieldFrom(v) => {
            out.push_str("yield from ");
            write_expr(out, v, prec::TEST);
        }
        _ => write_expr(out, e, prec::TUPLE),
    }
}

fn write_aliases(out: &mut String, names: &[Alias]) {
    comma_list(out, names, |out, a| {
        out.push_str(&a.name.name);
        if let Some(n) = &a.asname {
            let _ = write!(out, " as {}", n.name);
        }
    });
}

fn comma_list<T>(out: &mut String, items: &[T], mut f: impl FnMut(&mut String, &T)) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        f(out, item);
    }
}

fn write_params(out: &mut String, p: &Params) {
    // Each item is a marker (`/`, `*`, `**` or none) and the parameter
    // that follows it, if any.
    let plain = |param| ("", Some(param));
    let mut items: Vec<(&str, Option<&Param>)> = p.posonly.iter().map(plain).collect();
    if !p.posonly.is_empty() {
        items.push(("/", None));
    }
    items.extend(p.args.iter().map(plain));
    if let Some(v) = &p.vararg {
        items.push(("*", Some(v)));
    } else if !p.kwonly.is_empty() {
        items.push(("*", None));
    }
    items.extend(p.kwonly.iter().map(plain));
    if let Some(k) = &p.kwarg {
        items.push(("**", Some(k)));
    }
    comma_list(out, &items, |out, &(marker, param)| {
        out.push_str(marker);
        if let Some(param) = param {
            write_param(out, param);
        }
    });
}

fn write_param(out: &mut String, p: &Param) {
    out.push_str(&p.name.name);
    if let Some(a) = &p.annotation {
        out.push_str(": ");
        match &a.kind {
            ExprKind::Starred(inner) => {
                out.push('*');
                write_expr(out, inner, prec::BITOR);
            }
            _ => write_expr(out, a, prec::TEST),
        }
    }
    if let Some(d) = &p.default {
        out.push_str(if p.annotation.is_some() { " = " } else { "=" });
        write_expr(out, d, prec::TEST);
    }
}

fn write_args(out: &mut String, args: &[Arg]) {
    comma_list(out, args, |out, a| match &a.kind {
        ArgKind::Positional(e) => write_expr(out, e, prec::TEST),
        ArgKind::Star(e) => {
            out.push('*');
            write_expr(out, e, prec::TEST);
        }
        ArgKind::Keyword(name, e) => {
            let _ = write!(out, "{}=", name.name);
            write_expr(out, e, prec::TEST);
        }
        ArgKind::DoubleStar(e) => {
            out.push_str("**");
            write_expr(out, e, prec::TEST);
        }
    });
}

fn precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Tuple(_) => prec::ATOM,
        ExprKind::NamedExpr { .. } => prec::NAMED,
        ExprKind::Lambda { .. } => prec::LAMBDA,
        ExprKind::IfExp { .. } => prec::TEST,
        ExprKind::BoolOp { op: BoolOp::Or, .. } => prec::OR,
        ExprKind::BoolOp {
            op: BoolOp::And, ..
        } => prec::AND,
        ExprKind::UnaryOp {
            op: UnaryOp::Not, ..
        } => prec::NOT,
        ExprKind::Compare { .. } => prec::CMP,
        ExprKind::BinOp { op, .. } => binop_prec(*op),
        ExprKind::UnaryOp { .. } => prec::FACTOR,
        ExprKind::Await(_) => prec::AWAIT,
        ExprKind::Starred(_) => prec::BITOR,
        ExprKind::Yield(_) | ExprKind::YieldFrom(_) => prec::TUPLE,
        ExprKind::Slice { .. } => prec::TUPLE,
        _ => prec::ATOM,
    }
}

fn binop_prec(op: BinOp) -> u8 {
    match op {
        BinOp::BitOr => prec::BITOR,
        BinOp::BitXor => prec::XOR,
        BinOp::BitAnd => prec::BITAND,
        BinOp::LShift | BinOp::RShift => prec::SHIFT,
        BinOp::Add | BinOp::Sub => prec::ARITH,
        BinOp::Mult | BinOp::MatMult | BinOp::Div | BinOp::Mod | BinOp::FloorDiv => prec::TERM,
        BinOp::Pow => prec::POWER,
    }
}

/// Writes `e`, parenthesised if its precedence is below `min`.
fn write_expr(out: &mut String, e: &Expr, min: u8) {
    let p = precedence(e);
    if p < min {
        out.push('(');
        write_expr_inner(out, e);
        out.push(')');
    } else {
        write_expr_inner(out, e);
    }
}

fn write_expr_inner(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::BoolOp { op, values } => {
            let p = precedence(e);
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    let _ = write!(out, " {} ", op.as_str());
                }
                write_expr(out, v, p + 1);
            }
        }
        ExprKind::NamedExpr { target, value } => {
            write_expr(out, target, prec::ATOM);
            out.push_str(" := ");
            write_expr(out, value, prec::TEST);
        }
        ExprKind::BinOp { left, op, right } => {
            let p = binop_prec(*op);
            if *op == BinOp::Pow {
                write_expr(out, left, prec::AWAIT);
                out.push_str(" ** ");
                write_expr(out, right, prec::FACTOR);
            } else {
                write_expr(out, left, p);
                let _ = write!(out, " {} ", op.as_str());
                write_expr(out, right, p + 1);
            }
        }
        ExprKind::UnaryOp { op, operand } => {
            if *op == UnaryOp::Not {
                out.push_str("not ");
                write_expr(out, operand, prec::NOT);
            } else {
                out.push_str(op.as_str());
                write_expr(out, operand, prec::FACTOR);
            }
        }
        ExprKind::Lambda { params, body } => {
            out.push_str("lambda");
            let mut text = String::new();
            write_params(&mut text, params);
            if !text.is_empty() {
                out.push(' ');
                out.push_str(&text);
            }
            out.push_str(": ");
            write_expr(out, body, prec::LAMBDA);
        }
        ExprKind::IfExp { test, body, orelse } => {
            write_expr(out, body, prec::OR);
            out.push_str(" if ");
            write_expr(out, test, prec::OR);
            out.push_str(" else ");
            write_expr(out, orelse, prec::TEST);
        }
        ExprKind::Dict(items) => {
            out.push('{');
            comma_list(out, items, |out, item| match item {
                DictItem::KeyValue(k, v) => {
                    write_expr(out, k, prec::TEST);
                    out.push_str(": ");
                    write_expr(out, v, prec::TEST);
                }
                DictItem::Unpack(e) => {
                    out.push_str("**");
                    write_expr(out, e, prec::BITOR);
                }
            });
            out.push('}');
        }
        ExprKind::Set(elts) => write_display(out, "{", elts, "}"),
        ExprKind::List(elts) => write_display(out, "[", elts, "]"),
        // A one-element tuple keeps its trailing comma: `(x,)`.
        ExprKind::Tuple(elts) => {
            write_display(out, "(", elts, if elts.len() == 1 { ",)" } else { ")" });
        }
        ExprKind::ListComp { elt, generators } => {
            write_comprehension(out, "[", elt, generators, "]")
        }
        ExprKind::SetComp { elt, generators } => {
            write_comprehension(out, "{", elt, generators, "}")
        }
        ExprKind::GeneratorExp { elt, generators } => {
            write_comprehension(out, "(", elt, generators, ")");
        }
        ExprKind::DictComp {
            key,
            value,
            generators,
        } => {
            out.push('{');
            write_expr(out, key, prec::TEST);
            out.push_str(": ");
            write_expr(out, value, prec::TEST);
            write_comprehensions(out, generators);
            out.push('}');
        }
        ExprKind::Await(v) => {
            out.push_str("await ");
            write_expr(out, v, prec::ATOM);
        }
        // `write_expr` parenthesises a `yield` wherever it is not the whole
        // value (its precedence is the lowest).
        ExprKind::Yield(_) | ExprKind::YieldFrom(_) => write_yield(out, e),
        ExprKind::Compare { left, comparisons } => {
            write_expr(out, left, prec::BITOR);
            for (op, right) in comparisons {
                let _ = write!(out, " {} ", op.as_str());
                write_expr(out, right, prec::BITOR);
            }
        }
        ExprKind::Call { func, args } => {
            write_expr(out, func, prec::ATOM);
            out.push('(');
            write_args(out, args);
            out.push(')');
        }
        ExprKind::Int(v) => {
            let _ = write!(out, "{v}");
        }
        ExprKind::Float(v) => write_float(out, *v),
        ExprKind::Imaginary(v) => {
            write_float(out, *v);
            out.push('j');
        }
        ExprKind::Str(s) => write_str(out, s, false, quote()),
        ExprKind::Bytes(b) => {
            let q = quote();
            out.push('b');
            out.push(q);
            for &byte in b {
                match byte {
                    b'\\' => out.push_str("\\\\"),
                    b'"' | b'\'' if byte as char == q => {
                        out.push('\\');
                        out.push(q);
                    }
                    b'\n' => out.push_str("\\n"),
                    b'\r' => out.push_str("\\r"),
                    b'\t' => out.push_str("\\t"),
                    0x20..=0x7E => out.push(byte as char),
                    _ => {
                        let _ = write!(out, "\\x{byte:02x}");
                    }
                }
            }
            out.push(q);
        }
        ExprKind::FString(parts) => {
            let q = quote();
            out.push('f');
            out.push(q);
            write_fstring_parts(out, parts, q);
            out.push(q);
        }
        ExprKind::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        ExprKind::None => out.push_str("None"),
        ExprKind::Ellipsis | ExprKind::Error => out.push_str("..."),
        ExprKind::Attribute { value, attr } => {
            if matches!(value.kind, ExprKind::Int(_)) {
                out.push('(');
                write_expr(out, value, prec::TUPLE);
                out.push(')');
            } else {
                write_expr(out, value, prec::ATOM);
            }
            out.push('.');
            out.push_str(&attr.name);
        }
        ExprKind::Subscript { value, index } => {
            write_expr(out, value, prec::ATOM);
            out.push('[');
            match &index.kind {
                ExprKind::Tuple(elts) if !elts.is_empty() => {
                    comma_list(out, elts, write_subscript_item);
                    if elts.len() == 1 {
                        out.push(',');
                    }
                }
                _ => write_subscript_item(out, index),
            }
            out.push(']');
        }
        ExprKind::Starred(v) => {
            out.push('*');
            write_expr(out, v, prec::BITOR);
        }
        ExprKind::Name(n) => out.push_str(n),
        ExprKind::Slice { .. } => write_subscript_item(out, e),
    }
}

fn write_subscript_item(out: &mut String, e: &Expr) {
    if let ExprKind::Slice { lower, upper, step } = &e.kind {
        if let Some(l) = lower {
            write_expr(out, l, prec::TEST);
        }
        out.push(':');
        if let Some(u) = upper {
            write_expr(out, u, prec::TEST);
        }
        if let Some(s) = step {
            out.push(':');
            write_expr(out, s, prec::TEST);
        }
    } else {
        write_expr(out, e, prec::NAMED);
    }
}

/// `elts`, comma-separated, between `open` and `close`.
fn write_display(out: &mut String, open: &str, elts: &[Expr], close: &str) {
    out.push_str(open);
    comma_list(out, elts, |out, e| write_expr(out, e, prec::NAMED));
    out.push_str(close);
}

/// `elt` and its `for` and `if` clauses between `open` and `close`.
fn write_comprehension(
    out: &mut String,
    open: &str,
    elt: &Expr,
    generators: &[Comprehension],
    close: &str,
) {
    out.push_str(open);
    write_expr(out, elt, prec::NAMED);
    write_comprehensions(out, generators);
    out.push_str(close);
}

fn write_comprehensions(out: &mut String, generators: &[Comprehension]) {
    for g in generators {
        out.push_str(if g.is_async { " async for " } else { " for " });
        write_target(out, &g.target);
        out.push_str(" in ");
        write_expr(out, &g.iter, prec::OR);
        for cond in &g.ifs {
            out.push_str(" if ");
            write_expr(out, cond, prec::OR);
        }
    }
}

/// Writes a float so that it reads back as the same value and as a float.
fn write_float(out: &mut String, v: f64) {
    if v.is_infinite() {
        out.push_str("1e999");
    } else if v.is_nan() {
        out.push_str("(1e999 - 1e999)");
    } else {
        let text = format!("{v:?}");
        out.push_str(&text);
    }
}

/// Writes a text string literal quoted with `q`; `in_fstring` writes only
/// the body and doubles braces.
fn write_str(out: &mut String, s: &str, in_fstring: bool, q: char) {
    if !in_fstring {
        out.push(q);
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c == q => {
                out.push('\\');
                out.push(q);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '{' if in_fstring => out.push_str("{{"),
            '}' if in_fstring => out.push_str("}}"),
            c if (c as u32) < 0x20 || c as u32 == 0x7F => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    if !in_fstring {
        out.push(q);
    }
}

fn write_fstring_parts(out: &mut String, parts: &[FStringPart], q: char) {
    for part in parts {
        match part {
            FStringPart::Literal(s) => write_str(out, s, true, q),
            FStringPart::Field(f) => {
                out.push('{');
                match &f.debug_text {
                    Some(text) => out.push_str(text),
                    None => {
                        let mut inner = String::new();
                        FIELD_DEPTH.with(|d| d.set(d.get() + 1));
                        write_expr(&mut inner, &f.value, prec::TEST);
                        FIELD_DEPTH.with(|d| d.set(d.get() - 1));
                        if inner.starts_with('{') {
                            out.push(' ');
                        }
                        out.push_str(&inner);
                    }
                }
                if let Some(c) = f.conversion {
                    out.push('!');
                    out.push(c);
                }
                if let Some(spec) = &f.format_spec {
                    out.push(':');
                    write_fstring_parts(out, spec, q);
                }
                out.push('}');
            }
        }
    }
}
