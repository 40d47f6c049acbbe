//! Files, byte spans and the line/column lookup.

use std::fmt;
use std::sync::Arc;

/// Identifies one file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "file{}", self.0)
    }
}

/// A half-open range of UTF-8 byte offsets into one file.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end`; `end` below `start` is clamped to `start`.
    pub fn new(start: u32, end: u32) -> Span {
        Span {
            start,
            end: end.max(start),
        }
    }

    /// Builds a span from `usize` offsets as lexers and parsers produce them.
    ///
    /// Offsets beyond `u32::MAX` saturate; `SourceMap::add` refuses files of
    /// 4 GiB and more, so saturation never happens for a mapped file.
    pub fn from_range(range: std::ops::Range<usize>) -> Span {
        let clamp = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        Span::new(clamp(range.start), clamp(range.end))
    }

    /// An empty span at `offset`.
    pub fn empty(offset: u32) -> Span {
        Span::new(offset, offset)
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    pub fn len(self) -> u32 {
        self.end - self.start
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    pub fn contains(self, offset: u32) -> bool {
        self.start <= offset && offset < self.end
    }

    /// Whether `inner` lies within `self`.
    pub fn encloses(self, inner: Span) -> bool {
        self.start <= inner.start && inner.end <= self.end
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A 1-based line and column.
///
/// `col` counts Unicode scalar values from the line start, so a column is
/// what a person counts on screen for most text; `col_utf16` counts UTF-16
/// code units, as the Language Server Protocol does by default, and
/// `col_byte` counts bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
    pub col_utf16: u32,
    pub col_byte: u32,
}

/// One source file: its display name, its text and where its lines start.
#[derive(Clone, Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    line_starts: Vec<u32>,
}

impl SourceFile {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Number of lines (a file with no newline has one line).
    pub fn line_count(&self) -> u32 {
        self.line_starts.len() as u32
    }

    /// The byte offset where 0-based line `line` starts, if it exists.
    pub fn line_start(&self, line: u32) -> Option<u32> {
        self.line_starts.get(line as usize).copied()
    }

    /// Line and columns of a byte offset. Offsets past the end clamp to the
    /// end, and an offset inside a multi-byte character counts as that
    /// character's start.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line_idx] as usize;
        let mut end = offset as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let prefix = &self.text[start..end];
        LineCol {
            line: line_idx as u32 + 1,
            col: prefix.chars().count() as u32 + 1,
            col_utf16: prefix.encode_utf16().count() as u32 + 1,
            col_byte: (end - start) as u32 + 1,
        }
    }

    /// The text of 0-based line `line` without its line terminator.
    pub fn line_text(&self, line: u32) -> Option<&str> {
        let start = *self.line_starts.get(line as usize)? as usize;
        let end = self
            .line_starts
            .get(line as usize + 1)
            .map_or(self.text.len(), |&e| e as usize);
        Some(self.text[start..end].trim_end_matches(['\n', '\r']))
    }

    /// The byte offset of a 0-based line and a column in UTF-16 code units,
    /// clamped to the line's end: the inverse lookup an editor needs.
    pub fn offset_of_utf16(&self, line: u32, col_utf16: u32) -> u32 {
        let Some(text) = self.line_text(line) else {
            return self.text.len() as u32;
        };
        let start = self.line_starts[line as usize];
        let mut units = 0;
        for (i, ch) in text.char_indices() {
            if units >= col_utf16 {
                return start + i as u32;
            }
            units += ch.len_utf16() as u32;
        }
        start + text.len() as u32
    }
}

/// All files of one compilation, addressed by [`FileId`].
///
/// The files are shared: cloning a map copies one pointer per file, not
/// the texts, so a run may take its own copy of a compiled program's
/// sources (to add the files a fault points into) at no cost.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<Arc<SourceFile>>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a file and returns its id.
    ///
    /// Files are limited to `u32::MAX` bytes because spans are `u32`; a longer
    /// text is truncated to that size at a character boundary (no real kernel
    /// comes near it, and the caller reports the size before adding).
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let mut text = text.into();
        if text.len() >= u32::MAX as usize {
            let mut cut = u32::MAX as usize - 1;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        let mut line_starts = vec![0u32];
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            // A lone `\r` ends a line too, as in Python.
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                line_starts.push(i as u32 + 1);
            }
        }
        let id = FileId(self.files.len() as u32);
        self.files.push(Arc::new(SourceFile {
            name: name.into(),
            text,
            line_starts,
        }));
        id
    }

    /// The file with this id.
    ///
    /// Panics on an id from another map: ids are only made by `add`, so a
    /// foreign id is a bug in the caller, not a user error.
    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize).map(|f| &**f)
    }

    /// Replaces a file's text in place (for editors), keeping its id.
    pub fn replace(&mut self, id: FileId, text: impl Into<String>) {
        let name = self.files[id.0 as usize].name.clone();
        let mut tmp = SourceMap::new();
        tmp.add(name, text);
        self.files[id.0 as usize] = tmp.files.pop().expect("one file was just added");
    }

    pub fn find(&self, name: &str) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| f.name == name)
            .map(|i| FileId(i as u32))
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), &**f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_ascii_and_unicode() {
        let mut map = SourceMap::new();
        let id = map.add("k.py", "ab\nλx = 1\r\n𝔘y\n");
        let f = map.file(id);
        assert_eq!(f.line_count(), 4);
        let lc = f.line_col(0);
        assert_eq!((lc.line, lc.col), (1, 1));
        // `x` after `λ` (2 bytes): byte col 3, char col 2, utf16 col 2.
        let lc = f.line_col(5);
        assert_eq!((lc.line, lc.col, lc.col_utf16, lc.col_byte), (2, 2, 2, 3));
        // `y` after `𝔘` (4 bytes, 2 UTF-16 units).
        let off = f.text().find('y').unwrap() as u32;
        let lc = f.line_col(off);
        assert_eq!((lc.line, lc.col, lc.col_utf16, lc.col_byte), (3, 2, 3, 5));
        assert_eq!(f.line_text(1), Some("λx = 1"));
        assert_eq!(f.offset_of_utf16(2, 2), off);
    }

    #[test]
    fn offsets_inside_a_character_and_past_the_end_clamp() {
        let mut map = SourceMap::new();
        let id = map.add("k.py", "λ");
        let f = map.file(id);
        assert_eq!(f.line_col(1).col, 1);
        assert_eq!(f.line_col(99).col, 2);
    }

    #[test]
    fn lone_carriage_return_ends_a_line() {
        let mut map = SourceMap::new();
        let id = map.add("k.py", "a\rb");
        assert_eq!(map.file(id).line_col(2).line, 2);
    }

    #[test]
    fn span_helpers() {
        let a = Span::new(3, 5);
        let b = Span::new(1, 4);
        assert_eq!(a.to(b), Span::new(1, 5));
        assert!(a.to(b).encloses(a));
        assert_eq!(Span::new(5, 2), Span::empty(5));
    }
}
