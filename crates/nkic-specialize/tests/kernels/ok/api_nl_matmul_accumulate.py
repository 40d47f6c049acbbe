import nki
import nki.language as nl
import nki.isa as nisa


# The SDK 2.20 form `psum += nl.matmul(x, y, transpose_x=True)` accumulates
# in place exactly like `psum += nisa.nc_matmul(x, y)`; a result used any
# other way is a fresh PSUM tile.
# nkic: args a_t=float32[256,128] b=float32[256,512]
@nki.jit
def nl_matmul_accumulate(a_t, b):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    acc_nl = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    acc_isa = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        x = nl.load(a_t[k * 128:(k + 1) * 128, :])
        y = nl.load(b[k * 128:(k + 1) * 128, :])
        acc_nl += nl.matmul(x, y, transpose_x=True)
        acc_isa += nisa.nc_matmul(x, y)
    once = nl.matmul(x, y, transpose_x=True)
    total = nl.add(nl.copy(acc_nl), nl.copy(acc_isa))
    nl.store(out, value=nl.add(total, once))
    return out
