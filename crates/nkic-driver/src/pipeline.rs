//! The whole pipeline on one kernel file, stopped at a chosen stage: the
//! one function `nkic check`, `compile`, `run` and `profile` and the Python
//! package call, so that no caller runs the back half itself and `check`
//! passes nothing that `run` would reject before simulating.
//!
//! The stages, in order: parse ([`Stop::Syntax`]); the front half
//! ([`crate::front_half`]: example arguments, specialization;
//! [`Stop::Specialized`]); the backend ([`crate::compile::compile_kernels`]:
//! the launch's cores, allocation, lowering, scheduling, the program
//! verifier; [`Stop::Compiled`]). Simulation is not a stage here: its
//! inputs and outputs are the caller's (files for the command line, arrays
//! for Python), and it runs on [`Stage::Compiled`] through
//! [`crate::simulate`].

use nkic_backend::BackendConfig;
use nkic_diag::{Diagnostic, FileId, SourceMap};
use nkic_ir::Kernel;
use nkic_specialize::{ModuleLoader, Print, SpecializeConfig, SpecializeResult};
use nkic_syntax::ast;

use crate::compile::{Compiled, compile_kernels};

/// The last stage [`pipeline`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    /// Parse only (`nkic compile --emit ast`).
    Syntax,
    /// Through specialization (`nkic compile --emit ir`).
    Specialized,
    /// Through the backend (`check`, `compile --emit asm`, `run`,
    /// `profile`, the Python package).
    Compiled,
}

/// What the last stage that ran produced.
#[derive(Debug, Default)]
pub enum Stage {
    /// Nothing to go on with: a stage reported errors, or the kernel's
    /// arguments are not known (then `Outcome::syntax_only` says so).
    #[default]
    Nothing,
    /// The syntax tree, with error nodes where parsing recovered.
    Syntax(ast::Module),
    /// A specialization without errors (its `prints` are moved to
    /// [`Outcome::prints`]).
    Specialized(Box<SpecializeResult>),
    /// The compiled launch.
    Compiled(Compiled),
}

/// The result of [`pipeline`].
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every error and warning in the order the stages found them: the
    /// front half's (manifest, syntax, specialization), then the
    /// backend's errors, or its warnings when it compiled.
    pub diagnostics: Vec<Diagnostic>,
    /// The `I0001` note when only the syntax was checked (see
    /// [`crate::FrontHalf::syntax_only`]).
    pub syntax_only: Option<Diagnostic>,
    /// Compile-time `print` output, in order.
    pub prints: Vec<Print>,
    pub stage: Stage,
}

impl Outcome {
    /// True when an error was reported.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Runs the pipeline on `file` of `sources` up to `stop`, with the
/// caller's explicit settings `config` (completed as [`crate::front_half`]
/// says) and the backend's `backend`.
pub fn pipeline(
    sources: &mut SourceMap,
    file: FileId,
    config: &SpecializeConfig,
    backend: &BackendConfig,
    loader: &dyn ModuleLoader,
    stop: Stop,
) -> Outcome {
    if stop == Stop::Syntax {
        let (module, diags) = nkic_syntax::parse(sources.file(file).text());
        return Outcome {
            diagnostics: diags.into_iter().map(|d| d.in_file(file)).collect(),
            stage: Stage::Syntax(module),
            ..Outcome::default()
        };
    }
    let front = crate::front_half(sources, file, config, loader);
    let mut out = Outcome {
        syntax_only: front.syntax_only,
        diagnostics: front.diagnostics,
        ..Outcome::default()
    };
    let Some(mut result) = front.result else {
        return out;
    };
    out.prints = std::mem::take(&mut result.prints);
    if result.has_errors() {
        return out;
    }
    if stop == Stop::Specialized {
        out.stage = Stage::Specialized(Box::new(result));
        return out;
    }
    match compile_kernels(
        result.kernels,
        &result.config.grid,
        result.config.lnc,
        sources,
        backend,
    ) {
        Ok(compiled) => {
            out.diagnostics.extend(compiled.warnings.iter().cloned());
            out.stage = Stage::Compiled(compiled);
        }
        Err(diags) => out.diagnostics.extend(diags),
    }
    out
}

/// The tile IR text of the specialized program instances `kernels`, with
/// a `# program instance i` heading each when there are several.
pub fn ir_text(kernels: &[Kernel], sources: &SourceMap) -> String {
    let options = nkic_ir::PrintOptions {
        sources: Some(sources),
    };
    let mut out = String::new();
    for (i, kernel) in kernels.iter().enumerate() {
        if kernels.len() > 1 {
            out.push_str(&format!("# program instance {i}\n"));
        }
        out.push_str(&nkic_ir::print_with(kernel, options));
    }
    out
}
