import nki
import nki.collectives as collectives
import nki.isa as nisa
import nki.language as nl


# Without an LNC=2 launch the other ranks of a group are replicas of this
# one: the gather over 4 ranks is 4 DMAs of `a` into the column blocks of
# `g`, the sum over 4 ranks a copy and 3 accumulating DMAs, the maximum
# one copy.
# nkic: args x=float32[64,16]
@nki.jit
def replicas(x):
    group = collectives.ReplicaGroup([[0, 1, 2, 3]])
    a = nl.ndarray((64, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    g = nl.ndarray((64, 64), dtype=x.dtype, buffer=nl.sbuf)
    collectives.all_gather(dsts=[g], srcs=[a], replica_group=group, collective_dim=1)
    s = nl.ndarray((64, 16), dtype=x.dtype, buffer=nl.sbuf)
    collectives.all_reduce(dsts=[s], srcs=[a], op=nl.add, replica_group=group)
    m = nl.ndarray((64, 16), dtype=x.dtype, buffer=nl.sbuf)
    collectives.all_reduce(dsts=[m], srcs=[a], op=nl.maximum, replica_group=group)
    out = nl.ndarray((64, 96), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[0:64, 0:64], src=g)
    nisa.dma_copy(dst=out[0:64, 64:80], src=s)
    nisa.dma_copy(dst=out[0:64, 80:96], src=m)
    return out
