"""RMS normalization of a [256, 256] float32 tensor with a learned scale.

For every row, out[i, :] = x[i, :] / sqrt(mean(x[i, :]**2) + 1e-6) * w[0, :].
The weight row w ([1, 256]) is loaded once and broadcast across the 128
partitions of a tile; the row statistics are (P, 1) tiles.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[256,256] w=float32[1,256]
@nki.jit
def rmsnorm(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    w_row = nl.load(w)
    w_tile = nl.broadcast_to(w_row, (P, cols))
    for i in nl.affine_range(rows // P):
        rs = nl.ds(i * P, P)
        t = nl.load(x[rs, :])
        sq = nl.multiply(t, t)
        ss = nl.sum(sq, axis=1, keepdims=True)
        ms = nl.multiply(ss, 1.0 / cols)
        inv = nl.rsqrt(nl.add(ms, 1e-6))
        y = nl.multiply(nl.multiply(t, inv), w_tile)
        nl.store(out[rs, :], y)
    return out
