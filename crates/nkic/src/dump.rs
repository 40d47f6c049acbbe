//! `nkic run --dump NAME`: every value a named tensor takes, as `.npy`
//! files.
//!
//! Each write of an instruction operand that belongs to tensor `NAME` (an
//! HBM tensor — a kernel argument or internal buffer — or an on-chip tile
//! the compiler named in `Program::operand_names`) is one value: the
//! elements that instruction wrote, shaped like the operand (partitions or
//! rows first, then the free dimensions). In a loop every iteration's write
//! is its own value. They are written, in order of the time they became
//! visible, to `DIR/dump/NAME/0000.npy`, `0001.npy`, … (`DIR` is `--out`,
//! or the current directory), with `DIR/dump/NAME/index.txt` listing one
//! line per file: the file, the simulated time in ns, the instruction
//! (`queue[index]` and mnemonic), the operand field, the dtype and shape,
//! and the kernel source line. In a multi-core launch the writes of both
//! cores are listed together, the instruction as `core1.queue[index]`.

use std::fmt::Write;
use std::path::Path;

use nkic_diag::Diagnostic;
use nkic_isa::{Launch, Program};
use nkic_sim::Dump;

use crate::npy::{self, OutDType};
use crate::runio::OutDTypeArg;

/// Every name `--dump` accepts in `program`.
fn known_names(program: &Program) -> Vec<String> {
    let mut names: Vec<String> = program.tensors().map(|(_, t)| t.name.clone()).collect();
    names.extend(program.operand_names.iter().map(|n| n.name.to_string()));
    names.sort();
    names.dedup();
    names
}

/// Checks that every `--dump` name is a tensor of the program (of some
/// core of a multi-core launch).
pub fn check_names(launch: &Launch, names: &[String]) -> Result<(), Vec<Diagnostic>> {
    if names.is_empty() {
        // Nothing to check: the list of every operand name (hundreds of
        // thousands in a large kernel, half a second to collect and sort)
        // is only made for a name to look up.
        return Ok(());
    }
    let mut known: Vec<String> = launch.cores.iter().flat_map(known_names).collect();
    known.sort();
    known.dedup();
    let unknown: Vec<Diagnostic> = names
        .iter()
        .filter(|n| !known.contains(n))
        .map(|n| {
            Diagnostic::error(
                "E1017",
                format!("`--dump {n}` names no tensor of the program"),
            )
            .with_note(format!("its named tensors are: {}", known.join(", ")))
        })
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(unknown)
    }
}

/// Writes the dumps of each name in `names`; see the module doc.
pub fn write_dumps(
    launch: &Launch,
    names: &[String],
    dumps: &[Dump],
    dir: &Path,
    out: OutDTypeArg,
) -> Result<(), Vec<Diagnostic>> {
    let out = OutDType::from(out);
    for name in names {
        let sub = dir.join("dump").join(name);
        std::fs::create_dir_all(&sub).map_err(|err| {
            vec![Diagnostic::error(
                "E9004",
                format!("cannot create the directory `{}`: {err}", sub.display()),
            )]
        })?;
        let mut index = String::new();
        for (k, d) in dumps.iter().filter(|d| &d.name == name).enumerate() {
            let file = format!("{k:04}.npy");
            let path = sub.join(&file);
            let data = npy::write(&d.shape, d.dtype, &d.bytes, out);
            crate::fsio::write_atomic(&path, &data).map_err(|d| vec![d])?;
            let Some(program) = launch.core(usize::from(d.core)) else {
                continue;
            };
            let core = if launch.is_multi_core() {
                format!("core{}.", d.core)
            } else {
                String::new()
            };
            let source = d
                .line
                .and_then(|l| program.location(l))
                .map_or_else(|| "-".to_owned(), |(f, l, c)| format!("{f}:{l}:{c}"));
            let shape: Vec<String> = d.shape.iter().map(u64::to_string).collect();
            let mnemonic = program
                .stream(d.queue)
                .and_then(|s| s.get(d.index))
                .map_or("?", |i| i.op.mnemonic());
            let _ = writeln!(
                index,
                "{file} {:.3} {core}{}[{}] {mnemonic} {} {}[{}] {source}",
                d.time_ps as f64 / 1000.0,
                d.queue,
                d.index,
                d.field,
                d.dtype,
                shape.join(",")
            );
        }
        let path = sub.join("index.txt");
        crate::fsio::write_atomic(&path, index.as_bytes()).map_err(|d| vec![d])?;
    }
    Ok(())
}
