# expect: E0200
import nki
from nki.language import no_such_function


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    no_such_function(x)
