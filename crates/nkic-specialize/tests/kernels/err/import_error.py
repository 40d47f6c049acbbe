# expect: E0215
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    from lib.consts import Q
