# expect: E0210
import nki
import numpy as np


# NumPy refuses the truth value of an array of several elements.
# nkic: args x=float32[2,2]
@nki.jit
def k(x):
    if np.zeros(3):
        pass
