# expect: E0500
import nki
import nki.language as nl
import nki.isa as nisa


# The static part of a pattern with a run-time offset must lie inside its
# tensor: five rows of 64 from offset 0 leave a [4, 64] tensor whatever
# the register holds.
# nkic: args x=float32[4,64]
@nki.jit
def ap_dynamic_out_of_bounds(x):
    out = nl.ndarray((5, 64), nl.float32, buffer=nl.shared_hbm)
    row = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=row, value=0)
    t = nl.ndarray((5, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap([[64, 5], [1, 64]], offset=0, scalar_offset=row, indirect_dim=0))
    nisa.dma_copy(dst=out, src=t)
    return out
