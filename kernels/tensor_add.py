"""Element-wise addition of two float32 tensors [R, C], R a multiple of 128.

The kernel walks the rows in tiles of 128 partitions, loads both operands
into SBUF, adds them on the Vector engine and stores the sum back to HBM.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[256,1024] b=float32[256,1024]
@nki.jit
def tensor_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    assert rows % nl.tile_size.pmax == 0, "rows must be a multiple of 128"
    for i in nl.affine_range(rows // nl.tile_size.pmax):
        rs = nl.ds(i * nl.tile_size.pmax, nl.tile_size.pmax)
        a_tile = nl.ndarray((nl.tile_size.pmax, cols), dtype=a.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((nl.tile_size.pmax, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile, src=a[rs, :])
        nisa.dma_copy(dst=b_tile, src=b[rs, :])
        sum_tile = nl.ndarray((nl.tile_size.pmax, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sum_tile, data1=a_tile, data2=b_tile, op=nl.add)
        nisa.dma_copy(dst=out[rs, :], src=sum_tile)
    return out
