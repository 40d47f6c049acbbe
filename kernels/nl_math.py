"""Remainders and trigonometry of float32 tensors [R, C] with nl functions.

Returns four tensors: nl.mod(a, b) and nl.fmod(a, b) (the remainder with
the sign of b, as np.mod, and with the sign of a, as np.fmod), and
nl.sin(t) and nl.cos(t). These nl functions are lowered to several
instructions each: the remainders correct the quotient once so exact
multiples give 0, and the trigonometric functions reduce their argument
to [-pi, pi] first, because the Scalar engine's sine has no range
reduction. R must be a multiple of 128; b must have no zeros.
"""
import nki
import nki.language as nl


# nkic: args a=float32[256,512] b=float32[256,512] t=float32[256,512]
@nki.jit
def nl_math(a, b, t):
    rows, cols = a.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    mod = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    fmod = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    sin = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    cos = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // P):
        rs = nl.ds(i * P, P)
        x = nl.load(a[rs, :])
        y = nl.load(b[rs, :])
        angle = nl.load(t[rs, :])
        nl.store(mod[rs, :], value=nl.mod(x, y))
        nl.store(fmod[rs, :], value=nl.fmod(x, y))
        nl.store(sin[rs, :], value=nl.sin(angle))
        nl.store(cos[rs, :], value=nl.cos(angle))
    return mod, fmod, sin, cos
