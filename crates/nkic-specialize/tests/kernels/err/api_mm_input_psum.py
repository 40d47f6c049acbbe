# expect: E0504
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[128,128]
@nki.jit
def k(x):
    p = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.psum)
    s = nl.load(x)
    d = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d, stationary=p, moving=s)
