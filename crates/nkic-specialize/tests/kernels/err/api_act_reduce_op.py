# expect: E0514
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    d = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=d, op=nl.exp, data=t, reduce_op=nl.maximum, reduce_res=r)
