"""Row-wise softmax of a float32 tensor [R, C], R a multiple of 128.

Each tile of 128 rows is loaded into SBUF; the kernel subtracts the row
maximum, exponentiates, divides by the row sum and stores the result, so
out[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :]))).
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[256,256]
@nki.jit
def softmax(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    for i in nl.affine_range(rows // P):
        rs = nl.ds(i * P, P)
        t = nl.load(x[rs, :])
        m = nl.max(t, axis=1, keepdims=True)
        shifted = nl.subtract(t, m)
        e = nl.exp(shifted)
        s = nl.sum(e, axis=1, keepdims=True)
        r = nl.reciprocal(s)
        y = nl.multiply(e, r)
        nl.store(out[rs, :], y)
    return out
