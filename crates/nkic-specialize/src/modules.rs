//! Loaded modules: the kernel file and every user module it imports, each
//! parsed and evaluated once per program instance.

use std::collections::HashMap;
use std::rc::Rc;

use nkic_diag::FileId;
use nkic_syntax::{Node, ast, children};

use crate::value::{LambdaDef, Scope};

/// One loaded module.
#[derive(Debug)]
pub(crate) struct ModuleState {
    /// The dotted module name (`__main__` for the kernel file).
    pub(crate) name: Rc<str>,
    pub(crate) file: FileId,
    pub(crate) ast: Rc<ast::Module>,
    pub(crate) globals: Rc<Scope>,
    /// Every `def` in the module, by the start offset of its statement.
    pub(crate) defs: HashMap<u32, Rc<ast::FunctionDef>>,
    /// Every `lambda`, by the start offset of its expression.
    pub(crate) lambdas: HashMap<u32, Rc<LambdaDef>>,
    /// Top-level names whose host-code definition could not be evaluated,
    /// with the reason, for a better error when a kernel uses them.
    pub(crate) poisoned: HashMap<Rc<str>, String>,
}

use nkic_diag::{Diagnostic, Span};
use nkic_syntax::ast::{Expr, ExprKind, Stmt, StmtKind};

use crate::codes;
use crate::ctx::Ctx;
use crate::value::{ModuleId, ModuleValue, Namespace, Value};

/// The compiler namespace a dotted module path names, if any.
pub(crate) fn compiler_namespace(path: &str) -> Option<Namespace> {
    let path = path.strip_prefix("neuronxcc.").unwrap_or(path);
    Some(match path {
        "nki" => Namespace::Nki,
        "nki.language" => Namespace::Language,
        // `nki.isa.constants` holds the enums (`dge_mode`, `oob_mode`, …)
        // that `nki.isa` exports too.
        "nki.isa" | "nki.isa.constants" => Namespace::Isa,
        "nki.typing" => Namespace::Typing,
        "nki.collectives" => Namespace::Collectives,
        "nki.compiler" => Namespace::Compiler,
        "neuronxcc" => Namespace::Neuronxcc,
        "numpy" => Namespace::Numpy,
        "math" => Namespace::Math,
        "dataclasses" => Namespace::Dataclasses,
        "enum" => Namespace::Enum,
        "typing" | "typing_extensions" => Namespace::PyTyping,
        "functools" => Namespace::Functools,
        "operator" => Namespace::Operator,
        "itertools" => Namespace::Itertools,
        "os" => Namespace::Os,
        "sys" => Namespace::Sys,
        other => return crate::api::host::module(other),
    })
}

/// The directory part of a `/`-separated path (empty for a bare name).
fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() || dir == "." {
        rest.to_owned()
    } else {
        format!("{}/{rest}", dir.trim_end_matches('/'))
    }
}

/// Collects every `def` and `lambda` of a module, keyed by start offset.
fn collect(
    stmts: &[Stmt],
    defs: &mut HashMap<u32, Rc<ast::FunctionDef>>,
    lambdas: &mut HashMap<u32, Rc<LambdaDef>>,
) {
    for s in stmts {
        if let StmtKind::FunctionDef(f) = &s.kind {
            defs.insert(s.span.start, Rc::new((**f).clone()));
        }
        for child in children(Node::Stmt(s)) {
            match child {
                Node::Stmt(inner) => collect(std::slice::from_ref(inner), defs, lambdas),
                Node::Expr(e) => collect_expr(e, lambdas),
            }
        }
    }
}

/// Collects every `lambda` in `e`, keyed by start offset.
pub(crate) fn collect_expr(e: &Expr, lambdas: &mut HashMap<u32, Rc<LambdaDef>>) {
    walk_expr(e, &mut |x| {
        if let ExprKind::Lambda { params, body } = &x.kind {
            lambdas.insert(
                x.span.start,
                Rc::new(LambdaDef {
                    params: (**params).clone(),
                    body: (**body).clone(),
                    span: x.span,
                }),
            );
        }
        true
    });
}

/// Calls `f` on `e`, then, when `f` returns true, walks `e`'s
/// subexpressions ([`children`] in source order: lambda defaults and
/// bodies, comprehension targets, f-string fields and specs included) the
/// same way.
pub(crate) fn walk_expr(e: &Expr, f: &mut dyn FnMut(&Expr) -> bool) {
    if !f(e) {
        return;
    }
    for child in children(Node::Expr(e)) {
        if let Node::Expr(x) = child {
            walk_expr(x, f);
        }
    }
}

/// The names a top-level statement binds (for poisoning on failure).
fn bound_names(s: &Stmt) -> Vec<String> {
    fn targets(e: &Expr, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Name(n) => out.push(n.to_string()),
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                items.iter().for_each(|i| targets(i, out))
            }
            ExprKind::Starred(x) => targets(x, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    match &s.kind {
        StmtKind::Assign { targets: ts, .. } => ts.iter().for_each(|t| targets(t, &mut out)),
        StmtKind::AnnAssign { target, .. } | StmtKind::AugAssign { target, .. } => {
            targets(target, &mut out)
        }
        StmtKind::FunctionDef(f) => out.push(f.name.name.to_string()),
        StmtKind::ClassDef(c) => out.push(c.name.name.to_string()),
        StmtKind::Import(aliases) | StmtKind::ImportFrom { names: aliases, .. } => {
            for a in aliases {
                let name = a.asname.as_ref().unwrap_or(&a.name).name.clone();
                out.push(name.split('.').next().unwrap_or_default().to_owned());
            }
        }
        _ => {}
    }
    out
}

impl Ctx<'_> {
    /// Parses and registers a module; returns its id. Parse errors are
    /// returned (the first as the error, the rest queued).
    pub(crate) fn add_module(
        &mut self,
        name: &str,
        file: nkic_diag::FileId,
    ) -> Result<ModuleId, Diagnostic> {
        let text = self.sources.file(file).text().to_owned();
        let (module, diags) = nkic_syntax::parse(&text);
        let mut errors: Vec<Diagnostic> = diags
            .into_iter()
            .filter(|d| d.is_error())
            .map(|d| d.in_file(file))
            .collect();
        if let Some(first) = errors.first().cloned() {
            self.extra_errors.extend(errors.drain(1..));
            return Err(first);
        }
        let mut defs = HashMap::new();
        let mut lambdas = HashMap::new();
        collect(&module.body, &mut defs, &mut lambdas);
        let globals = crate::value::Scope::new(None);
        globals.set("__name__", Value::str(name));
        let id = ModuleId(self.modules.len() as u32);
        self.modules.push(ModuleState {
            name: Rc::from(name),
            file,
            ast: Rc::new(module),
            globals,
            defs,
            lambdas,
            poisoned: HashMap::new(),
        });
        Ok(id)
    }

    /// Runs a module's top level: kernel-level statements, and host-code
    /// assignments that happen to be evaluable. A failing top-level
    /// statement does not stop the module; the names it would bind are
    /// marked, and using them reports why.
    pub(crate) fn run_module(&mut self, id: ModuleId) -> Result<(), Diagnostic> {
        let state = &self.modules[id.0 as usize];
        let (ast, file, globals) = (state.ast.clone(), state.file, state.globals.clone());
        let saved_scope = std::mem::replace(&mut self.scope, globals);
        let saved_file = std::mem::replace(&mut self.file, file);
        let saved_module = std::mem::replace(&mut self.module, id);
        for (i, s) in ast.body.iter().enumerate() {
            let host = ast.is_host_code(i);
            // `try: import x` / `except ImportError: import y` at the top
            // level picks the first branch that works.
            if let StmtKind::Try { body, handlers, .. } = &s.kind {
                self.run_top_level_try(id, body, handlers);
                continue;
            }
            if host && !matches!(s.kind, StmtKind::Assign { .. } | StmtKind::AnnAssign { .. }) {
                continue;
            }
            let before = self.builder.kernel().ops.len() + self.builder.kernel().storages.len();
            if let Err(e) = self.exec_stmt(s) {
                // Broken source is always an error, even if unused, and
                // so is a removed `nki.jit` parameter on a definition.
                if e.code == codes::SYNTAX_ERRORS || e.code == codes::JIT_MISUSE {
                    self.scope = saved_scope;
                    self.file = saved_file;
                    self.module = saved_module;
                    return Err(e);
                }
                let line = self.describe(s.span);
                let reason = if host {
                    format!(
                        "it is defined by host code at {line} that cannot run at compile time: {}",
                        e.message
                    )
                } else {
                    format!(
                        "its definition at {line} failed at compile time: {}",
                        e.message
                    )
                };
                for n in bound_names(s) {
                    self.modules[id.0 as usize]
                        .poisoned
                        .insert(Rc::from(n.as_str()), reason.clone());
                }
            }
            let after = self.builder.kernel().ops.len() + self.builder.kernel().storages.len();
            if after != before {
                let e = self.error(
                    codes::UNSUPPORTED,
                    "module-level code may not create tensors or run-time operations",
                    s.span,
                    "at module level",
                );
                self.scope = saved_scope;
                self.file = saved_file;
                self.module = saved_module;
                return Err(e);
            }
        }
        self.scope = saved_scope;
        self.file = saved_file;
        self.module = saved_module;
        Ok(())
    }

    /// Runs a top-level `try` block's body; if a statement of it fails (an
    /// import of a module that is not there, typically), runs the first
    /// handler's body instead. Failures there mark the names they bind.
    fn run_top_level_try(&mut self, id: ModuleId, body: &[Stmt], handlers: &[ast::ExceptHandler]) {
        let failed = body
            .iter()
            .any(|s| self.exec_stmt(s).is_err() || self.binds_poisoned(s));
        if !failed {
            return;
        }
        let Some(h) = handlers.first() else { return };
        for s in &h.body {
            match self.exec_stmt(s) {
                Ok(_) => {
                    for n in bound_names(s) {
                        self.modules[id.0 as usize].poisoned.remove(n.as_str());
                    }
                }
                Err(e) => {
                    let reason = format!(
                        "its definition at {} failed at compile time: {}",
                        self.describe(s.span),
                        e.message
                    );
                    for n in bound_names(s) {
                        self.modules[id.0 as usize]
                            .poisoned
                            .insert(Rc::from(n.as_str()), reason.clone());
                    }
                }
            }
        }
    }

    /// True when `s` left one of its names unavailable (an import of a
    /// missing module binds nothing and marks the name instead).
    fn binds_poisoned(&self, s: &Stmt) -> bool {
        let m = &self.modules[self.module.0 as usize];
        bound_names(s)
            .iter()
            .any(|n| m.poisoned.contains_key(n.as_str()))
    }

    /// `import a.b as c, d`.
    pub(crate) fn exec_import(&mut self, aliases: &[ast::Alias]) -> Result<(), Diagnostic> {
        for a in aliases {
            let path = a.name.name.as_str();
            match &a.asname {
                Some(asname) => match self.resolve_module(path, 0, a.span)? {
                    Some(v) => self.bind_name(&asname.name, v),
                    None => self.poison(&asname.name, path),
                },
                None => {
                    let first = path.split('.').next().unwrap_or(path);
                    // Load the whole path so `a.b.c` resolves through attributes.
                    let full = self.resolve_module(path, 0, a.span)?;
                    if first == path {
                        match full {
                            Some(v) => self.bind_name(first, v),
                            None => self.poison(first, path),
                        }
                        continue;
                    }
                    let Some(full) = full else {
                        self.poison(first, path);
                        continue;
                    };
                    if let Some(Value::Namespace(_)) = self.resolve_module(first, 0, a.span)? {
                        let top = self
                            .resolve_module(first, 0, a.span)?
                            .unwrap_or(Value::None);
                        self.bind_name(first, top);
                        continue;
                    }
                    // Bind the top package, creating namespace packages
                    // for directories without `__init__.py`, and hang
                    // each submodule on its parent.
                    let parts: Vec<&str> = path.split('.').collect();
                    let mut parent = match self.scope.lookup(first) {
                        Some(Value::Module(m)) => Value::Module(m),
                        _ => match self.resolve_module(first, 0, a.span)? {
                            Some(v) => v,
                            None => self.namespace_package(first),
                        },
                    };
                    self.bind_name(first, parent.clone());
                    for k in 1..parts.len() {
                        let Value::Module(pm) = &parent else { break };
                        let child = if k + 1 == parts.len() {
                            full.clone()
                        } else {
                            let sub = parts[..=k].join(".");
                            match pm.globals.get_local(parts[k]) {
                                Some(v @ Value::Module(_)) => v,
                                _ => match self.resolve_module(&sub, 0, a.span)? {
                                    Some(v) => v,
                                    None => self.namespace_package(&sub),
                                },
                            }
                        };
                        pm.globals.set(parts[k], child.clone());
                        parent = child;
                    }
                }
            }
        }
        Ok(())
    }

    /// An empty module standing for a package directory without
    /// `__init__.py` (a namespace package).
    fn namespace_package(&mut self, name: &str) -> Value {
        let id = ModuleId(self.modules.len() as u32);
        let globals = crate::value::Scope::new(None);
        globals.set("__name__", Value::str(name));
        self.modules.push(ModuleState {
            name: Rc::from(name),
            file: self.file,
            ast: Rc::new(ast::Module {
                body: Vec::new(),
                span: Span::default(),
                host_code: Vec::new(),
            }),
            globals,
            defs: HashMap::new(),
            lambdas: HashMap::new(),
            poisoned: HashMap::new(),
        });
        self.module_value(id)
    }

    fn poison(&mut self, name: &str, module: &str) {
        let reason = format!(
            "module `{module}` is not available at compile time (not an NKI module, and no file for it was found)"
        );
        let id = self.module.0 as usize;
        self.modules[id].poisoned.insert(Rc::from(name), reason);
        self.scope.remove(name);
    }

    /// `from module import names`.
    pub(crate) fn exec_import_from(
        &mut self,
        module: Option<&ast::Ident>,
        names: &[ast::Alias],
        level: u32,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let path = module.map_or("", |m| m.name.as_str());
        let base = if path.is_empty() {
            None
        } else {
            self.resolve_module(path, level, span)?
        };
        if !path.is_empty() && base.is_none() {
            // A namespace package: the names may still be submodules.
            for a in names {
                let bind = a.asname.as_ref().unwrap_or(&a.name).name.clone();
                let sub = format!("{path}.{}", a.name.name);
                match self.resolve_module(&sub, level, a.span)? {
                    Some(v) if a.name.name != "*" => self.bind_name(&bind, v),
                    _ => self.poison(&bind, path),
                }
            }
            return Ok(());
        }
        for a in names {
            let name = a.name.name.as_str();
            if name == "*" {
                let Some(Value::Module(m)) = &base else {
                    return Err(self.unsupported("`import *` from an NKI namespace", a.span));
                };
                let mut items: Vec<(Rc<str>, Value)> = m
                    .globals
                    .vars
                    .borrow()
                    .iter()
                    .filter(|(k, _)| !k.starts_with('_'))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                items.sort_by(|a, b| a.0.cmp(&b.0));
                for (k, v) in items {
                    self.bind_name(&k, v);
                }
                continue;
            }
            let bind = a.asname.as_ref().unwrap_or(&a.name).name.clone();
            let value = match &base {
                // `from nki.isa import constants`: a submodule of a
                // compiler namespace.
                Some(Value::Namespace(_))
                    if let Some(ns) = compiler_namespace(&format!("{path}.{name}")) =>
                {
                    Some(Value::Namespace(ns))
                }
                Some(b @ Value::Namespace(_)) => Some(self.get_attr(b, name, a.name.span)?),
                Some(Value::Module(m)) => match m.globals.get_local(name) {
                    Some(v) => Some(v),
                    None => {
                        let sub = format!("{path}.{name}");
                        self.resolve_module(&sub, level, a.span)?
                    }
                },
                _ => self.resolve_module(name, level.max(1), a.span)?,
            };
            match value {
                Some(v) => self.bind_name(&bind, v),
                None => {
                    return Err(self.error(
                        codes::IMPORT_ERROR,
                        format!(
                            "cannot import `{name}` from `{}`",
                            if path.is_empty() { "." } else { path }
                        ),
                        a.span,
                        "not found",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Resolves a module path to a compiler namespace or a loaded user
    /// module; `None` when there is no such module.
    pub(crate) fn resolve_module(
        &mut self,
        path: &str,
        level: u32,
        span: Span,
    ) -> Result<Option<Value>, Diagnostic> {
        if level == 0
            && let Some(ns) = compiler_namespace(path)
        {
            return Ok(Some(Value::Namespace(ns)));
        }
        let rel = path.replace('.', "/");
        let importer = self.sources.file(self.file).name().to_owned();
        let roots: Vec<String> = if level == 0 {
            let main = self
                .modules
                .first()
                .map(|m| self.sources.file(m.file).name().to_owned())
                .unwrap_or_default();
            let mut r = vec![dir_of(&main).to_owned()];
            r.extend(self.config.search_paths.iter().cloned());
            r
        } else {
            let mut dir = dir_of(&importer).to_owned();
            for _ in 1..level {
                dir = dir_of(&dir).to_owned();
            }
            vec![dir]
        };
        for root in roots {
            for cand in [
                join(&root, &format!("{rel}.py")),
                join(&root, &format!("{rel}/__init__.py")),
            ] {
                if let Some(&id) = self.module_paths.get(&cand) {
                    return Ok(Some(self.module_value(id)));
                }
                let text = match self.loader.read_source(&cand) {
                    Ok(Some(text)) => text,
                    Ok(None) => continue,
                    Err(bad) => {
                        let (at, offset) = (bad.span(), bad.offset);
                        let file = self.sources.add(cand.clone(), bad.lossy);
                        return Err(self
                            .error(
                                codes::SYNTAX_ERRORS,
                                format!("module `{path}` is not valid UTF-8"),
                                span,
                                "imported here",
                            )
                            .with_secondary(
                                file,
                                at,
                                format!("the first invalid byte, at offset {offset}"),
                            ));
                    }
                };
                let file = match self.sources.find(&cand) {
                    Some(f) if self.sources.file(f).text() == text => f,
                    _ => self.sources.add(cand.clone(), text),
                };
                let name = if path.is_empty() {
                    cand.clone()
                } else {
                    path.to_owned()
                };
                let id = match self.add_module(&name, file) {
                    Ok(id) => id,
                    Err(first) => {
                        self.extra_errors.insert(0, first);
                        return Err(self.error(
                            codes::SYNTAX_ERRORS,
                            format!("module `{path}` has syntax errors"),
                            span,
                            "imported here",
                        ));
                    }
                };
                self.module_paths.insert(cand.clone(), id);
                self.run_module(id).map_err(|e| {
                    e.with_note(format!(
                        "while importing `{path}` at {}",
                        self.describe(span)
                    ))
                })?;
                // A submodule becomes an attribute of its loaded package.
                if let Some((parent, last)) = path.rsplit_once('.') {
                    let parent_rel = parent.replace('.', "/");
                    for pc in [
                        join(&root, &format!("{parent_rel}/__init__.py")),
                        join(&root, &format!("{parent_rel}.py")),
                    ] {
                        if let Some(&pid) = self.module_paths.get(&pc) {
                            let v = self.module_value(id);
                            self.modules[pid.0 as usize].globals.set(last, v);
                        }
                    }
                }
                return Ok(Some(self.module_value(id)));
            }
        }
        // A package directory without `__init__.py` still holds submodules.
        Ok(None)
    }

    fn module_value(&self, id: ModuleId) -> Value {
        let m = &self.modules[id.0 as usize];
        Value::Module(Rc::new(ModuleValue {
            id,
            name: m.name.clone(),
            globals: m.globals.clone(),
        }))
    }
}
