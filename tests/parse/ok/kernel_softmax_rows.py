import nki
import nki.isa as nisa
import nki.language as nl


def row_max(dst, src):
    nisa.tensor_reduce(dst=dst, op=nl.maximum, data=src, axis=(1,), negate=True)


@nki.jit
def softmax_rows(x):
    n_rows, n_cols = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((n_rows, n_cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range((n_rows + P - 1) // P):
        lo = i * P
        hi = min(lo + P, n_rows)
        rows = hi - lo
        data = nl.ndarray((P, n_cols), nl.float32, buffer=nl.sbuf)
        neg_max = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
        exps = nl.ndarray((P, n_cols), nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=data[:rows], src=x[lo:hi])
        row_max(neg_max[:rows], data[:rows])
        nisa.activation(
            dst=exps[:rows],
            op=nl.exp,
            data=data[:rows],
            bias=neg_max[:rows],
            reduce_op=nl.add,
            reduce_res=sums[:rows],
        )
        nisa.reciprocal(dst=sums[:rows], data=sums[:rows])
        nisa.tensor_scalar(
            dst=exps[:rows], data=exps[:rows], op0=nl.multiply, operand0=sums[:rows]
        )
        nisa.dma_copy(dst=out[lo:hi], src=exps[:rows])
    return out
