# expect: E0525
import nki
import nki.language as nl
import nki.isa as nisa


# Only instance 0 reaches the barrier, so it would wait forever.
# nkic: args x=float32[256,64]
# nkic: grid 2
@nki.jit
def k(x):
    out = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    nl.store(out[me * 128:(me + 1) * 128, :], value=nl.load(x[me * 128:(me + 1) * 128, :]))
    if me == 0:
        nisa.core_barrier(out, (0, 1))
    return out
