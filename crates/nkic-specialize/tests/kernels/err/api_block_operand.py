# expect: E0519
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((2, nl.par_dim(128), 64), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
