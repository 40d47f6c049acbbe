# expect: E0518
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    d = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=d, data=t, op0=nl.add, operand0=1.0, engine=nisa.engine.gpsimd)
