# expect: E0514
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    t = nl.load(x)
    a = nisa.activate2(op=nl.exp, data=t, op0=nl.add, imm0=1.0, op1=nl.add, imm1=2.0)
