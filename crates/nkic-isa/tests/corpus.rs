//! Corpus tests of the `.nkasm` format: every file under `tests/corpus/`
//! assembles, verifies, is in canonical printed form, and round-trips
//! (as a launch: one-core programs and multi-core `.core` sections).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nkic_isa::{Op, assemble_launch as assemble, print_launch as print, verify_launch as verify};

fn corpus_files() -> Vec<PathBuf> {
    common::nkasm_files("corpus")
}

#[test]
fn corpus_round_trips_and_verifies() {
    let files = corpus_files();
    assert!(files.len() >= 3, "the corpus has {} files", files.len());
    for path in files {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let program = assemble(&text).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        if let Err(errors) = verify(&program) {
            let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
            panic!(
                "{} does not verify:\n{}",
                path.display(),
                messages.join("\n")
            );
        }
        let printed = print(&program);
        assert_eq!(printed, text, "{} is not in canonical form", path.display());
        assert_eq!(
            assemble(&printed).as_ref(),
            Ok(&program),
            "{}",
            path.display()
        );
    }
}

/// One instance of every instruction in the corpus, by mnemonic.
fn corpus_instructions() -> BTreeMap<&'static str, Op> {
    let mut ops = BTreeMap::new();
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let Ok(program) = assemble(&text) else {
            continue;
        };
        for stream in program.cores.into_iter().flat_map(|p| p.queues) {
            for inst in stream.insts {
                ops.entry(inst.op.mnemonic()).or_insert(inst.op);
            }
        }
    }
    ops
}

/// Fails with `message` and the mnemonics of the instruction table for
/// which `present` is false, if any.
fn assert_every_instruction(present: impl Fn(&str) -> bool, message: &str) {
    let missing: Vec<&str> = Op::MNEMONICS
        .iter()
        .copied()
        .filter(|m| !present(m))
        .collect();
    assert!(missing.is_empty(), "{message}: {missing:?}");
}

/// The text of `docs/isa.md`.
fn isa_doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/isa.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_instruction_appears_in_the_corpus() {
    let seen = corpus_instructions();
    assert_every_instruction(
        |m| seen.contains_key(m),
        "instructions missing from the corpus",
    );
}

#[test]
fn docs_describe_every_instruction() {
    let doc = isa_doc();
    let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with("#### ")).collect();
    let has_section = |m: &str| {
        let exact = format!("`{m}`");
        let with_fields = format!("`{m} ");
        headings
            .iter()
            .any(|h| h.contains(&exact) || h.contains(&with_fields))
    };
    assert_every_instruction(has_section, "docs/isa.md has no section for");
}

#[test]
fn docs_programs_are_valid_and_canonical() {
    let doc = isa_doc();
    let mut programs = 0;
    for block in doc.split("```text\n").skip(1) {
        let body = block.split("```").next().unwrap_or_default();
        if !body.starts_with(".target") {
            continue;
        }
        programs += 1;
        let program = assemble(body).unwrap_or_else(|e| panic!("{e:?}\n{body}"));
        assert_eq!(verify(&program).err(), None, "{body}");
        assert_eq!(print(&program), body);
    }
    assert!(programs >= 1, "docs/isa.md shows no whole program");
}

/// Each instruction section of docs/isa.md states the queues and targets
/// of the instruction table: "Queues `vector`, `gpsimd`; trn1, trn2, trn3."
#[test]
fn docs_state_the_table_engines_and_targets() {
    let doc = isa_doc();
    let ops = corpus_instructions();
    let mut checked = 0;
    for (mnemonic, op) in &ops {
        if op.is_control() {
            continue;
        }
        let heading = format!("#### `{mnemonic}`\n");
        let Some(at) = doc.find(&heading) else {
            panic!("no section for {mnemonic}");
        };
        let line = doc[at..]
            .lines()
            .find(|l| l.starts_with("Queue"))
            .unwrap_or_else(|| panic!("no Queue line for {mnemonic}"));
        let (queues, targets) = line
            .split_once(';')
            .unwrap_or_else(|| panic!("{mnemonic}: {line}"));
        let mut documented: Vec<String> = queues
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|q| {
                if q == "dmaN" {
                    "dma".to_owned()
                } else {
                    q.to_owned()
                }
            })
            .collect();
        documented.sort();
        let mut table: Vec<String> = op.engines().iter().map(|e| e.name().to_owned()).collect();
        table.sort();
        assert_eq!(documented, table, "{mnemonic}: {line}");
        let since = if targets.contains("trn1") {
            nkic_isa::Target::Trn1
        } else if targets.contains("trn2") {
            nkic_isa::Target::Trn2
        } else {
            nkic_isa::Target::Trn3
        };
        assert_eq!(since, op.since(), "{mnemonic}: {line}");
        checked += 1;
    }
    assert!(checked >= 40, "checked {checked} sections");
}
