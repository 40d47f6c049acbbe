"""NumPy reference for kernels/matmul_fp8.py.

Writes the float8_e4m3 inputs a_t.npy (A transposed) and b.npy, the
expected float32 output out0.npy and the tolerance into
kernels/data/matmul_fp8/. The inputs are quantized with ml_dtypes (round
to nearest even, NKI's legacy IEEE-style e4m3 with max 240) and the
reference multiplies the quantized values exactly in float64.
Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import ml_dtypes
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "matmul_fp8"


def main() -> None:
    rng = np.random.default_rng(20261146)
    a = (rng.standard_normal((128, 512)) * 2.0).astype(ml_dtypes.float8_e4m3)
    b = (rng.standard_normal((512, 512)) * 2.0).astype(ml_dtypes.float8_e4m3)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a_t.npy", np.ascontiguousarray(a.T))
    np.save(OUT / "b.npy", b)
    np.save(OUT / "out0.npy", exact.astype(np.float32))
    (OUT / "tolerance.txt").write_text(
        "# The reference uses the same fp8-quantized inputs, so the only\n"
        "# difference is float32 accumulation: products of e4m3 values are\n"
        "# exact in float32 and K = 512 of them (scale 4, partial sums up to\n"
        "# ~200) are summed with rounding errors of a few 1e-5 absolute.\n"
        "rtol=1e-5 atol=5e-4\n"
    )


if __name__ == "__main__":
    main()
