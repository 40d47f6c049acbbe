# expect: E0217
import nki


# nkic: args x=float32[128,64] y=float32[128,64]
@nki.jit
def k(x):
    pass
