"""NumPy reference for kernels/flash_attention.py.

Writes the bfloat16 inputs q_t.npy, k_t.npy (Q and K transposed, [64,
1024]) and v.npy ([1024, 64]), the expected bfloat16 output out0.npy and
the tolerance into kernels/data/flash_attention/. S = 1024 gives query
tiles that span two 512-key blocks, so the online-softmax rescaling is
exercised. The reference is plain causal attention in float64 on the
bfloat16 inputs, rounded once to bfloat16. Deterministic: rerunning gives
identical bytes.
"""
from pathlib import Path

import ml_dtypes
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data" / "flash_attention"


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s_len, d = q.shape
    s = (q @ k.T) / np.sqrt(d)
    s = np.where(np.tril(np.ones((s_len, s_len), dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def main() -> None:
    rng = np.random.default_rng(20261148)
    s_len, d = 1024, 64
    q = (rng.standard_normal((s_len, d)) * 1.5).astype(ml_dtypes.bfloat16)
    k = (rng.standard_normal((s_len, d)) * 1.5).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((s_len, d)).astype(ml_dtypes.bfloat16)
    ref = attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "q_t.npy", np.ascontiguousarray(q.T))
    np.save(OUT / "k_t.npy", np.ascontiguousarray(k.T))
    np.save(OUT / "v.npy", v)
    np.save(OUT / "out0.npy", ref.astype(ml_dtypes.bfloat16))
    (OUT / "tolerance.txt").write_text(
        "# The kernel feeds the probabilities p to the P @ V matmul as bfloat16\n"
        "# (relative error up to 2^-9 each; the output is a p-weighted mean of\n"
        "# V rows, |v| < ~4, so at most ~2^-9 * 4 = 8e-3 absolute, much less\n"
        "# on average as the roundings cancel) and rounds the output once to\n"
        "# bfloat16 (2^-8 relative between kernel and reference roundings).\n"
        "# rtol=8e-3 covers the output rounding, atol=4e-3 the p roundings.\n"
        "rtol=8e-3 atol=4e-3\n"
    )


if __name__ == "__main__":
    main()
