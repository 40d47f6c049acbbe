# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    u = x.ap([[64, 128], [1, 65]])
