# expect: E0218
import nki
import nki.language as nl


# With a launch grid every instance would write the copied output, so a
# returned SBUF tile stays an error.
# nkic: args x=float32[128,64]
# nkic: grid 2
@nki.jit
def k(x):
    t = nl.load(x)
    return t
