import nki
import nki.language as nl
import nki.isa as nisa
import numpy as np


# A shared constant identity matrix, as attention kernels build for
# TensorE transposes.
# nkic: args x=bfloat16[128,128]
@nki.jit
def with_constant(x):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    ident = nl.load(nl.shared_constant(np.identity(128, dtype=np.int8), dtype=x.dtype))
    t = nl.load(x)
    p = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=t, moving=ident)
    nl.store(out, nl.copy(p))
    return out
