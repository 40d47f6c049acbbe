import nki
import nki.language as nl
import nki.isa as nisa

TILE_K = 128
TILE_M = 128
TILE_N = 512


@nki.jit
def matmul_tiled(lhs_t, rhs):
    """Computes lhs_t.T @ rhs with the contraction dimension on the partitions."""
    K, M = lhs_t.shape
    K_, N = rhs.shape
    assert K == K_, "contraction dimensions differ"
    assert K % TILE_K == 0 and M % TILE_M == 0 and N % TILE_N == 0

    result = nl.ndarray((M, N), dtype=lhs_t.dtype, buffer=nl.shared_hbm)

    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhs_tile = nl.ndarray((TILE_K, TILE_M), lhs_t.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=lhs_tile,
                    src=lhs_t[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M],
                )
                nisa.dma_copy(
                    dst=rhs_tile,
                    src=rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N],
                )
                nisa.nc_matmul(dst=acc, stationary=lhs_tile, moving=rhs_tile, accumulate=k > 0)
            out_tile = nl.ndarray((TILE_M, TILE_N), result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out_tile, src=acc)
            nisa.dma_copy(
                dst=result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                src=out_tile,
            )
    return result
