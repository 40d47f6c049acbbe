# expect: E0524
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=uint32[128,6]
@nki.jit
def k(x):
    s = nl.load(x)
    nisa.rand_set_state(src_seeds=s)
    nisa.rand_get_state(dst=s)
