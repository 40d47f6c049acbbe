//! Specializes the benchmark's 100,000-op kernel once and prints the time
//! and op count: a single run for profilers (`valgrind --tool=callgrind`)
//! without the benchmark harness. The kernel is the same text as in
//! `benches/specialize.rs`.

use std::time::Instant;

use nkic_diag::SourceMap;
use nkic_specialize::{NoModules, SpecializeConfig, specialize};

/// 25,000 iterations of a loop body with four ops: 100,000 ops.
const KERNEL: &str = r#"
import nki
import nki.language as nl
import nki.isa as nisa


def rows(i, p):
    return nl.ds((i % 8) * p, p)


# nkic: args x=float32[1024,512]
@nki.jit
def unrolled(x):
    R, C = x.shape
    P = 128
    y = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    for i in range(25000):
        r = rows(i, P)
        t = nl.ndarray((P, C), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r, :], name=f"ld{i}")
        nisa.dma_copy(dst=y[r, 0:256], src=t[:, 0:256])
        nisa.dma_copy(dst=y[r, 256:512], src=t[:, 256:512])
        nisa.dma_copy(dst=t, src=x[r, :])
    return y
"#;

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
