//! Printing diagnostics: human text on stderr, or JSON lines on stdout.

use std::io::{IsTerminal, Write};

use nkic_diag::{Diagnostic, RenderConfig, SourceMap, render, render_json};

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
        }
    }

    pub fn emit(&mut self, diag: &Diagnostic, sources: &SourceMap) {
        match diag.severity {
            nkic_diag::Severity::Error => self.errors += 1,
            nkic_diag::Severity::Warning => self.warnings += 1,
            nkic_diag::Severity::Info => {}
        }
        match self.format {
            MessageFormat::Human => {
                let text = render(diag, sources, self.config);
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

    /// The closing line a compiler prints for people ("2 errors").
    pub fn finish(&self) {
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
