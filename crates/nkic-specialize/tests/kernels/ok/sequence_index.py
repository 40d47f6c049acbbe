import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def sequence_index(x):
    xs = [10, 20, 30]
    t = (1, (2, 3), "four")
    print(xs[0], xs[-1], xs[True], t[1][0], t[-1], t[-1][1], len(xs), len(t), len(()))
    xs.append(40)
    xs[1] = 21
    print(xs[3], xs[-3], len(xs), xs[1:3], t[::-1][0], "abc"[-1], range(2, 20, 3)[-1])
    shape = x.shape
    out = nl.ndarray((shape[0], shape[-1]), nl.float32, buffer=nl.shared_hbm)
    tile = nl.ndarray((shape[-2], shape[1]), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.dma_copy(dst=out, src=tile)
    return out
