# expect: E0202
import nki
import nki.language as nl
import nki.isa as nisa


class Version:
    def __init__(self, n):
        self.n = n

    def __lt__(self, other):
        if isinstance(other, Version):
            return self.n < other.n
        return NotImplemented


# nkic: args x=float32[128,64]
@nki.jit
def compare_not_implemented(x):
    assert Version(1) < Version(2)
    assert Version(1) < 2
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
