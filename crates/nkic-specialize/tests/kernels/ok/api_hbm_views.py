import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[8,16,128]
@nki.jit
def hbm_views(x):
    out = nl.ndarray((128, 8, 16), nl.float32, buffer=nl.shared_hbm)
    xt = x.permute((2, 0, 1))
    flat = x.reshape((128, 128))
    col = x.select(2, 5)
    print(xt.shape, xt.is_contiguous(), flat.shape, col.shape, x[::2, 1:9:3, -1].shape)
    t = nl.ndarray((128, 8, 16), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=xt)
    nisa.dma_copy(dst=out, src=t)
    return out
