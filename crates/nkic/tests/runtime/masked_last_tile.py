"""A legacy kernel whose last tile is masked: exp over 200 rows in tiles of 128."""
import nki
import nki.language as nl


# nkic: args a=float32[200,64]
@nki.jit
def masked_last_tile(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n = a.shape[0]
    ix = nl.arange(128)[:, None]
    iy = nl.arange(64)[None, :]
    for i in nl.affine_range((n + 127) // 128):
        t = nl.load(a[i * 128 + ix, iy], mask=(i * 128 + ix < n))
        e = nl.exp(t)
        nl.store(out[i * 128 + ix, iy], value=e, mask=(i * 128 + ix < n))
    return out
