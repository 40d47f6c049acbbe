# expect: E0517
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[8,64]
@nki.jit
def k(x):
    v = x.rearrange(('a', 'b'), ('b', 'c'))
