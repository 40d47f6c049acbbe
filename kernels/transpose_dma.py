"""2-D transpose of a bfloat16 tensor done by the DMA engines.

out[j, i] = x[i, j] for x of shape [R, C] (R a multiple of the row chunk,
C a multiple of 128). No compute engine is involved: for every 128-column
stripe of x and every chunk of up to 512 rows, nisa.dma_transpose reads the
[rows, 128] block from HBM and writes it transposed into a [128, rows] SBUF
tile, which an ordinary DMA then stores at the mirrored position of out.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=bfloat16[256,384]
@nki.jit
def transpose_dma(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    RB = min(rows, 512)
    assert cols % P == 0, "the columns must be a multiple of 128"
    assert rows % RB == 0, "the rows must be a multiple of 512 (or fewer than 512)"
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in range(cols // P):
        cs = nl.ds(j * P, P)
        for i in range(rows // RB):
            rs = nl.ds(i * RB, RB)
            t = nl.ndarray((P, RB), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_transpose(dst=t, src=x[rs, cs])
            nisa.dma_copy(dst=out[cs, rs], src=t)
    return out
