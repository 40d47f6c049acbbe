"""A loop that polls a flag nothing ever clears: it never ends."""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[128,512]
@nki.jit
def spin_forever(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=one, value=1)
    flag = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.hbm)
    nisa.dma_copy(dst=flag, src=one)
    r = nisa.register_alloc(0)
    nisa.register_load(r, flag)
    while r:
        nisa.register_load(r, flag)
    t = nl.load(x)
    nl.store(out, t)
    return out
