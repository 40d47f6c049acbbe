"""A gather whose row index leaves its tensor: row 43 of the index tile holds 129."""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[128,32]
@nki.jit
def gather_out_of_bounds(a):
    out = nl.ndarray((64, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(32)[None, :]
    rows = nisa.iota(3 * nl.arange(64)[:, None], dtype=nl.int32)
    t = nl.load(a[rows, i_f])
    nl.store(out, value=t)
    return out
