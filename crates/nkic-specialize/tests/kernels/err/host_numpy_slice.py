# expect: E0524
import nki
import numpy as np


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    a = np.zeros((2, 3))
    a[0] = 1
