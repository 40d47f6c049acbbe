# expect: E0525
import nki
import nki.language as nl
import nki.isa as nisa


# A grid of one instance has no second core to wait for.
# nkic: args x=float32[128,64]
# nkic: grid 1
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.core_barrier(out, (0, 1))
    return out
