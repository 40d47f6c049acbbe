//! Rendering diagnostics: for people through ariadne, for tools as JSON lines.

use std::fmt;

use ariadne::{CharSet, Config, IndexType, Label as AriadneLabel, Report, ReportKind, Source};
use serde_json::{Value, json};

use crate::diagnostic::{Diagnostic, Label, Severity};
use crate::source::{FileId, SourceMap};

/// How a diagnostic is drawn for a person.
///
/// The caller (the CLI) decides colour: on only for a terminal and never
/// when `NO_COLOR` is set. Snapshots use the default: no colour, ASCII.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RenderConfig {
    pub color: bool,
    pub unicode: bool,
}

/// Renders one diagnostic as ariadne draws it.
pub fn render(diag: &Diagnostic, sources: &SourceMap, config: RenderConfig) -> String {
    Renderer::default().render(diag, sources, config)
}

/// Renders diagnostics one after another over the same sources, indexing
/// each file's lines once: [`render`] indexes the files anew for every
/// diagnostic, which is quadratic for a file with a diagnostic on every
/// line. Files of a `SourceMap` never change once added.
#[derive(Default)]
pub struct Renderer {
    sources: Vec<Option<Source<String>>>,
}

impl Renderer {
    /// Renders one diagnostic as ariadne draws it.
    pub fn render(
        &mut self,
        diag: &Diagnostic,
        sources: &SourceMap,
        config: RenderConfig,
    ) -> String {
        render_with(diag, sources, config, &mut self.sources)
    }
}

fn render_with(
    diag: &Diagnostic,
    sources: &SourceMap,
    config: RenderConfig,
    cached: &mut Vec<Option<Source<String>>>,
) -> String {
    let Some(primary) = &diag.primary else {
        return render_without_span(diag);
    };
    let kind = match diag.severity {
        Severity::Error => ReportKind::Error,
        Severity::Warning => ReportKind::Warning,
        Severity::Info => ReportKind::Advice,
    };
    let ariadne_config = Config::default()
        .with_index_type(IndexType::Byte)
        .with_color(config.color)
        .with_char_set(if config.unicode {
            CharSet::Unicode
        } else {
            CharSet::Ascii
        });
    let span_of = |label: &Label| (label.file, clamp(label, sources));
    let mut builder = Report::build(kind, span_of(primary))
        .with_code(diag.code)
        .with_message(&diag.message)
        .with_config(ariadne_config);
    let mut order = 0;
    let mut add = |builder: &mut ariadne::ReportBuilder<'_, (FileId, std::ops::Range<usize>)>,
                   label: &Label| {
        let mut l = AriadneLabel::new(span_of(label)).with_order(order);
        order += 1;
        if !label.message.is_empty() {
            l = l.with_message(&label.message);
        }
        builder.add_label(l);
    };
    add(&mut builder, primary);
    for label in &diag.secondary {
        add(&mut builder, label);
    }
    for note in &diag.notes {
        builder.add_note(note);
    }
    for help in &diag.help {
        builder.add_help(help);
    }
    let mut out = Vec::new();
    let cache = MapCache {
        map: sources,
        sources: cached,
    };
    // Writing into a Vec cannot fail; a failure would be an ariadne bug
    // about a file it was handed, so fall back to the span-less form.
    if builder.finish().write(cache, &mut out).is_err() {
        return render_without_span(diag);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Renders several diagnostics, one after another.
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap, config: RenderConfig) -> String {
    let mut renderer = Renderer::default();
    diags
        .iter()
        .map(|d| renderer.render(d, sources, config))
        .collect::<Vec<_>>()
        .join("")
}

/// One JSON object (no trailing newline) with the fields editors and tools
/// read: severity, code, message, file, line, column, end_line, end_column,
/// labels, notes and help, plus `facts` when the diagnostic carries
/// structured facts. Lines and columns are 1-based; columns count
/// Unicode scalar values. Span-less diagnostics have null positions.
pub fn render_json(diag: &Diagnostic, sources: &SourceMap) -> String {
    // A label's file, start line and column, end line and column and byte
    // range; all null without a label or a known file.
    let position = |label: Option<&Label>| -> (Value, Value, Value, Value, Value, Value) {
        match label.and_then(|label| Some((label, sources.get(label.file)?))) {
            Some((label, file)) => {
                let start = file.line_col(label.span.start);
                let end = file.line_col(label.span.end);
                (
                    json!(file.name()),
                    json!(start.line),
                    json!(start.col),
                    json!(end.line),
                    json!(end.col),
                    json!([label.span.start, label.span.end]),
                )
            }
            None => (
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ),
        }
    };
    let label_json = |label: &Label, primary: bool| {
        let (file, line, column, end_line, end_column, byte_range) = position(Some(label));
        json!({
            "file": file,
            "line": line,
            "column": column,
            "end_line": end_line,
            "end_column": end_column,
            "byte_range": byte_range,
            "message": label.message,
            "primary": primary,
        })
    };
    let (file, line, column, end_line, end_column, _) = position(diag.primary.as_ref());
    let labels: Vec<Value> = diag
        .primary
        .iter()
        .map(|l| label_json(l, true))
        .chain(diag.secondary.iter().map(|l| label_json(l, false)))
        .collect();
    let mut out = json!({
        "severity": diag.severity.as_str(),
        "code": diag.code,
        "message": diag.message,
        "file": file,
        "line": line,
        "column": column,
        "end_line": end_line,
        "end_column": end_column,
        "labels": labels,
        "notes": diag.notes,
        "help": diag.help,
    });
    if let (Some(facts), Some(obj)) = (&diag.facts, out.as_object_mut()) {
        obj.insert("facts".to_owned(), facts.clone());
    }
    out.to_string()
}

/// JSON lines: one object per diagnostic, each ending in a newline.
pub fn render_json_all(diags: &[Diagnostic], sources: &SourceMap) -> String {
    let mut out = String::new();
    for diag in diags {
        out.push_str(&render_json(diag, sources));
        out.push('\n');
    }
    out
}

fn render_without_span(diag: &Diagnostic) -> String {
    let mut out = format!(
        "{}[{}]: {}\n",
        diag.severity.as_str(),
        diag.code,
        diag.message
    );
    for note in &diag.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    for help in &diag.help {
        out.push_str(&format!("  help: {help}\n"));
    }
    out
}

/// A label's byte range, clamped into its file and onto character
/// boundaries so that a slightly wrong span can never make rendering panic.
fn clamp(label: &Label, sources: &SourceMap) -> std::ops::Range<usize> {
    let Some(file) = sources.get(label.file) else {
        return 0..0;
    };
    let text = file.text();
    let fix = |mut x: usize| {
        x = x.min(text.len());
        while !text.is_char_boundary(x) {
            x -= 1;
        }
        x
    };
    fix(label.span.start as usize)..fix(label.span.end as usize)
}

/// ariadne's view of a `SourceMap`: each file's line index is built when a
/// diagnostic first needs it and kept by the [`Renderer`].
struct MapCache<'a> {
    map: &'a SourceMap,
    sources: &'a mut Vec<Option<Source<String>>>,
}

struct MissingFile;

impl fmt::Debug for MissingFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("file not in the source map")
    }
}

impl ariadne::Cache<FileId> for MapCache<'_> {
    type Storage = String;

    fn fetch(&mut self, id: &FileId) -> Result<&Source<String>, impl fmt::Debug> {
        let i = id.0 as usize;
        let file = self.map.get(*id).ok_or(MissingFile)?;
        if self.sources.len() <= i {
            self.sources.resize_with(i + 1, || None);
        }
        Ok::<_, MissingFile>(
            self.sources[i].get_or_insert_with(|| Source::from(file.text().to_string())),
        )
    }

    fn display<'b>(&self, id: &'b FileId) -> Option<impl fmt::Display + 'b> {
        self.map.get(*id).map(|f| f.name().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Span;

    fn sample() -> (SourceMap, Diagnostic) {
        let mut map = SourceMap::new();
        let id = map.add("k.py", "x = λ + 1\ny = x\n");
        let diag = Diagnostic::error("E0101", "unknown name `λ`")
            .with_primary(id, Span::new(4, 6), "not defined in this kernel")
            .with_secondary(id, Span::new(11, 12), "used here")
            .with_note("names are looked up at specialization time")
            .with_help("define `λ` before its use");
        (map, diag)
    }

    #[test]
    fn renders_plain_text_with_byte_spans() {
        let (map, diag) = sample();
        let text = render(&diag, &map, RenderConfig::default());
        assert!(
            text.starts_with("[E0101] Error: unknown name `λ`"),
            "{text}"
        );
        assert!(text.contains("k.py:1:5"), "{text}");
        assert!(text.contains("not defined in this kernel"), "{text}");
        assert!(text.contains("Help: define"), "{text}");
        assert!(!text.contains('\u{1b}'), "no colour codes: {text}");
    }

    #[test]
    fn renders_json_fields() {
        let (map, diag) = sample();
        let line = render_json(&diag, &map);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["severity"], "error");
        assert_eq!(v["code"], "E0101");
        assert_eq!(v["file"], "k.py");
        assert_eq!(
            (v["line"].as_u64(), v["column"].as_u64()),
            (Some(1), Some(5))
        );
        assert_eq!(
            (v["end_line"].as_u64(), v["end_column"].as_u64()),
            (Some(1), Some(6))
        );
        assert_eq!(v["labels"].as_array().unwrap().len(), 2);
        assert_eq!(v["labels"][1]["line"], 2);
        assert_eq!(v["notes"][0], "names are looked up at specialization time");
        assert!(v.get("facts").is_none());
        let with = diag.with_facts(serde_json::json!({"output": "out", "elements": 3}));
        let v: Value = serde_json::from_str(&render_json(&with, &map)).unwrap();
        assert_eq!(
            v["facts"],
            serde_json::json!({"output": "out", "elements": 3})
        );
    }

    #[test]
    fn spans_out_of_range_do_not_panic() {
        let mut map = SourceMap::new();
        let id = map.add("k.py", "λ");
        let diag = Diagnostic::error("E0001", "bad").with_primary(id, Span::new(1, 40), "here");
        let text = render(&diag, &map, RenderConfig::default());
        assert!(text.contains("bad"));
        let none = Diagnostic::error("E0002", "no file");
        assert_eq!(
            render(&none, &map, RenderConfig::default()),
            "error[E0002]: no file\n"
        );
        assert!(render_json(&none, &map).contains("\"line\":null"));
    }
}
