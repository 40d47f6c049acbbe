# expect: E0503
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[256,64]
@nki.jit
def k(x):
    t = nl.ndarray((256, 64), nl.float32, buffer=nl.sbuf)
