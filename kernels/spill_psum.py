"""Keeps more PSUM accumulators alive than PSUM holds, so the backend spills.

a_t is [K, M] (A transposed), b is [K, N] float32, with K = M = 128 and
N = 512. Group g (g = 0 .. G-1) accumulates A @ b + A @ (b * (g + 1)) in
its own [M, N] float32 PSUM tile (one 2 KiB bank) with two matmuls; all G
groups finish before any is read, and the result is their sum from the
last group to the first. G = 10 banks are more than PSUM's 8: the compiler
copies the accumulators that wait longest to SBUF between accumulation
groups (warning E0906), and the result is the same as with enough PSUM.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a_t=float32[128,128] b=float32[128,512]
@nki.jit
def spill_psum(a_t, b):
    K, M = a_t.shape
    _, N = b.shape
    G = 10
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lt = nl.ndarray((K, M), dtype=a_t.dtype, buffer=nl.sbuf)
    rt = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=lt, src=a_t)
    nisa.dma_copy(dst=rt, src=b)
    accs = []
    for g in range(G):
        scaled = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=scaled, data=rt, op0=nl.multiply, operand0=float(g + 1))
        acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=lt, moving=rt)
        nisa.nc_matmul(dst=acc, stationary=lt, moving=scaled)
        accs.append(acc)
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=accs[G - 1])
    for g in range(G - 2, -1, -1):
        nisa.tensor_tensor(dst=res, data1=res, data2=accs[g], op=nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out
