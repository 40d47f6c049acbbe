# expect: E0504
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    i = nl.ndarray((128, 1), nl.int32, buffer=nl.sbuf)
    v = t.vector_select(0, i)
