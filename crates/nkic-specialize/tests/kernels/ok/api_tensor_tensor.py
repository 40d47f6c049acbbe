import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,256] b=float32[128,256] i=int32[128,256]
@nki.jit
def tensor_tensor(a, b, i):
    out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    ti = nl.load(i)
    c = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c, data1=ta, data2=tb, op=nl.add)
    p = nl.ndarray((128, 256), nl.float32, buffer=nl.psum)
    nisa.tensor_tensor(dst=p, data1=c, data2=tb, op=nl.maximum, engine=nisa.engine.vector)
    d = nisa.tensor_tensor(ta, p, op=nl.multiply, dtype=nl.bfloat16)
    e = nisa.tensor_tensor(ta, tb, nl.power)
    x = nisa.tensor_tensor(ti, ti, op=nl.bitwise_xor)
    g = nisa.tensor_tensor(data1=ta, data2=tb, op=nl.greater_equal)
    print(d.dtype, x.dtype, g.shape)
    nl.store(out, c)
    return out
