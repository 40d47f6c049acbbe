# expect: E0507
import nki
import nki.language as nl
import nki.isa as nisa


# GpSimd's internal DMA moves at most 1024 bytes per partition of a 32-bit
# dtype (256 elements); this tile has 512.
# nkic: args x=float32[256,512]
# nkic: grid 2
@nki.jit
def k(x):
    out = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    me = nl.program_id(0)
    t = nl.load(x[me * 128:(me + 1) * 128, :])
    got = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sendrecv(t, got, 1 - me, 1 - me, 0, dma_engine=nisa.dma_engine.gpsimd_dma)
    nl.store(out[me * 128:(me + 1) * 128, :], value=got)
    return out
