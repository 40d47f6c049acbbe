"""SPMD element-wise addition of two float32 tensors on a 2-D launch grid.

The kernel is launched on a grid of nl.num_programs(0) x nl.num_programs(1)
program instances (2 x 2 by default). Instance (i, j) owns one block of the
output: rows [i * R/g0, (i+1) * R/g0) and columns [j * C/g1, (j+1) * C/g1).
It walks its rows in tiles of 128 partitions, loads both operands, adds
them on the Vector engine and stores the block of out = a + b. Every
instance writes a disjoint part of the shared output tensor.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[512,512] b=float32[512,512]
# nkic: grid 2,2
@nki.jit
def spmd_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    P = nl.tile_size.pmax
    grid_rows = nl.num_programs(0)
    grid_cols = nl.num_programs(1)
    assert rows % (grid_rows * P) == 0, "each instance needs whole 128-row tiles"
    assert cols % grid_cols == 0, "the columns must split evenly over the grid"
    block_rows = rows // grid_rows
    block_cols = cols // grid_cols
    row0 = nl.program_id(0) * block_rows
    cs = nl.ds(nl.program_id(1) * block_cols, block_cols)
    for t in range(block_rows // P):
        rs = nl.ds(row0 + t * P, P)
        a_tile = nl.ndarray((P, block_cols), dtype=a.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((P, block_cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile, src=a[rs, cs])
        nisa.dma_copy(dst=b_tile, src=b[rs, cs])
        sum_tile = nl.ndarray((P, block_cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sum_tile, data1=a_tile, data2=b_tile, op=nl.add)
        nisa.dma_copy(dst=out[rs, cs], src=sum_tile)
    return out
