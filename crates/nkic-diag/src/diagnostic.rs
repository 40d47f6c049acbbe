//! The `Diagnostic` value: severity, stable code, message, labels, notes, help.

use crate::source::{FileId, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A span in a file with a message saying what is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub file: FileId,
    pub span: Span,
    pub message: String,
}

/// One problem in the user's input.
///
/// The fields live behind a box (`DiagnosticData`, reached through `Deref`)
/// so that `Result<T, Diagnostic>` stays one pointer wide on hot paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    data: Box<DiagnosticData>,
}

impl std::ops::Deref for Diagnostic {
    type Target = DiagnosticData;

    fn deref(&self) -> &DiagnosticData {
        &self.data
    }
}

impl std::ops::DerefMut for Diagnostic {
    fn deref_mut(&mut self) -> &mut DiagnosticData {
        &mut self.data
    }
}

/// The contents of a [`Diagnostic`].
///
/// `code` is stable (`E0101`, indexed in `docs/diagnostics.md`); `message`
/// is lowercase without a trailing period; `primary` says what is wrong at
/// its span; `secondary` labels point at related places; `notes` give
/// context (call chains, loop iterations) and `help` the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagnosticData {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub primary: Option<Label>,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Vec<String>,
    /// Structured facts for tools (`--message-format json` prints them as
    /// `facts`), e.g. the output, element count and first index of an
    /// undefined-output warning. `None` for most diagnostics.
    pub facts: Option<serde_json::Value>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            data: Box::new(DiagnosticData {
                severity,
                code,
                message: message.into(),
                primary: None,
                secondary: Vec::new(),
                notes: Vec::new(),
                help: Vec::new(),
                facts: None,
            }),
        }
    }

    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    pub fn info(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Info, code, message)
    }

    /// Sets the primary label: the place the problem is.
    pub fn with_primary(mut self, file: FileId, span: Span, message: impl Into<String>) -> Self {
        self.primary = Some(Label {
            file,
            span,
            message: message.into(),
        });
        self
    }

    /// Adds a secondary label: a related place.
    pub fn with_secondary(mut self, file: FileId, span: Span, message: impl Into<String>) -> Self {
        self.secondary.push(Label {
            file,
            span,
            message: message.into(),
        });
        self
    }

    /// Attaches structured facts (a JSON object) for tools.
    pub fn with_facts(mut self, facts: serde_json::Value) -> Self {
        self.facts = Some(facts);
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Moves every label into `file`: for stages that build diagnostics
    /// before they know which file they are in (a parser run on one text).
    pub fn in_file(mut self, file: FileId) -> Self {
        if let Some(primary) = &mut self.primary {
            primary.file = file;
        }
        for label in &mut self.secondary {
            label.file = file;
        }
        self
    }
}
