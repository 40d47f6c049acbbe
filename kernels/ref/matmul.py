"""NumPy reference for kernels/matmul.py.

Writes the inputs a_t.npy (A transposed), b.npy, the expected output
out0.npy = A @ B and the tolerance into kernels/data/matmul/.
Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "matmul"


def main() -> None:
    rng = np.random.default_rng(20261133)
    a = rng.standard_normal((256, 256), dtype=np.float32)
    b = rng.standard_normal((256, 256), dtype=np.float32)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a_t.npy", np.ascontiguousarray(a.T))
    np.save(OUT / "b.npy", b)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text(
        "# fp32 accumulation of 256 products of unit normals: errors of a few\n"
        "# float32 ulps of the partial sums (magnitude ~20), ~1e-5 absolute,\n"
        "# are expected against the float64 reference.\n"
        "rtol=1e-5 atol=1e-4\n"
    )


if __name__ == "__main__":
    main()
