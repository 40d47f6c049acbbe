# expect: E0210
import nki
import numpy as np


# A list that holds itself nests without end.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    a = []
    a.append(a)
    b = np.array(a)
