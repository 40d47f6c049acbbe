# expect: E0509
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[128,128]
@nki.jit
def k(x):
    s = nl.load(x)
    d = nl.ndarray((64, 64), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d, stationary=s[0:64, 0:64], moving=s[0:64, 0:64], tile_position=(0, 0))
