# expect: E0514
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=int32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    d = nl.ndarray((128, 64), nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=d, data=t, op0=nl.add, operand0=1, op1=nl.bitwise_and, operand1=3)
