import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,128] b=float32[128,512]
@nki.jit
def mgrid_matmul(a, b):
    c = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    a_grid = nl.mgrid[0:128, 0:128]
    b_grid = nl.mgrid[0:128, 0:512]
    ta = nl.load(a[a_grid.p, a_grid.x])
    tb = nl.load(b[b_grid.p, b_grid.x])
    c_psum = nisa.nc_matmul(ta[a_grid.p, a_grid.x], tb[b_grid.p, b_grid.x])
    nl.store(c[b_grid.p, b_grid.x], c_psum)
    return c
