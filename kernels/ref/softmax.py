"""NumPy reference for kernels/softmax.py.

Writes the input x.npy, the expected output out0.npy and the tolerance into
kernels/data/softmax/. Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "softmax"


def main() -> None:
    rng = np.random.default_rng(20261131)
    x = (rng.standard_normal((256, 256)) * 3.0).astype(np.float32)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    ref = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text(
        "# Reference: float64, rounded once. The kernel's float32 exp, row sum\n"
        "# of 256 terms and reciprocal each add a few ulps: ~1e-6 relative.\n"
        "# atol=1e-7 covers the tiny probabilities (down to ~1e-12).\n"
        "rtol=1e-5 atol=1e-7\n"
    )


if __name__ == "__main__":
    main()
