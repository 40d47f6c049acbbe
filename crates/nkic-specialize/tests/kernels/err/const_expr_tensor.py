# expect: E0233
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
# nkic: consts scale=nl.ndarray((128,1),nl.float32,buffer=nl.sbuf)
@nki.jit
def const_tensor(x, scale):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
