"""NumPy reference for kernels/transpose_dma.py.

Writes the bfloat16 input x.npy, the expected output out0.npy = x.T and
the tolerance into kernels/data/transpose_dma/. Deterministic: rerunning
gives identical bytes.
"""
from pathlib import Path

import ml_dtypes
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "transpose_dma"


def main() -> None:
    rng = np.random.default_rng(20261141)
    x = rng.standard_normal((256, 384)).astype(ml_dtypes.bfloat16)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", np.ascontiguousarray(x.T))
    (OUT / "tolerance.txt").write_text(
        "# A DMA transpose moves bfloat16 bits without arithmetic, so the\n"
        "# output must equal x.T bit for bit.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
