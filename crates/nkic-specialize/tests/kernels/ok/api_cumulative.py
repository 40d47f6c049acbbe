import nki
import nki.language as nl
import nki.isa as nisa


# A running sum (cumsum) along the free dim, a running product seeded from
# a per-partition value, and a running max continued across two calls.
# nkic: args x=float32[128,256]
@nki.jit
def scans(x):
    out = nl.ndarray((128, 256), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    csum = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=csum, src=t, op0=nl.add, op1=nl.add, imm0=0.0)
    seed = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=seed, value=1.0)
    prod = nisa.tensor_scalar_cumulative(t, op0=nl.multiply, op1=nl.multiply, imm0=0.5,
                                         imm1=seed, reduce_cmd=nisa.reduce_cmd.load_reduce)
    half = nl.ndarray((128, 256), nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=half[:, 0:128], src=t[:, 0:128], op0=nl.subtract,
                                  op1=nl.maximum, imm0=seed)
    nisa.tensor_scalar_cumulative(dst=half[:, 128:256], src=t[:, 128:256], op0=nl.subtract,
                                  op1=nl.maximum, imm0=seed, reduce_cmd=nisa.reduce_cmd.reduce)
    print(prod.shape, prod.dtype)
    nisa.dma_copy(dst=out, src=csum)
    return out
