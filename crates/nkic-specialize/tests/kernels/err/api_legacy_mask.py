# expect: E0519
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    i_p = nl.arange(128)[:, None]
    t = nl.load(x, mask=(i_p < 64))
