//! Spans, source maps and diagnostics: the one plain-data error type of nkic.
//!
//! Every stage reports user errors as [`Diagnostic`] values. They are plain
//! data: the terminal renderer ([`render`]), the JSON-lines renderer
//! ([`render_json`]) and the language server all read the same value.
//!
//! Invariants:
//! - offsets are UTF-8 byte offsets (`u32`) into the file's text; lines and
//!   columns are computed only here, at the edge ([`SourceMap`]);
//! - this crate does no IO: sources come in as strings and rendering writes
//!   into a caller's buffer.

mod diagnostic;
mod render;
mod source;

pub use diagnostic::{Diagnostic, DiagnosticData, Label, Severity};
pub use render::{RenderConfig, Renderer, render, render_all, render_json, render_json_all};
pub use source::{FileId, LineCol, SourceFile, SourceMap, Span};
