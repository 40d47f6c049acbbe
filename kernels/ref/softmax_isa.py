"""NumPy reference for kernels/softmax_isa.py.

Writes the bfloat16 input x.npy, the expected bfloat16 output out0.npy
(computed in float64 from the bfloat16 input, then rounded) and the
tolerance into kernels/data/softmax_isa/. Deterministic: rerunning gives
identical bytes.
"""
from pathlib import Path

import ml_dtypes
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "softmax_isa"


def main() -> None:
    rng = np.random.default_rng(20261138)
    x = (rng.standard_normal((256, 256)) * 3.0).astype(ml_dtypes.bfloat16)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    ref = (e / e.sum(axis=1, keepdims=True)).astype(ml_dtypes.bfloat16)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text(
        "# One bfloat16 rounding of the result is at most 2^-8 relative. The\n"
        "# kernel also rounds the exponentials to bfloat16 before scaling them\n"
        "# (the row sums use the float32 values), which moves about a quarter\n"
        "# of the outputs by one bfloat16 ulp, at most 2^-7 relative.\n"
        "rtol=8e-3 atol=1e-6\n"
    )


if __name__ == "__main__":
    main()
