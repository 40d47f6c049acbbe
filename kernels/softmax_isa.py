"""Row-wise softmax of a bfloat16 tensor [R, C] written with ISA calls.

Same function as kernels/softmax.py, out[i, :] = exp(x[i, :] - max_i) /
sum(exp(x[i, :] - max_i)), but spelled out at the engine level and with
bfloat16 input and output (R a multiple of 128): nisa.tensor_reduce computes the negated row
maximum, nisa.activation_reduce exponentiates with that (P, 1) bias and
sums each row in the same pass, nisa.reciprocal inverts the sums and
nisa.tensor_scalar scales every row by its inverse sum.

The negated maximum and the exponentials are kept in bfloat16: the
maximum of bfloat16 values is exact in bfloat16, the row sums are taken
from the float32 exponentials before they are rounded, and 16-bit
operands let the Vector engine reduce at twice and scale at four times
its float32 rate.
"""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args x=bfloat16[256,256]
@nki.jit
def softmax_isa(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    for i in nl.affine_range(rows // P):
        rs = nl.ds(i * P, P)
        t = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rs, :])
        neg_max = nl.ndarray((P, 1), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=t, axis=1, negate=True, keepdims=True)
        e = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=e, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=sums, bias=neg_max)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=sums)
        y = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[rs, :], src=y)
    return out
