from dataclasses import dataclass

import nki
import nki.isa as nisa
import nki.language as nl


@dataclass
class NormConfig(nl.NKIObject):
    eps: float = 1e-6
    compute_dtype: object = nl.float32
    tile_rows: int = 128
    scale_by_weight: bool = True

    def __post_init__(self):
        assert 0 < self.tile_rows <= 128, "tile_rows must fit the partition dimension"


@nki.jit
def rmsnorm(x, weight, config: NormConfig = NormConfig()):
    n_rows, hidden = x.shape
    P: int = config.tile_rows
    out = nl.ndarray((n_rows, hidden), x.dtype, buffer=nl.shared_hbm)
    w = nl.ndarray((P, hidden), weight.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w, src=weight.reshape((1, hidden)).broadcast(0, P))
    inv_hidden = 1.0 / hidden
    for r in range(n_rows // P):
        x_t = nl.ndarray((P, hidden), config.compute_dtype, buffer=nl.sbuf)
        sq = nl.ndarray((P, hidden), config.compute_dtype, buffer=nl.sbuf)
        ss = nl.ndarray((P, 1), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_t, src=x[r * P:(r + 1) * P, :])
        nisa.activation(dst=sq, op=nl.square, data=x_t, reduce_op=nl.add, reduce_res=ss)
        nisa.tensor_scalar(
            dst=ss, data=ss, op0=nl.multiply, operand0=inv_hidden, op1=nl.add, operand1=config.eps
        )
        nisa.activation(dst=ss, op=nl.rsqrt, data=ss)
        nisa.tensor_scalar(dst=x_t, data=x_t, op0=nl.multiply, operand0=ss)
        if config.scale_by_weight:
            nisa.tensor_tensor(dst=x_t, data1=x_t, data2=w, op=nl.multiply)
        nisa.dma_copy(dst=out[r * P:(r + 1) * P, :], src=x_t)
    return out
