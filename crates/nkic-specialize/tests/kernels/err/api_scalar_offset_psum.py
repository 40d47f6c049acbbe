# expect: E0501
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    p = nl.ndarray((1, 1), nl.int32, buffer=nl.psum)
    v = x.ap([[64, 64], [1, 64]], scalar_offset=p)
