# expect: E0524
import nki
import nki.language as nl


# nkic: args x=float32[128,128]
@nki.jit
def k(x):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    t = nl.load(x[i_p, i_f])
    nl.store(out[i_p, i_f], t, mask=(i_p >= i_f))
    return out
