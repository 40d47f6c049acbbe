# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# An access pattern that leaves its tensor is an error where it is used,
# reported at the pattern.
# nkic: args x=float32[4,128,64]
@nki.jit
def ap_used_out_of_bounds(x):
    out = nl.ndarray((4, 128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    for i in range(5):
        src = x.ap(pattern=[[64, 128], [1, 64]], offset=i * 128 * 64)
        nisa.dma_copy(dst=t, src=src)
        nisa.dma_copy(dst=out[i % 4], src=t)
    return out
