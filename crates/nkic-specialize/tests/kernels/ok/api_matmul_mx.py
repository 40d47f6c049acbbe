import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=bfloat16[128,512] b=bfloat16[128,2048]
@nki.jit
def matmul_mx(a, b):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    sa = nl.load(a)
    sb = nl.load(b)
    qa = nl.ndarray((128, 128), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    qb = nl.ndarray((128, 512), nl.float8_e5m2_x4, buffer=nl.sbuf)
    sca = nl.ndarray((128, 128), nl.float8_e8m0fnu, buffer=nl.sbuf)
    scb = nl.ndarray((128, 512), nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=qa, src=sa, dst_scale=sca)
    nisa.quantize_mx(dst=qb, src=sb, dst_scale=scb)
    acc = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=acc, stationary=qa, moving=qb, stationary_scale=sca, moving_scale=scb)
    nisa.nc_matmul_mx(acc, qa, qb, sca, scb, accumulate=True)
    res = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nl.store(out, res)
    return out
