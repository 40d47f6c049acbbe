# expect: E0221
# kernel: k
import nki


@nki.jit
def helper(x):
    pass


# nkic: args x=float32[128,64]
@nki.jit()
def k(x):
    helper(x)
