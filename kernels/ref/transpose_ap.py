"""NumPy reference for kernels/transpose_ap.py.

Writes the input x.npy, the expected output out0.npy = x.T and the
tolerance into kernels/data/transpose_ap/. Deterministic: rerunning gives
identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "transpose_ap"


def main() -> None:
    rng = np.random.default_rng(20261142)
    x = rng.standard_normal((256, 384), dtype=np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", np.ascontiguousarray(x.T))
    (OUT / "tolerance.txt").write_text(
        "# A strided DMA moves float32 bits without arithmetic, so the output\n"
        "# must equal x.T exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
