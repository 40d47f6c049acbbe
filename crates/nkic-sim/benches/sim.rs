//! Simulator throughput: simulated instructions per second and elements
//! per second on a tiled bf16 matmul and an elementwise pipeline.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nkic_sim::{Inputs, RunResult, SimConfig, SimTier, run};

/// The benchmark programs always verify.
fn checked(program: &nkic_isa::Program) -> nkic_isa::Verified<'_, nkic_isa::Program> {
    nkic_isa::verify(program)
        .unwrap_or_else(|e| panic!("the benchmark program does not verify: {e:?}"))
}

#[path = "programs.rs"]
mod programs;

/// Runs `program` once to count its work, then times it in the group
/// `name`: per simulated instruction, and per `unit` as `per_unit` counts
/// them in that first run.
fn throughput(
    c: &mut Criterion,
    name: &str,
    program: &nkic_isa::Program,
    inputs: &Inputs,
    seconds: u64,
    unit: &str,
    per_unit: fn(&RunResult) -> u64,
) {
    let verified = checked(program);
    let config = SimConfig {
        trace: false,
        ..SimConfig::default()
    };
    let probe = run(verified, inputs, &config).expect("the benchmark program runs");
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(seconds));
    for (id, count) in [
        ("instructions", probe.instructions),
        (unit, per_unit(&probe)),
    ] {
        group.throughput(Throughput::Elements(count));
        group.bench_function(id, |b| b.iter(|| run(verified, inputs, &config)));
    }
    group.finish();
}

fn matmul(c: &mut Criterion) {
    let (m, k, n) = (512u64, 512u64, 1024u64);
    let inputs = Inputs::new()
        .with("at", programs::bf16_bytes((k * m) as usize, 1))
        .with("b", programs::bf16_bytes((k * n) as usize, 2));
    // Multiply-adds per second of the TensorE inner loop.
    throughput(
        c,
        "matmul_512x512x1024_bf16",
        &programs::matmul(m, k, n),
        &inputs,
        10,
        "multiply_adds",
        |probe| probe.flops / 2,
    );
}

fn elementwise(c: &mut Criterion) {
    let tiles = 8u64;
    let inputs = Inputs::new().with("x", programs::bf16_bytes((tiles * 128 * 2048) as usize, 3));
    throughput(
        c,
        "elementwise_8x128x2048_bf16",
        &programs::elementwise(tiles),
        &inputs,
        5,
        "elements",
        |probe| probe.elements,
    );
}

fn small_ops(c: &mut Criterion) {
    throughput(
        c,
        "small_ops_3x2000_loops",
        &programs::small_ops(2000),
        &Inputs::new(),
        5,
        "elements",
        |probe| probe.elements,
    );
}

/// Both tiers on the programs of issue 15: a 1024³ bf16 matmul (128 ×
/// 128 × 512 tiles) and `(a + b) · 0.5 − 1` on 4096 × 4096 f32 in
/// [128, 512] tiles; criterion prints each tier's time per run.
fn tiers(c: &mut Criterion) {
    let matmul = programs::matmul(1024, 1024, 1024);
    let matmul_inputs = Inputs::new()
        .with("at", programs::bf16_bytes(1024 * 1024, 1))
        .with("b", programs::bf16_bytes(1024 * 1024, 2));
    let n = 4096 * 4096;
    let add_scale = programs::add_scale(4096, 4096);
    let add_scale_inputs = Inputs::new()
        .with("a", programs::f32_bytes(n, 1))
        .with("b", programs::f32_bytes(n, 2));
    for (name, program, inputs) in [
        ("tiers/matmul_1024_bf16", &matmul, &matmul_inputs),
        (
            "tiers/add_scale_4096x4096_f32",
            &add_scale,
            &add_scale_inputs,
        ),
    ] {
        let mut group = c.benchmark_group(name);
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(10));
        let verified = checked(program);
        let mut results = Vec::new();
        for (label, tier) in [("interp", SimTier::Interp), ("jit", SimTier::Jit)] {
            let config = SimConfig {
                trace: false,
                tier,
                ..SimConfig::default()
            };
            results.push(run(verified, inputs, &config).expect("the benchmark program runs"));
            group.bench_function(label, |b| b.iter(|| run(verified, inputs, &config)));
        }
        assert_eq!(results[0], results[1], "{name}: the tiers disagree");
        group.finish();
    }
}

criterion_group!(benches, matmul, elementwise, small_ops, tiers);
criterion_main!(benches);
