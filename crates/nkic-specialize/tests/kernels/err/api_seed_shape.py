# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=uint32[2,2]
@nki.jit
def k(x):
    s = nl.load(x)
    nisa.set_rng_seed(src_seeds=s)
