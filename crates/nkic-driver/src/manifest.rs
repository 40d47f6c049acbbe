//! `nkic.toml`: example arguments for the kernel files of one directory,
//! for kernels that carry no `# nkic:` directive comments.
//!
//! The file is a TOML table per kernel file, keyed by the file's name
//! (quoted, because of the dot):
//!
//! ```toml
//! ["softmax.py"]
//! kernel = "softmax_kernel"          # optional: default is the @nki.jit function
//! args = ["x=float32[128,512]"]      # tensor arguments, as `--arg`
//! consts = ["axis=1", "eps=1e-6"]    # compile-time arguments, as `--const`
//! grid = [2, 2]                      # optional SPMD launch grid
//! target = "trn2"                    # optional: trn3 (default), trn2 or trn1
//! ```
//!
//! Every key is optional; unknown keys are errors, so a typo does not pass
//! silently. Problems are `E9010` diagnostics pointing into the manifest.

use std::collections::BTreeMap;

use nkic_diag::{Diagnostic, FileId, SourceMap, Span};
use nkic_isa::Target;
use nkic_specialize::directives::Directives;
use nkic_specialize::{ArgSpec, ConstValue};
use serde::Deserialize;
use toml::Spanned;

/// The manifest's file name.
pub const FILE_NAME: &str = "nkic.toml";

/// The diagnostic code of every manifest problem.
pub const CODE: &str = "E9010";

/// What the manifest says about one kernel file: the same settings as the
/// directive comments, plus the kernel's name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    pub kernel: Option<String>,
    pub settings: Directives,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    kernel: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    consts: Vec<String>,
    grid: Option<Vec<i64>>,
    target: Option<String>,
}

/// The path of the manifest next to a kernel file named `kernel_path`
/// (`/`-separated, as module paths are).
pub fn path_next_to(kernel_path: &str) -> String {
    match kernel_path.rfind(['/', '\\']) {
        Some(i) => format!("{}/{FILE_NAME}", &kernel_path[..i]),
        None => FILE_NAME.to_owned(),
    }
}

/// The file-name part of a path.
fn base_name(path: &str) -> &str {
    path.rfind(['/', '\\']).map_or(path, |i| &path[i + 1..])
}

/// Reads the entry for the kernel file `kernel_path` from the manifest
/// text. Returns `Ok(None)` when the manifest has no entry for the file.
/// On errors the manifest is added to `sources` (as `manifest_path`) so
/// the diagnostics can point into it.
pub fn entry_for(
    kernel_path: &str,
    manifest_path: &str,
    text: &str,
    sources: &mut SourceMap,
) -> Result<Option<Entry>, Vec<Diagnostic>> {
    let table: BTreeMap<String, Spanned<toml::Value>> = match toml::from_str(text) {
        Ok(table) => table,
        Err(err) => {
            let file = sources.add(manifest_path, text);
            return Err(vec![located(
                file,
                err.span().map(Span::from_range),
                format!("`{manifest_path}` is not valid TOML: {}", err.message()),
                "here",
            )]);
        }
    };
    let Some(value) = table.get(base_name(kernel_path)) else {
        return Ok(None);
    };
    let span = Span::from_range(value.span());
    let raw: Result<RawEntry, _> = value.get_ref().clone().try_into();
    let raw = match raw {
        Ok(raw) => raw,
        Err(err) => {
            let file = sources.add(manifest_path, text);
            return Err(vec![located(
                file,
                Some(span),
                format!(
                    "bad entry for `{}` in `{manifest_path}`: {}",
                    base_name(kernel_path),
                    err.message()
                ),
                "in this entry",
            )
            .with_help(
                "the keys are `kernel`, `args`, `consts`, `grid` and `target`; see docs/editors.md",
            )]);
        }
    };
    // `try_into` loses the inner spans, so each item is found again in the
    // text after the entry's header; failing that, the header is used.
    let mut errors: Vec<(Option<Span>, String)> = Vec::new();
    let mut entry = Entry {
        kernel: raw.kernel,
        ..Entry::default()
    };
    let find = |item: &str| -> Option<Span> {
        let needle = format!("\"{item}\"");
        let start = span.range().start;
        text[start..]
            .find(&needle)
            .map(|i| Span::from_range(start + i..start + i + needle.len()))
    };
    for item in &raw.args {
        match item.parse::<ArgSpec>() {
            Ok(a) => entry.settings.args.push(a),
            Err(e) => errors.push((find(item), format!("bad argument: {e}"))),
        }
    }
    for item in &raw.consts {
        match ConstValue::parse_binding(item) {
            Ok(c) => entry.settings.consts.push(c),
            Err(e) => errors.push((find(item), format!("bad constant: {e}"))),
        }
    }
    if let Some(grid) = &raw.grid {
        let dims: Option<Vec<u32>> = grid
            .iter()
            .map(|&d| u32::try_from(d).ok().filter(|&d| d > 0))
            .collect();
        match dims {
            Some(dims) if (1..=3).contains(&dims.len()) => entry.settings.grid = dims,
            _ => errors.push((
                None,
                "a grid is a list of 1 to 3 positive sizes, e.g. `grid = [2, 2]`".to_owned(),
            )),
        }
    }
    if let Some(target) = &raw.target {
        match Target::from_name(target) {
            Some(t) => entry.settings.target = Some(t),
            None => errors.push((
                find(target),
                format!("unknown target `{}` (use {})", target, Target::choices()),
            )),
        }
    }
    if errors.is_empty() {
        return Ok(Some(entry));
    }
    let file = sources.add(manifest_path, text);
    Err(errors
        .into_iter()
        .map(|(range, message)| {
            located(file, Some(range.unwrap_or(span)), message, "in this entry")
        })
        .collect())
}

/// A manifest that is not UTF-8: an error at its first invalid byte.
pub fn not_utf8(path: &str, err: nkic_specialize::NotUtf8, sources: &mut SourceMap) -> Diagnostic {
    let span = err.span();
    let offset = err.offset;
    let file = sources.add(path.to_owned(), err.lossy);
    Diagnostic::error(CODE, format!("`{path}` is not valid UTF-8")).with_primary(
        file,
        span,
        format!("the first invalid byte, at offset {offset}"),
    )
}

fn located(file: FileId, span: Option<Span>, message: String, label: &str) -> Diagnostic {
    let diag = Diagnostic::error(CODE, message);
    match span {
        Some(span) => diag.with_primary(file, span, label),
        None => diag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nkic_isa::DType;

    #[test]
    fn reads_the_entry_of_the_file() {
        let text = "[\"k.py\"]\nkernel = \"kern\"\nargs = [\"a=bfloat16[128,512]\"]\nconsts = [\"N=4\"]\ngrid = [2]\ntarget = \"trn2\"\n\n[\"other.py\"]\nargs = []\n";
        let mut sources = SourceMap::new();
        let entry = entry_for("dir/k.py", "dir/nkic.toml", text, &mut sources)
            .unwrap()
            .unwrap();
        assert_eq!(entry.kernel.as_deref(), Some("kern"));
        assert_eq!(entry.settings.args[0].dtype, DType::BF16);
        assert_eq!(entry.settings.args[0].shape, vec![128, 512]);
        assert_eq!(entry.settings.consts[0], ("N".into(), ConstValue::Int(4)));
        assert_eq!(entry.settings.grid, vec![2]);
        assert_eq!(entry.settings.target, Some(Target::Trn2));
        assert_eq!(
            entry_for("dir/none.py", "dir/nkic.toml", text, &mut sources).unwrap(),
            None
        );
        assert_eq!(sources.files().count(), 0);
    }

    #[test]
    fn errors_point_into_the_manifest() {
        let text = "[\"k.py\"]\nargs = [\"a=float33[4]\"]\n";
        let mut sources = SourceMap::new();
        let errs = entry_for("k.py", "nkic.toml", text, &mut sources).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, CODE);
        let label = errs[0].primary.as_ref().unwrap();
        assert_eq!(&text[label.span.range()], "\"a=float33[4]\"");
        assert_eq!(sources.file(label.file).name(), "nkic.toml");

        let typo = "[\"k.py\"]\nargz = []\n";
        let errs = entry_for("k.py", "nkic.toml", typo, &mut sources).unwrap_err();
        assert!(errs[0].message.contains("argz"), "{}", errs[0].message);

        let broken = "[\"k.py\"\nargs = 1\n";
        let errs = entry_for("k.py", "nkic.toml", broken, &mut sources).unwrap_err();
        assert!(errs[0].message.contains("not valid TOML"));
        assert!(errs[0].primary.is_some());
    }

    #[test]
    fn manifest_paths() {
        assert_eq!(path_next_to("kernels/a.py"), "kernels/nkic.toml");
        assert_eq!(path_next_to("a.py"), "nkic.toml");
        assert_eq!(path_next_to("/abs/dir/a.py"), "/abs/dir/nkic.toml");
    }
}
