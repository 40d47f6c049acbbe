# expect: E0210
import nki
import nki.language as nl
import nki.isa as nisa


# `nl.ds(start, 0)` is an empty slice; a negative size is an error.
# nkic: args x=float32[128,64]
@nki.jit
def ds_negative_size(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[nl.ds(0, -1), :])
    nisa.dma_copy(dst=out, src=t)
    return out
