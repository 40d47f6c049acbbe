import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=bfloat16[128,128] b=bfloat16[128,512] bias=float32[128,512]
@nki.jit
def psum_ops(a, b, bias):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in range(2):
        acc += nisa.nc_matmul(ta, tb)
    tbias = nl.load(bias)
    res = acc + tbias
    nl.store(out, value=res)
    return out
