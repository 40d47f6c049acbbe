# expect: E0505
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: target trn2
# nkic: args x=bfloat16[128,128]
@nki.jit
def k(x):
    s = nl.load(x)
    d = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=d, stationary=s, moving=s)
