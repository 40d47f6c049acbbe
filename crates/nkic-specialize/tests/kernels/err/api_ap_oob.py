# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    u = x.ap([[64, 128], [1, 65]])
    t = nl.ndarray((128, 65), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=u)
