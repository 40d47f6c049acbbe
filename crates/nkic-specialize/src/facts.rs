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
