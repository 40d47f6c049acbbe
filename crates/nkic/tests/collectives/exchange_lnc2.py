"""reduce_scatter, all_to_all and the ring permute over the two cores of
an LNC=2 launch.

Core `c` loads rows [64c, 64c + 64) of `x` ([128, 32]) into `mine`. Over
the group [[0, 1]] (the launch's two cores), split along dim 1 into two
chunks of 16 columns: reduce_scatter gives core `c` chunk `c` of the sum
of the two tiles; all_to_all gives core `c` its own chunk `c` at chunk
`c` and the other core's chunk `c` at the other chunk; the ring permute
gives each core the other's tile. Core `c` stores each into rows
[64c, 64c + 64) of its output.
"""
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[128,32]
# nkic: grid 2
@nki.jit
def exchange_lnc2(x):
    c = nl.program_id(0)
    group = ncc.ReplicaGroup([[0, 1]])
    mine = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[64 * c:64 * c + 64, 0:32])
    part = nl.ndarray((64, 16), dtype=x.dtype, buffer=nl.sbuf)
    ncc.reduce_scatter(dsts=[part], srcs=[mine], op=nl.add, replica_group=group, collective_dim=1)
    swapped = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_to_all(dsts=[swapped], srcs=[mine], replica_group=group, collective_dim=1)
    theirs = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    ncc.collective_permute_implicit(srcs_by_channel=[[mine]], dsts_by_channel=[[theirs]],
                                    replica_group=group)
    scattered = nl.ndarray((128, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    exchanged = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    permuted = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=scattered[64 * c:64 * c + 64, 0:16], src=part)
    nisa.dma_copy(dst=exchanged[64 * c:64 * c + 64, 0:32], src=swapped)
    nisa.dma_copy(dst=permuted[64 * c:64 * c + 64, 0:32], src=theirs)
    return scattered, exchanged, permuted
