import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[128,128] ident=bfloat16[128,128]
@nki.jit
def transpose_mode(x, ident):
    out = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.load(x)
    eye = nl.load(ident)
    p = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=t, moving=eye, is_transpose=True, is_moving_onezero=True)
    s = nl.copy(p)
    nl.store(out, s)
    return out
