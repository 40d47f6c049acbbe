# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=int32[2,2]
@nki.jit
def k(x):
    r = nisa.register_alloc()
    nisa.register_load(r, x)
