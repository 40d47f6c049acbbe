import nki
import nki.language as nl
import nki.isa as nisa


# A (1, F) row broadcast over the partitions goes through a ones-matmul
# in PSUM; for nl.power (GpSimd) and next to a PSUM operand it is copied
# to SBUF first, so both calls are valid.
# nkic: args a=float32[128,256] e=float32[1,256] w=float32[128,128]
@nki.jit
def rows(a, e, w):
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    row = nl.load(e)
    p = nl.power(t, row)
    acc = nisa.nc_matmul(nl.load(w), t)
    s = nl.add(acc, row)
    nl.store(out, value=nl.multiply(p, s))
    return out
