"""Element-wise addition of two float32 tensors [R, C], legacy style.

Written in the legacy NKI idiom: tiles are read with nl.load and written
with nl.store, addressed through nl.arange index grids (a partition grid
i_p and a free grid i_f) offset by the loop variable, and the sum uses
nl.add. out = a + b; R must be a multiple of 128.
"""
import nki
import nki.language as nl


# nkic: args a=float32[256,256] b=float32[256,256]
@nki.jit
def tensor_add_legacy(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    for i in nl.affine_range(rows // P):
        a_tile = nl.load(a[i * P + i_p, i_f])
        b_tile = nl.load(b[i * P + i_p, i_f])
        c_tile = nl.add(a_tile, b_tile)
        nl.store(out[i * P + i_p, i_f], value=c_tile)
    return out
