"""NumPy reference for kernels/transpose.py.

Writes the input x.npy, the expected output out0.npy and the tolerance into
kernels/data/transpose/. Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "transpose"


def main() -> None:
    rng = np.random.default_rng(20261132)
    x = rng.standard_normal((256, 384), dtype=np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", np.ascontiguousarray(x.T))
    (OUT / "tolerance.txt").write_text(
        "# A transpose moves values without arithmetic (TensorE transposes are\n"
        "# bit-accurate on trn2+), so it must be exact.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
