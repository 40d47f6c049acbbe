import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def messy_kernel(x, y):
    P = 128 +
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, 512), x.dtype buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    factor = / 2
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    bias = y[0:128, ]]
    nisa.dma_copy(dst=out, src=t)
    extra = 1 2
    return out
