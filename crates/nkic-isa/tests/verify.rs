//! Verifier fixtures: every file under `tests/verify/` is a small `.nkasm`
//! launch followed by the exact errors `verify_launch` reports for it, one
//! comment line each, in order:
//!
//! ```text
//! # error: <rule> <field or ->: <message as displayed>
//! ```
//!
//! A few rules cannot be broken by assembled text (the assembler already
//! rejects duplicate names, unknown semaphores and the like); `built_cases`
//! breaks them by editing assembled programs. `every_rule_has_a_fixture`
//! fails when some `Rule` is broken by no fixture and no built case.
//!
//! `NKIC_BLESS=1 cargo test -p nkic-isa --test verify` rewrites the error
//! lines of every fixture from the verifier's output; review the diff.

mod common;

use nkic_isa::insn;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use nkic_isa::{
    HbmTensor, Launch, LineEntry, Program, Rule, SemId, Semaphore, TensorKind, VerifyError,
    assemble_launch, verify_launch,
};

const ERROR: &str = "# error: ";

/// One error as a fixture writes it.
fn line(e: &VerifyError) -> String {
    format!("{} {}: {e}", e.rule.name(), e.field.unwrap_or("-"))
}

fn errors_of(launch: &Launch) -> Vec<String> {
    match verify_launch(launch) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.iter().map(line).collect(),
    }
}

fn fixtures() -> Vec<PathBuf> {
    common::nkasm_files("verify")
}

/// The fixture's text and the errors it expects.
fn read(path: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected = text
        .lines()
        .filter_map(|l| l.strip_prefix(ERROR))
        .map(str::to_owned)
        .collect();
    (text, expected)
}

#[test]
fn fixtures_report_exactly_their_errors() {
    let bless = std::env::var_os("NKIC_BLESS").is_some();
    let files = fixtures();
    assert!(files.len() >= 10, "{} fixtures", files.len());
    let mut failures = Vec::new();
    for path in files {
        let (text, expected) = read(&path);
        let actual = match assemble_launch(&text) {
            Ok(launch) => errors_of(&launch),
            Err(e) => {
                failures.push(format!("{} does not assemble: {e:?}", path.display()));
                continue;
            }
        };
        if actual == expected {
            continue;
        }
        if bless {
            let mut out: String = text
                .lines()
                .filter(|l| !l.starts_with(ERROR))
                .map(|l| format!("{l}\n"))
                .collect();
            for e in &actual {
                out.push_str(&format!("{ERROR}{e}\n"));
            }
            std::fs::write(&path, out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        } else {
            failures.push(format!(
                "{}:\n  expected:\n    {}\n  actual:\n    {}",
                path.display(),
                expected.join("\n    "),
                actual.join("\n    ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A one-core launch of `text`, which must assemble.
fn assembled(text: &str) -> Program {
    let launch = assemble_launch(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    launch.cores.into_iter().next().expect("one core")
}

const BASE: &str =
    ".target trn3\n.arg a f32[128,4] input\n.sem s\n.queue vector\n  nop signal(s)\n";

/// Programs that break the rules text cannot break, with their errors.
fn built_cases() -> Vec<(&'static str, Launch, Vec<&'static str>)> {
    let tensor = |name: &str| HbmTensor {
        name: name.to_owned(),
        dtype: nkic_isa::DType::F32,
        shape: vec![4],
        kind: TensorKind::Internal,
        data: None,
    };
    let mut names = assembled(BASE);
    names.hbm.push(tensor("not a name"));
    names.hbm.push(tensor("a"));
    names.semaphores.push(Semaphore {
        name: "9s".to_owned(),
    });
    names.semaphores.push(Semaphore {
        name: "s".to_owned(),
    });

    let mut ids = assembled(BASE);
    ids.line_table.push(LineEntry {
        file: 3,
        line: 1,
        col: 1,
        span: 0..1,
    });
    let stream = ids.queues[0].clone();
    ids.queues.push(stream);
    let inst = &mut ids.queues[0].insts[0];
    inst.signals.push(SemId(7));
    inst.line = Some(nkic_isa::LineId(5));

    let mut tensor_id = assembled(
        ".target trn3\n.arg a f32[128,4] input\n.queue dma0\n  dma_copy dst=sbuf[0:128]:f32[1,4] src=hbm.a[0:128*4]:f32[1,4]\n",
    );
    if let nkic_isa::Op::DmaCopy(insn::DmaCopy { src, .. }) = &mut tensor_id.queues[0].insts[0].op {
        src.mem = nkic_isa::Memory::Hbm(nkic_isa::TensorId(4));
    }

    // The assembler refuses `.data` of an argument.
    let mut data = assembled(BASE);
    data.hbm[0].data = Some(vec![0; 128 * 4 * 4].into());

    let mut targets = assemble_launch(
        ".target trn3\n.core 0\n.arg a f32[4] input\n.core 1\n.arg a f32[4] input\n",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    targets.cores[1].target = nkic_isa::Target::Trn2;

    vec![
        (
            "names",
            Launch::single(names),
            vec![
                "tensor-name -: HBM tensor name `not a name` is not an identifier",
                "tensor-declared-twice -: HBM tensor `a` is declared twice",
                "semaphore-name -: semaphore name `9s` is not an identifier",
                "semaphore-declared-twice -: semaphore `s` is declared twice",
            ],
        ),
        (
            "ids",
            Launch::single(ids),
            vec![
                "line-file -: line entry l0 names file f3 but the program has 0 files",
                "queue-two-streams -: queue vector has two streams",
                "line-entry -: vector[0] `nop`: line entry l5 does not exist",
                "semaphore-declared -: vector[0] `nop`: semaphore #7 is not declared",
            ],
        ),
        (
            "tensor id",
            Launch::single(tensor_id),
            vec![
                "tensor-exists src: dma0[0] `dma_copy`: `src` names HBM tensor #4 which does not exist",
            ],
        ),
        (
            "data of an argument",
            Launch::single(data),
            vec![
                "tensor-data-argument -: HBM tensor `a` is an input argument but has data; only `.hbm` tensors hold constant bytes on entry",
            ],
        ),
        (
            "targets",
            targets,
            vec!["launch-target -: core 1: core 1 is compiled for trn2, core 0 for trn3"],
        ),
        (
            "no cores",
            Launch { cores: Vec::new() },
            vec!["launch-cores -: a launch needs at least one core"],
        ),
    ]
}

#[test]
fn built_programs_report_exactly_their_errors() {
    for (name, launch, expected) in built_cases() {
        assert_eq!(errors_of(&launch), expected, "{name}");
    }
}

#[test]
fn every_rule_has_a_fixture() {
    let mut seen = BTreeSet::new();
    let mut unknown = Vec::new();
    let expected = fixtures().into_iter().flat_map(|p| read(&p).1);
    let built = built_cases()
        .into_iter()
        .flat_map(|(_, _, e)| e.into_iter().map(str::to_owned));
    for e in expected.chain(built) {
        let name = e.split(' ').next().unwrap_or_default();
        match Rule::from_name(name) {
            Some(rule) => {
                seen.insert(rule);
            }
            None => unknown.push(e.clone()),
        }
    }
    assert_eq!(unknown, Vec::<String>::new(), "errors naming no rule");
    let missing: Vec<&str> = Rule::ALL
        .iter()
        .filter(|r| !seen.contains(r))
        .map(|r| r.name())
        .collect();
    assert_eq!(missing, Vec::<&str>::new(), "rules without a fixture");
}

#[test]
fn rule_names_are_unique_and_round_trip() {
    let mut names = BTreeSet::new();
    for &rule in Rule::ALL {
        assert!(names.insert(rule.name()), "{} twice", rule.name());
        assert_eq!(Rule::from_name(rule.name()), Some(rule));
    }
    assert_eq!(Rule::from_name("no-such-rule"), None);
    assert_eq!(names.len(), Rule::ALL.len());
}
