import nki
import nki.language as nl
import nki.isa as nisa


# Two cores (LNC=2) swap SBUF tiles with sendrecv: each loads its half of
# `x`, sends it to the other core and stores what it receives, so `res`
# holds the halves swapped (one exchange on the Sync queue, one on
# GpSimd's internal DMA).
# nkic: args x=float32[256,64]
# nkic: grid 2
@nki.jit
def swap_halves(x):
    res = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    other = 1 - me
    t = nl.load(x[me * 128:(me + 1) * 128, :])
    got = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=got, send_to_rank=other, recv_from_rank=other, pipe_id=0)
    back = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(t, back, other, other, 1, dma_engine=nisa.dma_engine.gpsimd_dma)
    nl.store(res[me * 128:(me + 1) * 128, :], value=nl.add(got, back))
    return res
