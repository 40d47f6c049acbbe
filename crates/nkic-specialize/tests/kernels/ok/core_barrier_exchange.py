import nki
import nki.language as nl
import nki.isa as nisa


# Two cores (LNC=2) hand rows to each other through shared HBM: each
# writes its half, waits at the barrier, then reads the other's half.
# nkic: args x=float32[256,64]
# nkic: grid 2
@nki.jit
def swap_halves(x):
    res = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    got = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    other = 1 - me
    t = nl.load(x[me * 128:(me + 1) * 128, :])
    nl.store(res[me * 128:(me + 1) * 128, :], value=nl.multiply(t, 2.0))
    nisa.core_barrier(res, (0, 1), engine=nisa.engine.sync)
    u = nl.load(res[other * 128:(other + 1) * 128, :])
    nl.store(got[me * 128:(me + 1) * 128, :], value=u)
    return res, got
