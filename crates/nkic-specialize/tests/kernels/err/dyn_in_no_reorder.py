# expect: E0222
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    with nl.no_reorder():
        for i in nl.dynamic_range(4):
            pass
