# expect: E0218
import nki
import nki.language as nl


# nkic: args a=float32[128,4]
@nki.jit
def k(a):
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(res, nl.exp(nl.load(a)))
    return res, res
