# expect: E0211
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    if x:
        pass
