# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((64, 128), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=b, src=a)
