# expect: E0522
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    r = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=r, src=t, shuffle_mask=list(range(16)))
