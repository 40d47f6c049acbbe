# expect: E0219
import nki


# nkic: args x=float64[128,64]
@nki.jit
def k(x):
    pass
