# expect: E0202
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    n = x.shape[0]
    m = n[0]
