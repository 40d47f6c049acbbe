"""SPMD addition on a 1-D grid: instance i adds rows [i * R/n, (i+1) * R/n).

Launched as `spmd_add_1d[2]` this is an LNC=2 kernel: each instance runs
on its own physical core and writes its half of the shared output.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[512,1024] b=float32[512,1024]
# nkic: grid 2
@nki.jit
def spmd_add_1d(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    P = nl.tile_size.pmax
    block = rows // nl.num_programs(0)
    row0 = nl.program_id(0) * block
    for t in range(block // P):
        rs = nl.ds(row0 + t * P, P)
        a_tile = nl.ndarray((P, cols), dtype=a.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((P, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile, src=a[rs, :])
        nisa.dma_copy(dst=b_tile, src=b[rs, :])
        s = nl.ndarray((P, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s, data1=a_tile, data2=b_tile, op=nl.add)
        nisa.dma_copy(dst=out[rs, :], src=s)
    return out
