import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[1024,64] y=float32[1024,64]
@nki.jit
def dynamic(x, y):
    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
    for i in nl.dynamic_range(8):
        nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
        with nl.no_reorder():
            nisa.dma_copy(dst=y[nl.ds(i * 128, 128), :], src=t)
            nisa.dma_copy(dst=y[nl.ds(i * 128 + 0, 128), :], src=t)

    def body(k):
        nisa.dma_copy(dst=t, src=x[nl.ds(k * 128, 128), :])

    nl.fori_loop(2, 6, body, step=2)

    def step(c):
        nisa.dma_copy(dst=y[0:128, :], src=t)
        return c

    nl.while_loop(1, step)
    for j in nl.affine_range(2):
        for k in nl.dynamic_range(j, 4):
            nisa.dma_copy(dst=t, src=x[nl.ds(k * 256 + 128, 128), :])
