# expect: E0507
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,1024]
@nki.jit
def k(a):
    x = nl.load(a)
    st = nisa.bn_stats(data=x)
    return st
