import nki
import nki.language as nl


# nkic: args a=float32[128,1024] b=float32[128,4,16]
@nki.jit
def variance(a, b):
    out = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    v = nl.var(x, axis=1)
    w = nl.var(y, axis=(1, 2), dtype=nl.bfloat16)
    print(v.shape, w.shape, w.dtype)
    nl.store(out, v)
    return out
