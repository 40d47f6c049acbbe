# expect: E0204
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    sizes = (128, 64)
    sizes(0)
