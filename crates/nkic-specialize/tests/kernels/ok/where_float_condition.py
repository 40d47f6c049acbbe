# nl.where with the float 1.0/0.0 condition nl.greater returns by default.
import nki
import nki.language as nl

# nkic: args x=float32[128,512]
@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    pos = nl.greater(t, 0.0)
    y = nl.where(pos, t, 0.0)
    nl.store(out, y)
    return out
