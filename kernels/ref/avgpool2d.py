"""NumPy reference for kernels/avgpool2d.py (window 2, the directive's pool).

Writes the input x.npy ([256, 16, 32]: two channel tiles), the expected
output out0.npy and the tolerance into kernels/data/avgpool2d/.
Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "avgpool2d"
POOL = 2


def avgpool(x: np.ndarray, k: int) -> np.ndarray:
    c, h, w = x.shape
    return x.astype(np.float64).reshape(c, h // k, k, w // k, k).mean(axis=(2, 4))


def main() -> None:
    rng = np.random.default_rng(20261147)
    x = rng.standard_normal((256, 16, 32), dtype=np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", avgpool(x, POOL).astype(np.float32))
    (OUT / "tolerance.txt").write_text(
        "# The kernel sums the 4 window values in float32 (three roundings of\n"
        "# at most half an ulp of sums below ~8) and scales by an exact 1/4;\n"
        "# the reference is the float64 mean rounded once. The difference is\n"
        "# a few 1e-7 absolute.\n"
        "rtol=1e-6 atol=1e-6\n"
    )


if __name__ == "__main__":
    main()
