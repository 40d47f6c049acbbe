import nki
import nki.language as nl
import nki.isa as nisa


def rows(i, p):
    return nl.ds((i % 8) * p, p)


# nkic: args x=float32[1024,512]
@nki.jit
def unrolled(x):
    R, C = x.shape
    P = 128
    y = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    for i in range(25000):
        r = rows(i, P)
        t = nl.ndarray((P, C), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r, :], name=f"ld{i}")
        nisa.dma_copy(dst=y[r, 0:256], src=t[:, 0:256])
        nisa.dma_copy(dst=y[r, 256:512], src=t[:, 256:512])
        nisa.dma_copy(dst=t, src=x[r, :])
    return y
