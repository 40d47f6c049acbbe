//! Syntax-tree queries for the editor: the chain of nodes under the
//! cursor, the bindings of a scope, definitions and document symbols.
//!
//! Everything here works on the parse tree alone, so it answers even when
//! the kernel's arguments are unknown or specialization failed.

use nkic_diag::Span;
use nkic_syntax::ast::{ClassDef, Expr, ExprKind, FunctionDef, Module, Stmt, StmtKind};

pub use nkic_syntax::{Node, children};

/// The chain of nodes whose spans contain `offset`, outermost first. A
/// cursor right after a name (at its end) still counts as on it.
pub fn path_at(module: &Module, offset: u32) -> Vec<Node<'_>> {
    let mut path = Vec::new();
    let mut level: Vec<Node<'_>> = module.body.iter().map(Node::Stmt).collect();
    loop {
        let inside = |n: &Node<'_>| {
            let s = n.span();
            s.start <= offset && offset < s.end
        };
        let at_end = |n: &Node<'_>| {
            let s = n.span();
            s.start <= offset && offset <= s.end
        };
        let Some(next) = level
            .iter()
            .copied()
            .find(inside)
            .or_else(|| level.iter().copied().find(at_end))
        else {
            return path;
        };
        path.push(next);
        level = children(next);
    }
}

/// The functions enclosing the end of `path`, innermost first.
pub fn enclosing_functions<'a>(path: &[Node<'a>]) -> Vec<&'a FunctionDef> {
    path.iter()
        .rev()
        .filter_map(|n| match n {
            Node::Stmt(Stmt {
                kind: StmtKind::FunctionDef(f),
                ..
            }) => Some(&**f),
            _ => None,
        })
        .collect()
}

/// The `for` and `while` statements enclosing the end of `path`,
/// outermost first (a loop whose header holds the cursor is not counted).
pub fn enclosing_loops<'a>(path: &[Node<'a>], offset: u32) -> Vec<&'a Stmt> {
    path.iter()
        .filter_map(|n| match n {
            Node::Stmt(
                s @ Stmt {
                    kind: StmtKind::For { body, .. } | StmtKind::While { body, .. },
                    ..
                },
            ) if body.first().is_some_and(|b| b.span.start <= offset) => Some(*s),
            _ => None,
        })
        .collect()
}

/// What a name is bound to.
#[derive(Clone, Debug, PartialEq)]
pub enum BindingKind {
    Function {
        is_kernel: bool,
    },
    Class,
    Variable,
    Parameter,
    /// `import module as name` (`name` is `None`) or
    /// `from module import name as alias`.
    Import {
        module: Option<String>,
        level: u32,
        name: Option<String>,
    },
}

/// One binding of a name in a scope.
#[derive(Clone, Debug)]
pub struct Binding<'a> {
    pub name: String,
    /// The span of the name where it is bound.
    pub name_span: Span,
    /// The whole statement (or parameter) that binds it.
    pub span: Span,
    pub kind: BindingKind,
    /// The function's or class's body, for nested symbols.
    pub body: Option<&'a [Stmt]>,
    /// The value of a single-name assignment.
    pub value: Option<&'a Expr>,
}

/// Whether a decorator marks an NKI kernel (`@nki.jit`, `@jit`,
/// `@nki.jit(...)`).
pub fn is_kernel_decorator(e: &Expr) -> bool {
    let e = match &e.kind {
        ExprKind::Call { func, .. } => func,
        _ => e,
    };
    match &e.kind {
        ExprKind::Name(n) => n.as_str() == "jit",
        ExprKind::Attribute { attr, .. } => matches!(attr.name.as_str(), "jit" | "baremetal"),
        _ => false,
    }
}

fn target_names<'a>(target: &'a Expr, out: &mut Vec<(&'a str, Span)>) {
    match &target.kind {
        ExprKind::Name(n) => out.push((n.as_str(), target.span)),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            for it in items {
                target_names(it, out);
            }
        }
        ExprKind::Starred(inner) => target_names(inner, out),
        _ => {}
    }
}

/// The bindings made directly in a block (descending into `if`, `for`,
/// `with`, ... but not into nested functions and classes), in source
/// order.
pub fn scope_bindings(stmts: &[Stmt]) -> Vec<Binding<'_>> {
    let mut out = Vec::new();
    collect_bindings(stmts, &mut out);
    out
}

fn collect_bindings<'a>(stmts: &'a [Stmt], out: &mut Vec<Binding<'a>>) {
    for s in stmts {
        let plain = |target: &'a Expr, value: Option<&'a Expr>, out: &mut Vec<Binding<'a>>| {
            let mut names = Vec::new();
            target_names(target, &mut names);
            let single = matches!(target.kind, ExprKind::Name(_));
            for (name, span) in names {
                out.push(Binding {
                    name: name.to_owned(),
                    name_span: span,
                    span: s.span,
                    kind: BindingKind::Variable,
                    body: None,
                    value: if single { value } else { None },
                });
            }
        };
        match &s.kind {
            // A definition's body is a scope of its own.
            StmtKind::FunctionDef(f) => {
                out.push(Binding {
                    name: f.name.name.to_string(),
                    name_span: f.name.span,
                    span: s.span,
                    kind: BindingKind::Function {
                        is_kernel: f.decorators.iter().any(is_kernel_decorator),
                    },
                    body: Some(&f.body),
                    value: None,
                });
                continue;
            }
            StmtKind::ClassDef(c) => {
                out.push(class_binding(c, s.span));
                continue;
            }
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    plain(t, Some(value), out);
                }
            }
            StmtKind::AnnAssign { target, value, .. } => plain(target, value.as_ref(), out),
            StmtKind::AugAssign { target, .. } => plain(target, None, out),
            StmtKind::For { target, .. } => plain(target, None, out),
            StmtKind::With { items, .. } => {
                for it in items {
                    if let Some(t) = &it.target {
                        plain(t, None, out);
                    }
                }
            }
            StmtKind::Import(aliases) => {
                for a in aliases {
                    let (name, span) = match &a.asname {
                        Some(asname) => (asname.name.to_string(), asname.span),
                        // `import a.b` binds `a`.
                        None => (
                            a.name.name.split('.').next().unwrap_or_default().to_owned(),
                            a.name.span,
                        ),
                    };
                    let module = match &a.asname {
                        Some(_) => a.name.name.to_string(),
                        None => name.clone(),
                    };
                    out.push(Binding {
                        name,
                        name_span: span,
                        span: s.span,
                        kind: BindingKind::Import {
                            module: Some(module),
                            level: 0,
                            name: None,
                        },
                        body: None,
                        value: None,
                    });
                }
            }
            StmtKind::ImportFrom {
                module,
                names,
                level,
            } => {
                for a in names {
                    if a.name.name.as_str() == "*" {
                        continue;
                    }
                    let (name, span) = match &a.asname {
                        Some(asname) => (asname.name.to_string(), asname.span),
                        None => (a.name.name.to_string(), a.name.span),
                    };
                    out.push(Binding {
                        name,
                        name_span: span,
                        span: s.span,
                        kind: BindingKind::Import {
                            module: module.as_ref().map(|m| m.name.to_string()),
                            level: *level,
                            name: Some(a.name.name.to_string()),
                        },
                        body: None,
                        value: None,
                    });
                }
            }
            _ => {}
        }
        // The blocks below a compound statement bind in this scope too.
        for child in children(Node::Stmt(s)) {
            if let Node::Stmt(inner) = child {
                collect_bindings(std::slice::from_ref(inner), out);
            }
        }
    }
}

fn class_binding(c: &ClassDef, span: Span) -> Binding<'_> {
    Binding {
        name: c.name.name.to_string(),
        name_span: c.name.span,
        span,
        kind: BindingKind::Class,
        body: Some(&c.body),
        value: None,
    }
}

fn param_bindings(f: &FunctionDef) -> Vec<Binding<'_>> {
    f.params
        .iter()
        .map(|p| Binding {
            name: p.name.name.to_string(),
            name_span: p.name.span,
            span: p.span,
            kind: BindingKind::Parameter,
            body: None,
            value: None,
        })
        .collect()
}

/// Where a name under the cursor is defined.
#[derive(Clone, Debug, PartialEq)]
pub enum Definition {
    /// In this file, at this span (the bound name).
    Here(Span),
    /// In another module: `from module import name` / `module.name`.
    /// `name` is `None` for the module itself.
    Module {
        module: Option<String>,
        level: u32,
        name: Option<String>,
    },
}

/// The definition of the name under the cursor, if it is bound in this
/// file (or imported into it).
pub fn definition(module: &Module, offset: u32) -> Option<Definition> {
    let path = path_at(module, offset);
    // A definition's own name.
    for n in path.iter().rev() {
        if let Node::Stmt(s) = n {
            match &s.kind {
                StmtKind::FunctionDef(f) if covers(f.name.span, offset) => {
                    return Some(Definition::Here(f.name.span));
                }
                StmtKind::ClassDef(c) if covers(c.name.span, offset) => {
                    return Some(Definition::Here(c.name.span));
                }
                _ => {}
            }
        }
    }
    let innermost = match path.last() {
        Some(Node::Expr(e)) => *e,
        _ => return None,
    };
    let (name, attr) = match &innermost.kind {
        ExprKind::Name(n) => (n.as_str(), None),
        ExprKind::Attribute { value, attr } if covers(attr.span, offset) => match &value.kind {
            ExprKind::Name(m) => (m.as_str(), Some(attr.name.to_string())),
            _ => return None,
        },
        _ => return None,
    };
    let binding = lookup(module, &path, name)?;
    match (binding.kind, attr) {
        (
            BindingKind::Import {
                module,
                level,
                name,
            },
            None,
        ) => Some(Definition::Module {
            module,
            level,
            name,
        }),
        // `mod.attr` where `mod` is an imported module.
        (
            BindingKind::Import {
                module,
                level,
                name,
            },
            Some(attr),
        ) => {
            let module = match (module, name) {
                (Some(m), Some(n)) => Some(format!("{m}.{n}")),
                (None, Some(n)) => Some(n),
                (m, None) => m,
            };
            Some(Definition::Module {
                module,
                level,
                name: Some(attr),
            })
        }
        (_, Some(_)) => None,
        (_, None) => Some(Definition::Here(binding.name_span)),
    }
}

fn covers(span: Span, offset: u32) -> bool {
    span.start <= offset && offset <= span.end
}

/// The binding `name` refers to at the end of `path`: the innermost
/// enclosing function's parameters and locals, then outer functions,
/// then the module.
pub fn lookup<'a>(module: &'a Module, path: &[Node<'a>], name: &str) -> Option<Binding<'a>> {
    for f in enclosing_functions(path) {
        if let Some(b) = param_bindings(f).into_iter().find(|b| b.name == name) {
            return Some(b);
        }
        if let Some(b) = scope_bindings(&f.body).into_iter().find(|b| b.name == name) {
            return Some(b);
        }
    }
    scope_bindings(&module.body)
        .into_iter()
        .find(|b| b.name == name)
}

/// A top-level definition of a module by name (for cross-file lookups).
pub fn top_level<'a>(module: &'a Module, name: &str) -> Option<Binding<'a>> {
    scope_bindings(&module.body)
        .into_iter()
        .find(|b| b.name == name)
}

/// The `/`-separated candidate paths of an imported module, relative to
/// the directory `dir` of the importing file: `a/b.py` and
/// `a/b/__init__.py` (`level` 1 is `dir` itself, 2 its parent, ...).
/// Imports of `nki` itself have none.
pub fn module_paths(dir: &str, module: Option<&str>, level: u32) -> Vec<String> {
    if level == 0 && module.is_some_and(|m| m == "nki" || m.starts_with("nki.")) {
        return Vec::new();
    }
    let mut base = dir.trim_end_matches('/').to_owned();
    for _ in 1..level {
        match base.rfind('/') {
            Some(i) => base.truncate(i),
            None => base.clear(),
        }
    }
    let rel = module.map(|m| m.replace('.', "/")).unwrap_or_default();
    let join = |tail: &str| {
        if base.is_empty() {
            tail.to_owned()
        } else {
            format!("{base}/{tail}")
        }
    };
    if rel.is_empty() {
        return vec![join("__init__.py")];
    }
    vec![
        join(&format!("{rel}.py")),
        join(&format!("{rel}/__init__.py")),
    ]
}

/// The assignment statements of a block and every nested block (including
/// nested functions), for inlay hints: each single-name target with its
/// value.
pub fn all_assignments<'a>(stmts: &'a [Stmt], out: &mut Vec<(&'a Expr, &'a Expr)>) {
    for s in stmts {
        if let StmtKind::Assign { targets, value } = &s.kind {
            for t in targets {
                if matches!(t.kind, ExprKind::Name(_)) {
                    out.push((t, value));
                }
            }
        }
        if let StmtKind::AnnAssign {
            target,
            value: Some(value),
            ..
        } = &s.kind
            && matches!(target.kind, ExprKind::Name(_))
        {
            out.push((target, value));
        }
        for child in children(Node::Stmt(s)) {
            if let Node::Stmt(inner) = child {
                all_assignments(std::slice::from_ref(inner), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "import nki\nimport nki.language as nl\nfrom .util import helper as h\nfrom . import tiles\n\nSCALE = 2\n\n@nki.jit\ndef kern(a, n):\n    t = nl.load(a)\n    for i in range(n):\n        u = h(t) * SCALE\n    return tiles.pad(u)\n";

    fn parse() -> Module {
        let (m, diags) = nkic_syntax::parse(SRC);
        assert!(diags.is_empty(), "{diags:?}");
        m
    }

    fn at(needle: &str, nth: usize) -> u32 {
        let mut off = 0;
        for _ in 0..=nth {
            off = SRC[off..].find(needle).unwrap() + off + 1;
        }
        (off - 1) as u32
    }

    #[test]
    fn local_definitions() {
        let m = parse();
        let use_t = at("t)", 0);
        assert_eq!(
            definition(&m, use_t),
            Some(Definition::Here(Span::new(at("t =", 0), at("t =", 0) + 1)))
        );
        let use_n = at("n):", 1);
        let param_n = at("n):", 0);
        assert_eq!(
            definition(&m, use_n),
            Some(Definition::Here(Span::new(param_n, param_n + 1)))
        );
        let scale = at("SCALE", 1);
        assert_eq!(
            definition(&m, scale),
            Some(Definition::Here(Span::new(
                at("SCALE", 0),
                at("SCALE", 0) + 5
            )))
        );
    }

    #[test]
    fn imported_definitions() {
        let m = parse();
        assert_eq!(
            definition(&m, at("h(t)", 0)),
            Some(Definition::Module {
                module: Some("util".into()),
                level: 1,
                name: Some("helper".into())
            })
        );
        assert_eq!(
            definition(&m, at("pad", 0) + 1),
            Some(Definition::Module {
                module: Some("tiles".into()),
                level: 1,
                name: Some("pad".into())
            })
        );
        assert_eq!(
            module_paths("/k/dir", Some("util"), 1),
            vec!["/k/dir/util.py", "/k/dir/util/__init__.py"]
        );
        assert_eq!(
            module_paths("/k/dir", Some("a.b"), 2),
            vec!["/k/a/b.py", "/k/a/b/__init__.py"]
        );
        assert!(module_paths("/k", Some("nki.language"), 0).is_empty());
    }

    #[test]
    fn bindings_and_loops() {
        let m = parse();
        let names: Vec<String> = scope_bindings(&m.body)
            .into_iter()
            .map(|b| b.name)
            .collect();
        assert_eq!(names, ["nki", "nl", "h", "tiles", "SCALE", "kern"]);
        let u = at("u =", 0);
        let path = path_at(&m, u);
        let loops = enclosing_loops(&path, u);
        assert_eq!(loops.len(), 1);
        assert_eq!(enclosing_functions(&path)[0].name.name.as_str(), "kern");
        let mut assigns = Vec::new();
        all_assignments(&m.body, &mut assigns);
        assert_eq!(assigns.len(), 3);
    }
}
