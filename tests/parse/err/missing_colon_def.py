import nki
import nki.language as nl


@nki.jit
def add_kernel(a, b)
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    return out
