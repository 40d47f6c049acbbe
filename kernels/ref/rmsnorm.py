"""NumPy reference for kernels/rmsnorm.py.

Writes the inputs x.npy, w.npy, the expected output out0.npy and the
tolerance into kernels/data/rmsnorm/. Deterministic: rerunning gives
identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "rmsnorm"


def main() -> None:
    rng = np.random.default_rng(20261134)
    x = (rng.standard_normal((256, 256)) * 2.0 + 0.5).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (1, 256)).astype(np.float32)
    xd = x.astype(np.float64)
    inv = 1.0 / np.sqrt((xd * xd).mean(axis=1, keepdims=True) + 1e-6)
    ref = (xd * inv * w.astype(np.float64)).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "w.npy", w)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text(
        "# Reference: float64, rounded once. The kernel's float32 sum of 256\n"
        "# squares and its rsqrt are each off by a few ulps (~1e-6 relative);\n"
        "# atol=1e-6 covers outputs near zero.\n"
        "rtol=1e-5 atol=1e-6\n"
    )


if __name__ == "__main__":
    main()
