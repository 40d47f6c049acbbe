# expect: E0200
import numpy as np
import nki

DATA = np.random.rand(128, 64)


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    return DATA
