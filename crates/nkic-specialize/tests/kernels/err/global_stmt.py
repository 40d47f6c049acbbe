# expect: E0201
import nki

COUNT = 0


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    global COUNT
    COUNT += 1
