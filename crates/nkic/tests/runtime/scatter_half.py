"""A scatter store that writes half the rows of its output on purpose."""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[64,32]
@nki.jit
def scatter_half(a):
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(32)[None, :]
    rows = nisa.iota(2 * nl.arange(64)[:, None], dtype=nl.int32)
    t = nl.load(a)
    nl.store(out[rows, i_f], value=t)
    return out
