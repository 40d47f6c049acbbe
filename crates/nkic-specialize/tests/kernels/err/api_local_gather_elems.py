# expect: E0522
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    i = nl.ndarray((128, 2), nl.uint16, buffer=nl.sbuf)
    g = nisa.local_gather(t, i, 3)
