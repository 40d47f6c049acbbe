# expect: E0505
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=int8[64,128]
@nki.jit
def k(x):
    t = nl.load_transpose2d(x)
