"""Layer normalization of the rows of a float32 tensor.

x is [R, C] with R a multiple of 128; gamma and beta are [1, C]. For every
row, with mu and var the mean and (biased) variance of x[i, :],
out[i, :] = (x[i, :] - mu) / sqrt(var + 1e-5) * gamma[0, :] + beta[0, :].
gamma and beta are loaded once, each with a single DMA that reads its HBM
row with a stride-0 partition pattern (gamma.broadcast(0, 128)), so every
partition of the SBUF tile receives a copy; the rest is written with nl
functions, one 128-row tile at a time.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[256,256] gamma=float32[1,256] beta=float32[1,256]
@nki.jit
def layernorm(x, gamma, beta):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    g_tile = nl.ndarray((P, cols), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_tile, src=gamma.broadcast(0, P))
    b_tile = nl.ndarray((P, cols), dtype=beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b_tile, src=beta.broadcast(0, P))
    for i in nl.affine_range(rows // P):
        rs = nl.ds(i * P, P)
        t = nl.load(x[rs, :])
        mu = nl.mean(t, axis=1, keepdims=True)
        centered = nl.subtract(t, mu)
        var = nl.mean(nl.multiply(centered, centered), axis=1, keepdims=True)
        inv = nl.rsqrt(nl.add(var, 1e-5))
        y = nl.add(nl.multiply(nl.multiply(centered, inv), g_tile), b_tile)
        nl.store(out[rs, :], y)
    return out
