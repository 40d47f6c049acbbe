# expect: E0203
import nki


def helper(a, block=128):
    return a * block


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    helper(1, blok=64)
