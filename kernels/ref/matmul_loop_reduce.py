"""NumPy reference for kernels/matmul_loop_reduce.py.

Writes the inputs a_t.npy (A transposed), b.npy, the expected output
out0.npy = A @ B and the tolerance into kernels/data/matmul_loop_reduce/.
Deterministic: rerunning gives identical bytes.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "matmul_loop_reduce"


def main() -> None:
    rng = np.random.default_rng(20261202)
    a = rng.standard_normal((128, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "a_t.npy", np.ascontiguousarray(a.T))
    np.save(OUT / "b.npy", b)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text(
        "# The reference is the float64 product rounded once; the kernel sums\n"
        "# K = 512 products of unit normals in float32 (two PSUM groups of 256,\n"
        "# added by `nl.loop_reduce` on VectorE; partial sums up to ~70), so it\n"
        "# may be off by a few float32 ulps of the partial sums: ~1e-5 absolute,\n"
        "# hence atol=1e-4, plus rtol=1e-5 for the large entries.\n"
        "rtol=1e-5 atol=1e-4\n"
    )


if __name__ == "__main__":
    main()
