# expect: E0504
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    p = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    q = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
    d = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=d, data1=p, data2=q, op=nl.add)
