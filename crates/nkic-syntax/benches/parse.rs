//! Throughput of the front end (lex + layout + parse) on a generated kernel
//! file of several megabytes; criterion reports bytes per second. The target
//! is at least 20 MB/s on one core in a release build.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "workload/generate.rs"]
mod workload;

use workload::generate;

fn bench_parse(c: &mut Criterion) {
    let src = generate(4 << 20);
    let (module, diags) = nkic_syntax::parse(&src);
    assert!(diags.is_empty(), "the generated file must parse cleanly");
    assert!(module.body.len() > 1000);
    let mut group = c.benchmark_group("front end");
    group.throughput(Throughput::Bytes(src.len() as u64));
    group.sample_size(10);
    group.bench_function("lex + layout", |b| {
        b.iter(|| nkic_syntax::lex(std::hint::black_box(&src)).0.len())
    });
    group.bench_function("lex + layout + parse", |b| {
        b.iter(|| nkic_syntax::parse(std::hint::black_box(&src)).0.body.len())
    });
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
