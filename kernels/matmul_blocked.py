"""Blocked matrix multiply C = A @ B with hoisted loads.

A is [M, K], B is [K, N] (float32); the kernel takes a_t = A.T ([K, M]).
C is computed in blocks of up to 512 x 512. For each row block the whole
K x 512 slab of a_t is loaded once, one DMA per 128-row K-tile, into a
[128, K/128, 512] SBUF tile (K-tile index in the middle free dim), and is
reused for every column block; for each column block the K x 512 slab of
b is likewise loaded once and reused by the four 128-row output tiles of
the block. Each output tile accumulates its K/128 products in one PSUM
tile, is evicted to SBUF and stored. Loads are thus hoisted out of the
inner loops: A is read from HBM once and B once per row block.
M and K must be multiples of 128; N may be any size (the last blocks of
rows and columns may be narrower).
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a_t=float32[256,256] b=float32[256,512]
@nki.jit
def matmul_blocked(a_t, b):
    K, M = a_t.shape
    K2, N = b.shape
    assert K == K2, "the contraction dims must agree"
    P = nl.tile_size.pmax
    BM = 4 * P
    BN = nl.tile_size.gemm_moving_fmax
    assert K % P == 0 and M % P == 0, "M and K must be multiples of 128"
    KT = K // P
    c = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for m0 in range(0, M, BM):
        bm = min(BM, M - m0)
        # a_blk[p, k, m] = a_t[k * P + p, m0 + m], one DMA per K-tile so
        # the first matmuls can start before the whole slab has arrived.
        a_blk = nl.ndarray((P, KT, bm), dtype=a_t.dtype, buffer=nl.sbuf)
        for k in range(KT):
            nisa.dma_copy(dst=a_blk[:, k, :], src=a_t[nl.ds(k * P, P), nl.ds(m0, bm)])
        for n0 in range(0, N, BN):
            bn = min(BN, N - n0)
            b_blk = nl.ndarray((P, KT, bn), dtype=b.dtype, buffer=nl.sbuf)
            for k in range(KT):
                nisa.dma_copy(dst=b_blk[:, k, :], src=b[nl.ds(k * P, P), nl.ds(n0, bn)])
            for mt in range(bm // P):
                acc = nl.ndarray((P, bn), dtype=nl.float32, buffer=nl.psum)
                for k in range(KT):
                    nisa.nc_matmul(
                        dst=acc,
                        stationary=a_blk[:, k, nl.ds(mt * P, P)],
                        moving=b_blk[:, k, :],
                        accumulate=(k != 0),
                    )
                c_tile = nl.ndarray((P, bn), dtype=c.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=c_tile, src=acc)
                rows = nl.ds(m0 + mt * P, P)
                nisa.dma_copy(dst=c[rows, nl.ds(n0, bn)], src=c_tile)
    return c
