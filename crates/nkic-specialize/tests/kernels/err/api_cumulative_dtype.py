# expect: E0505
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=int32[128,64]
@nki.jit
def int_scan(x):
    out = nl.ndarray((128, 64), nl.int32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((128, 64), nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.add, op1=nl.add, imm0=0)
    nl.store(out, r)
    return out
