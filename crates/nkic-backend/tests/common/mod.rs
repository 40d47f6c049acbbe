//! Helpers shared by the backend's tests and its bench: loading IR
//! fixtures with their synthetic source file, deterministic inputs, and
//! simulation.

#![allow(dead_code)]

use std::path::PathBuf;

use nkic_diag::SourceMap;
use nkic_ir::Kernel;
use nkic_isa::{DType, Program, TensorKind};

/// Bytes per line of the synthetic `kernel.py` the fixtures point into.
pub const LINE: usize = 40;

/// The directory of the IR fixtures.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The names of all fixtures (without `.ir`), sorted.
pub fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("the fixture directory exists")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".ir").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

/// A synthetic source file with `lines` lines of exactly [`LINE`] bytes.
pub fn synthetic_source(lines: usize) -> String {
    (1..=lines)
        .map(|n| format!("{:<width$}\n", format!("# line {n}"), width = LINE - 1))
        .collect()
}

/// Reads fixture `name` and the source map its locations point into.
pub fn load(name: &str) -> (Kernel, SourceMap) {
    let text = std::fs::read_to_string(fixture_dir().join(format!("{name}.ir")))
        .expect("the fixture exists");
    load_text(&text)
}

/// Reads IR text and builds the source map for its locations.
pub fn load_text(text: &str) -> (Kernel, SourceMap) {
    let kernel = nkic_ir::read(text).unwrap_or_else(|e| panic!("fixture does not read: {e:?}"));
    let mut sources = SourceMap::new();
    let lines = text.lines().count() * 4 + 64;
    sources.add("kernel.py", synthetic_source(lines));
    (kernel, sources)
}

/// The bytes `inputs` gives argument `name`.
pub fn input_bytes(inputs: &nkic_sim::Inputs, name: &str) -> Vec<u8> {
    inputs
        .entries
        .iter()
        .find(|(k, _)| *k == nkic_sim::InputKey::from(name))
        .map(|(_, b)| b.to_vec())
        .unwrap_or_else(|| panic!("no input {name}"))
}

/// `diags` rendered without colour, in ASCII, as the tests compare them.
pub fn render(diags: &[nkic_diag::Diagnostic], sources: &SourceMap) -> String {
    nkic_diag::render_all(
        diags,
        sources,
        nkic_diag::RenderConfig {
            color: false,
            unicode: false,
        },
    )
}

/// A small deterministic generator (SplitMix64).
pub struct Rng(pub nkic_isa::SplitMix64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A float in [-2, 2) with at most 12 significant bits, so sums stay exact-ish.
    pub fn value(&mut self) -> f32 {
        ((self.next() >> 52) as f32 - 2048.0) / 1024.0
    }
}

/// Deterministic inputs for every input and inout argument of `program`.
pub fn inputs(program: &Program, seed: u64) -> nkic_sim::Inputs {
    let mut rng = Rng(nkic_isa::SplitMix64(seed));
    let mut inputs = nkic_sim::Inputs::new();
    for (_, t) in program.args() {
        if !matches!(t.kind, TensorKind::Input | TensorKind::InOut) {
            continue;
        }
        let n = t.numel() as usize;
        let bytes: Vec<u8> = match t.dtype {
            DType::F32 => (0..n).flat_map(|_| rng.value().to_le_bytes()).collect(),
            DType::BF16 => (0..n)
                .flat_map(|_| {
                    let bits = rng.value().to_bits();
                    ((bits >> 16) as u16).to_le_bytes()
                })
                .collect(),
            _ => (0..t.bytes()).map(|_| rng.next() as u8).collect(),
        };
        inputs.insert(t.name.as_str(), bytes);
    }
    inputs
}

/// Runs `program` with the race sanitizer on.
pub fn simulate(program: &Program, inputs: &nkic_sim::Inputs) -> nkic_sim::RunResult {
    let config = nkic_sim::SimConfig {
        race_check: true,
        ..nkic_sim::SimConfig::default()
    };
    let verified = nkic_isa::verify(program)
        .unwrap_or_else(|e| panic!("the compiled program does not verify: {e:?}\n{program}"));
    nkic_sim::run(verified, inputs, &config)
        .unwrap_or_else(|e| panic!("simulation failed: {e}\n{program}"))
}
