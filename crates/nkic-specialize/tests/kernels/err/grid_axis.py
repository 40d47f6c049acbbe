# expect: E0225
import nki
import nki.language as nl


# nkic: args x=float32[128,64]
# nkic: grid 2
@nki.jit
def k(x):
    j = nl.program_id(axis=1)
