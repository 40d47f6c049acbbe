# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# Block dims take integers: a slice would span several allocations.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.zeros((4, nl.par_dim(128), 64), nl.float32, buffer=nl.sbuf)
    u = t[0:2, :, :]
