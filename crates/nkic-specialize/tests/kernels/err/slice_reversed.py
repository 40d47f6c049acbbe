# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# `x[a:a]` is empty (legal); a slice that ends before it starts is an error.
# nkic: args x=float32[128,64]
@nki.jit
def slice_reversed(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 8:4], src=x[:, 8:4])
    nisa.dma_copy(dst=out, src=t)
    return out
