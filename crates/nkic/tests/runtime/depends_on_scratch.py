"""An output that really depends on never-written memory."""
import nki
import nki.language as nl


# nkic: args a=float32[128,64]
@nki.jit
def sums_a_scratch_tile(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    scratch = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.add(t, scratch)
    nl.store(out, value=s)
    return out
