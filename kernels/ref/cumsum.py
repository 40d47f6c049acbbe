"""NumPy reference for kernels/cumsum.py.

Writes the input x.npy ([32, 4096]: one partial row tile, two chained
2048-column chunks), the expected output out0.npy and the tolerance into
kernels/data/cumsum/. np.cumsum over a float32 array adds left to right
in float32, exactly as the kernel's scan does. Deterministic: rerunning
gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "cumsum"


def main() -> None:
    rng = np.random.default_rng(20261150)
    x = rng.standard_normal((32, 4096), dtype=np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x.npy", x)
    np.save(OUT / "out0.npy", np.cumsum(x, axis=1, dtype=np.float32))
    (OUT / "tolerance.txt").write_text(
        "# Both sides add the same float32 values left to right in float32,\n"
        "# with the chunks chained through the exact float32 running sum, so\n"
        "# every rounding is the same and the result must match exactly.\n"
        "rtol=0 atol=0\n"
    )


if __name__ == "__main__":
    main()
