# expect: E0214
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    n = 1
    while n > 0:
        n = 1 - n + n
