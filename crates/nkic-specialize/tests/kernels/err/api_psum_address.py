# expect: E0508
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 128), nl.float32, buffer=nl.psum, address=(0, 1024))
