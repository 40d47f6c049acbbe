# expect: E0522
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    e = nl.mod(t, 0)
