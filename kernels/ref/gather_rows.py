"""NumPy reference for kernels/gather_rows.py.

Writes the inputs table.npy and ids.npy and the expected output out0.npy
into kernels/data/gather_rows/. Deterministic: rerunning gives identical
bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "gather_rows"


def main() -> None:
    rng = np.random.default_rng(20261206)
    table = rng.standard_normal((16, 256), dtype=np.float32)
    ids = rng.integers(0, 16, size=(256, 1), dtype=np.int32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "table.npy", table)
    np.save(OUT / "ids.npy", ids)
    np.save(OUT / "out0.npy", table[ids[:, 0]])
    (OUT / "tolerance.txt").write_text(
        "# Rows copied as they are: the result must equal NumPy's exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
