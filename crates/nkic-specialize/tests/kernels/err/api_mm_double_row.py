# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float8_e4m3[128,128]
@nki.jit
def k(x):
    s = nl.load(x)
    d = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=d, stationary=s, moving=s, perf_mode=nisa.matmul_perf_mode.double_row)
