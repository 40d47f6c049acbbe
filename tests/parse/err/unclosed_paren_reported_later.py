import nki.isa as nisa
import nki.language as nl


def load_tile(x, i):
    tile = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf
    nisa.dma_copy(dst=tile, src=x[i * 128:(i + 1) * 128, :])
    return tile
