import nki
import nki.language as nl
import nki.isa as nisa


# An access pattern is checked where an instruction uses it: a loop may
# build one that leaves its tensor on an iteration that does not use it
# (the guarded last tile of a library kernel).
# nkic: args x=float32[4,128,64]
@nki.jit
def ap_unused_out_of_bounds(x):
    out = nl.ndarray((4, 128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    for i in range(5):
        src = x.ap(pattern=[[64, 128], [1, 64]], offset=i * 128 * 64)
        if i < 4:
            nisa.dma_copy(dst=t, src=src)
            nisa.dma_copy(dst=out[i], src=t)
    return out
