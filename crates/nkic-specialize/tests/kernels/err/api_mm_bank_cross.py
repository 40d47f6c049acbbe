# expect: E0508
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: target trn2
# nkic: args x=bfloat16[128,512]
@nki.jit
def k(x):
    s = nl.load(x)
    d = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d[:, 256:768], stationary=s[:, 0:128], moving=s)
