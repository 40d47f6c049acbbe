# expect: E0209
# kernel: k
import nki


@nki.jit
def helper(x):
    assert x.shape[0] == 64, "helper takes 64 rows"


# nkic: args x=float32[128,64]
@nki.jit()
def k(x):
    helper(x)
