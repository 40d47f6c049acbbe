"""NumPy reference for kernels/spmd_add.py (launched on its 2 x 2 grid).

Writes the inputs a.npy, b.npy, the expected output out0.npy = a + b and
the tolerance into kernels/data/spmd_add/. Deterministic: rerunning gives
identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "spmd_add"


def main() -> None:
    rng = np.random.default_rng(20261140)
    a = rng.standard_normal((256, 512), dtype=np.float32)
    b = rng.standard_normal((256, 512), dtype=np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a.npy", a)
    np.save(OUT / "b.npy", b)
    np.save(OUT / "out0.npy", a + b)
    (OUT / "tolerance.txt").write_text(
        "# An fp32 addition is correctly rounded and every grid instance writes\n"
        "# its own block, so the result must equal NumPy's a + b exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
