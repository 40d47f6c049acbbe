"""NumPy reference for kernels/gelu_mlp.py.

Writes the inputs x_t.npy (x transposed), w1.npy, w2.npy, the expected
output out0.npy = gelu(x @ w1) @ w2 (exact erf GELU, computed in float64)
and the tolerance into kernels/data/gelu_mlp/. Deterministic: rerunning
gives identical bytes.
"""
import math
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "gelu_mlp"


def main() -> None:
    rng = np.random.default_rng(20261137)
    x = rng.standard_normal((128, 128), dtype=np.float32)
    w1 = (rng.standard_normal((128, 256)) / math.sqrt(128)).astype(np.float32)
    w2 = (rng.standard_normal((256, 128)) / math.sqrt(256)).astype(np.float32)
    h = x.astype(np.float64) @ w1.astype(np.float64)
    erf = np.vectorize(math.erf)
    g = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
    ref = (g @ w2.astype(np.float64)).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x_t.npy", np.ascontiguousarray(x.T))
    np.save(OUT / "w1.npy", w1)
    np.save(OUT / "w2.npy", w2)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text("rtol=1e-5 atol=1e-5\n")


if __name__ == "__main__":
    main()
