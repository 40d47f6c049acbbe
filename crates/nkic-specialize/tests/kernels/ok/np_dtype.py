import numpy as np

import nki
import nki.language as nl


# `np.dtype(x)` at compile time is the dtype `x` names (a dtype or its
# name), as in nki-samples' `acc_type = np.dtype(np.float32) if mixed else dt`.
# nkic: args a=bfloat16[128,512]
@nki.jit
def cast(a, mixed=True):
    acc_type = np.dtype(np.float32) if mixed else a.dtype
    out_type = np.dtype("bfloat16")
    res = nl.ndarray(a.shape, dtype=out_type, buffer=nl.shared_hbm)
    x = nl.load(a)
    acc = nl.copy(x, dtype=acc_type)
    nl.store(res, nl.copy(acc, dtype=out_type))
    print(acc_type, out_type)
    return res
