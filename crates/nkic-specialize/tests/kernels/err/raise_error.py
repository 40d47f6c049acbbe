# expect: E0220
import nki


def pick(mode):
    if mode not in ("a", "b"):
        raise ValueError(f"unknown mode {mode!r}")
    return mode


# nkic: args x=float32[128,64]
# nkic: consts mode='c'
@nki.jit
def k(x, mode):
    pick(mode)
