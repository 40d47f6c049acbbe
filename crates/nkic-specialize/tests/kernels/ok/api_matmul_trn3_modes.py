import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float8_e4m3[128,2,64] b=float8_e5m2[128,2,512] w=bfloat16[128,128] m=bfloat16[128,2048]
@nki.jit
def trn3_modes(a, b, w, m):
    out = nl.ndarray((128, 2048), nl.bfloat16, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    dr = nl.ndarray((64, 512), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=dr, stationary=ta, moving=tb, perf_mode=nisa.matmul_perf_mode.double_row)
    tw = nl.load(w)
    tm = nl.load(m)
    wide = nl.ndarray((128, 2048), nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=wide, stationary=tw, moving=tm, accumulate=False)
    s = nl.ndarray((128, 2048), nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=wide)
    nisa.dma_copy(dst=out, src=s)
    return out
