"""A 32 MiB output of which one tile is stored: the rest is never written."""
import nki
import nki.isa as nisa
import nki.language as nl


# nkic: args a=float32[128,512]
@nki.jit
def one_tile_of_many(a):
    out = nl.ndarray((4096, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out[128:256, 512:1024], src=t)
    return out
