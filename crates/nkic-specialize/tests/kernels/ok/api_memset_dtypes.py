import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def memsets(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(a, 1.5, engine=nisa.engine.gpsimd)
    b = nl.ndarray((128, 64), nl.int8, buffer=nl.sbuf)
    nisa.memset(dst=b, value=-7)
    c = nl.ndarray((64, 32), nl.uint16, buffer=nl.psum)
    nisa.memset(dst=c, value=65535)
    d = nl.full((32, 8), -1, nl.int32)
    e = nl.zeros((128, 2, 32), nl.float8_e4m3fn)
    f = nl.ones((128, 64), nl.float32)
    f[0:32, :] = 0.5
    nisa.dma_copy(dst=out, src=f)
    return out
