# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[120,64]
@nki.jit
def k(x):
    t = nl.load(x)
    i = nl.ndarray((120, 2), nl.uint16, buffer=nl.sbuf)
    g = nisa.local_gather(t, i)
