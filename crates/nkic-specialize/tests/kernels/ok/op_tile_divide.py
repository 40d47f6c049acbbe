import nki
import nki.language as nl


# `/` with a tile divisor multiplies by the divisor's reciprocal (fp32),
# like `nl.divide`; a number divisor is inverted at
# compile time; a number divided by a tile is the reciprocal scaled.
# nkic: args x=float32[128,64] y=float32[128,64]
@nki.jit
def k(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.load(y)
    q = t / u
    r = 2.0 / u
    s = q / 4.0
    nl.store(out, value=nl.add(r, s))
    return out
