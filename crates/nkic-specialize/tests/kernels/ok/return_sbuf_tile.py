import nki
import nki.language as nl


# Returning the SBUF tile instead of the HBM tensor it was stored to: nkic
# copies the tile into a new output and warns.
# nkic: args x=float32[128,64]
@nki.jit
def returns_tile(x):
    stored = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.exp(nl.load(x))
    nl.store(stored, value=t)
    return t
