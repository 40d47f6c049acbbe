"""Two-layer GELU MLP: out = gelu(x @ w1) @ w2.

x is [128, 128] (tokens x model dim), w1 is [128, 256] and w2 is [256, 128],
all float32; gelu is the exact erf form 0.5*h*(1 + erf(h/sqrt(2))). The
kernel takes x already transposed (x_t = x.T) so the hidden activations are
produced transposed, h_t = w1.T @ x.T, one 128-row block of hidden units at
a time; each block goes through nisa.activation(nl.gelu) on its way from
PSUM to SBUF and then serves directly as the stationary operand of the
second matmul, whose two hidden blocks accumulate in one PSUM tile.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x_t=float32[128,128] w1=float32[128,256] w2=float32[256,128]
@nki.jit
def gelu_mlp(x_t, w1, w2):
    d_model, tokens = x_t.shape
    _, hidden = w1.shape
    _, d_out = w2.shape
    P = nl.tile_size.pmax
    assert d_model == P and tokens == P, "one 128x128 tile of tokens"
    assert hidden % P == 0 and d_out <= nl.tile_size.gemm_moving_fmax
    out = nl.ndarray((tokens, d_out), dtype=x_t.dtype, buffer=nl.shared_hbm)
    xt_tile = nl.ndarray((P, tokens), dtype=x_t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt_tile, src=x_t)
    acc = nl.ndarray((tokens, d_out), dtype=nl.float32, buffer=nl.psum)
    for h in range(hidden // P):
        w1_tile = nl.ndarray((P, P), dtype=w1.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w1_tile, src=w1[:, nl.ds(h * P, P)])
        ht_psum = nl.ndarray((P, tokens), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ht_psum, stationary=w1_tile, moving=xt_tile)
        ht_act = nl.ndarray((P, tokens), dtype=x_t.dtype, buffer=nl.sbuf)
        nisa.activation(dst=ht_act, op=nl.gelu, data=ht_psum)
        w2_tile = nl.ndarray((P, d_out), dtype=w2.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w2_tile, src=w2[nl.ds(h * P, P), :])
        nisa.nc_matmul(dst=acc, stationary=ht_act, moving=w2_tile, accumulate=(h != 0))
    o_tile = nl.ndarray((tokens, d_out), dtype=x_t.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o_tile, src=acc)
    nisa.dma_copy(dst=out, src=o_tile)
    return out
