# expect: E0506
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: target trn2
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    a = nisa.activate2(op=nl.exp, data=t)
