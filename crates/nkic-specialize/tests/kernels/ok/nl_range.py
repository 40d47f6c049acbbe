import nki
import nki.language as nl
import nki.isa as nisa


# `nl.range` iterates in order like `nl.sequential_range`.
# nkic: args x=float32[256,64]
@nki.jit
def nl_range(x):
    out = nl.ndarray((256, 64), nl.float32, buffer=nl.shared_hbm)
    for i in nl.range(2):
        t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)
    return out
