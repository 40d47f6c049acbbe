# expect: E0514
import nki
import nki.language as nl
import nki.isa as nisa


# A raw int that numbers no member stays an error.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, dge_mode=7)
