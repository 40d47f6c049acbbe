"""NumPy reference for kernels/rotate_blocks.py.

Writes the input x.npy, the rotated rows out0.npy and the column table
out1.npy and the tolerance into kernels/data/rotate_blocks/. The reference
rotates each block of 4 rows with np.roll (no matrix). Deterministic:
rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "rotate_blocks"


def main() -> None:
    rng = np.random.default_rng(20261205)
    x = rng.standard_normal((128, 64)).astype(np.float32)
    rotated = np.roll(x.reshape(32, 4, 64), -1, axis=1).reshape(128, 64)
    columns = np.broadcast_to(np.arange(64, dtype=np.int32), (128, 64))
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", rotated)
    np.save(OUT / "out1.npy", np.ascontiguousarray(columns))
    (OUT / "tolerance.txt").write_text(
        "# Every product of the matmul is a value times 1 or 0 and every sum adds\n"
        "# zeros, so the rotation is exact; the column table is copied.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
