# expect: E0525
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
# nkic: grid 2
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.core_barrier(out, (1, 0))
    return out
