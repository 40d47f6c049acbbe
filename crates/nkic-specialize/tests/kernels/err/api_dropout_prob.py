# expect: E0522
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    d = nisa.dropout(t, prob=1.5)
