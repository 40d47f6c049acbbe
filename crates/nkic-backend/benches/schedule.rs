//! Scheduling quality and compile speed over the IR fixtures.
//!
//! For every fixture that compiles, the bench first prints one line of
//! quality figures: simulated time of the optimized and the sequential
//! program, the lower bound (`nkic_backend::lower_bound`) and its engine
//! part, and the ratios the issue judges (optimized / bound, sequential /
//! optimized). It then times `compile` with criterion.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use nkic_backend::{BackendConfig, Schedule, compile, lower_bound};

fn quality_and_speed(c: &mut Criterion) {
    let optimized = BackendConfig::scheduled(Schedule::Optimized);
    let sequential = BackendConfig::scheduled(Schedule::Sequential);
    println!(
        "{:28} {:>12} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "fixture", "optimized", "sequential", "bound", "engine bnd", "opt/bound", "seq/opt"
    );
    for name in common::fixture_names() {
        if name.starts_with("err_") {
            continue;
        }
        let (kernel, sources) = common::load(&name);
        let (Ok(opt), Ok(seq)) = (
            compile(&kernel, &sources, &optimized),
            compile(&kernel, &sources, &sequential),
        ) else {
            println!("{name:28} does not compile");
            continue;
        };
        let inputs = common::inputs(&opt, 7);
        let a = common::simulate(&opt, &inputs);
        let b = common::simulate(&seq, &inputs);
        let bound = lower_bound(&opt);
        println!(
            "{name:28} {:>10.1}ns {:>10.1}ns {:>10.1}ns {:>10.1}ns {:>10.2} {:>10.2}",
            a.total_ns(),
            b.total_ns(),
            bound.ns,
            bound.engine_ns,
            a.total_ns() / bound.ns,
            b.total_ns() / a.total_ns()
        );
        c.bench_function(&format!("compile/{name}"), |bench| {
            bench.iter(|| compile(&kernel, &sources, &optimized))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = quality_and_speed
}
criterion_main!(benches);
