import nki
import nki.language as nl
import nki.isa as nisa


# Row absolute maximum: `op0=nl.abs` is a unary operator, its operand 0.
# nkic: args x=float32[128,64]
@nki.jit
def abs_max_rows(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    m = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=a, data=t, op0=nl.abs, operand0=0.0, reduce_op=nl.maximum, reduce_res=m)
    out = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=m)
    return out
