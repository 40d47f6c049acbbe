//! Hover text and inlay hints.
//!
//! A hover over an `nl.*`/`nisa.*` function (under any import alias)
//! shows its signature, engines, targets and constraints from the API
//! table that also drives the checks and the generated reference. A hover
//! over any other expression of a specialized kernel shows what the
//! specializer's fact table recorded there: a tensor as
//! `[128(P) × 512] bfloat16 @ sbuf`, a compile-time value as its value.
//! When the expression was evaluated more than once (an unrolled loop, a
//! helper called twice, several program instances) the hover says how
//! many evaluations it summarises and names the enclosing loops.

use std::collections::BTreeMap;

use nkic_diag::Span;
use nkic_specialize::Fact;
use nkic_specialize::api::table;
use nkic_syntax::ast::{Expr, ExprKind, Module, Stmt, StmtKind};

use crate::analysis::Analysis;
use crate::syntax::{self, Node};

/// A tensor as the fact table describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorText {
    /// `[128(P) × 512] bfloat16 @ sbuf`.
    pub main: String,
    /// What the table adds after it: strides, offset, allocation site.
    pub details: Option<String>,
}

impl TensorText {
    /// Reads a tensor fact in either form the specializer writes: the
    /// layout form `[128(P) × 512] bfloat16 @ sbuf, strides (512, 1),
    /// offset 0, allocated at k.py:12:9`, or the `repr` form
    /// `tensor(shape=(128, 512), dtype=bfloat16, buffer=sbuf)` (where the
    /// first dim of an on-chip tile is its partition dim).
    pub fn parse(text: &str) -> Option<TensorText> {
        if text.starts_with('[') {
            let close = text.find("] ")?;
            let at = close + text[close..].find(" @ ")?;
            let (main, details) = match text[at..].find(", ") {
                Some(i) => (&text[..at + i], Some(text[at + i + 2..].to_owned())),
                None => (text, None),
            };
            return Some(TensorText {
                main: main.to_owned(),
                details,
            });
        }
        let inner = text.strip_prefix("tensor(shape=(")?;
        let (dims, rest) = inner.split_once("), dtype=")?;
        let (dtype, rest) = rest.split_once(", buffer=")?;
        let buffer = rest.strip_suffix(')')?;
        let on_chip = matches!(buffer, "sbuf" | "psum");
        let dims: Vec<String> = dims
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .enumerate()
            .map(|(i, d)| {
                if i == 0 && on_chip {
                    format!("{d}(P)")
                } else {
                    d.to_owned()
                }
            })
            .collect();
        Some(TensorText {
            main: format!("[{}] {dtype} @ {buffer}", dims.join(" × ")),
            details: None,
        })
    }

    /// The short form: shape, dtype and buffer.
    pub fn render(&self) -> String {
        self.main.clone()
    }
}

/// One value of a fact, rendered for people: a tensor's details go on an
/// indented second line.
fn render_value(text: &str) -> String {
    match TensorText::parse(text) {
        Some(TensorText {
            main,
            details: Some(details),
        }) => format!("{main}\n    {details}"),
        Some(t) => t.main,
        None => text.to_owned(),
    }
}

/// The canonical dotted name (`nl.exp`, `nisa.dma_copy`) of a name or
/// attribute chain, resolving the module's imports of `nki.language`
/// and `nki.isa` under any alias.
pub fn api_name(module: &Module, expr: &Expr) -> Option<String> {
    let dotted = dotted(expr)?;
    let (head, tail) = match dotted.split_once('.') {
        Some((h, t)) => (h, Some(t)),
        None => (dotted.as_str(), None),
    };
    let mut full = None;
    for b in syntax::scope_bindings(&module.body) {
        if b.name != head {
            continue;
        }
        if let syntax::BindingKind::Import {
            module: m,
            level: 0,
            name,
        } = b.kind
        {
            full = Some(match (m, name) {
                (Some(m), Some(n)) => format!("{m}.{n}"),
                (Some(m), None) => m,
                (None, Some(n)) => n,
                (None, None) => continue,
            });
        }
    }
    let mut full = full?;
    if let Some(tail) = tail {
        full = format!("{full}.{tail}");
    }
    let canonical = if let Some(rest) = full.strip_prefix("nki.language.") {
        format!("nl.{rest}")
    } else if let Some(rest) = full.strip_prefix("nki.isa.") {
        format!("nisa.{rest}")
    } else {
        return None;
    };
    table::find(&canonical).map(|_| canonical)
}

fn dotted(expr: &Expr) -> Option<String> {
    match &expr.kind {
        ExprKind::Name(n) => Some(n.to_string()),
        ExprKind::Attribute { value, attr } => Some(format!("{}.{}", dotted(value)?, attr.name)),
        _ => None,
    }
}

/// The hover documentation of an API function, as Markdown.
pub fn api_markdown(name: &str) -> Option<String> {
    let doc = table::describe(table::find(name)?)?;
    let mut out = format!("```python\n{}\n```\n\n{}\n\n", doc.signature, doc.summary);
    let mut facts = Vec::new();
    if !doc.engines.is_empty() {
        facts.push(format!("engines: {}", doc.engines));
    }
    facts.push(format!("targets: {}", doc.targets));
    out.push_str(&format!("*{}*\n", facts.join("; ")));
    if !doc.constraints.is_empty() {
        out.push('\n');
        for c in &doc.constraints {
            out.push_str(&format!("- {c}\n"));
        }
    }
    Some(out)
}

/// The first line of a statement, without its trailing `:`.
fn header(an: &Analysis, s: &Stmt) -> String {
    let text = an.sources.file(an.file).text();
    let body = &text[s.span.range()];
    let line = body.lines().next().unwrap_or_default().trim_end();
    line.strip_suffix(':').unwrap_or(line).to_owned()
}

/// The values the loop variable of a `for` loop took, as recorded where
/// its body reads it: `i = 0, 1, 2, 3` (at most four, then `…`).
fn loop_values(an: &Analysis, s: &Stmt) -> String {
    let StmtKind::For { target, body, .. } = &s.kind else {
        return String::new();
    };
    let ExprKind::Name(var) = &target.kind else {
        return String::new();
    };
    let (Some(first), Some(last)) = (body.first(), body.last()) else {
        return String::new();
    };
    let Some(result) = an.front.result.as_ref() else {
        return String::new();
    };
    let text = an.sources.file(an.file).text();
    let lo = (an.file, Span::new(first.span.start, first.span.start));
    let hi = (an.file, Span::new(last.span.end, u32::MAX));
    let mut values: Vec<&str> = Vec::new();
    let mut more = false;
    for ((_, span), fact) in result.facts.map.range(lo..hi) {
        if span.end > last.span.end || &text[span.range()] != var.as_str() {
            continue;
        }
        more |= fact.more;
        for v in &fact.values {
            if !values.contains(&v.as_str()) {
                values.push(v);
            }
        }
    }
    if values.is_empty() {
        return String::new();
    }
    more |= values.len() > MAX_LISTED;
    values.truncate(MAX_LISTED);
    format!(
        "{var} = {}{}",
        values.join(", "),
        if more { ", …" } else { "" }
    )
}

/// At most this many loop-variable values are listed.
const MAX_LISTED: usize = 4;

fn line_of(an: &Analysis, offset: u32) -> u32 {
    an.sources.file(an.file).line_col(offset).line
}

/// The hover at a byte offset: its span and Markdown text.
pub fn hover(an: &Analysis, offset: u32) -> Option<(Span, String)> {
    let path = syntax::path_at(&an.module, offset);
    // API functions, under the cursor as a name or an attribute.
    for n in path.iter().rev() {
        if let Node::Expr(e) = n
            && matches!(e.kind, ExprKind::Name(_) | ExprKind::Attribute { .. })
            && let Some(name) = api_name(&an.module, e)
        {
            return Some((e.span, api_markdown(&name)?));
        }
    }
    let result = an.front.result.as_ref()?;
    let facts = &result.facts;
    // Tensor methods (`t.reshape`): the receiver's fact says it is a tensor.
    if let Some(Node::Expr(e)) = path.last()
        && let ExprKind::Attribute { value, attr } = &e.kind
        && attr.span.start <= offset
        && offset <= attr.span.end
        && let Some(fact) = facts.map.get(&(an.file, value.span))
        && fact.values.iter().any(|v| TensorText::parse(v).is_some())
        && let Some(doc) = api_markdown(&format!("tensor.{}", attr.name))
    {
        return Some((e.span, doc));
    }
    // An assignment target was not evaluated: show its value's fact.
    let mut found: Option<(Span, &Fact, Span)> = None;
    if let Some(Node::Stmt(s)) = path.iter().rev().find(|n| matches!(n, Node::Stmt(_))) {
        let assign = match &s.kind {
            StmtKind::Assign { targets, value } => targets
                .iter()
                .find(|t| t.span.start <= offset && offset <= t.span.end)
                .map(|t| (t, value)),
            StmtKind::AnnAssign {
                target,
                value: Some(value),
                ..
            } if target.span.start <= offset && offset <= target.span.end => Some((target, value)),
            _ => None,
        };
        if let Some((target, value)) = assign
            && matches!(target.kind, ExprKind::Name(_))
            && let Some(fact) = facts.map.get(&(an.file, value.span))
        {
            found = Some((target.span, fact, s.span));
        }
    }
    if found.is_none() {
        let (span, fact) = facts.at(an.file, offset)?;
        found = Some((span, fact, span));
    }
    let (span, fact, site) = found?;
    let mut out = String::new();
    let text = an.sources.file(an.file).text();
    let what = &text[span.range()];
    if fact.values.len() == 1 && !fact.more {
        out.push_str(&format!(
            "```text\n{what}: {}\n```\n",
            render_value(&fact.values[0])
        ));
    } else {
        out.push_str(&format!("```text\n{what}:\n"));
        for v in &fact.values {
            out.push_str(&format!("  {}\n", render_value(v)));
        }
        if fact.more {
            out.push_str("  … (more values)\n");
        }
        out.push_str("```\n");
    }
    if site != span {
        out.push_str(&format!("\nassigned at line {}\n", line_of(an, site.start)));
    } else if let Some(Node::Expr(e)) = path.last()
        && e.span == span
        && let ExprKind::Name(name) = &e.kind
        && let Some(b) = syntax::lookup(&an.module, &path, name.as_str())
        && b.kind == syntax::BindingKind::Variable
        && line_of(an, b.span.start) != line_of(an, span.start)
    {
        out.push_str(&format!(
            "\nassigned at line {}\n",
            line_of(an, b.span.start)
        ));
    }
    if fact.evaluations > 1 {
        let loops = syntax::enclosing_loops(&path, offset);
        if loops.is_empty() {
            out.push_str(&format!(
                "\nsummarises {} evaluations (calls or program instances)\n",
                fact.evaluations
            ));
        } else {
            let names: Vec<String> = loops
                .iter()
                .map(|l| {
                    let values = loop_values(an, l);
                    let values = if values.is_empty() {
                        String::new()
                    } else {
                        format!("; {values}")
                    };
                    format!(
                        "`{}` (line {}{values})",
                        header(an, l),
                        line_of(an, l.span.start)
                    )
                })
                .collect();
            out.push_str(&format!(
                "\nsummarises {} evaluations over the unrolled iterations of {}\n",
                fact.evaluations,
                names.join(" and ")
            ));
        }
    }
    Some((span, out))
}

/// One inlay hint: where (a byte offset) and its label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    pub offset: u32,
    pub label: String,
    pub tooltip: String,
}

/// The inlay hints of the document within byte range `range`: after each
/// name assigned a tensor, its shape, dtype and buffer.
pub fn inlay_hints(an: &Analysis, range: Span) -> Vec<Hint> {
    let Some(result) = an.front.result.as_ref() else {
        return Vec::new();
    };
    let mut assigns = Vec::new();
    syntax::all_assignments(&an.module.body, &mut assigns);
    let mut seen = BTreeMap::new();
    for (target, value) in assigns {
        if target.span.end < range.start || target.span.start > range.end {
            continue;
        }
        let Some(fact) = result.facts.map.get(&(an.file, value.span)) else {
            continue;
        };
        let tensors: Vec<TensorText> = fact
            .values
            .iter()
            .filter_map(|v| TensorText::parse(v))
            .collect();
        let Some(first) = tensors.first() else {
            continue;
        };
        let mut label = format!(": {}", first.render());
        if tensors.len() > 1 || fact.more {
            label.push_str(" | …");
        }
        let tooltip = if fact.evaluations > 1 {
            format!(
                "{} distinct value(s) over {} evaluations",
                fact.values.len(),
                fact.evaluations
            )
        } else {
            "as specialized".to_owned()
        };
        seen.insert(
            target.span.end,
            Hint {
                offset: target.span.end,
                label,
                tooltip,
            },
        );
    }
    seen.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_text() {
        let t = TensorText::parse("tensor(shape=(128, 512), dtype=bfloat16, buffer=sbuf)").unwrap();
        assert_eq!(t.render(), "[128(P) × 512] bfloat16 @ sbuf");
        let h = TensorText::parse("tensor(shape=(64,), dtype=float32, buffer=shared_hbm)").unwrap();
        assert_eq!(h.render(), "[64] float32 @ shared_hbm");
        assert_eq!(TensorText::parse("(1, 2)"), None);
        let l = TensorText::parse(
            "[4 × 128(P)] float32 @ sbuf, strides (1, 4), offset 0, allocated at k.py:12:9",
        )
        .unwrap();
        assert_eq!(l.render(), "[4 × 128(P)] float32 @ sbuf");
        assert_eq!(
            l.details.as_deref(),
            Some("strides (1, 4), offset 0, allocated at k.py:12:9")
        );
        assert_eq!(
            render_value("[64] int32 @ shared_hbm"),
            "[64] int32 @ shared_hbm"
        );
        assert_eq!(TensorText::parse("[1, 2]"), None);
    }

    #[test]
    fn api_names_follow_aliases() {
        let src = "import nki.language as lang\nfrom nki import isa\nimport nki\nlang.exp\nisa.dma_copy\nnki.language.exp\nother.exp\n";
        let (m, _) = nkic_syntax::parse(src);
        let names: Vec<Option<String>> = m
            .body
            .iter()
            .skip(3)
            .map(|s| match &s.kind {
                StmtKind::Expr(e) => api_name(&m, e),
                _ => None,
            })
            .collect();
        assert_eq!(
            names,
            [
                Some("nl.exp".to_owned()),
                Some("nisa.dma_copy".to_owned()),
                Some("nl.exp".to_owned()),
                None
            ]
        );
        let md = api_markdown("nisa.dma_copy").unwrap();
        assert!(md.starts_with("```python\nnisa.dma_copy("), "{md}");
    }
}
