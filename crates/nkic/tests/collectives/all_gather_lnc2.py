"""all_gather and all_reduce over the two cores of an LNC=2 launch.

Core `c` loads rows [64c, 64c + 64) of `x` ([128, 32]). The all_gather
over the group [[0, 1]] (the launch's two cores) concatenates the two
cores' tiles along dim 1 ([64, 64], core 0's columns first); the
all_reduce adds them. Core `c` stores the gather into rows [64c, 64c + 64)
of `gathered` and the sum into the same rows of `summed`, so both halves
of each output are the same.
"""
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[128,32]
# nkic: grid 2
@nki.jit
def all_gather_lnc2(x):
    c = nl.program_id(0)
    group = ncc.ReplicaGroup([[0, 1]])
    gathered = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    summed = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[64 * c:64 * c + 64, 0:32])
    both = nl.ndarray((64, 64), dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_gather(dsts=[both], srcs=[mine], replica_group=group, collective_dim=1)
    total = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_reduce(dsts=[total], srcs=[mine], op=nl.add, replica_group=group)
    nisa.dma_copy(dst=gathered[64 * c:64 * c + 64, 0:64], src=both)
    nisa.dma_copy(dst=summed[64 * c:64 * c + 64, 0:32], src=total)
    return gathered, summed
