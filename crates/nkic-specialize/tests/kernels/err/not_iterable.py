# expect: E0226
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    for d in 128:
        pass
