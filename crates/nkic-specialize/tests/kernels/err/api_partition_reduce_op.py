# expect: E0514
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args a=float32[128,64]
@nki.jit
def k(a):
    x = nl.load(a)
    p = nisa.tensor_partition_reduce(op=nl.subtract, data=x)
    return a
