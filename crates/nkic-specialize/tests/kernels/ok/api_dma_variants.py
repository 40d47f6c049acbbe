import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[128,256] w=bfloat16[64,128]
@nki.jit
def dma_variants(x, w):
    out = nl.ndarray((128, 256), nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 256), nl.bfloat16, buffer=nl.sbuf)
    f = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, dge_mode=nisa.dge_mode.hwdge, engine=nisa.engine.scalar)
    nisa.dma_copy(dst=f, src=x, dge_mode=nisa.dge_mode.swdge, priority=1, name="cast")
    wt = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_transpose(dst=wt, src=w)
    wt2 = nisa.dma_transpose(w)
    lt = nl.load_transpose2d(w)
    print(wt2.shape, lt.shape)
    nisa.dma_copy(out, t, oob_mode=nisa.oob_mode.error, dge_mode=nisa.dge_mode.none)
    return out
