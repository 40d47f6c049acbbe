//! The whole pipeline on one kernel file, stopped at a chosen stage: the
//! one function `nkic check`, `compile`, `run` and `profile` and the Python
//! package call, so that no caller runs the back half itself and `check`
//! passes nothing that `run` would reject before simulating.
//!
//! The stages, in order: parse ([`Stop::Syntax`]); the front half
//! ([`crate::front_half`]: example arguments, specialization;
//! [`Stop::Specialized`]); the backend's checks
//! ([`crate::compile::check_kernels`]: every diagnostic of the next stage,
//! without the steps that cannot report one; [`Stop::Checked`]); the
//! backend ([`crate::compile::compile_kernels`]: the launch's cores,
//! allocation, lowering, scheduling, the program verifier;
//! [`Stop::Compiled`]). Simulation is not a stage here: its
//! inputs and outputs are the caller's (files for the command line, arrays
//! for Python), and it runs on [`Stage::Compiled`] through
//! [`crate::simulate`].

use nkic_backend::BackendConfig;
use nkic_diag::{Diagnostic, FileId, SourceMap};
use nkic_ir::Kernel;
use nkic_specialize::{ModuleLoader, Print, SpecializeConfig, SpecializeResult};
use nkic_syntax::ast;

use crate::compile::{Compiled, check_kernels, compile_kernels};

/// The last stage [`pipeline`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    /// Parse only (`nkic compile --emit ast`).
    Syntax,
    /// Through specialization (`nkic compile --emit ir`).
    Specialized,
    /// Through the backend's checks (`nkic check`): the diagnostics of
    /// [`Stop::Compiled`], without a program.
    Checked,
    /// Through the backend (`compile --emit asm`, `run`, `profile`, the
    /// Python package).
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
    /// The backend's checks found no error; the specialized kernels they
    /// checked (a large kernel's take a while to free: a caller about to
    /// exit may leave them to the exit).
    Checked(Vec<Kernel>),
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
    if stop == Stop::Checked {
        match check_kernels(
            &result.kernels,
            &result.config.grid,
            result.config.lnc,
            sources,
            backend,
        ) {
            Ok(warnings) => {
                out.diagnostics.extend(warnings);
                out.stage = Stage::Checked(result.kernels);
            }
            Err(diags) => out.diagnostics.extend(diags),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use nkic_specialize::{ArgSpec, NoModules};

    const KERNEL: &str = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n@nki.jit\ndef copy(a):\n    print('shape', a.shape)\n    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)\n    nisa.dma_copy(dst=out, src=a)\n    return out\n";

    fn run(stop: Stop, config: &SpecializeConfig) -> (Outcome, SourceMap) {
        let mut sources = SourceMap::new();
        let file = sources.add("copy.py", KERNEL);
        let outcome = pipeline(
            &mut sources,
            file,
            config,
            &BackendConfig::default(),
            &NoModules,
            stop,
        );
        (outcome, sources)
    }

    fn with_args(grid: &[u32], lnc: Option<u32>) -> SpecializeConfig {
        SpecializeConfig {
            args: vec!["a=float32[128,64]".parse::<ArgSpec>().expect("an argument")],
            grid: grid.to_vec(),
            lnc,
            ..SpecializeConfig::default()
        }
    }

    #[test]
    fn each_stop_point_yields_its_stage() {
        let config = with_args(&[], None);
        let (outcome, _) = run(Stop::Syntax, &config);
        assert!(matches!(outcome.stage, Stage::Syntax(_)));
        assert!(outcome.diagnostics.is_empty() && outcome.prints.is_empty());

        let (outcome, sources) = run(Stop::Specialized, &config);
        let texts: Vec<&str> = outcome.prints.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["shape (128, 64)"]);
        let Stage::Specialized(result) = outcome.stage else {
            panic!("not specialized: {:?}", outcome.diagnostics);
        };
        let ir = ir_text(&result.kernels, &sources);

        let (outcome, sources) = run(Stop::Compiled, &config);
        assert_eq!(outcome.prints.len(), 1);
        let Stage::Compiled(compiled) = outcome.stage else {
            panic!("not compiled: {:?}", outcome.diagnostics);
        };
        assert!(outcome.diagnostics.is_empty());
        assert_eq!(compiled.launch.cores.len(), 1);
        assert_eq!(ir_text(&compiled.kernels, &sources), ir);

        let (outcome, sources) = run(Stop::Checked, &config);
        assert_eq!(outcome.prints.len(), 1);
        let Stage::Checked(kernels) = outcome.stage else {
            panic!("not checked: {:?}", outcome.diagnostics);
        };
        assert_eq!(ir_text(&kernels, &sources), ir);
        assert!(outcome.diagnostics.is_empty());
    }

    /// A launch the backend refuses ends the pipeline with its error after
    /// the front half's diagnostics, as a front-half error would: what
    /// `check` stops at is what `run` stops at.
    #[test]
    fn backend_errors_end_the_pipeline() {
        let (outcome, _) = run(Stop::Compiled, &with_args(&[3], Some(2)));
        let codes: Vec<&str> = outcome.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["E1020"]);
        assert!(outcome.has_errors());
        assert!(matches!(outcome.stage, Stage::Nothing));
        let (checked, _) = run(Stop::Checked, &with_args(&[3], Some(2)));
        assert_eq!(checked.diagnostics, outcome.diagnostics);
        assert!(matches!(checked.stage, Stage::Nothing));
        // Specialization alone does not choose cores.
        let (outcome, _) = run(Stop::Specialized, &with_args(&[3], Some(2)));
        assert!(matches!(outcome.stage, Stage::Specialized(_)));
    }

    #[test]
    fn unknown_arguments_stop_after_the_syntax_with_the_note() {
        let (outcome, _) = run(Stop::Compiled, &SpecializeConfig::default());
        assert!(matches!(outcome.stage, Stage::Nothing));
        assert!(outcome.diagnostics.is_empty());
        assert_eq!(
            outcome.syntax_only.map(|d| d.code),
            Some(crate::SYNTAX_ONLY)
        );
    }
}
