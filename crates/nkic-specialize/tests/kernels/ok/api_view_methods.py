import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,512] y=bfloat16[64,128]
@nki.jit
def view_methods(x, y):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 8, 64), nl.float32, buffer=nl.sbuf)
    s = t.slice(1, 2, 6)
    sel = t.select(1, 3)
    p = t.permute((0, 2, 1))
    one = t[:, 0:1, :]
    bc = one.broadcast(1, 5)
    ex = sel.expand_dim(1)
    sq = ex.squeeze_dim(1)
    r = t.reshape((128, 512))
    r2 = t.reshape((128, 4, -1))
    v = t.view(nl.bfloat16)
    a = t.ap([[512, 128], [1, 64]], offset=64)
    print(s.shape, sel.shape, p.shape, p.strides, bc.shape, bc.strides)
    print(ex.shape, sq.shape, r.shape, r2.shape, v.shape, v.dtype, a.shape, a.offset)
    print(t.is_contiguous(), p.is_contiguous(), a.get_pattern())
    h = x.reshape((64, 1024))
    print(h.shape, x.ap([[512, 64], [2, 256]]).shape)
    nisa.dma_copy(dst=r, src=x)
    nisa.dma_copy(dst=out, src=r)
    return out
