"""2-D transpose of a float32 tensor on the Tensor engine.

The input is cut into 128x128 blocks; each block is loaded into SBUF,
transposed into PSUM with nisa.nc_transpose, copied back to SBUF and stored
at the mirrored block position, so out[j, i] = x[i, j]: x is [R, C] and
out is [C, R], with R and C multiples of 128.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[256,384]
@nki.jit
def transpose(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0 and cols % P == 0, "both dims must be multiples of 128"
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // P):
        for j in nl.affine_range(cols // P):
            blk = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=blk, src=x[nl.ds(i * P, P), nl.ds(j * P, P)])
            t_psum = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=t_psum, data=blk, engine=nisa.engine.tensor)
            t_sbuf = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=t_sbuf, src=t_psum)
            nisa.dma_copy(dst=out[nl.ds(j * P, P), nl.ds(i * P, P)], src=t_sbuf)
    return out
