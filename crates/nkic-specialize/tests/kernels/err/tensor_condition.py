# expect: E0211
import nki
import nki.language as nl


# A tensor is truthy (a None check, as in NKI), but an index grid has no
# compile-time truth value.
# nkic: args x=float32[128,64]
@nki.jit
def k(x):
    i = nl.arange(128)[:, None]
    if x:
        if i:
            pass
