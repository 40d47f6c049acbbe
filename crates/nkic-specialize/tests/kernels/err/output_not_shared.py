# expect: E0229
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
# nkic: grid 2
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), x.dtype, buffer=nl.hbm)
    return out
