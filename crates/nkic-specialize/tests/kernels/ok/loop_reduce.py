import nki
import nki.language as nl
import nki.isa as nisa
import numpy as np


# Legacy `nl.loop_reduce`: the result is reduced into the tile it is
# assigned to, by name (`acc = ...`) or by subscript (`best[...] = ...`),
# one `tensor_tensor` per iteration of the named loop.
# nkic: args a=float32[3,128,64]
@nki.jit
def loop_reduce(a):
    out = nl.ndarray((2, 128, 64), nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    best = nl.full((2, nl.par_dim(128), 64), -1e30, dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(3):
        x = nl.load(a[i])
        acc = nl.loop_reduce(x, op=np.add, loop_indices=[i], dtype=nl.float32)
        best[1, :, :] = nl.loop_reduce(x, np.maximum, [i])
    nl.store(out[0], value=acc)
    nl.store(out[1], value=best[1])
    return out
