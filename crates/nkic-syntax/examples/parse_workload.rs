//! Generates a kernel file of the given size (default 400 kB) and parses it
//! once: a deterministic workload for instruction-count profiling
//! (`valgrind --tool=callgrind`), which is stable on a busy machine where
//! timings are not.

#[path = "../benches/workload/generate.rs"]
mod workload;

use workload::generate;

fn main() {
    let size = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(400_000);
    let repeats: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let src = generate(size);
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let start = std::time::Instant::now();
        let (module, diags) = nkic_syntax::parse(&src);
        let elapsed = start.elapsed().as_secs_f64();
        best = best.min(elapsed);
        assert!(diags.is_empty() && !module.body.is_empty());
    }
    let mb_per_s = src.len() as f64 / best / 1e6;
    println!(
        "{} bytes, best of {repeats}: {:.1} ms, {mb_per_s:.1} MB/s",
        src.len(),
        best * 1e3
    );
}
