"""Matrix multiply C = A @ B with fp8 (float8_e4m3) inputs and float32 output.

A is [M, K] and B is [K, N], both float8_e4m3 (NKI's IEEE-style e4m3, max
240); the kernel takes a_t = A.T ([K, M]). fp8 operands let the Tensor
engine run in double-row mode (perf_mode=double_row): one nc_matmul
contracts 256 rows, given as [128, 2, *] operands whose two middle-dim
slices are two consecutive 128-row K-tiles, at the cost of one 128-row
bf16 matmul. Products of fp8 values are exact and accumulate in float32
PSUM. All of B is loaded into SBUF once; a_t is loaded in column blocks of
up to 2048 (rows of up to 2 KiB, so the DMAs move long contiguous runs),
once per block, and every 128-column stripe of the block is a stationary
operand for every 512-column block of C. M must be a multiple of 128 (and
of 2048 when larger), K of 256 and N of min(N, 512).
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a_t=float8_e4m3[512,256] b=float8_e4m3[512,512]
@nki.jit
def matmul_fp8(a_t, b):
    K, M = a_t.shape
    K2, N = b.shape
    assert K == K2, "the contraction dims must agree"
    P = nl.tile_size.pmax
    BN = min(N, nl.tile_size.gemm_moving_fmax)
    BM = min(M, 2048)
    assert K % (2 * P) == 0 and M % P == 0 and M % BM == 0 and N % BN == 0
    KT = K // P
    c = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    # b_all[p, k, n] = b[k * P + p, n]: all of B, loaded once.
    b_all = nl.ndarray((P, KT, N), dtype=b.dtype, buffer=nl.sbuf)
    for k in range(KT):
        nisa.dma_copy(dst=b_all[:, k, :], src=b[nl.ds(k * P, P), :])
    for mb in range(M // BM):
        # a_blk[p, k, i] = a_t[k * P + p, mb * BM + i]: rows of BM bytes, one
        # DMA per K-tile, reused by every 128-column stripe of the block.
        a_blk = nl.ndarray((P, KT, BM), dtype=a_t.dtype, buffer=nl.sbuf)
        for k in range(KT):
            nisa.dma_copy(dst=a_blk[:, k, :], src=a_t[nl.ds(k * P, P), nl.ds(mb * BM, BM)])
        for mt in range(BM // P):
            for n in range(N // BN):
                acc = nl.ndarray((P, BN), dtype=nl.float32, buffer=nl.psum)
                for kk in range(KT // 2):
                    nisa.nc_matmul(
                        dst=acc,
                        stationary=a_blk[:, nl.ds(2 * kk, 2), nl.ds(mt * P, P)],
                        moving=b_all[:, nl.ds(2 * kk, 2), nl.ds(n * BN, BN)],
                        perf_mode=nisa.matmul_perf_mode.double_row,
                        accumulate=(kk != 0),
                    )
                c_tile = nl.ndarray((P, BN), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_copy(dst=c_tile, src=acc)
                rows = nl.ds(mb * BM + mt * P, P)
                nisa.dma_copy(dst=c[rows, nl.ds(n * BN, BN)], src=c_tile)
    return c
