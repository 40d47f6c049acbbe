import nki
import nki.language as nl
import nki.isa as nisa


# nl functions without an instruction of their own, composed from others:
# cos/tan from sin, floor/ceil/trunc through an int32 round trip, fmod and
# mod from them, and expand_dims as a view.
# nkic: args x=float32[128,64] y=float32[128,64]
@nki.jit
def composites(x, y):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    a = nl.load(x)
    b = nl.load(y)
    c = nl.cos(a)
    t = nl.tan(a, dtype=nl.bfloat16)
    f = nl.floor(a)
    u = nl.ceil(a)
    z = nl.trunc(a)
    r1 = nl.fmod(a, b)
    r2 = nl.mod(a, 3.0)
    e = nl.expand_dims(a, 1)
    print(c.dtype, t.dtype, e.shape, r2.shape)
    nl.store(out, r1)
    return out
