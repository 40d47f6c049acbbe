import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,1] r=float32[1,64]
@nki.jit
def bcast(a, r):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    col = nl.load(a)
    row = nl.load(r)
    wide = nl.broadcast_to(col, (128, 64))
    same = nl.broadcast_to(wide, (128, 64))
    cast = nl.broadcast_to(col, (128, 1), dtype=nl.bfloat16)
    tall = nl.broadcast_to(row, (128, 64))
    print(wide.shape, same.shape, cast.dtype, tall.shape)
    s = nl.add(wide, tall)
    nl.store(out, s)
    return out
