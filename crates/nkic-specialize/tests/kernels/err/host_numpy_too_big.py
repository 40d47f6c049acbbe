# expect: E0210
import nki
import numpy as np


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    a = np.zeros((0, 2147483647, 2147483647, 2147483647))
