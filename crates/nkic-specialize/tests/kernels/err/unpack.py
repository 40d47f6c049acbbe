# expect: E0210
import nki


# nkic: args x=float32[128,64,2]
@nki.jit
def k(x):
    rows, cols = x.shape
