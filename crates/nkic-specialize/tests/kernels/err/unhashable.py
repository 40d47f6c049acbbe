# expect: E0224
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    cache = {[1, 2]: "tile"}
