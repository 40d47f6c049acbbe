# expect: E0502
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=int32[4,16]
@nki.jit
def k(x):
    t = nl.load(x)
    b = nisa.sequence_bounds(segment_ids=t)
