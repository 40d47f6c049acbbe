"""NumPy reference for kernels/spill_psum.py.

Writes the inputs a_t.npy, b.npy and the expected output out0.npy into
kernels/data/spill_psum/. Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "spill_psum"


def main() -> None:
    rng = np.random.default_rng(20261203)
    # Small integers: every product and sum is exact in float32 (and the
    # inputs in any matmul input format), whatever the summation order.
    a_t = rng.integers(-4, 5, size=(128, 128)).astype(np.float32)
    b = rng.integers(-4, 5, size=(128, 512)).astype(np.float32)
    groups = 10
    ab = a_t.T.astype(np.float64) @ b.astype(np.float64)
    accs = [(ab + ab * (g + 1)).astype(np.float32) for g in range(groups)]
    res = accs[groups - 1].copy()
    for g in range(groups - 2, -1, -1):
        res = res + accs[g]
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a_t.npy", a_t)
    np.save(OUT / "b.npy", b)
    np.save(OUT / "out0.npy", res)
    (OUT / "tolerance.txt").write_text(
        "# Integer-valued inputs keep every product and sum exact in float32,\n"
        "# so spilled or not, the result must equal NumPy's exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
