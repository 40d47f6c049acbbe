import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a_t=bfloat16[256,128] b=bfloat16[256,512]
@nki.jit
def matmul_legacy(a_t, b):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    i_p = nl.arange(128)[:, None]
    for k in nl.affine_range(2):
        s = nl.load(a_t[k * 128 + i_p, nl.arange(128)[None, :]])
        m = nl.load(b[k * 128:(k + 1) * 128, :])
        res_psum += nisa.nc_matmul(s, m)
    half = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    s0 = nl.load(a_t[0:128, :])
    m0 = nl.load(b[0:128, :])
    half[...] += nisa.nc_matmul(s0, m0)
    direct = nisa.nc_matmul(s0, m0[:, 0:256])
    c = nl.copy(direct)
    res = nl.copy(res_psum)
    nl.store(out, value=res)
    return out
