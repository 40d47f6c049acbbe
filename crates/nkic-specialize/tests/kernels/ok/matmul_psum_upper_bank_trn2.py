import nki
import nki.language as nl
import nki.isa as nisa


# On trn2 a matmul result lives in one 2 KiB PSUM bank, any of the 8: this
# one covers bytes 2048..2176 of bank 1 (isa.md, accumulation groups).
# nkic: args a=bfloat16[128,128] b=bfloat16[128,32]
# nkic: target trn2
@nki.jit
def matmul_psum_upper_bank(a, b):
    sa = nl.ndarray((128, 128), nl.bfloat16, buffer=nl.sbuf)
    sb = nl.ndarray((128, 32), nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=sa, src=a)
    nisa.dma_copy(dst=sb, src=b)
    acc = nl.ndarray((128, 544), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc[:, 512:544], stationary=sa, moving=sb)
    res = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc[:, 512:544])
    out = nl.ndarray((128, 32), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
