"""2-D transpose of a float32 tensor through a strided DMA access pattern.

out[j, i] = x[i, j] for x of shape [R, C] (C a multiple of 128). For every
128-column stripe of x the kernel reads the stripe through a permuted view
(x[:, stripe].permute((1, 0)), a column-major walk of HBM), so the DMA
lands the stripe in SBUF already transposed as a [128, R] tile, and stores
that tile as 128 contiguous rows of out. Every element is its own DMA
element (4-byte descriptors), which is why nisa.dma_transpose
(kernels/transpose_dma.py) or the Tensor engine (kernels/transpose.py) are
the fast ways to do this; the kernel shows the access-pattern form.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[256,384]
@nki.jit
def transpose_ap(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert cols % P == 0, "the columns must be a multiple of 128"
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in range(cols // P):
        cs = nl.ds(j * P, P)
        t = nl.ndarray((P, rows), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, cs].permute((1, 0)))
        nisa.dma_copy(dst=out[cs, :], src=t)
    return out
