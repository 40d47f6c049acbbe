# expect: E0522
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    r = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.rand2(dst=r, min=1.0, max=1.0)
