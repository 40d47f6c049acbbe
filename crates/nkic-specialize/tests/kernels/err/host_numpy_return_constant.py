# expect: E0218
import nki
import nki.language as nl
import numpy as np


# nkic: args x=float32[4,4]
@nki.jit
def k(x):
    return nl.shared_constant(np.ones((4, 4), dtype=np.float32))
