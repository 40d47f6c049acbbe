"""2-D transpose of a float32 tensor on the Tensor engine.

out[j, i] = x[i, j]: x is [R, C] and out is [C, R], with R and C multiples
of 128. The kernel works on bands of up to 512 columns of x. A band is
loaded as one [128, R/128, 512] SBUF tile (one DMA per 128-row block, rows
of 2 KiB). Each 128x128 block of the band is transposed into PSUM with
nisa.nc_transpose and copied into the SBUF tile of its 128 output rows, so
that every [128, R] output tile leaves in a single DMA of whole rows of
out. Long contiguous rows keep the DMA transfers efficient.
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
    RT = rows // P
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for c0 in range(0, cols, 512):
        cw = min(512, cols - c0)
        # band[p, i, f] = x[i * P + p, c0 + f]
        band = nl.ndarray((P, RT, cw), dtype=x.dtype, buffer=nl.sbuf)
        for i in range(RT):
            nisa.dma_copy(dst=band[:, i, :], src=x[nl.ds(i * P, P), nl.ds(c0, cw)])
        for j in range(cw // P):
            o = nl.ndarray((P, rows), dtype=x.dtype, buffer=nl.sbuf)
            for i in range(RT):
                t_psum = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=t_psum, data=band[:, i, nl.ds(j * P, P)], engine=nisa.engine.tensor)
                nisa.tensor_copy(dst=o[:, nl.ds(i * P, P)], src=t_psum)
            nisa.dma_copy(dst=out[nl.ds(c0 + j * P, P), :], src=o)
    return out
