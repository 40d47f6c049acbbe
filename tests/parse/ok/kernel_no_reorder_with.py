import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def ordered_copies(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    ta = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    tb = nl.ndarray(b.shape, b.dtype, buffer=nl.sbuf)
    with nl.no_reorder():
        first = nisa.dma_copy(dst=ta, src=a, name="first")
        second = nisa.dma_copy(dst=tb, src=b, name="second")
    with nl.no_reorder() as scope, open_trace("copies") as trace:
        nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
    with nl.no_reorder():
        for step in range(2):
            nisa.tensor_scalar(dst=ta, data=ta, op0=nl.multiply, operand0=0.5)
    third = nisa.dma_copy(dst=out, src=ta)
    third.depends_on(first, second)
    return out


def open_trace(label):
    return nl.no_reorder()


scheduled = ordered_copies.with_schedule([("third", "first"), ("third", ["first", "second"])])
