//! Simulator throughput: simulated instructions per second and elements
//! per second on a tiled bf16 matmul and an elementwise pipeline.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nkic_sim::{Inputs, SimConfig, run};

/// The benchmark programs always verify.
fn checked(program: &nkic_isa::Program) -> nkic_isa::Verified<'_, nkic_isa::Program> {
    nkic_isa::verify(program)
        .unwrap_or_else(|e| panic!("the benchmark program does not verify: {e:?}"))
}

#[path = "programs.rs"]
mod programs;

fn matmul(c: &mut Criterion) {
    let (m, k, n) = (512u64, 512u64, 1024u64);
    let program = programs::matmul(m, k, n);
    let verified = checked(&program);
    let inputs = Inputs::new()
        .with("at", programs::bf16_bytes((k * m) as usize, 1))
        .with("b", programs::bf16_bytes((k * n) as usize, 2));
    let config = SimConfig {
        trace: false,
        ..SimConfig::default()
    };
    let probe = run(verified, &inputs, &config).expect("the benchmark program runs");
    let mut group = c.benchmark_group("matmul_512x512x1024_bf16");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(probe.instructions));
    group.bench_function("instructions", |b| {
        b.iter(|| run(verified, &inputs, &config))
    });
    // Multiply-adds per second of the TensorE inner loop.
    group.throughput(Throughput::Elements(probe.flops / 2));
    group.bench_function("multiply_adds", |b| {
        b.iter(|| run(verified, &inputs, &config))
    });
    group.finish();
}

fn elementwise(c: &mut Criterion) {
    let tiles = 8u64;
    let program = programs::elementwise(tiles);
    let verified = checked(&program);
    let inputs = Inputs::new().with("x", programs::bf16_bytes((tiles * 128 * 2048) as usize, 3));
    let config = SimConfig {
        trace: false,
        ..SimConfig::default()
    };
    let probe = run(verified, &inputs, &config).expect("the benchmark program runs");
    let mut group = c.benchmark_group("elementwise_8x128x2048_bf16");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(probe.instructions));
    group.bench_function("instructions", |b| {
        b.iter(|| run(verified, &inputs, &config))
    });
    group.throughput(Throughput::Elements(probe.elements));
    group.bench_function("elements", |b| b.iter(|| run(verified, &inputs, &config)));
    group.finish();
}

fn small_ops(c: &mut Criterion) {
    let program = programs::small_ops(2000);
    let verified = checked(&program);
    let config = SimConfig {
        trace: false,
        ..SimConfig::default()
    };
    let probe = run(verified, &Inputs::new(), &config).expect("the benchmark program runs");
    let mut group = c.benchmark_group("small_ops_3x2000_loops");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(probe.instructions));
    group.bench_function("instructions", |b| {
        b.iter(|| run(verified, &Inputs::new(), &config))
    });
    group.throughput(Throughput::Elements(probe.elements));
    group.bench_function("elements", |b| {
        b.iter(|| run(verified, &Inputs::new(), &config))
    });
    group.finish();
}

criterion_group!(benches, matmul, elementwise, small_ops);
criterion_main!(benches);
