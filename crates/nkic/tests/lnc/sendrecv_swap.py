import nki
import nki.language as nl
import nki.isa as nisa


# Two cores (LNC=2) swap their halves of `x` with nisa.sendrecv: `res`
# is `x` with its halves swapped (exchange on the shared DMA, pipe 0) and
# `res3` three times that (exchange on GpSimd's internal DMA, pipe 1).
# nkic: args x=float32[256,256]
# nkic: grid 2
@nki.jit
def swap(x):
    res = nl.ndarray((256, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    res3 = nl.ndarray((256, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    other = 1 - me
    t = nl.load(x[me * 128:(me + 1) * 128, :])
    got = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(src=t, dst=got, send_to_rank=other, recv_from_rank=other, pipe_id=0)
    nl.store(res[me * 128:(me + 1) * 128, :], value=got)
    back = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(t, back, other, other, 1, dma_engine=nisa.dma_engine.gpsimd_dma)
    nl.store(res3[me * 128:(me + 1) * 128, :], value=nl.multiply(back, 3.0))
    return res, res3
