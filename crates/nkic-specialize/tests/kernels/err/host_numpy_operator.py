# expect: E0524
import nki
import numpy as np


# NumPy compares element by element; nkic does not evaluate operators on
# host arrays (and never falls back to comparing the objects).
# nkic: args x=float32[2,2]
@nki.jit
def k(x):
    same = np.zeros(2) == np.zeros(2)
