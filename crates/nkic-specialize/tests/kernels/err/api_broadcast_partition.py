# expect: E0512
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((1, 64), nl.float32, buffer=nl.sbuf)
    u = t.broadcast(0, 128)
