"""NumPy reference for kernels/matmul_bf16.py.

Writes the bfloat16 inputs a.npy, b.npy, the expected bfloat16 output
out0.npy and the tolerance into kernels/data/matmul_bf16/. The reference
multiplies the bfloat16 values exactly (float64) and rounds the result
once to bfloat16, as the kernel's PSUM eviction does. M = 384 and
N = 576 make both the row block (384 < 512) and the last column block
(64 columns) narrower than the kernel's 512 x 512 blocks. Deterministic:
rerunning gives identical bytes.
"""
from pathlib import Path

import ml_dtypes
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "matmul_bf16"


def main() -> None:
    rng = np.random.default_rng(20261145)
    a = rng.standard_normal((384, 256)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((256, 576)).astype(ml_dtypes.bfloat16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a.npy", a)
    np.save(OUT / "b.npy", b)
    np.save(OUT / "out0.npy", exact.astype(ml_dtypes.bfloat16))
    (OUT / "tolerance.txt").write_text(
        "# Products of bfloat16 values are exact in float32, and the float32\n"
        "# sum of K = 256 of them is within ~1e-5 of the float64 one, so kernel\n"
        "# and reference differ only when that tiny difference straddles a\n"
        "# bfloat16 rounding boundary: then by one bfloat16 ulp, at most 2^-7\n"
        "# of the value. rtol=8e-3 covers one ulp; atol=1e-4 covers results\n"
        "# that cancel to ~0.\n"
        "rtol=8e-3 atol=1e-4\n"
    )


if __name__ == "__main__":
    main()
