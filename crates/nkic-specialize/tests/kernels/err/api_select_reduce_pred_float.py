# expect: E0505
import nki
import nki.language as nl
import nki.isa as nisa


# A float predicate is refused; the message lists bool_ among the
# predicate dtypes.
# nkic: args a=float32[128,64]
@nki.jit
def k(a):
    x = nl.load(a)
    s = nisa.select_reduce(predicate=x, on_true=x, on_false=0.0)
    return a
