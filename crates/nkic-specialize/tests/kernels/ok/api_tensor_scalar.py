import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,256] v=float32[128,1]
@nki.jit
def tensor_scalar(a, v):
    out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tv = nl.load(v)
    c = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=c, data=ta, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=tv)
    nisa.tensor_scalar(dst=c, data=c, op0=nl.subtract, operand0=1.0, reverse0=True, engine=nisa.engine.scalar)
    r = nisa.tensor_scalar(ta, op0=nl.rsqrt, operand0=0.0, engine=nisa.engine.gpsimd)
    m = nisa.tensor_scalar(data=ta, op0=nl.maximum, operand0=tv, op1=nl.multiply, operand1=0.5, reverse1=True)
    print(r.shape, m.dtype)
    nl.store(out, c)
    return out
