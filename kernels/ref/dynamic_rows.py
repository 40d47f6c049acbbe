"""NumPy reference for kernels/dynamic_rows.py.

Writes the input x.npy and the expected output out0.npy into
kernels/data/dynamic_rows/. Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "dynamic_rows"


def main() -> None:
    rng = np.random.default_rng(20261204)
    x = rng.standard_normal((256, 512), dtype=np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    # STEPS float32 additions of 1, each rounded, as the kernel's
    # tensor_scalar instructions round them.
    y = x.copy()
    for _ in range(128):
        y = y + np.float32(1.0)
    np.save(OUT / "out0.npy", y)
    (OUT / "tolerance.txt").write_text(
        "# Float32 additions, each correctly rounded in the kernel as in\n"
        "# NumPy, so the result must equal NumPy's exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
