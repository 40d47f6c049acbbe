# expect: E0506
import nki
import nki.language as nl
import nki.isa as nisa


# nisa.exponential exists on trn3 only; the API table's `since` field is
# checked when the call is bound.
# nkic: args x=float32[128,64]
# nkic: target trn2
@nki.jit
def exp_on_trn2(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=r, src=t)
    nl.store(out, r)
    return out
