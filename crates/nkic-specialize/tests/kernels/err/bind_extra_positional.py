# expect: E0203
import nki
import nki.language as nl
import nki.isa as nisa


# An intrinsic (bound by the same rules as the API table) given one
# positional argument too many.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[nl.ds(0, 128, 1), :])
