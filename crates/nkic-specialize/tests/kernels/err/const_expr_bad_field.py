# expect: E0203
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
# nkic: consts cfg=errcfg.Cfg(eps=1e-6,heads=4)
@nki.jit
def const_bad_field(x, cfg):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
