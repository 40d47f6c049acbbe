# expect: E0206
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    dims = x.shape
    for i in range(3):
        print(dims[i])
