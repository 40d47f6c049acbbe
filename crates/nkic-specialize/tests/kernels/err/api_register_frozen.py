# expect: E0501
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=int32[1,1]
@nki.jit
def k(x):
    r = nisa.register_alloc(4)
    for i in nl.dynamic_range(0, r, 1):
        nisa.register_move(i, 3)
