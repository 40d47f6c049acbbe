# expect: E0506
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: target trn2
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    i = nl.ndarray((128, 4), nl.uint32, buffer=nl.sbuf)
    v = t.indirect(i)
