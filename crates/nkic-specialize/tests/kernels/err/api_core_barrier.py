# expect: E0524
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    nisa.core_barrier(x, (0, 1))
