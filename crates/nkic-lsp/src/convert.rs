//! Conversions at the protocol edge: byte offsets ↔ LSP positions in the
//! negotiated encoding, file paths ↔ `file://` URIs, and `Diagnostic` →
//! LSP diagnostics with related information.

use lsp_types as lsp;
use nkic_diag::{Diagnostic, FileId, Severity, SourceFile, SourceMap, Span};

/// How `Position::character` counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-16 code units: the protocol's default.
    #[default]
    Utf16,
    /// UTF-8 bytes, when the client offers it.
    Utf8,
}

impl Encoding {
    /// Picks UTF-8 when the client lists it among its position encodings,
    /// UTF-16 otherwise.
    pub fn negotiate(offered: Option<&[lsp::PositionEncodingKind]>) -> Encoding {
        match offered {
            Some(kinds) if kinds.contains(&lsp::PositionEncodingKind::UTF8) => Encoding::Utf8,
            _ => Encoding::Utf16,
        }
    }

    pub fn kind(self) -> lsp::PositionEncodingKind {
        match self {
            Encoding::Utf16 => lsp::PositionEncodingKind::UTF16,
            Encoding::Utf8 => lsp::PositionEncodingKind::UTF8,
        }
    }
}

/// The position of a byte offset.
pub fn position(file: &SourceFile, offset: u32, enc: Encoding) -> lsp::Position {
    let lc = file.line_col(offset);
    let character = match enc {
        Encoding::Utf16 => lc.col_utf16,
        Encoding::Utf8 => lc.col_byte,
    } - 1;
    lsp::Position::new(lc.line - 1, character)
}

/// The range of a span.
pub fn range(file: &SourceFile, span: Span, enc: Encoding) -> lsp::Range {
    lsp::Range::new(
        position(file, span.start, enc),
        position(file, span.end, enc),
    )
}

/// The byte offset of a position, clamped to its line (and to the file).
pub fn offset(file: &SourceFile, pos: lsp::Position, enc: Encoding) -> u32 {
    match enc {
        Encoding::Utf16 => file.offset_of_utf16(pos.line, pos.character),
        Encoding::Utf8 => {
            let Some(start) = file.line_start(pos.line) else {
                return file.text().len() as u32;
            };
            let line_len = file.line_text(pos.line).map_or(0, str::len) as u32;
            let mut off = (start + pos.character.min(line_len)) as usize;
            while !file.text().is_char_boundary(off) {
                off -= 1;
            }
            off as u32
        }
    }
}

/// The file path of a `file://` URI (percent-decoded); `None` for other
/// schemes.
pub fn uri_to_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path` is not supported; `file:///path` has an empty host.
    let path = if rest.starts_with('/') {
        rest
    } else {
        return None;
    };
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    let mut path = String::from_utf8(out).ok()?;
    // Windows paths arrive as `/C:/dir/file.py`.
    if path.len() >= 3 && path.as_bytes()[2] == b':' {
        path.remove(0);
    }
    Some(path)
}

/// The `file://` URI of an absolute path, percent-encoding everything but
/// unreserved characters and `/`.
pub fn path_to_uri(path: &str) -> String {
    let mut out = String::from("file://");
    if !path.starts_with('/') {
        out.push('/');
    }
    for &b in path.replace('\\', "/").as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parses a URI string into the protocol's type.
pub fn to_uri(text: &str) -> Option<lsp::Uri> {
    text.parse().ok()
}

/// The URI of a file of the source map: the document's own URI for the
/// document, a `file://` URI built from the name for other files.
fn uri_of(sources: &SourceMap, file: FileId, doc: FileId, doc_uri: &lsp::Uri) -> Option<lsp::Uri> {
    if file == doc {
        return Some(doc_uri.clone());
    }
    let name = sources.get(file)?.name();
    if name.starts_with('/') || name.get(1..3) == Some(":/") || name.get(1..3) == Some(":\\") {
        to_uri(&path_to_uri(name))
    } else {
        None
    }
}

/// Converts the diagnostics of one front-half run into the LSP
/// diagnostics of the document `doc`. A diagnostic whose primary label is
/// in another file (an imported module, `nkic.toml`) is shown at
/// `fallback` in the document, naming the other place, with related
/// information pointing there.
pub fn diagnostics(
    diags: &[Diagnostic],
    sources: &SourceMap,
    doc: FileId,
    doc_uri: &lsp::Uri,
    fallback: Span,
    enc: Encoding,
) -> Vec<lsp::Diagnostic> {
    let doc_file = sources.file(doc);
    diags
        .iter()
        .map(|d| {
            let mut message = d.message.clone();
            let mut related = Vec::new();
            let primary_range = match &d.primary {
                Some(label) if label.file == doc => range(doc_file, label.span, enc),
                Some(label) => {
                    if let Some(other) = sources.get(label.file) {
                        let lc = other.line_col(label.span.start);
                        message = format!("{}:{}: {message}", other.name(), lc.line);
                        if let Some(uri) = uri_of(sources, label.file, doc, doc_uri) {
                            related.push(lsp::DiagnosticRelatedInformation {
                                location: lsp::Location::new(uri, range(other, label.span, enc)),
                                message: if label.message.is_empty() {
                                    d.message.clone()
                                } else {
                                    label.message.clone()
                                },
                            });
                        }
                    }
                    range(doc_file, fallback, enc)
                }
                None => range(doc_file, fallback, enc),
            };
            for label in &d.secondary {
                let Some(file) = sources.get(label.file) else {
                    continue;
                };
                let Some(uri) = uri_of(sources, label.file, doc, doc_uri) else {
                    continue;
                };
                related.push(lsp::DiagnosticRelatedInformation {
                    location: lsp::Location::new(uri, range(file, label.span, enc)),
                    message: label.message.clone(),
                });
            }
            for note in &d.notes {
                message.push_str(&format!("\nnote: {note}"));
            }
            for help in &d.help {
                message.push_str(&format!("\nhelp: {help}"));
            }
            lsp::Diagnostic {
                range: primary_range,
                severity: Some(match d.severity {
                    Severity::Error => lsp::DiagnosticSeverity::ERROR,
                    Severity::Warning => lsp::DiagnosticSeverity::WARNING,
                    Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
                }),
                code: Some(lsp::NumberOrString::String(d.code.to_owned())),
                source: Some("nkic".to_owned()),
                message,
                related_information: (!related.is_empty()).then_some(related),
                ..lsp::Diagnostic::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_in_both_encodings() {
        let mut map = SourceMap::new();
        let text = "a = 1\nπ𝄞 = x\n";
        let id = map.add("t.py", text);
        let f = map.file(id);
        let x = text.find('x').unwrap() as u32;
        assert_eq!(position(f, x, Encoding::Utf16), lsp::Position::new(1, 6));
        assert_eq!(position(f, x, Encoding::Utf8), lsp::Position::new(1, 9));
        assert_eq!(offset(f, lsp::Position::new(1, 6), Encoding::Utf16), x);
        assert_eq!(offset(f, lsp::Position::new(1, 9), Encoding::Utf8), x);
        // Inside a character and past the line's end clamp.
        assert_eq!(offset(f, lsp::Position::new(1, 1), Encoding::Utf8), 6);
        assert_eq!(offset(f, lsp::Position::new(0, 99), Encoding::Utf8), 5);
        assert_eq!(
            offset(f, lsp::Position::new(9, 0), Encoding::Utf8),
            text.len() as u32
        );
    }

    #[test]
    fn encoding_negotiation() {
        assert_eq!(Encoding::negotiate(None), Encoding::Utf16);
        let both = [
            lsp::PositionEncodingKind::UTF16,
            lsp::PositionEncodingKind::UTF8,
        ];
        assert_eq!(Encoding::negotiate(Some(&both)), Encoding::Utf8);
        assert_eq!(
            Encoding::negotiate(Some(&[lsp::PositionEncodingKind::UTF32])),
            Encoding::Utf16
        );
    }

    #[test]
    fn uris_round_trip() {
        let path = "/home/me/my kernels/k%1.py";
        let uri = path_to_uri(path);
        assert_eq!(uri, "file:///home/me/my%20kernels/k%251.py");
        assert_eq!(uri_to_path(&uri).as_deref(), Some(path));
        assert_eq!(uri_to_path("untitled:Untitled-1"), None);
        assert_eq!(uri_to_path("file:///c%3A/k.py").as_deref(), Some("c:/k.py"));
    }
}
