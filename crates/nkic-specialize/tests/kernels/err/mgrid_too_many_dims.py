# expect: E0210
import nki
import nki.language as nl


# A 7-D index grid is more than an access pattern's 5 dims.
# nkic: args a=float32[128,2,2,2,8]
@nki.jit
def grid(a):
    res = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.mgrid[0:128, 0:2, 0:2, 0:2, 0:2, 0:2, 0:2]
    nl.store(res, nl.load(a[i.p, 0, 0, 0, 0:8]))
    return res
