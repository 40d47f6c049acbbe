# expect: E0210
import numpy as np

import nki
import nki.language as nl


# nkic: args a=float32[128,512]
@nki.jit
def bad(a):
    lo = np.finfo(np.int32).min
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(res, nl.maximum(nl.load(a), lo))
    return res
