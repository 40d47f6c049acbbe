import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[4,256,64]
@nki.jit
def subscripts(x):
    out = nl.ndarray((4, 256, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4, 64), nl.float32, buffer=nl.sbuf)
    print(x[0].shape, x[1, 2].shape, x[-1, 5:9, ::2].shape, x[..., 3].shape)
    print(t[0, 0, 10].shape, t[:, 0].shape, t[:, 0, 10].shape, t[:, :, ::2].shape)
    print(t[0, ...].shape, t[...].shape, t[0:64][:, 1:3, :].shape, t[nl.ds(32, 32), 1].shape)
    for b in range(4):
        for h in range(2):
            rows = nl.ds(h * 128, 128)
            nisa.dma_copy(dst=t[:, b, :], src=x[b, rows, :])
            nisa.dma_copy(dst=out[b, rows, :], src=t[:, b, :])
    return out
