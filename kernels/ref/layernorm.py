"""NumPy reference for kernels/layernorm.py.

Writes the inputs x.npy, gamma.npy, beta.npy, the expected output out0.npy
and the tolerance into kernels/data/layernorm/. Deterministic: rerunning
gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "layernorm"


def main() -> None:
    rng = np.random.default_rng(20261135)
    x = (rng.standard_normal((256, 256)) * 3.0 - 1.0).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, (1, 256)).astype(np.float32)
    beta = rng.standard_normal((1, 256)).astype(np.float32)
    xd = x.astype(np.float64)
    mu = xd.mean(axis=1, keepdims=True)
    var = ((xd - mu) ** 2).mean(axis=1, keepdims=True)
    ref = ((xd - mu) / np.sqrt(var + 1e-5) * gamma + beta).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "gamma.npy", gamma)
    np.save(OUT / "beta.npy", beta)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text(
        "# Reference: float64, rounded once. The kernel's float32 mean and\n"
        "# variance over 256 elements and its rsqrt are each off by a few ulps,\n"
        "# so outputs (magnitude up to ~5) differ by ~1e-6 relative; values\n"
        "# that nearly cancel in x*gamma + beta need the small atol.\n"
        "rtol=1e-5 atol=1e-5\n"
    )


if __name__ == "__main__":
    main()
