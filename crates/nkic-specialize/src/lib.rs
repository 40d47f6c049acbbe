//! The meta-evaluator of nkic: runs an NKI kernel's compile-time language
//! for given argument shapes, dtypes and constants, and records every
//! run-time operation into the tile IR (`nkic_ir::Kernel`).
//!
//! # Code map
//!
//! * [`value`]: compile-time values ([`Value`]), including tensors (an
//!   `nkic_ir` view plus the NKI shape), registers, `nl.ds` slices and
//!   legacy index grids.
//! * [`ctx`]: [`Ctx`], the evaluator's state and the interface the API
//!   layer uses.
//! * `eval`: statements, expressions, calls and operators.
//! * [`args`]: [`CallArgs`], evaluated call arguments with spans, and the
//!   binder to a signature.
//! * [`api`]: the NKI API surface (`nl.*`, `nisa.*`, tensor views); its
//!   module doc states the contract between it and the evaluator.
//! * `intrinsics`: the `nl` names the evaluator implements (iterators,
//!   dynamic loops, SPMD queries, `no_reorder`, `ds`, index grids).
//! * `builtins`: Python builtins and the standard-library subset.
//! * [`format`]: `str`/`repr` and f-string format specs.
//! * `modules`: loaded modules and imports.
//! * [`config`]: [`SpecializeConfig`], argument specs, [`ModuleLoader`].
//! * [`directives`]: the `# nkic:` comments above a kernel.
//! * `kernel`: [`specialize`], the front-half pipeline (kernel entry, SPMD).
//! * [`facts`]: the hover side table for the language server.
//! * [`codes`]: the stable diagnostic codes (E0200–E0499; the API layer
//!   uses E0500–E0899).
//!
//! # Use
//!
//! The CLI and the language server call [`specialize`] with the sources
//! in a `SourceMap`, a [`SpecializeConfig`] and a [`ModuleLoader`] (the only
//! way this crate sees other files):
//!
//! ```
//! use nkic_diag::SourceMap;
//! use nkic_specialize::{NoModules, SpecializeConfig, specialize};
//!
//! let src = concat!(
//!     "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n",
//!     "# nkic: args a=float32[128,64]\n",
//!     "@nki.jit\n",
//!     "def copy(a):\n",
//!     "    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)\n",
//!     "    print(f\"copying {a.shape}\")\n",
//!     "    nisa.dma_copy(dst=out, src=a)\n",
//!     "    return out\n",
//! );
//! let mut sources = SourceMap::new();
//! let file = sources.add("copy.py", src);
//! let res = specialize(&mut sources, file, &SpecializeConfig::default(), &NoModules);
//! assert!(!res.has_errors());
//! assert_eq!(res.kernels.len(), 1);
//! assert_eq!(res.kernels[0].ops.len(), 1);
//! assert_eq!(res.kernels[0].outputs.len(), 1);
//! assert_eq!(res.prints[0].location, "copy.py:9");
//! assert_eq!(res.prints[0].text, "copying (128, 64)");
//! ```
//!
//! `SpecializeResult::kernels` holds one kernel per program instance of
//! the launch grid; `diagnostics` holds every error and warning (an error
//! means `kernels` is empty); `prints` the compile-time output, each with
//! the `file:line` to print before it; `facts` the hover table when
//! `record_facts` is set; `config` the configuration completed from the
//! kernel's `# nkic:` directives. `directives::parse_grid`,
//! `ArgSpec::from_str` and `ConstValue::parse_binding` parse the command
//! line forms.
//!
//! # Invariants
//!
//! * This crate does no IO: module texts come from a [`ModuleLoader`],
//!   prints are returned as data.
//! * Every error a kernel can cause is a `Diagnostic` with a span; nothing
//!   here panics on user input.
//! * Output is deterministic: nothing iterated from a `HashMap` reaches
//!   the IR, the prints or the diagnostics.

pub mod api;
pub mod args;
mod budget;
mod builtins;
pub mod codes;
pub mod config;
pub mod ctx;
pub mod directives;
mod eval;
pub mod facts;
pub mod format;
mod intrinsics;
mod kernel;
mod modules;
pub mod value;

use nkic_diag::{FileId, Span};

pub use args::{Arg, CallArgs};
pub use builtins::Builtin;
pub use config::{
    ArgSpec, ConstValue, HostFile, ModuleLoader, NoModules, NotUtf8, SpecializeConfig,
};
pub use ctx::Ctx;
pub use facts::{Fact, Facts};
pub use intrinsics::Intrinsic;
pub use kernel::{STACK_BYTES, SpecializeResult, fill_unset, on_deep_stack, specialize};
pub use value::Value;

/// One line of compile-time `print` output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Print {
    pub file: FileId,
    pub span: Span,
    /// `kernel.py:12`, the prefix the CLI prints before the text.
    pub location: String,
    /// The index of the program instance that printed it (row-major over
    /// the grid; 0 without a grid).
    pub program: usize,
    pub text: String,
}
