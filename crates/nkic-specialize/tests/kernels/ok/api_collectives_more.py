import nki
import nki.collectives as collectives
import nki.isa as nisa
import nki.language as nl


# Without an LNC=2 launch the other ranks of a group of 4 are replicas of
# this one, which is rank 0: reduce_scatter sums 4 copies of chunk 0 of
# dim 0 (a copy and 3 accumulating DMAs), all_to_all places chunk 0 at
# every chunk of `t`, the ring permute receives what it sends, and the
# ranks processed after 0 and 1 ring steps are 0 and 3; `rank_id()` is
# a register holding 0, used as a dynamic offset.
# nkic: args x=float32[8,16]
@nki.jit
def replicas(x):
    group = collectives.ReplicaGroup([[0, 1, 2, 3]])
    src = nl.ndarray((8, 16), dtype=x.dtype, buffer=nl.shared_hbm, name="src")
    nisa.dma_copy(dst=src, src=x)
    r = nl.ndarray((2, 16), dtype=x.dtype, buffer=nl.shared_hbm, name="r")
    collectives.reduce_scatter(dsts=[r], srcs=[src], op=nl.add, replica_group=group, collective_dim=0)
    t = nl.ndarray((8, 16), dtype=x.dtype, buffer=nl.shared_hbm, name="t")
    collectives.all_to_all(dsts=[t], srcs=[src], replica_group=group, collective_dim=0)
    p = nl.ndarray((8, 16), dtype=x.dtype, buffer=nl.shared_hbm, name="p")
    collectives.collective_permute_implicit(srcs_by_channel=[[src]], dsts_by_channel=[[p]],
                                           replica_group=group, channel_ids=[0])
    first = collectives.collective_permute_implicit_current_processing_rank_id(iteration_id=0, replica_group=group)
    second = collectives.collective_permute_implicit_current_processing_rank_id(iteration_id=1, replica_group=group)
    me = collectives.rank_id()
    out = nl.ndarray((2, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x.ap(pattern=[[16, 2], [1, 16]], scalar_offset=me, indirect_dim=0))
    return r, t, p, out
