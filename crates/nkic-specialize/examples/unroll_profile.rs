//! Specializes the benchmark's 100,000-op kernel once and prints the time
//! and op count: a single run for profilers (`valgrind --tool=callgrind`)
//! without the benchmark harness. The kernel is the benchmark's,
//! `benches/unrolled.py`.

use std::time::Instant;

use nkic_diag::SourceMap;
use nkic_specialize::{NoModules, SpecializeConfig, specialize};

/// 25,000 iterations of a loop body with four ops: 100,000 ops (the
/// benchmark's kernel).
const KERNEL: &str = include_str!("../benches/unrolled.py");

fn main() {
    let config = SpecializeConfig::default();
    let start = Instant::now();
    let mut sources = SourceMap::new();
    let file = sources.add("unrolled.py", KERNEL);
    let res = specialize(&mut sources, file, &config, &NoModules);
    let ops: usize = res.kernels.iter().map(|k| k.ops.len()).sum();
    println!(
        "{ops} ops, {} errors, {:.3} s",
        res.diagnostics.iter().filter(|d| d.is_error()).count(),
        start.elapsed().as_secs_f64()
    );
}
