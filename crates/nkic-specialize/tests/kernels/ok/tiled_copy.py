import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[256,512]
@nki.jit
def tiled_copy(x):
    R, C = x.shape
    P = 128
    y = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    for r in range(R // P):
        rows = nl.ds(r * P, P)
        t = nl.ndarray((P, C), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows, :], name=f"ld{r}")
        nisa.dma_copy(dst=y[rows, :], src=t)
    return y
