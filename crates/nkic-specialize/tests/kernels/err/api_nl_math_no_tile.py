# expect: E0521
import nki
import nki.language as nl


# nkic: args a=float32[128,64]
@nki.jit
def no_tile(a):
    s = nl.add(1.0, 2.0)
    return s
