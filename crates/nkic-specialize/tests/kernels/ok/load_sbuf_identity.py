import nki
import nki.language as nl
import nki.isa as nisa
from nki.isa.constants import dge_mode


# Older kernels `nl.load` the identity matrix, which nkic builds in SBUF:
# the load copies it with a DMA (casting to the requested dtype).
# nkic: args x=bfloat16[128,128]
@nki.jit
def transpose_by_identity(x):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    ident = nl.shared_identity_matrix(n=128, dtype=nl.bfloat16)
    ident32 = nl.load(ident, dtype=nl.float32)
    xs = nl.load(x, dtype=nl.float32)
    tp = nisa.nc_matmul(xs, ident32)
    nl.store(out, value=nl.copy(tp))
    print(dge_mode.hwdge)
    return out
