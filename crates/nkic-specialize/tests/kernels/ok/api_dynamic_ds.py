import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[1024,256] n=int32[1,1]
@nki.jit
def dynamic_ds(x, n):
    out = nl.ndarray((1024, 256), nl.float32, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    count = nisa.register_alloc()
    nisa.register_load(count, n_sb)
    for i in nl.dynamic_range(0, count):
        t = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
        nisa.activation(dst=t, op=nl.relu, data=t)
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=t)
    return out
