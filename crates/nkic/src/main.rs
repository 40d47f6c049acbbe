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
mod npy;
mod report;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            report::print_stderr(&format!("error: {err}\n"));
            ExitCode::from(1)
        }
    }
}
