import nki
import nki.isa as nisa
import nki.language as nl


# `nc_matmul(..., is_transpose=True)` passes the data through, so its
# PSUM result has the input's dtype: bfloat16 on trn2 as well (a plain
# matmul writes float32 PSUM there).
# nkic: args x=bfloat16[128,128]
# nkic: target trn2
@nki.jit
def transpose_bf16(x):
    a = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    eye = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.iota(eye, [[1, 128]], offset=0, channel_multiplier=-1)
    nisa.tensor_scalar(eye, eye, nl.equal, 0)
    t = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=t, stationary=a, moving=eye, is_transpose=True)
    r = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=t)
    out = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out
