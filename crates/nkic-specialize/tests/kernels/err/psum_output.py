# expect: E0218
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), x.dtype, buffer=nl.psum)
    return t
