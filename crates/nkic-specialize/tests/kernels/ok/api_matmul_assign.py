import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=bfloat16[128,128] b=bfloat16[128,512]
@nki.jit
def matmul_assign(a, b):
    out = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    p = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    p[...] = nisa.nc_matmul(ta, tb)
    m = nisa.tensor_reduce(op=nl.max, data=p, axis=1)
    nl.store(out, value=m)
    return out
