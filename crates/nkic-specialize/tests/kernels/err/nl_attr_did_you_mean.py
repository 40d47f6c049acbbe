# expect: E0205
import nki
import nki.language as nl


# A close name in the API table is suggested.
# nkic: args a=float32[128,512]
@nki.jit
def typo(a):
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.exq(x)
    nl.store(res, y)
    return res
