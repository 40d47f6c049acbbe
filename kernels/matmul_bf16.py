"""Matrix multiply C = A @ B with bfloat16 inputs and output.

A is [M, K] and B is [K, N], both bfloat16 and in their natural layouts.
The Tensor engine contracts over the partition dim, so the stationary
operand must be A.T: because bfloat16 elements are 2 bytes, the kernel
lets the DMA engines transpose A on the way in (nisa.dma_transpose), 128
columns of a 512-row block at a time, into a [128, K/128, 512] tile that
is loaded once per row block and reused for every column block. The K x
512 slab of B for a column block is loaded once and reused by the four
128-row output tiles of the block. The products accumulate in float32
PSUM and every finished 128 x 512 tile is rounded once to bfloat16 when
it is evicted to SBUF. M and K must be multiples of 128; N may be any size
(the last blocks of rows and columns may be narrower).
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=bfloat16[384,256] b=bfloat16[256,576]
@nki.jit
def matmul_bf16(a, b):
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "the contraction dims must agree"
    assert a.dtype == nl.bfloat16 and b.dtype == nl.bfloat16, "bfloat16 inputs"
    P = nl.tile_size.pmax
    BM = 4 * P
    BN = nl.tile_size.gemm_moving_fmax
    assert K % P == 0 and M % P == 0, "M and K must be multiples of 128"
    KT = K // P
    c = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for m0 in range(0, M, BM):
        bm = min(BM, M - m0)
        # a_t_blk[p, k, m] = a[m0 + m, k * P + p]
        a_t_blk = nl.ndarray((P, KT, bm), dtype=nl.bfloat16, buffer=nl.sbuf)
        for k in range(KT):
            nisa.dma_transpose(dst=a_t_blk[:, k, :], src=a[nl.ds(m0, bm), nl.ds(k * P, P)])
        for n0 in range(0, N, BN):
            bn = min(BN, N - n0)
            b_blk = nl.ndarray((P, KT, bn), dtype=nl.bfloat16, buffer=nl.sbuf)
            for k in range(KT):
                nisa.dma_copy(dst=b_blk[:, k, :], src=b[nl.ds(k * P, P), nl.ds(n0, bn)])
            for mt in range(bm // P):
                acc = nl.ndarray((P, bn), dtype=nl.float32, buffer=nl.psum)
                for k in range(KT):
                    nisa.nc_matmul(
                        dst=acc,
                        stationary=a_t_blk[:, k, nl.ds(mt * P, P)],
                        moving=b_blk[:, k, :],
                        accumulate=(k != 0),
                    )
                c_tile = nl.ndarray((P, bn), dtype=nl.bfloat16, buffer=nl.sbuf)
                nisa.tensor_copy(dst=c_tile, src=acc)
                rows = nl.ds(m0 + mt * P, P)
                nisa.dma_copy(dst=c[rows, nl.ds(n0, bn)], src=c_tile)
    return c
