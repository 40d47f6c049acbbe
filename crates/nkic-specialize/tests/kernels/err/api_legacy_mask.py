# expect: E0519
import nki
import nki.language as nl


# A mask clause that keeps a non-contiguous set of indices is no rectangle.
# nkic: args x=float32[128,128]
@nki.jit
def k(x):
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    t = nl.load(x[i_p, i_f], mask=(i_f != 5))
