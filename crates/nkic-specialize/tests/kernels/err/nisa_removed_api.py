# expect: E0205
import nki
import nki.isa as nisa
import nki.language as nl


# A removed API names its replacement.
# nkic: args a=float32[128,512]
@nki.jit
def removed(a):
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy_dynamic_src(dst=y, src=x)
    nl.store(res, y)
    return res
