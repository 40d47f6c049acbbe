# expect: E0525
import nki
import nki.language as nl
import nki.isa as nisa


# A core barrier needs the two cores of an LNC=2 launch.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.core_barrier(out, (0, 1))
    return out
