# expect: E0227
import nki
import nki.isa as nisa
import nki.language as nl


# The body never writes `r`: once entered, the loop never ends.
# nkic: args x=float32[128,512] n=int32[1,1]
@nki.jit
def spin(x, n):
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nisa.register_alloc(0)
    nisa.register_load(r, n)
    while r:
        t = nl.load(x)
        nl.store(res, t)
    return res
