# expect: E0207
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    n = 1
    for i in range(40):
        n = n * 3
