import nki
import nki.language as nl
import nki.isa as nisa


# An identity matrix for a TensorE transpose, single-row assignments at
# odd partitions (through DMA), an mgrid subscript, a scalar store and a
# device_print (a warning: nkic prints nothing).
# nkic: args x=bfloat16[128,128]
@nki.jit
def with_identity(x):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    fill = nl.ndarray((4, 8), nl.int32, buffer=nl.shared_hbm)
    ident = nl.shared_identity_matrix(n=128, dtype=nl.bfloat16)
    mine = nl.ndarray((16, 16), nl.float32, buffer=nl.sbuf)
    nl.shared_identity_matrix(16, dtype=nl.float32, dst=mine)
    t = nl.load(x[nl.mgrid[0:128, 0:128]])
    p = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=t, moving=ident)
    s = nl.copy(p)
    idx = nl.zeros((4, 4), dtype=nl.uint32)
    for i in range(4):
        idx[i, 0] = i * 3
    nl.device_print("transposed", s)
    nl.store(fill, 7)
    nl.store(out, s)
    return out
