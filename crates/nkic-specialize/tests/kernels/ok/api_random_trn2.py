import nki
import nki.language as nl
import nki.isa as nisa


# On trn2 `nl.rand` is `rng` into uint16 bits scaled by 2^-16.
# nkic: target trn2
# nkic: args x=float32[64,32]
@nki.jit
def uniform(x):
    out = nl.ndarray((64, 32), nl.float32, buffer=nl.shared_hbm)
    r = nl.rand((64, 32), dtype=nl.float32)
    nl.store(out, r)
    return out
