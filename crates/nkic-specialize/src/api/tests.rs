//! Unit tests of the API table: the generated reference in
//! `docs/language.md` is in sync, names are unique, and `describe` reads
//! the table.

use super::table::{self, all};
use super::{ApiFn, describe, reference_markdown};

const BEGIN: &str = "<!-- BEGIN nl and nisa reference -->\n";
const END: &str = "<!-- END nl and nisa reference -->\n";

fn doc_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/language.md")
}

/// The generated section must match `docs/language.md`; with
/// `NKIC_BLESS=1` the file's section is rewritten instead.
#[test]
fn reference_doc_in_sync() {
    let path = doc_path();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = reference_markdown();
    let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
        panic!("{} lacks the reference markers", path.display());
    };
    let current = &text[b + BEGIN.len()..e];
    if std::env::var_os("NKIC_BLESS").is_some() {
        let new = format!(
            "{}{BEGIN}{generated}{END}{}",
            &text[..b],
            &text[e + END.len()..]
        );
        std::fs::write(&path, new)
            .unwrap_or_else(|err| panic!("writing {}: {err}", path.display()));
        return;
    }
    assert!(
        current == generated,
        "docs/language.md is out of date; run `NKIC_BLESS=1 cargo test -p nkic-specialize reference_doc`"
    );
}

#[test]
fn names_are_unique_and_found() {
    let defs = all();
    for (i, d) in defs.iter().enumerate() {
        assert_eq!(table::find(d.name), Some(ApiFn(i as u16)), "{}", d.name);
        for p in d.params {
            let n = d.params.iter().filter(|q| q.name == p.name).count();
            assert_eq!(n, 1, "{} repeats parameter {}", d.name, p.name);
        }
        // Required parameters come first.
        let first_opt = d.params.iter().position(|p| p.default.is_some());
        if let Some(k) = first_opt {
            assert!(
                d.params[k..].iter().all(|p| p.default.is_some()),
                "{}: required after optional",
                d.name
            );
        }
    }
}

#[test]
fn describe_reads_the_table() {
    let f = table::find("nisa.dma_copy").expect("dma_copy is registered");
    let doc = describe(f).expect("described");
    assert!(
        doc.signature
            .starts_with("nisa.dma_copy(dst: tensor, src: tensor, priority: int = None")
    );
    assert_eq!(doc.engines, "dma, sync, scalar");
    assert_eq!(doc.targets, "trn2+");
    assert!(doc.constraints.iter().any(|c| c.contains("PSUM")));
    assert!(describe(ApiFn(u16::MAX)).is_none());
}
