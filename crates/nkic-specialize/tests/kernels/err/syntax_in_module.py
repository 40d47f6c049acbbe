# expect: E0228
import nki
import lib.broken


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    lib.broken.f()
