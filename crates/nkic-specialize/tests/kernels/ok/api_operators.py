import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,256] b=float32[128,256] v=float32[128,1]
@nki.jit
def operators(a, b, v):
    out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    col = nl.load(v)
    s = x + y
    t = s * 2.0
    u = 1.0 - t
    w = -u
    q = w / 4
    m = x > 0
    r = x * col
    acc = nl.zeros((128, 256), nl.float32)
    acc += q
    acc[:, 0:128] += y[:, 0:128]
    print(m.dtype, r.shape)
    nl.store(out, acc)
    return out
