# expect: E0201
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    try:
        n = 1
    except ValueError:
        n = 2
