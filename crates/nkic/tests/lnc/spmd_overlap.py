"""A broken LNC=2 kernel: both instances write the first rows of `out`.

Each instance stores its tile to rows 0..128 of the shared output, so the
two cores write the same HBM bytes with nothing ordering them (a data race
the simulator reports as E2008), and the rest of `out` stays unwritten.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[256,512]
# nkic: grid 2
@nki.jit
def spmd_overlap(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    t = nl.ndarray((P, 512), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[nl.ds(nl.program_id(0) * P, P), :])
    nisa.dma_copy(dst=out[0:P, :], src=t)
    return out
