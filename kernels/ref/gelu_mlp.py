"""NumPy reference for kernels/gelu_mlp.py.

Writes the inputs x_t.npy (x transposed), w1.npy, w2.npy, the expected
output out0.npy = gelu(x @ w1) @ w2 (exact erf GELU, computed in float64)
and the tolerance into kernels/data/gelu_mlp/. Sizes (256 tokens, model
dim 256, 384 hidden units, 256 outputs) give several tiles on every
loop of the kernel. Deterministic: rerunning
gives identical bytes.
"""
import math
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "gelu_mlp"


def main() -> None:
    rng = np.random.default_rng(20261137)
    x = rng.standard_normal((256, 256), dtype=np.float32)
    w1 = (rng.standard_normal((256, 384)) / math.sqrt(256)).astype(np.float32)
    w2 = (rng.standard_normal((384, 256)) / math.sqrt(384)).astype(np.float32)
    h = x.astype(np.float64) @ w1.astype(np.float64)
    erf = np.vectorize(math.erf)
    g = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
    ref = (g @ w2.astype(np.float64)).astype(np.float32)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "x_t.npy", np.ascontiguousarray(x.T))
    np.save(OUT / "w1.npy", w1)
    np.save(OUT / "w2.npy", w2)
    np.save(OUT / "out0.npy", ref)
    (OUT / "tolerance.txt").write_text(
        "# Reference: float64 with the exact erf GELU. The kernel accumulates\n"
        "# D = 256 and H = 384 float32 products per output (partial sums of\n"
        "# magnitude ~1-3) and evaluates GELU in float32: errors of a few\n"
        "# float32 ulps, ~1e-6 absolute, so rtol=1e-5 atol=1e-5 has margin.\n"
        "rtol=1e-5 atol=1e-5\n"
    )


if __name__ == "__main__":
    main()
