"""NumPy reference for kernels/tensor_add_legacy.py.

Writes the inputs a.npy, b.npy, the expected output out0.npy and the
tolerance into kernels/data/tensor_add_legacy/. Deterministic: rerunning
gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "tensor_add_legacy"


def main() -> None:
    rng = np.random.default_rng(20261136)
    a = rng.standard_normal((256, 256), dtype=np.float32)
    b = rng.standard_normal((256, 256), dtype=np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a.npy", a)
    np.save(OUT / "b.npy", b)
    np.save(OUT / "out0.npy", a + b)
    (OUT / "tolerance.txt").write_text(
        "# An fp32 addition is correctly rounded, so the result must be exact.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
