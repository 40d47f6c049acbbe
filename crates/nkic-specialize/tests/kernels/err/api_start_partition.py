# expect: E0513
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=a[16:80, :], value=0.0)
