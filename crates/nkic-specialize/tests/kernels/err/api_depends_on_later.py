# expect: E0522
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    a = nisa.memset(dst=t, value=0.0)
    b = nisa.memset(dst=t, value=1.0)
    a.depends_on(b)
