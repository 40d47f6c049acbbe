import nki
import nki.language as nl
import nki.isa as nisa


# Predicates of dtype bool_ (a byte holding 0 or 1) select in
# tensor_copy_predicated, select_reduce and nl.where.
# nkic: args a=float32[128,64]
@nki.jit
def predicate_bool(a):
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    p = nl.greater(x, 0.0, dtype=nl.bool_)
    d = nl.zeros((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy_predicated(dst=d, src=x, predicate=p)
    s = nisa.select_reduce(predicate=p, on_true=d, on_false=-1.0)
    w = nl.where(p, s, 2.0)
    nl.store(out, value=w)
    return out
