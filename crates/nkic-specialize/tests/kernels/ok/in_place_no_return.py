import nki
import nki.language as nl


# Writing an argument in place and returning nothing is quiet.
# nkic: args x=float32[128,64]
@nki.jit
def doubles(x):
    scratch = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(scratch, value=t)
    nl.store(x, value=nl.multiply(nl.load(scratch), 2.0))
