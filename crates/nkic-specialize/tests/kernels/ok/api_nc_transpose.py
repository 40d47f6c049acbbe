import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def transposes(x):
    out = nl.ndarray((64, 128), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    pt = nl.ndarray((64, 128), nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=pt, data=t, engine=nisa.engine.tensor)
    small = nl.ndarray((32, 32), nl.float32, buffer=nl.sbuf)
    nisa.nc_transpose(dst=small, data=t[0:32, 0:32])
    auto = nisa.nc_transpose(t[0:32, 0:16])
    print(auto.shape, auto.buffer)
    st = nl.ndarray((64, 128), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=st, src=pt)
    nisa.dma_copy(dst=out, src=st)
    return out
