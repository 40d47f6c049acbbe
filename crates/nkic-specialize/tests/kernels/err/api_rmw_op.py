# expect: E0514
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nisa.dma_copy(dst=out, src=t, dst_rmw_op=nl.multiply)
    return out
