import nki
import nki.language as nl
import nki.isa as nisa


# `t.base_tensor` is the whole tensor a view was taken from (a tensor's
# own base is itself), as nki-library reads `weight.base_tensor`.
# nkic: args w=float32[4,128,64]
@nki.jit
def k(w):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    v = w[2]
    base = v.base_tensor
    print(v.shape, base.shape, w.base_tensor.shape, base.offset)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=base[3])
    nisa.dma_copy(dst=out, src=t)
    return out
