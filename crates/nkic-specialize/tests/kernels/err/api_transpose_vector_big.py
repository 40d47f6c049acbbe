# expect: E0507
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    d = nl.ndarray((64, 128), nl.float32, buffer=nl.sbuf)
    nisa.nc_transpose(dst=d, data=t)
