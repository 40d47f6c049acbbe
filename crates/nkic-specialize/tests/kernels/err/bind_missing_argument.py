# expect: E0203
import nki
import nki.language as nl
import nki.isa as nisa


# An API function called without a required parameter.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t)
