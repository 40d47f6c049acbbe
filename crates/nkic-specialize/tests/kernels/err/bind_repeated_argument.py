# expect: E0203
import nki
import nki.language as nl
import nki.isa as nisa


# An API function given `dst` both by position and by keyword.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x, dst=t)
