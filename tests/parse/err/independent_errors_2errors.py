import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    scale = 2.0 *
    nisa.dma_copy(dst=tb, src=b)
    nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
    count = = 3
    nisa.dma_copy(dst=out, src=ta)
    return out
