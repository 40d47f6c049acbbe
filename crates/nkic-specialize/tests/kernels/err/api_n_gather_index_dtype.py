# expect: E0505
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    i = nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf)
    g = nisa.nc_n_gather(data=t, indices=i)
