# expect: E0510
import nki
import nki.language as nl


# nkic: args a=float32[128,4,64]
@nki.jit
def bad_axis(a):
    x = nl.load(a)
    s = nl.sum(x, axis=0)
    return s
