# expect: E0261
# budget: bytes=1000000
import nki


# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    s = "x"
    for i in range(40):
        s = s + s
