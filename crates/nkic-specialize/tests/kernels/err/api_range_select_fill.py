# expect: E0522
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,64]
@nki.jit
def k(a):
    x = nl.load(a)
    lo = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    s = nisa.range_select(on_true_tile=x, comp_op0=nl.greater, comp_op1=nl.less,
                          bound0=lo, bound1=lo, on_false_value=0.0)
    return a
