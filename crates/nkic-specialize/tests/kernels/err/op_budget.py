# expect: E0212
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
    for i in range(3000000):
        nisa.dma_copy(dst=t, src=x)
