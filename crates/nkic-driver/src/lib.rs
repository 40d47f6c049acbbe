//! The pipeline of nkic as library functions, shared by the command line
//! (`nkic check`, `compile`, `run`, `profile`), the language server
//! (`nkic lsp`, front half only) and the Python package (`nkic-python`), so
//! that none of them can disagree about a kernel.
//!
//! * [`pipeline`]: the one run of the stages on a kernel file, up to a
//!   stop point (syntax, specialized, compiled), that every command and the
//!   Python package call.
//! * [`front_half`]: parse a kernel file, decide where its example
//!   arguments come from, and specialize it when they are known (below);
//!   the language server calls it alone.
//! * [`compile`]: a specialization result through the backend to a launch.
//! * [`simulate`]: a launch in the reference interpreter; faults as
//!   diagnostics at the kernel's source line.
//! * [`simio`]: what callers do around a run (the interpreter's options,
//!   random values for the arguments not given, warnings about undefined
//!   outputs), so the command line and the Python package share it.
//! * [`report`], [`profile`], [`trace`], [`svg`]: the run report, the
//!   profile summary, `trace.json` and `timeline.svg`, as values and text.
//!
//! Where the front half's arguments come from:
//!
//! 1. the caller's explicit settings (command-line flags) win;
//! 2. then the kernel's own `# nkic:` directive comments (read by the
//!    specializer);
//! 3. for a file with no directive comments at all, the entry for the file
//!    in the `nkic.toml` next to it ([`manifest`]).
//!
//! With none of these only the syntax is checked, and the result carries
//! the `I0001` information diagnostic that says so (the caller decides
//! whether to show it).
//!
//! # Invariants
//!
//! * No IO: the manifest, imported modules and the sources a runtime fault
//!   points into are read through the caller's [`ModuleLoader`], by
//!   `/`-separated paths built from the kernel file's name in the
//!   `SourceMap`; reports and traces are returned as text, never written.
//! * Compile-time `print` output is returned (in the specializer's
//!   result), never printed.

pub mod compile;
pub mod manifest;
pub mod pipeline;
pub mod profile;
pub mod report;
pub mod simio;
pub mod simulate;
pub mod svg;
pub mod trace;

use nkic_diag::{Diagnostic, FileId, SourceMap};
use nkic_specialize::{ModuleLoader, SpecializeConfig, SpecializeResult};

pub use pipeline::{Outcome, Stage, Stop, pipeline};

/// The code of the information diagnostic for a file checked for syntax
/// only.
pub const SYNTAX_ONLY: &str = "I0001";

/// What the front half found.
#[derive(Debug, Default)]
pub struct FrontHalf {
    /// Every error and warning in order: the manifest's, then syntax and
    /// specialization (the latter also kept in `result.diagnostics`).
    pub diagnostics: Vec<Diagnostic>,
    /// Set when only the syntax was checked because no kernel arguments
    /// are known and the syntax is fine: the `I0001` information
    /// diagnostic explaining that.
    pub syntax_only: Option<Diagnostic>,
    /// The specializer's result; `None` when the file was not specialized
    /// (no arguments known, or a broken manifest entry).
    pub result: Option<SpecializeResult>,
}

impl FrontHalf {
    /// True when an error was reported.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Whether the caller's settings ask for specialization by themselves.
pub fn is_explicit(config: &SpecializeConfig) -> bool {
    config.kernel.is_some()
        || !config.args.is_empty()
        || !config.consts.is_empty()
        || !config.grid.is_empty()
}

/// Whether a kernel file carries `# nkic:` directive comments. Lines end at
/// `\n`, `\r\n` or a lone `\r`, as in Python and the `SourceMap`.
pub fn has_directives(text: &str) -> bool {
    text.split(['\n', '\r']).any(|line| {
        line.trim_start()
            .strip_prefix('#')
            .is_some_and(|rest| rest.trim_start().starts_with("nkic:"))
    })
}

/// Runs the front half on `file` of `sources` with the caller's explicit
/// `config` (see the module doc for where arguments come from).
pub fn front_half(
    sources: &mut SourceMap,
    file: FileId,
    config: &SpecializeConfig,
    loader: &dyn ModuleLoader,
) -> FrontHalf {
    let mut out = FrontHalf::default();
    let mut config = config.clone();
    let text = sources.file(file).text();
    let mut known = is_explicit(&config) || has_directives(text);
    if !has_directives(text) {
        let kernel_path = sources.file(file).name().to_owned();
        let manifest_path = manifest::path_next_to(&kernel_path);
        let read = loader
            .read_source(&manifest_path)
            .map_err(|err| vec![manifest::not_utf8(&manifest_path, err, sources)]);
        if let Some(found) = read.transpose() {
            match found.and_then(|manifest_text| {
                manifest::entry_for(&kernel_path, &manifest_path, &manifest_text, sources)
            }) {
                Ok(Some(entry)) => {
                    apply(&mut config, entry);
                    known = true;
                }
                Ok(None) => {}
                Err(diags) => {
                    out.diagnostics = diags;
                    let (_, syntax) = nkic_syntax::parse(sources.file(file).text());
                    out.diagnostics
                        .extend(syntax.into_iter().map(|d| d.in_file(file)));
                    return out;
                }
            }
        }
    }
    if !known {
        let (_module, diags) = nkic_syntax::parse(sources.file(file).text());
        out.diagnostics = diags.into_iter().map(|d| d.in_file(file)).collect();
        if !out.has_errors() {
            out.syntax_only = Some(syntax_only_note(sources.file(file).name()));
        }
        return out;
    }
    let result = nkic_specialize::specialize(sources, file, &config, loader);
    out.diagnostics.extend(result.diagnostics.iter().cloned());
    out.result = Some(result);
    out
}

/// The `I0001` note for a file checked for syntax only.
pub fn syntax_only_note(name: &str) -> Diagnostic {
    Diagnostic::info(
        SYNTAX_ONLY,
        format!("`{name}` was only checked for syntax: no kernel arguments are known"),
    )
    .with_help("pass `--arg NAME=DTYPE[SHAPE]`, write `# nkic: args a=float32[128,512]` directly above the kernel, or give the file an entry in a `nkic.toml` next to it")
}

/// Fills the settings the caller left unset from a manifest entry, with
/// the merge the specializer applies to directive comments.
fn apply(config: &mut SpecializeConfig, entry: manifest::Entry) {
    if config.kernel.is_none() {
        config.kernel = entry.kernel;
    }
    nkic_specialize::fill_unset(config, entry.settings);
}

#[cfg(test)]
mod tests {
    use super::*;
    use nkic_specialize::{ArgSpec, NoModules};

    const KERNEL: &str = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n@nki.jit\ndef copy(a):\n    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)\n    nisa.dma_copy(dst=out, src=a)\n    return out\n";

    fn loader(manifest: &'static str) -> impl Fn(&str) -> Option<String> {
        move |path: &str| (path == "dir/nkic.toml").then(|| manifest.to_owned())
    }

    /// The front half on `dir/copy.py` holding `kernel`, with `manifest`
    /// as the `nkic.toml` next to it and no flags.
    fn with_manifest(kernel: &str, manifest: &'static str) -> (SourceMap, FileId, FrontHalf) {
        let mut sources = SourceMap::new();
        let file = sources.add("dir/copy.py", kernel);
        let fh = front_half(
            &mut sources,
            file,
            &SpecializeConfig::default(),
            &loader(manifest),
        );
        (sources, file, fh)
    }

    #[test]
    fn without_arguments_only_syntax_is_checked() {
        let mut sources = SourceMap::new();
        let file = sources.add("dir/copy.py", KERNEL);
        let fh = front_half(&mut sources, file, &SpecializeConfig::default(), &NoModules);
        assert!(fh.result.is_none());
        assert!(fh.diagnostics.is_empty());
        let note = fh.syntax_only.unwrap();
        assert_eq!(note.code, SYNTAX_ONLY);
        assert!(note.message.contains("dir/copy.py"));
    }

    #[test]
    fn a_syntax_error_suppresses_the_note() {
        let mut sources = SourceMap::new();
        let file = sources.add("bad.py", "def f(:\n");
        let fh = front_half(&mut sources, file, &SpecializeConfig::default(), &NoModules);
        assert!(fh.has_errors());
        assert!(fh.syntax_only.is_none());
    }

    #[test]
    fn explicit_arguments_and_directives_specialize() {
        let mut sources = SourceMap::new();
        let file = sources.add("copy.py", KERNEL);
        let config = SpecializeConfig {
            args: vec!["a=float32[128,64]".parse::<ArgSpec>().unwrap()],
            ..SpecializeConfig::default()
        };
        let fh = front_half(&mut sources, file, &config, &NoModules);
        assert!(!fh.has_errors(), "{:?}", fh.diagnostics);
        assert_eq!(fh.result.unwrap().kernels.len(), 1);

        let with_dirs = KERNEL.replace("@nki.jit", "# nkic: args a=float32[4,8]\n@nki.jit");
        let file = sources.add("copy2.py", with_dirs);
        let fh = front_half(&mut sources, file, &SpecializeConfig::default(), &NoModules);
        let result = fh.result.unwrap();
        assert_eq!(result.config.args[0].shape, vec![4, 8]);
    }

    #[test]
    fn the_manifest_supplies_arguments_and_flags_override_it() {
        let manifest = "[\"copy.py\"]\nargs = [\"a=float32[16,32]\"]\ngrid = [2]\n";
        let (mut sources, file, fh) = with_manifest(KERNEL, manifest);
        assert!(!fh.has_errors(), "{:?}", fh.diagnostics);
        let result = fh.result.unwrap();
        assert_eq!(result.config.args[0].shape, vec![16, 32]);
        assert_eq!(result.kernels.len(), 2);

        let config = SpecializeConfig {
            args: vec!["a=float32[8,8]".parse::<ArgSpec>().unwrap()],
            ..SpecializeConfig::default()
        };
        let fh = front_half(&mut sources, file, &config, &loader(manifest));
        let result = fh.result.unwrap();
        assert_eq!(result.config.args.len(), 1);
        assert_eq!(result.config.args[0].shape, vec![8, 8]);
    }

    #[test]
    fn a_broken_manifest_entry_is_an_error_and_stops_specialization() {
        let manifest = "[\"copy.py\"]\nargs = [\"a=float32[x]\"]\n";
        let (sources, _, fh) = with_manifest(KERNEL, manifest);
        assert!(fh.result.is_none());
        assert_eq!(fh.diagnostics.len(), 1);
        assert_eq!(fh.diagnostics[0].code, manifest::CODE);
        let label = fh.diagnostics[0].primary.as_ref().unwrap();
        assert_eq!(sources.file(label.file).name(), "dir/nkic.toml");
    }

    #[test]
    fn directives_in_the_file_win_over_the_manifest() {
        let manifest = "[\"copy.py\"]\nargs = [\"a=float32[16,32]\"]\n";
        let with_dirs = KERNEL.replace("@nki.jit", "# nkic: args a=float32[4,8]\n@nki.jit");
        let (_, _, fh) = with_manifest(&with_dirs, manifest);
        assert_eq!(fh.result.unwrap().config.args[0].shape, vec![4, 8]);
    }
}
