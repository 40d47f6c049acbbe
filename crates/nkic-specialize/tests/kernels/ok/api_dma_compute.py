import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,256] b=float32[128,256] c=float32[128,256]
@nki.jit
def dma_sum(a, b, c):
    out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_compute(dst=out, srcs=[a, b, c], reduce_op=nl.add)
    t = nl.load(a)
    nisa.dma_compute(out, [out, t], nl.add, scales=[1.0, 1.0])
    return out
