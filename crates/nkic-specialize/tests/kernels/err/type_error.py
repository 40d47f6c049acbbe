# expect: E0202
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    n = "rows" + x.shape[0]
