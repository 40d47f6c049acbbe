//! Throughput of the specializer: a kernel that unrolls to 100,000 ops
//! (issue 4 asks for under 0.5 s in release on the project machine).

use criterion::{Criterion, criterion_group, criterion_main};
use nkic_diag::SourceMap;
use nkic_specialize::{NoModules, SpecializeConfig, specialize};

/// 25,000 iterations of a loop body with four ops, a helper call, tuple
/// unpacking, arithmetic and an f-string name: 100,000 ops.
const KERNEL: &str = include_str!("unrolled.py");

fn bench(c: &mut Criterion) {
    let config = SpecializeConfig::default();
    c.bench_function("specialize_100k_ops", |b| {
        b.iter(|| {
            let mut sources = SourceMap::new();
            let file = sources.add("unrolled.py", KERNEL);
            let res = specialize(&mut sources, file, &config, &NoModules);
            assert!(!res.has_errors());
            assert_eq!(res.kernels[0].ops.len(), 100_000);
            res
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
