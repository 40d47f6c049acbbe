import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
# nkic: target trn2
@nki.jit
def nc_version_order(x):
    v = nisa.get_nc_version()
    print(v, v >= nisa.nc_version.gen3, v > nisa.nc_version.gen3, v < nisa.nc_version.gen4)
    print(nisa.nc_version.gen2 <= v, v == nisa.nc_version.gen3, v != nisa.nc_version.gen4)
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    if nisa.get_nc_version() >= nisa.nc_version.gen4:
        nisa.dma_copy(dst=out, src=x)
    else:
        t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
    return out
