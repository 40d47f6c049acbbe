# expect: E0511
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=bfloat16[128,128]
@nki.jit
def k(x):
    s = nl.load(x)
    acc = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
    acc[...] *= nisa.nc_matmul(s, s)
