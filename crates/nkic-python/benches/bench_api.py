"""The Python package's speed against the command line (issue 12 item 6).

Measures, on a release build:
1. per-call overhead: a cached 128x512 float32 add called 1,000 times
   through `nkic.simulate`; the overhead is the whole call less the
   simulator's own wall time (target: under 1 ms a call);
2. whole calls through the API against the CLI's whole process
   (`nkic run` with `--input` files and `--out`), for an add at 128x512 and
   4096x4096 and a 1024x1024x1024 bfloat16 matmul; the in-process call must
   be faster at every size.

Run from the repository root, with the package installed in release mode
(`pip install ./crates/nkic-python`, or `maturin develop --release`) and the
CLI built (`cargo build --release -p nkic`):

    python crates/nkic-python/benches/bench_api.py [--nkic target/release/nkic]

Not run by CI (timings belong in benchmarks, not tests).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import ml_dtypes
import numpy as np

import nkic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nkic", default=os.path.join(ROOT, "target", "release", "nkic"))
    ap.add_argument("--calls", type=int, default=1000)
    args = ap.parse_args()
    nkic.install()
    sys.path.insert(0, os.path.join(ROOT, "kernels"))
    from matmul_bf16 import matmul_bf16  # noqa: E402
    from tensor_add import tensor_add  # noqa: E402

    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 512), dtype=np.float32)
    b = rng.standard_normal((128, 512), dtype=np.float32)
    add = nkic.simulate(tensor_add)
    add(a, b)  # compile once
    simulating = 0
    t = time.perf_counter()
    for _ in range(args.calls):
        add(a, b)
        simulating += add._last_simulate_wall_ns
    whole = (time.perf_counter() - t) / args.calls
    per_call = whole - simulating * 1e-9 / args.calls
    print(f"cached 128x512 add: {per_call * 1e3:.3f} ms per-call overhead over {args.calls} calls "
          f"(whole call {whole * 1e3:.3f} ms, of which the simulator {simulating * 1e-6 / args.calls:.3f} ms; "
          f"{nkic.cache_info()['compiles']} compile)")

    cases = []
    for shape in [(128, 512), (4096, 4096)]:
        x = rng.standard_normal(shape, dtype=np.float32)
        y = rng.standard_normal(shape, dtype=np.float32)
        cases.append(("tensor_add.py", tensor_add, {"a": x, "b": y}))
    ma = rng.standard_normal((1024, 1024), dtype=np.float32).astype(ml_dtypes.bfloat16)
    mb = rng.standard_normal((1024, 1024), dtype=np.float32).astype(ml_dtypes.bfloat16)
    cases.append(("matmul_bf16.py", matmul_bf16, {"a": ma, "b": mb}))

    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for file, kernel, inputs in cases:
            flags = []
            for name, arr in inputs.items():
                path = os.path.join(tmp, f"{name}.npy")
                np.save(path, arr)
                suffix = ":bfloat16" if arr.dtype == ml_dtypes.bfloat16 else ""
                flags += ["--input", f"{name}={path}{suffix}"]
            cli = [args.nkic, "run", os.path.join(ROOT, "kernels", file), *flags, "--out", os.path.join(tmp, "out")]
            t_cli = best(lambda: subprocess.run(cli, check=True, capture_output=True), 3)
            nkic.clear_cache()
            f = nkic.simulate(kernel)

            def first_call() -> None:  # includes the compile, like the CLI
                nkic.clear_cache()
                f(**inputs)

            t_first = best(first_call, 3)
            t_cached = best(lambda: f(**inputs), 3)
            shape = "x".join(str(d) for d in next(iter(inputs.values())).shape)
            print(f"{file} {shape}: CLI {t_cli * 1e3:.1f} ms, API first call {t_first * 1e3:.1f} ms, "
                  f"cached {t_cached * 1e3:.1f} ms")
            worst = max(worst, t_first / t_cli)
    print(f"API first call / CLI process, worst case: {worst:.2f}")
    ok = per_call < 1e-3 and worst < 1.0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
