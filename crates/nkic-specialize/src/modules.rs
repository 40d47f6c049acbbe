//! Loaded modules: the kernel file and every user module it imports, each
//! parsed and evaluated once per program instance.

use std::collections::HashMap;
use std::rc::Rc;

use nkic_diag::FileId;
use nkic_syntax::ast;

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
