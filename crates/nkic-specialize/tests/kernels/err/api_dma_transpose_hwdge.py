# expect: E0523
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[32,128]
@nki.jit
def k(x):
    t = nl.ndarray((128, 32), nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x, dge_mode=nisa.dge_mode.hwdge)
