//! Printing diagnostics: human text on stderr, or JSON lines on stdout.

use std::io::{IsTerminal, Write};

use nkic_diag::{Diagnostic, RenderConfig, Renderer, SourceMap, render_json};

/// The most errors, and the most other diagnostics, one command prints; the
/// rest are counted in a final note (a file with an error on each of a
/// million lines must not print a million reports). Errors not shown still
/// make the exit code 1. Errors have their own budget so that a flood of
/// warnings never hides the error that stopped the command.
pub const MAX_SHOWN: usize = 1000;

/// How diagnostics are printed (`--message-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MessageFormat {
    /// Drawn for a person, on stderr.
    Human,
    /// One JSON object per line, on stdout, for editors and tools.
    Json,
}

/// Collects diagnostics of one command and prints them as they come.
pub struct Reporter {
    format: MessageFormat,
    config: RenderConfig,
    errors: usize,
    warnings: usize,
    /// Errors and other diagnostics printed so far, and those left out
    /// after [`MAX_SHOWN`] of their kind.
    shown_errors: usize,
    shown_others: usize,
    hidden: usize,
    renderer: Renderer,
}

impl Reporter {
    pub fn new(format: MessageFormat) -> Reporter {
        // Colour only on a terminal, and never when NO_COLOR is set to
        // anything non-empty (https://no-color.org).
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = !no_color && std::io::stderr().is_terminal();
        Reporter {
            format,
            config: RenderConfig {
                color,
                unicode: color,
            },
            errors: 0,
            warnings: 0,
            shown_errors: 0,
            shown_others: 0,
            hidden: 0,
            renderer: Renderer::default(),
        }
    }

    /// The value of `result`, or `None` once its error is reported.
    pub fn ok<T>(&mut self, result: Result<T, Diagnostic>, sources: &SourceMap) -> Option<T> {
        result.map_err(|diag| self.emit(&diag, sources)).ok()
    }

    pub fn emit(&mut self, diag: &Diagnostic, sources: &SourceMap) {
        match diag.severity {
            nkic_diag::Severity::Error => self.errors += 1,
            nkic_diag::Severity::Warning => self.warnings += 1,
            nkic_diag::Severity::Info => {}
        }
        let shown = if diag.severity == nkic_diag::Severity::Error {
            &mut self.shown_errors
        } else {
            &mut self.shown_others
        };
        if *shown >= MAX_SHOWN {
            self.hidden += 1;
            return;
        }
        *shown += 1;
        match self.format {
            MessageFormat::Human => {
                let text = self.renderer.render(diag, sources, self.config);
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            MessageFormat::Json => {
                let mut line = render_json(diag, sources);
                line.push('\n');
                let _ = std::io::stdout().write_all(line.as_bytes());
            }
        }
    }

    pub fn emit_all(&mut self, diags: &[Diagnostic], sources: &SourceMap) {
        for diag in diags {
            self.emit(diag, sources);
        }
    }

    pub fn has_errors(&self) -> bool {
        self.errors > 0
    }

    /// The closing line a compiler prints for people ("2 errors"), and the
    /// count of diagnostics left out (on stderr in both formats).
    pub fn finish(&self) {
        if self.hidden > 0 {
            print_stderr(&format!(
                "note: {} more diagnostics were not shown (only the first {MAX_SHOWN} errors and {MAX_SHOWN} others are)\n",
                self.hidden
            ));
        }
        if self.format == MessageFormat::Human && (self.errors > 0 || self.warnings > 0) {
            let plural = |n: usize, what: &str| {
                if n == 1 {
                    format!("1 {what}")
                } else {
                    format!("{n} {what}s")
                }
            };
            let mut parts = Vec::new();
            if self.errors > 0 {
                parts.push(plural(self.errors, "error"));
            }
            if self.warnings > 0 {
                parts.push(plural(self.warnings, "warning"));
            }
            print_stderr(&format!("{} emitted\n", parts.join(" and ")));
        }
    }
}

/// Writes `text` to stderr, ignoring a closed pipe (`nkic check … 2>&1 |
/// head` must end quietly, not panic as `eprintln!` does).
pub(crate) fn print_stderr(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}
