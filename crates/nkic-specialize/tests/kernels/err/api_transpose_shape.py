# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    d = nl.ndarray((128, 64), nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=d, data=t)
