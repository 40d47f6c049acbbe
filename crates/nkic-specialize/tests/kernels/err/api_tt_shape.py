# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    d = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=d, data1=t, data2=t[:, 0:32], op=nl.add)
