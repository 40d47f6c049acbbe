//! The `nkic` binary: the command line, file IO, exit codes and colour policy.
//!
//! Everything below this crate is pure: sources come in as strings and
//! results go out as values and `Diagnostic`s. This crate reads files,
//! decides whether to colour output, prints, and chooses the exit code:
//! 0 on success, 1 when the input had errors, 2 for a bad command line.

mod cli;
mod dump;
mod emit;
mod exec;
mod fsio;
mod mapped;
mod npy;
mod report;
mod run;
mod runio;

use std::process::ExitCode;

use clap::Parser;

/// The stack of the thread that runs the command: the one the front end
/// needs for the deepest recursion it allows.
const STACK_BYTES: usize = nkic_specialize::STACK_BYTES;

/// jemalloc serves the command's allocations (the workspace `Cargo.toml`
/// says why); the Python package keeps its host's allocator.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let worker = std::thread::Builder::new()
        .name("nkic".to_string())
        .stack_size(STACK_BYTES)
        .spawn(move || match cli::run(cli) {
            Ok(code) => code,
            Err(err) => {
                report::print_stderr(&format!("error: {err}\n"));
                ExitCode::from(1)
            }
        });
    match worker.map(|w| w.join()) {
        Ok(Ok(code)) => code,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(err) => {
            report::print_stderr(&format!("error: cannot start the worker thread: {err}\n"));
            ExitCode::from(1)
        }
    }
}
