//! One run of the front half over a snapshot of a document: the same
//! [`nkic_driver::front_half`] the command line calls, with the hover
//! table recorded, plus the document's syntax tree for the editor's
//! structural features.

use std::collections::BTreeMap;

use nkic_diag::{Diagnostic, FileId, SourceMap, Span};
use nkic_driver::FrontHalf;
use nkic_specialize::SpecializeConfig;
use nkic_syntax::ast::{Module, StmtKind};

use crate::syntax;

/// The results of analysing one version of one document.
#[derive(Debug)]
pub struct Analysis {
    /// The document version analysed.
    pub version: i32,
    /// The document and every file the front half read (imports,
    /// `nkic.toml`).
    pub sources: SourceMap,
    /// The document's id in `sources`.
    pub file: FileId,
    /// The document's syntax tree.
    pub module: Module,
    pub front: FrontHalf,
}

impl Analysis {
    /// Runs the front half on `text`, the document named `path` (a file
    /// path when the document is a file, else its URI). Imported modules
    /// and `nkic.toml` come from `open` (the editor's unsaved texts, by
    /// path) or else from the disk.
    pub fn run(path: &str, text: &str, version: i32, open: &BTreeMap<String, String>) -> Analysis {
        let mut sources = SourceMap::new();
        let file = sources.add(path, text);
        let (module, _) = nkic_syntax::parse(text);
        let config = SpecializeConfig {
            record_facts: true,
            ..SpecializeConfig::default()
        };
        let loader = crate::files::DiskLoader { open };
        let front = nkic_driver::front_half(&mut sources, file, &config, &loader);
        Analysis {
            version,
            sources,
            file,
            module,
            front,
        }
    }

    /// The analysis of a document whose front half crashed: its syntax
    /// tree for the structural features, and `diagnostic` saying what
    /// happened.
    pub fn failed(path: &str, text: &str, version: i32, diagnostic: Diagnostic) -> Analysis {
        let mut sources = SourceMap::new();
        let file = sources.add(path, text);
        let (module, _) = nkic_syntax::parse(text);
        Analysis {
            version,
            sources,
            file,
            module,
            front: FrontHalf {
                diagnostics: vec![diagnostic],
                ..FrontHalf::default()
            },
        }
    }

    /// Where diagnostics without a place in the document are shown: the
    /// name of the kernel function (the first `@nki.jit` function, else
    /// the first function), or the start of the file.
    pub fn anchor(&self) -> Span {
        let mut first = None;
        for s in &self.module.body {
            if let StmtKind::FunctionDef(f) = &s.kind {
                if f.decorators.iter().any(syntax::is_kernel_decorator) {
                    return f.name.span;
                }
                first.get_or_insert(f.name.span);
            }
        }
        first.unwrap_or_default()
    }

    /// Every diagnostic to publish for the document, including the
    /// information that only the syntax was checked.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out = self.front.diagnostics.clone();
        if let Some(note) = &self.front.syntax_only {
            out.push(note.clone().with_primary(
                self.file,
                self.anchor(),
                "no example arguments for this kernel",
            ));
        }
        out
    }
}
