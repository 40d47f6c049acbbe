# expect: E0517
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 4, 16), nl.float32, buffer=nl.sbuf)
    u = t.squeeze_dim(1)
