# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[256,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    for i in range(3):
        nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
