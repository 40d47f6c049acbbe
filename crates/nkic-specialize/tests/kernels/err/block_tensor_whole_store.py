# expect: E0519
import nki
import nki.language as nl


# Assigning to a block tensor needs every block dim selected.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((2, 3, nl.par_dim(128), 64), nl.float32, buffer=nl.sbuf)
    t[1] = nl.load(x)
