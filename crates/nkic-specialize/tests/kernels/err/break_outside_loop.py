# expect: E0230
import nki


def helper(n):
    if n > 2:
        break
    return n


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    helper(3)
