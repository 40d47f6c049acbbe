# A mask keeps the in-bounds part of grids larger than the output tensor.
import nki
import nki.language as nl

# nkic: args x=float32[128,512]
@nki.jit
def k(x):
    out = nl.ndarray([64, 256], dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(512)[None, :]
    t = nl.load(x[ip, jf])
    sq = nl.multiply(t, t, mask=((ip < 64) & (jf < 256)))
    nl.store(out[ip, jf], sq[ip, jf], mask=((ip < 64) & (jf < 256)))
    return out
