//! Throughput of the specializer: a kernel that unrolls to 100,000 ops
//! (issue 4 asks for under 0.5 s in release on the project machine).

use criterion::{Criterion, criterion_group, criterion_main};
use nkic_diag::SourceMap;
use nkic_specialize::{NoModules, SpecializeConfig, specialize};

/// 25,000 iterations of a loop body with four ops, a helper call, tuple
/// unpacking, arithmetic and an f-string name: 100,000 ops.
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
