"""Legacy index grids: arange, mgrid, affine arithmetic and masks."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def show(label, e):
    print(label, e)


# nkic: args x=float32[128,512]
@nki.jit
def grids(x):
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    show("i_p", i_p)
    show("i_f", i_f)
    show("affine", 2 * i_f + 1 - i_p)
    g = nl.mgrid[0:128, 0:512:2]
    a, b = nl.mgrid[0:64, 0:32]
    show("mgrid", (g.p, g.x, a, b))
    i0, i1, i2, i3, i4 = nl.mgrid[0:128, 0:4, 0:2, 0:8, 0:2]
    show("5-d", i4 + 2 * i3)
    k = 3
    show("with loop var", k * 128 + i_p)
    mask = (i_p < 100) & (i_f >= 8)
    show("mask", mask)
