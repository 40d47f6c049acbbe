# expect: E0208
import nki


# nkic: args x=float32[128,64]
# nkic: consts parts=0
@nki.jit
def k(x, parts):
    chunk = x.shape[1] // parts
