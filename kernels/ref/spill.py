"""NumPy reference for kernels/spill.py.

Writes the input x.npy and the expected output out0.npy into
kernels/data/spill/. Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "spill"


def main() -> None:
    rng = np.random.default_rng(20261202)
    x = rng.standard_normal((128, 512), dtype=np.float32)
    n = 128
    tiles = [x * np.float32(k + 1) for k in range(n)]
    acc = tiles[n - 1].copy()
    for k in range(n - 2, -1, -1):
        acc = acc + tiles[k]
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", acc)
    (OUT / "tolerance.txt").write_text(
        "# float32 products and sums, each correctly rounded, added in the\n"
        "# kernel's order: spilled or not, the result must equal NumPy's exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
