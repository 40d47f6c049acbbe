"""Matrix multiply C = A @ B with the legacy `nl.loop_reduce`.

A is [M, K] and B is [K, N] (float32); the kernel takes A transposed,
a_t = A.T ([K, M]). K is split into blocks of KB rows: for each block one
PSUM accumulation group sums its 128-row products, and `nl.loop_reduce`
adds the block's partial tile into an SBUF tile made zero before the loop
over blocks (`acc = acc + partial`, once per block). M and K must be
multiples of 128, K a multiple of KB = 256, and N a multiple of
min(N, 512).
"""
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


# nkic: args a_t=float32[512,128] b=float32[512,256]
@nki.jit
def matmul_loop_reduce(a_t, b):
    K, M = a_t.shape
    K2, N = b.shape
    assert K == K2, "the contraction dims must agree"
    P = nl.tile_size.pmax
    KB = 2 * P
    TN = min(N, nl.tile_size.gemm_moving_fmax)
    assert K % KB == 0 and M % P == 0 and N % TN == 0
    c = nl.ndarray((M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // P):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((P, TN), dtype=nl.float32, buffer=nl.sbuf)
            for kb in nl.affine_range(K // KB):
                partial = nl.zeros((P, TN), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(KB // P):
                    k0 = kb * KB + k * P
                    a_tile = nl.load(a_t[k0:k0 + P, m * P:(m + 1) * P])
                    b_tile = nl.load(b[k0:k0 + P, n * TN:(n + 1) * TN])
                    partial += nisa.nc_matmul(a_tile, b_tile)
                acc = nl.loop_reduce(partial, op=np.add, loop_indices=[kb], dtype=nl.float32)
            nl.store(c[m * P:(m + 1) * P, n * TN:(n + 1) * TN], value=acc)
    return c
