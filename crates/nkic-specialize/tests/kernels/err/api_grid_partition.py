# expect: E0512
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    i_p = nl.arange(64)[:, None]
    i_f = nl.arange(64)[None, :]
    u = t[2 * i_p, i_f]
