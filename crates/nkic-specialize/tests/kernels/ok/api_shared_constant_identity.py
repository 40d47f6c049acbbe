import nki
import nki.language as nl
import nki.isa as nisa
import numpy as np


# A shared constant identity matrix, as attention kernels build for
# TensorE transposes: its bytes are the storage's data.
# nkic: args x=bfloat16[8,8]
@nki.jit
def with_constant(x):
    out = nl.ndarray((8, 8), nl.float32, buffer=nl.shared_hbm)
    ident = nl.load(nl.shared_constant(np.identity(8, dtype=np.int8), dtype=x.dtype))
    t = nl.load(x)
    p = nl.ndarray((8, 8), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=t, moving=ident)
    nl.store(out, nl.copy(p))
    return out
