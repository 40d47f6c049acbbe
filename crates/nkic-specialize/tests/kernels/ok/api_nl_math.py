import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,64] b=float32[128,64] i=int32[128,64]
@nki.jit
def nl_math(a, b, i):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    ti = nl.load(i)
    col = nl.sum(x, axis=1)
    s = nl.add(x, y)
    d = nl.subtract(2.0, x)
    v = nl.multiply(x, col, dtype=nl.bfloat16)
    q = nl.divide(x, y)
    h = nl.divide(x, 4)
    p = nl.power(x, y)
    g = nl.greater_equal(x, 0.5, dtype=nl.uint8)
    bits = nl.bitwise_and(ti, 255)
    inv = nl.invert(ti)
    e = nl.exp(x)
    sq = nl.square(y)
    r = nl.rsqrt(y)
    rc = nl.reciprocal(y)
    n = nl.negative(x)
    ln = nl.logical_not(g)
    print(s.dtype, v.dtype, g.dtype, bits.dtype, col.shape, ln.dtype)
    op_sq = nisa.tensor_scalar(x, op0=nl.square, operand0=0.0)
    op_max = nisa.tensor_reduce(op=nl.max, data=x, axis=1)
    m = nl.max(x, axis=(1,), keepdims=True)
    mn = nl.mean(x, axis=-1)
    pr = nl.prod(x, axis=1)
    print(m.shape, mn.dtype, op_max.shape, op_sq.shape)
    w = nl.where(g, x, 0.0)
    w2 = nl.where(g, x, y)
    sm = nl.softmax(x, axis=-1)
    rn = nl.rms_norm(x, y, axis=1, n=64)
    print(sm.shape, rn.dtype, w.dtype, w2.shape)
    nl.store(out, sm)
    return out
