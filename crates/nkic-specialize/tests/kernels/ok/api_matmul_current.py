import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a_t=bfloat16[256,128] b=bfloat16[256,512]
@nki.jit
def matmul_current(a_t, b):
    K, M = a_t.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), nl.float32, buffer=nl.psum)
    for k in range(K // 128):
        s = nl.ndarray((128, M), nl.bfloat16, buffer=nl.sbuf)
        m = nl.ndarray((128, N), nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=a_t[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=m, src=b[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=s, moving=m, accumulate=(k > 0), name=f"mm{k}")
    res = nl.ndarray((M, N), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out
