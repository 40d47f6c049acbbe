import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,128] y=float32[128,512] s=float32[16,32]
@nki.jit
def nl_mm(x, y, s):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    yt = nl.load(y)
    p1 = nl.matmul(xt, yt, transpose_x=True)
    p2 = nl.matmul(xt, yt)
    t = nl.transpose(xt)
    small = nl.load(s)
    st = nl.transpose(small, dtype=nl.bfloat16)
    print(p1.shape, p1.buffer, t.shape, t.buffer, st.shape, st.dtype)
    r = nl.copy(p2)
    nl.store(out, r)
    return out
