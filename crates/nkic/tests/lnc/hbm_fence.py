"""An LNC=2 kernel whose two instances both compute the whole result and
end with the "HBM fence" `dma_copy(dst=out, src=out)`.

Both cores store identical bytes to every row of `out` (accepted: the
stores agree), and each core's self-copy writes back what it reads, so it
does not race with the other core's identical stores.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[128,512]
# nkic: grid 2
@nki.jit
def hbm_fence(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)
    nisa.dma_copy(dst=out, src=out)
    return out
