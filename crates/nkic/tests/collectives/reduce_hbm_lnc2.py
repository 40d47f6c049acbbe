"""Collectives into shared HBM in an LNC=2 launch.

Both cores call all_reduce and reduce_scatter over a group of four ranks
with the kernel's input `x` ([128, 32]) as the source and a shared HBM
tensor as the destination. The other ranks are simulated as replicas, so
`total` is 4 x and `part` is 4 x[0:32] (rank 0's chunk along dim 0).
Both also all_gather their own rows of `x` (core `c`: rows
[64c, 64c + 64), different sources) over a group of two into a shared HBM
`copies`: two copies of core 0's rows. Core 0 writes each destination and
both cores then pass a core barrier (docs/language.md, "Collectives"), so
each core may read every row: core `c` copies rows [64c, 64c + 64) of
`total` to `summed`, rows [16c, 16c + 16) of `part` to `scattered` and
rows [64c, 64c + 64) of `copies` to `gathered`.
"""
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


# nkic: args x=float32[128,32]
# nkic: grid 2
@nki.jit
def reduce_hbm_lnc2(x):
    c = nl.program_id(0)
    group = ncc.ReplicaGroup([[0, 1, 2, 3]])
    total = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(dsts=[total], srcs=[x], op=nl.add, replica_group=group)
    part = nl.ndarray((32, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.reduce_scatter(dsts=[part], srcs=[x], op=nl.add, replica_group=group, collective_dim=0)
    summed = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    scattered = nl.ndarray((32, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=total[64 * c:64 * c + 64, 0:32])
    nisa.dma_copy(dst=summed[64 * c:64 * c + 64, 0:32], src=t)
    s = nl.ndarray((16, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=part[16 * c:16 * c + 16, 0:32])
    nisa.dma_copy(dst=scattered[16 * c:16 * c + 16, 0:32], src=s)
    copies = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(dsts=[copies], srcs=[x[64 * c:64 * c + 64, 0:32]], replica_group=ncc.ReplicaGroup([[0, 1]]), collective_dim=0)
    gathered = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=copies[64 * c:64 * c + 64, 0:32])
    nisa.dma_copy(dst=gathered[64 * c:64 * c + 64, 0:32], src=g)
    return summed, scattered, gathered
