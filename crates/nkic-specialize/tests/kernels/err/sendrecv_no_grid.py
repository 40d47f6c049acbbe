# expect: E0525
import nki
import nki.language as nl
import nki.isa as nisa


# A tile exchange needs the two cores of an LNC=2 launch.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    got = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(t, got, 1, 1, 0)
    nl.store(out, value=got)
    return out
