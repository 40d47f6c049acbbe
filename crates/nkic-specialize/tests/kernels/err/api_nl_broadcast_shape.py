# expect: E0502
import nki
import nki.language as nl


# nkic: args a=float32[128,4]
@nki.jit
def k(a):
    x = nl.load(a)
    y = nl.broadcast_to(x, (128, 64))
    return a
