# expect: E0509
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,1024]
@nki.jit
def k(x):
    t = nl.load(x)
    u = nl.matmul(t, t, transpose_x=True)
