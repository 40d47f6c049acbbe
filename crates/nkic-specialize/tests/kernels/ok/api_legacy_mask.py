import numpy as np
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,512] v=float32[128,1]
@nki.jit
def masked(x, v):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    t = nl.load(x[i_p, i_f], mask=(i_p < 64))
    col = nl.load(v)
    s = nisa.tensor_scalar(t[i_p, i_f], np.multiply, col, mask=((i_p < 64) & (i_f < 256)))
    a = nisa.activation(op=nl.exp, data=t, mask=(i_f >= 128))
    print(t.shape, s.shape, a.shape)
    nl.store(out[i_p, i_f], value=s, mask=((i_p < 64) & (i_f < 256)))
    return out
