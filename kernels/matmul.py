"""Tiled matrix multiply C = A @ B with PSUM accumulation.

A is [M, K] and B is [K, N], both float32. The kernel takes A
already transposed as a_t = A.T ([K, M]) so that each 128-row K-slice
of a_t is a stationary operand whose free dim becomes the output partition
dim. For each 128-row block of C, nisa.nc_matmul accumulates the K/128
K-tiles into one PSUM tile (accumulate=False on the first, True after),
which is then copied to SBUF and stored. C is [M, N]; M and K must be
multiples of 128 and N a multiple of min(N, 512).
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a_t=float32[256,256] b=float32[256,256]
@nki.jit
def matmul(a_t, b):
    k_dim, m_dim = a_t.shape
    k_dim2, n_dim = b.shape
    assert k_dim == k_dim2, "contraction dims must agree"
    P = nl.tile_size.pmax
    N = min(nl.tile_size.gemm_moving_fmax, n_dim)
    assert k_dim % P == 0 and m_dim % P == 0 and n_dim % N == 0
    c = nl.ndarray((m_dim, n_dim), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(m_dim // P):
        for n in nl.affine_range(n_dim // N):
            acc = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.psum)
            for k in range(k_dim // P):
                a_tile = nl.ndarray((P, P), dtype=a_t.dtype, buffer=nl.sbuf)
                b_tile = nl.ndarray((P, N), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a_tile, src=a_t[nl.ds(k * P, P), nl.ds(m * P, P)])
                nisa.dma_copy(dst=b_tile, src=b[nl.ds(k * P, P), nl.ds(n * N, N)])
                nisa.nc_matmul(dst=acc, stationary=a_tile, moving=b_tile, accumulate=(k != 0))
            c_tile = nl.ndarray((P, N), dtype=a_t.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=c_tile, src=acc)
            nisa.dma_copy(dst=c[nl.ds(m * P, P), nl.ds(n * N, N)], src=c_tile)
    return c
