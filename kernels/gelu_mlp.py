"""Two-layer GELU MLP: out = gelu(x @ w1) @ w2.

x is [T, D] (tokens x model dim), w1 is [D, H] and w2 is [H, E], all
float32; gelu is the exact erf form 0.5*h*(1 + erf(h/sqrt(2))). The
kernel takes x already transposed (x_t = x.T, [D, T]) so the hidden
activations come out transposed, h_t = w1.T @ x.T, with hidden units on
the partitions: for a block of up to 512 tokens and each 128-row block of
hidden units, the D/128 products accumulate in PSUM and
nisa.activation(nl.gelu) applies the GELU on the way from PSUM to SBUF.
Those [128 hidden, tokens] tiles then serve directly, 128 tokens at a
time, as the stationary operands of the second matmul, whose H/128
products accumulate in one PSUM tile per 512 output columns. Both weight
matrices are loaded into SBUF once. T, D and H must be multiples of 128;
E is any size (the last output block may be narrower than 512).
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x_t=float32[256,256] w1=float32[256,384] w2=float32[384,256]
@nki.jit
def gelu_mlp(x_t, w1, w2):
    D, T = x_t.shape
    D2, H = w1.shape
    H2, E = w2.shape
    assert D == D2 and H == H2, "the inner dims must agree"
    P = nl.tile_size.pmax
    TB = min(T, nl.tile_size.gemm_moving_fmax)
    EB = min(E, nl.tile_size.gemm_moving_fmax)
    assert D % P == 0 and H % P == 0 and T % P == 0, "T, D and H must be multiples of 128"
    DK = D // P
    HK = H // P
    out = nl.ndarray((T, E), dtype=x_t.dtype, buffer=nl.shared_hbm)

    # w1_all[p, k, h] = w1[k * P + p, h] and w2_all[p, k, e] = w2[k * P + p, e].
    w1_all = nl.ndarray((P, DK, H), dtype=w1.dtype, buffer=nl.sbuf)
    for k in range(DK):
        nisa.dma_copy(dst=w1_all[:, k, :], src=w1[nl.ds(k * P, P), :])
    w2_all = nl.ndarray((P, HK, E), dtype=w2.dtype, buffer=nl.sbuf)
    for k in range(HK):
        nisa.dma_copy(dst=w2_all[:, k, :], src=w2[nl.ds(k * P, P), :])

    for tb in range((T + TB - 1) // TB):
        t0 = tb * TB
        tn = min(TB, T - t0)
        x_blk = nl.ndarray((P, DK, tn), dtype=x_t.dtype, buffer=nl.sbuf)
        for k in range(DK):
            nisa.dma_copy(dst=x_blk[:, k, :], src=x_t[nl.ds(k * P, P), nl.ds(t0, tn)])
        # h_blk[p, k, t] = gelu(x @ w1)[t0 + t, k * P + p]
        h_blk = nl.ndarray((P, HK, tn), dtype=x_t.dtype, buffer=nl.sbuf)
        for hk in range(HK):
            ht_psum = nl.ndarray((P, tn), dtype=nl.float32, buffer=nl.psum)
            for k in range(DK):
                nisa.nc_matmul(dst=ht_psum, stationary=w1_all[:, k, nl.ds(hk * P, P)],
                               moving=x_blk[:, k, :], accumulate=(k != 0))
            nisa.activation(dst=h_blk[:, hk, :], op=nl.gelu, data=ht_psum)
        for tt in range(tn // P):
            for eb in range((E + EB - 1) // EB):
                e0 = eb * EB
                en = min(EB, E - e0)
                acc = nl.ndarray((P, en), dtype=nl.float32, buffer=nl.psum)
                for hk in range(HK):
                    nisa.nc_matmul(dst=acc, stationary=h_blk[:, hk, nl.ds(tt * P, P)],
                                   moving=w2_all[:, hk, nl.ds(e0, en)], accumulate=(hk != 0))
                o_tile = nl.ndarray((P, en), dtype=out.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=o_tile, src=acc)
                nisa.dma_copy(dst=out[nl.ds(t0 + tt * P, P), nl.ds(e0, en)], src=o_tile)
    return out
