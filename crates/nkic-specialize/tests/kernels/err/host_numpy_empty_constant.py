# expect: E0502
import nki
import nki.language as nl
import numpy as np


# A constant is a tensor: every dim is positive.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    c = nl.shared_constant(np.zeros((0, 4), dtype=np.float32))
