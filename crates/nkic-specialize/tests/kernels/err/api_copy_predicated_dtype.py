# expect: E0505
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,64]
@nki.jit
def k(a):
    x = nl.load(a)
    d = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy_predicated(dst=d, src=x, predicate=x)
    return a
