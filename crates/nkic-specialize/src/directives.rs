//! `# nkic:` directive comments: example arguments written directly above
//! a kernel's decorator (or `def`), so `nkic check kernel.py` needs no flags.
//!
//! ```text
//! # nkic: args a=float32[256,1024] b=float32[256, 1024]
//! # nkic: consts N=4 eps=1e-6
//! # nkic: grid 2,2
//! # nkic: target trn2
//! @nki.jit
//! def kernel(a, b, N, eps): ...
//! ```
//!
//! The block is the run of comment lines immediately above the kernel (no
//! blank line in between); other comments in it are ignored. Items are
//! separated by spaces outside brackets, parentheses and quotes.

use nkic_diag::{Diagnostic, FileId, SourceFile, Span};
use nkic_isa::Target;

use crate::codes;
use crate::config::{ArgSpec, ConstValue};

/// What the directives of one kernel say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Directives {
    pub args: Vec<ArgSpec>,
    pub consts: Vec<(String, ConstValue)>,
    pub grid: Vec<u32>,
    pub target: Option<Target>,
}

/// Reads the directive block ending on the line before byte offset
/// `def_start` (the kernel's first decorator or `def`).
pub fn scan(file: &SourceFile, id: FileId, def_start: u32) -> (Directives, Vec<Diagnostic>) {
    let mut out = Directives::default();
    let mut diags = Vec::new();
    let line = file.line_col(def_start).line - 1;
    let mut lines = Vec::new();
    let mut l = line;
    while l > 0 {
        l -= 1;
        let Some(text) = file.line_text(l) else { break };
        if !text.trim_start().starts_with('#') {
            break;
        }
        lines.push(l);
    }
    lines.reverse();
    for l in lines {
        let text = file.line_text(l).unwrap_or_default();
        let start = file.line_start(l).unwrap_or(0);
        let hash = text.find('#').unwrap_or(0);
        let body = text[hash + 1..].trim_start();
        let Some(raw) = body.strip_prefix("nkic:") else {
            continue;
        };
        let rest = raw.trim();
        // The directive's text starts after `nkic:` and its spaces.
        let rest_off = start + (text.len() - raw.trim_start().len()) as u32;
        let (word, items) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let span = Span::new(rest_off, start + text.trim_end().len() as u32);
        let err = |msg: String| {
            Diagnostic::error(codes::DIRECTIVE, msg).with_primary(id, span, "in this directive")
        };
        match word {
            "args" => {
                for item in split_items(items) {
                    match item.parse::<ArgSpec>() {
                        Ok(a) => out.args.push(a),
                        Err(e) => diags.push(err(format!("bad argument `{item}`: {e}"))),
                    }
                }
            }
            "consts" => {
                for item in split_items(items) {
                    match ConstValue::parse_binding(&item) {
                        Ok(c) => out.consts.push(c),
                        Err(e) => diags.push(err(format!("bad constant `{item}`: {e}"))),
                    }
                }
            }
            "grid" => match parse_grid(items) {
                Ok(g) => out.grid = g,
                Err(e) => diags.push(err(e)),
            },
            "target" => match Target::from_name(items.trim()) {
                Some(t) => out.target = Some(t),
                None => diags.push(err(format!(
                    "unknown target `{}` (use {})",
                    items.trim(),
                    Target::choices()
                ))),
            },
            other => diags.push(
                err(format!("unknown directive `{other}`"))
                    .with_help("directives are `args`, `consts`, `grid` and `target`"),
            ),
        }
    }
    (out, diags)
}

/// Parses `2,2`, `2, 2`, `[2, 2]` or `(4,)` into 1–3 positive sizes.
pub fn parse_grid(text: &str) -> Result<Vec<u32>, String> {
    let t = text
        .trim()
        .trim_start_matches(['[', '('])
        .trim_end_matches([']', ')']);
    let dims: Result<Vec<u32>, String> = t
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{d}` is not a positive grid size"))
        })
        .collect();
    let dims = dims?;
    if dims.is_empty() || dims.len() > 3 {
        return Err(format!("a grid has 1 to 3 dims, found `{}`", text.trim()));
    }
    Ok(dims)
}

/// Splits on whitespace outside `[]`, `()`, `{}` and quotes.
fn split_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (None, '[' | '(' | '{') => {
                depth += 1;
                cur.push(c);
            }
            (None, ']' | ')' | '}') => {
                depth -= 1;
                cur.push(c);
            }
            (None, c) if c.is_whitespace() && depth <= 0 => {
                if !cur.is_empty() {
                    items.push(std::mem::take(&mut cur));
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        items.push(cur);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use nkic_diag::SourceMap;
    use nkic_isa::DType;

    #[test]
    fn reads_the_block_above_the_kernel() {
        let src = "import nki\n\n# a comment\n# nkic: args a=float32[256, 1024] b=bf16[128,2]\n# nkic: consts N=4 dims=(1, 2) name='x y'\n# nkic: grid 2, 2\n@nki.jit\ndef k(a, b, N, dims, name):\n    pass\n";
        let mut map = SourceMap::new();
        let id = map.add("k.py", src);
        let start = src.find("@nki").unwrap() as u32;
        let (d, diags) = scan(map.file(id), id, start);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(d.args.len(), 2);
        assert_eq!(d.args[0].shape, vec![256, 1024]);
        assert_eq!(d.args[1].dtype, DType::BF16);
        assert_eq!(d.consts[0], ("N".into(), ConstValue::Int(4)));
        assert_eq!(
            d.consts[1].1,
            ConstValue::Tuple(vec![ConstValue::Int(1), ConstValue::Int(2)])
        );
        assert_eq!(d.consts[2].1, ConstValue::Str("x y".into()));
        assert_eq!(d.grid, vec![2, 2]);
    }

    #[test]
    fn a_blank_line_ends_the_block_and_errors_have_spans() {
        let src =
            "# nkic: args a=float32[4]\n\n# nkic: grid 0\n# nkic: frob\ndef k(a):\n    pass\n";
        let mut map = SourceMap::new();
        let id = map.add("k.py", src);
        let start = src.find("def").unwrap() as u32;
        let (d, diags) = scan(map.file(id), id, start);
        assert!(d.args.is_empty());
        assert_eq!(diags.len(), 2);
        assert_eq!(diags[0].code, codes::DIRECTIVE);
        let label = diags[0].primary.as_ref().unwrap();
        assert_eq!(&src[label.span.range()], "grid 0");
        assert!(diags[1].message.contains("unknown directive `frob`"));
    }

    #[test]
    fn grids() {
        assert_eq!(parse_grid("[4, 2]"), Ok(vec![4, 2]));
        assert_eq!(parse_grid("(2,)"), Ok(vec![2]));
        assert!(parse_grid("1,2,3,4").is_err());
        assert!(parse_grid("").is_err());
    }
}
