//! Helpers the integration tests share: a verified run of one program,
//! the f32 values of an output's bytes and the step orders to run under.

use nkic_isa::Program;
use nkic_sim::{Inputs, RunResult, SimConfig, SimError, StepOrder};

/// The fixed step orders a test whose result must not depend on the order
/// runs under.
pub const ORDERS: [StepOrder; 3] = [
    StepOrder::RoundRobin,
    StepOrder::Reverse,
    StepOrder::Earliest,
];

/// `ORDERS`, then the order seeded with `seed`.
pub fn orders_and_seeded(seed: u64) -> impl Iterator<Item = StepOrder> {
    ORDERS.into_iter().chain([StepOrder::Seeded(seed)])
}

/// Verifies and runs one program.
pub fn run(p: &Program, inputs: &Inputs, config: &SimConfig) -> Result<RunResult, SimError> {
    let verified = nkic_isa::verify(p).unwrap_or_else(|e| panic!("{e:?}"));
    nkic_sim::run(verified, inputs, config)
}

/// Little-endian f32 values, four bytes each.
pub fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
