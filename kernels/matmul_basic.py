"""Matrix multiply C = A @ B written in the legacy NKI style.

A is [M, K] and B is [K, N] (float32); the kernel takes A already
transposed, a_t = A.T ([K, M]), because the Tensor engine contracts over
the partition dim of both operands. For every 128 x 512 tile of C the
kernel loads the matching 128-row slices of a_t and b with nl.load and
accumulates their products with `acc += nisa.nc_matmul(...)` into one PSUM
tile (the first product overwrites, later ones add), then copies the tile
to SBUF with nl.copy and stores it. M and K must be multiples of 128 and N
a multiple of min(N, 512).
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a_t=float32[256,128] b=float32[256,512]
@nki.jit
def matmul_basic(a_t, b):
    K, M = a_t.shape
    K2, N = b.shape
    assert K == K2, "the contraction dims must agree"
    P = nl.tile_size.pmax
    TN = min(N, nl.tile_size.gemm_moving_fmax)
    assert K % P == 0 and M % P == 0 and N % TN == 0
    c = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // P):
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // P):
                a_tile = nl.load(a_t[k * P:(k + 1) * P, m * P:(m + 1) * P])
                b_tile = nl.load(b[k * P:(k + 1) * P, n * TN:(n + 1) * TN])
                acc += nisa.nc_matmul(a_tile, b_tile)
            c_tile = nl.copy(acc, dtype=c.dtype)
            nl.store(c[m * P:(m + 1) * P, n * TN:(n + 1) * TN], value=c_tile)
    return c
