//! `nkic exec`: assemble a `.nkasm` program, verify it, run it in the
//! reference interpreter, write its outputs and report the simulated time.
//!
//! A file with `.core N` sections is a multi-core launch (LNC=2,
//! docs/isa.md §2.3): it is verified as a launch and runs on two cores;
//! faults, reports and statistics name each queue's core (`core1.dma0`).

use std::path::Path;

use nkic_diag::{Diagnostic, SourceMap, Span};
use nkic_driver::simulate::{InstructionLocator, runtime_fault};

use crate::runio::{InputSpec, SimFlags, print_report, read_inputs, write_outputs};

pub struct ExecOptions<'a> {
    pub program_path: &'a Path,
    pub inputs: &'a [InputSpec],
    pub out_dir: Option<&'a Path>,
    pub sim: SimFlags,
}

/// Runs a `.nkasm` file. Returns the diagnostics that stop it, if any.
/// Returns the warnings of a run that completes (undefined outputs, E2009).
pub fn exec(
    opts: &ExecOptions<'_>,
    sources: &mut SourceMap,
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let file = crate::cli::load(opts.program_path, sources).map_err(|d| vec![d])?;
    let text = sources.file(file).text().to_owned();
    let launch = nkic_isa::assemble_launch(&text).map_err(|errors| {
        errors
            .into_iter()
            .map(|err| {
                Diagnostic::error("E1001", err.message.clone()).with_primary(
                    file,
                    Span::new(err.span.start, err.span.end),
                    "here",
                )
            })
            .collect::<Vec<_>>()
    })?;
    let locator = InstructionLocator::new(&text);
    let verified = match nkic_isa::verify_launch(&launch) {
        Ok(verified) => verified,
        Err(errors) => {
            return Err(errors
                .into_iter()
                .map(|err| {
                    let diag = Diagnostic::error("E1002", err.to_string());
                    let at = err
                        .queue
                        .zip(err.index)
                        .and_then(|(q, i)| locator.span(err.core, q, i))
                        .or_else(|| locator.decl(err.core, err.decl?));
                    match at {
                        Some(span) => {
                            diag.with_primary(file, span, "rejected by the program verifier")
                        }
                        // A launch-level problem: the queue's or the core's
                        // section, or else the program's first line.
                        None => match locator
                            .declaration(err.core, err.queue)
                            .or_else(|| locator.first_line())
                        {
                            Some(span) => {
                                diag.with_primary(file, span, "rejected by the launch verifier")
                            }
                            None => diag,
                        },
                    }
                })
                .collect());
        }
    };
    let base_dir = opts.program_path.parent().unwrap_or(Path::new("."));
    let program = launch.main();
    let inputs = read_inputs(program, opts.inputs)?;
    let config = opts.sim.config(false);
    let result = nkic_sim::run_launch(verified, &inputs, &config).map_err(|err| {
        vec![runtime_fault(
            &err,
            &launch,
            Some((file, &locator)),
            base_dir,
            sources,
            &crate::cli::FileLoader,
        )]
    })?;
    if let Some(dir) = opts.out_dir {
        let files: Vec<(String, &str)> = result
            .outputs
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (format!("out{i}.npy"), name.as_str()))
            .collect();
        write_outputs(program, &result, dir, opts.sim.out_dtype, &files).map_err(|d| vec![d])?;
    }
    print_report(&launch, &result, opts.sim.report, None);
    Ok(nkic_driver::simulate::undefined_warnings(
        &result,
        &launch,
        base_dir,
        sources,
        &crate::cli::FileLoader,
        |name, _| {
            let declared = locator.tensor(name).map(|span| (file, span));
            (format!("`{name}`"), declared)
        },
    ))
}
