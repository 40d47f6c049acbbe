# expect: E0520
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def seedless_scan(x):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=r, src=t, op0=nl.add, op1=nl.add, imm0=0.0,
                                  reduce_cmd=nisa.reduce_cmd.load_reduce)
    nl.store(out, r)
    return out
