# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[64,128]
@nki.jit
def k(x):
    t = nl.ndarray((64, 128), nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
