# expect: E0227
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    for i in nl.dynamic_range(4):
        break
