import nki
import nki.language as nl
import nki.isa as nisa


# Legacy-style conveniences: nl.matmul of PSUM results (evicted to SBUF
# first), the broadcast_to method, and reductions over free axes that are
# not the trailing ones (a permuted view moves them last).
# nkic: args q=float32[128,128] v=float32[128,128] img=float32[2,6,6] row=float32[1,64]
@nki.jit
def legacy_shapes(q, v, img, row):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    pooled = nl.ndarray((2, 3, 3), nl.float32, buffer=nl.shared_hbm)
    qs = nl.load(q)
    vs = nl.load(v)
    qk = nl.matmul(qs, qs, transpose_x=True)
    vt = nl.transpose(vs)
    o = nl.matmul(qk, vt, transpose_x=True)
    r = nl.load(row).broadcast_to((128, 64))
    i0, i1, i2, i3, i4 = nl.mgrid[0:2, 0:3, 0:2, 0:3, 0:2]
    t = nl.load(img)
    s = nl.sum(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4])
    m = nl.max(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=(2, 4), keepdims=True)
    print(o.shape, r.shape, s.shape, m.shape)
    nl.store(pooled, s)
    nl.store(out, nl.copy(o))
    return out
