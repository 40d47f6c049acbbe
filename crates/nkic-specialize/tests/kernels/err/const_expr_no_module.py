# expect: E0215
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
# nkic: consts act=nosuchpkg.types.Act.SILU
@nki.jit
def const_no_module(x, act):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
