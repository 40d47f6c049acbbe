# expect: E0202
import nki
import nki.language as nl
import nki.isa as nisa
from enum import Enum


class Ord(Enum):
    FIRST = 1
    SECOND = 2


# nkic: args x=float32[128,64]
@nki.jit
def enum_not_ordered(x):
    assert Ord.FIRST < Ord.SECOND
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
