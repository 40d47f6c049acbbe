# expect: E0512
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    e = nl.expand_dims(t, 0)
