# expect: E0517
import nki
import nki.language as nl
import nki.isa as nisa


# nkic: args x=float32[8,64,64]
@nki.jit
def k(x):
    v = x.permute((0, 2, 1)).flatten_dims(1, 2)
