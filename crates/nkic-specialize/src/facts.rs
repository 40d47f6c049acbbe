//! The hover side table: what each expression evaluated to, summarised over
//! every time it was evaluated (loop iterations, calls, program instances).
//!
//! The language server shows these for the expression under the cursor.
//! Recording is off unless `SpecializeConfig::record_facts` is set.

use std::collections::BTreeMap;

use nkic_diag::{FileId, Span};

/// At most this many distinct values are kept per expression.
pub const MAX_VALUES: usize = 4;

/// What one expression evaluated to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fact {
    /// The distinct values seen, as short texts, in first-seen order (at
    /// most [`MAX_VALUES`]).
    pub values: Vec<String>,
    /// True when more distinct values were seen than are kept.
    pub more: bool,
    /// How many times the expression was evaluated.
    pub evaluations: u64,
}

/// Facts keyed by file and span, ordered by position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub map: BTreeMap<(FileId, Span), Fact>,
}

impl Facts {
    /// Records that the expression at `span` evaluated to `text`.
    pub fn record(&mut self, file: FileId, span: Span, text: impl FnOnce() -> String) {
        let fact = self.map.entry((file, span)).or_default();
        fact.evaluations += 1;
        if fact.more {
            return;
        }
        let text = text();
        if !fact.values.contains(&text) {
            if fact.values.len() < MAX_VALUES {
                fact.values.push(text);
            } else {
                fact.more = true;
            }
        }
    }

    /// False once the fact at `span` stopped collecting values, so callers
    /// can skip building the text.
    pub fn wants(&self, file: FileId, span: Span) -> bool {
        self.map.get(&(file, span)).is_none_or(|f| !f.more)
    }

    /// The innermost fact whose span contains `offset` in `file`.
    pub fn at(&self, file: FileId, offset: u32) -> Option<(Span, &Fact)> {
        self.map
            .iter()
            .filter(|((f, s), _)| *f == file && s.start <= offset && offset <= s.end)
            .min_by_key(|((_, s), _)| s.len())
            .map(|((_, s), fact)| (*s, fact))
    }

    /// Merges another table into this one.
    pub fn merge(&mut self, other: Facts) {
        for (key, fact) in other.map {
            let mine = self.map.entry(key).or_default();
            mine.evaluations += fact.evaluations;
            for v in fact.values {
                if !mine.values.contains(&v) {
                    if mine.values.len() < MAX_VALUES {
                        mine.values.push(v);
                    } else {
                        mine.more = true;
                    }
                }
            }
            mine.more |= fact.more;
        }
    }
}

/// The hover text of a tensor: shape with the partition dim marked, dtype,
/// buffer, strides and offset of the view, and where its storage was
/// allocated, e.g. `[128(P) × 512] bfloat16 @ sbuf, strides (512, 1),
/// offset 0, allocated at k.py:12:9`.
pub(crate) fn tensor_text(ctx: &crate::ctx::Ctx<'_>, t: &crate::value::Tensor) -> String {
    let pdim = if t.buffer.is_on_chip() {
        Some(crate::api::check::partition_dim(ctx, t))
    } else {
        None
    };
    let dims: Vec<String> = t
        .shape
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if Some(i) == pdim {
                format!("{d}(P)")
            } else {
                d.to_string()
            }
        })
        .collect();
    let strides: Vec<String> = t.view.dims.iter().map(|d| d.stride.to_string()).collect();
    let mut text = format!(
        "[{}] {} @ {}, strides ({}), offset {}",
        dims.join(" × "),
        t.dtype(),
        t.buffer,
        strides.join(", "),
        t.view.offset
    );
    if t.view.indirect.is_some() {
        text.push_str(", indirect");
    }
    if let Some(loc) = ctx.builder.storage_loc(t.storage()) {
        text.push_str(&format!(", allocated at {}", ctx.describe_loc(loc)));
    }
    text
}
