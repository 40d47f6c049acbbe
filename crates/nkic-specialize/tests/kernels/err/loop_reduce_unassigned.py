# expect: E0519
import nki
import nki.language as nl
import numpy as np


# `nl.loop_reduce` reduces into the tile its result is assigned to; a
# result used any other way has no destination.
# nkic: args a=float32[2,128,64]
@nki.jit
def loop_reduce_unassigned(a):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        x = nl.load(a[i])
        nl.store(out, value=nl.loop_reduce(x, op=np.add, loop_indices=[i]))
    return out
