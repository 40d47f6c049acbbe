# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    d = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((128, 2), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=d, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=r)
