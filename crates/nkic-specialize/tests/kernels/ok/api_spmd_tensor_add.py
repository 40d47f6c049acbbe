import nki
import nki.language as nl
import nki.isa as nisa


# nkic: grid 2,2
# nkic: args a=float32[256,1024] b=float32[256,1024]
@nki.jit
def spmd_add(a, b):
    c = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    px = nl.program_id(0) * 128
    py = nl.program_id(1) * 512
    ix = px + nl.arange(128)[:, None]
    iy = py + nl.arange(512)[None, :]
    ta = nl.load(a[ix, iy])
    tb = nl.load(b[ix, iy])
    nl.store(c[ix, iy], value=ta + tb)
    return c
