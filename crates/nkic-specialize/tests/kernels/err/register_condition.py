# expect: E0211
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    for i in nl.dynamic_range(4):
        if i == 0:
            pass
