import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[256,512]
@nki.jit
def softmax_rows(x):
    R, C = x.shape
    out = nl.ndarray((R, C), nl.float32, buffer=nl.shared_hbm)
    for r in range(R // 128):
        t = nl.ndarray((128, C), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r * 128:(r + 1) * 128, :])
        neg_max = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=1, negate=True)
        e = nl.ndarray((128, C), nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=neg_max, reduce_op=nl.add, reduce_res=total)
        inv = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv, op=nl.reciprocal, data=total)
        nisa.tensor_scalar(dst=e, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[r * 128:(r + 1) * 128, :], src=e)
    return out
