//! The stage dumps of `nkic compile --emit`.

/// A stage at which `nkic compile` stops and prints its text dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The token stream after the layout pass.
    Tokens,
    /// The syntax tree.
    Ast,
    /// The tile IR after specialization, one kernel per program instance.
    Ir,
    /// The pseudo-ISA program (`.nkasm`), after allocation and scheduling.
    Asm,
}
