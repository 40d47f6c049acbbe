"""A kernel file that is a whole program: host code around the kernel."""
import math
import numpy as np

try:
    import neuron_missing_package.nki as nki
except ImportError:
    import nki
import nki.language as nl
import nki.isa as nisa

SCALE = 1 / math.sqrt(64)        # a call: host code, but evaluable
ROWS = 2 * 64                     # a constant expression
DATA = np.random.rand(128, 64)    # host code that cannot run at compile time
SHAPES = {"a": (ROWS, 64), "b": (ROWS, 32)}


# nkic: args x=float32[128,64]
@nki.jit
def host(x):
    assert x.shape == SHAPES["a"], x.shape
    print("scale", SCALE, "rows", ROWS, "is None", SCALE is None, "np", np.prod(x.shape))
    out = nl.ndarray(SHAPES["a"], nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return (out,)


if __name__ == "__main__":
    x = np.ones((128, 64), dtype=np.float32)
    print(host(x))
