# expect: E0512
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    v = t.rearrange(('p', 'f'), ('f', 'p'))
