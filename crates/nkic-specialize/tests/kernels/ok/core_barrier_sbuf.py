import nki
import nki.language as nl
import nki.isa as nisa


# A barrier on an SBUF tile (each core's own, as nki-library's hybrid MoE
# loop counter) names no shared data: it makes each core's GpSimd wait for
# the other's and orders no accesses. The exchange through HBM is ordered
# by the barrier on `res`.
# nkic: args x=float32[256,64]
# nkic: grid 2
@nki.jit
def barrier_on_tile(x):
    res = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    got = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    other = 1 - me
    counter = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(counter, value=0)
    t = nl.load(x[me * 128:(me + 1) * 128, :])
    nl.store(res[me * 128:(me + 1) * 128, :], value=nl.multiply(t, 2.0))
    nisa.core_barrier(res, (0, 1))
    nisa.tensor_scalar(dst=counter, data=counter, op0=nl.add, operand0=1)
    nisa.core_barrier(counter, (0, 1))
    u = nl.load(res[other * 128:(other + 1) * 128, :])
    nl.store(got[me * 128:(me + 1) * 128, :], value=u)
    return res, got
