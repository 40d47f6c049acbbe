import numpy as np

import nki
import nki.language as nl

# `np.finfo` / `np.iinfo` at compile time give NumPy's limits of a dtype,
# as in a module constant `_MIN = float(np.finfo(np.float32).min)` used as
# an operand.
_MIN_F32 = float(np.finfo(np.float32).min)


# nkic: args a=float32[128,512]
@nki.jit
def clamp(a):
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(res, nl.maximum(x, _MIN_F32))
    f16 = np.finfo(np.float16)
    bf = np.finfo(nl.bfloat16)
    i8 = np.iinfo(np.int8)
    print(f16.max, f16.min, f16.eps, f16.tiny, f16.bits, bf.max, bf.eps)
    print(i8.min, i8.max, i8.bits, np.iinfo(np.uint32).max, np.finfo(np.float32))
    return res
