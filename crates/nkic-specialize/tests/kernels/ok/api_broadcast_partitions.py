import nki
import nki.language as nl
import nki.isa as nisa


# NumPy broadcasting of tiles: one-row operands are spread over the
# partitions (a ones-matmul for narrow float rows, quadrant shuffles for
# wide or integer rows), size-1 free dims become stride-0 views.
# nkic: args a=float32[128,512] row=float32[1,512] col=float32[128,1] wide=float32[1,1024] ids=int32[1,64]
@nki.jit
def spread(a, row, col, wide, ids):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tr = nl.load(row)
    tc = nl.load(col)
    one = nl.load(row[0:1, 0:1])
    s1 = nl.add(ta, tr)
    s2 = nl.add(tc, tr)
    s3 = nl.multiply(ta, one)
    w = nl.broadcast_to(nl.load(wide), shape=(128, 1024))
    i = nl.broadcast_to(nl.load(ids), shape=(96, 64))
    print(s1.shape, s2.shape, s3.shape, w.shape, i.shape, i.dtype)
    nl.store(out, s2)
    return out
