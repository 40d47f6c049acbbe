import nki
import nki.isa as nisa
import nki.language as nl


# A kernel that returns a reshaped view of its output (`[B*S, 1]` stored,
# `[B, S, 1]` returned) returns that shape: the output storage `t1` is
# declared [4, 32, 1].
# nkic: args x=float32[128,64]
@nki.jit
def reshaped(x):
    flat = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, data=t, op=nl.maximum, axis=1)
    nisa.dma_copy(dst=flat, src=m)
    return flat.reshape((4, 32, 1))
