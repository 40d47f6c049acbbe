# expect: E0505
import nki
import nki.language as nl
import numpy as np


# NumPy's int64 becomes int32 only when every value fits.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    c = nl.shared_constant(np.array([[3e9, 1.0]]).astype(np.int64))
