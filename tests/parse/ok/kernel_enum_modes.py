from enum import Enum

import nki
import nki.isa as nisa
import nki.language as nl


class Activation(Enum):
    RELU = 0
    GELU = 1
    SILU = 2
    NONE = 3


ACT_TABLE = {
    "RELU": nl.relu,
    "GELU": nl.gelu,
    "SILU": nl.silu,
}


def activation_op(kind: Activation):
    if kind == Activation.NONE:
        return None
    elif kind.name in ACT_TABLE:
        return ACT_TABLE[kind.name]
    else:
        raise ValueError(f"unsupported activation {kind!r}")


@nki.jit
def bias_act(x, bias, kind=Activation.GELU):
    P, F = x.shape
    op = activation_op(kind)
    t = nl.ndarray((P, F), x.dtype, buffer=nl.sbuf)
    b = nl.ndarray((P, 1), bias.dtype, buffer=nl.sbuf)
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=b, src=bias)
    if op is None:
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=b)
    else:
        nisa.activation(dst=t, op=op, data=t, bias=b)
    nisa.dma_copy(dst=out, src=t)
    return out
