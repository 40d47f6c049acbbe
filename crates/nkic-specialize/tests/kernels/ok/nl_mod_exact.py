import nki
import nki.language as nl


# `nl.mod` / `nl.fmod` correct the remainder once after `x − y·k`, so exact
# multiples give 0 as in NumPy (np.mod(-150, 15) == 0, np.fmod(-615, 41) ==
# 0): a remainder on the wrong side of zero gets `y` back (less, multiply,
# add) and one as large as `|y|` loses it (abs, greater_equal, multiply,
# subtract). For `fmod` the step is `|y|` towards the sign of `x`.
# nkic: args a=float32[128,64] b=float32[128,64] c=int32[128,64] d=int32[128,64]
@nki.jit
def mod_exact(a, b, c, d):
    r1 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    r2 = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    r3 = nl.ndarray(c.shape, dtype=c.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(r1, nl.mod(x, y))
    nl.store(r2, nl.fmod(x, -7.0))
    xi = nl.load(c)
    yi = nl.load(d)
    nl.store(r3, nl.fmod(xi, yi, dtype=nl.int32))
    return r1, r2, r3
