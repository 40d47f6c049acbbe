"""NumPy reference for kernels/top8.py.

Writes the input x.npy, the expected values out0.npy and indices out1.npy
and the tolerance into kernels/data/top8/. The inputs are small integers
stored as float32 so that most rows have ties inside their top 8; the
reference is a stable descending sort, which lists equal values in
ascending index order. Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "top8"


def main() -> None:
    rng = np.random.default_rng(20261149)
    x = rng.integers(-60, 60, size=(256, 512)).astype(np.float32)
    order = np.argsort(-x, axis=1, kind="stable")[:, :8]
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", np.take_along_axis(x, order, axis=1))
    np.save(OUT / "out1.npy", order.astype(np.uint32))
    (OUT / "tolerance.txt").write_text(
        "# Selecting and locating values involves no arithmetic: the values and\n"
        "# indices must match the stable descending sort exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
