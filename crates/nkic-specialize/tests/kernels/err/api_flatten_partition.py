# expect: E0512
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,4,64]
@nki.jit
def k(x):
    t = nl.load(x)
    f = t.flatten_dims(0, 1)
